"""Which peak learning rate for sentcl-mini's pretraining: the held-out MLM loss of the first steps of the
shipped recipe at each rate of a short grid (issue 46: "pilot first").

Each rate runs ``sentcl pretrain`` on the real corpus with the recipe's schedule (warm-up over 6 % of a
``--tokens`` budget, then linear decay) and stops at step ``--steps``, held-out loss every 100 steps. A
run's ``--work`` folder is ``<work-root>/pilot_<rate>``: a run stopped there resumes, so the grid can be run
a rate at a time (a run already past ``--steps`` is reported as far as it went). Batches of ``--batch-size`` sequences (16: four times the steps of the
shipped 64 for the same tokens, which this pilot also compared: the held-out loss per token was the same).

    .venv/bin/python benchmarks/pretrain_lr_pilot.py --data-dir ../shared/data   # -> results/pretrain_lr_pilot_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--grid", type=float, nargs="+", default=[5e-4, 1e-3, 3e-3])
    parser.add_argument("--tokens", type=int, default=10_000_000, help="the schedule's budget (its warm-up and decay)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--vocab-size", type=int, default=0, help="0: all-MiniLM-L6-v2's vocabulary, as the recorded pilot")
    parser.add_argument("--steps", type=int, default=800, help="the step each rate's run stops at")
    parser.add_argument("--work-root", type=Path, default=Path("/tmp"))
    parser.add_argument("--out", default=str(HERE / "results" / "pretrain_lr_pilot_cpu.json"))
    args = parser.parse_args()

    from encode_throughput import header

    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    curves = {}
    for lr in args.grid:
        work = args.work_root / f"pilot_{lr:g}"
        done = json.loads((work / "record.json").read_text(encoding="utf-8"))["steps"] if (work / "record.json").is_file() else 0
        subprocess.run([sys.executable, "-m", "sentcl", "pretrain", "--data-dir", args.data_dir, "--precision", "bf16",
                        "--tokens", str(args.tokens), "--vocab-size", str(args.vocab_size), "--batch-size", str(args.batch_size), "--learning-rate", str(lr),
                        "--work", str(work), "--out", str(work / "out"), "--stop-after", str(max(0, args.steps - done))],
                       check=True)
        record = json.loads((work / "record.json").read_text(encoding="utf-8"))
        curves[f"{lr:g}"] = {str(step): round(loss, 4) for step, loss in record["heldout"]}
        print(lr, curves[f"{lr:g}"], flush=True)
    common = sorted(set.intersection(*(set(map(int, c)) for c in curves.values())))
    result = {
        **header("pretrain_lr_pilot", load_before),
        "recipe": f"sentcl-mini's, batch {args.batch_size} x 128 tokens, schedule of {args.tokens:,} tokens, bf16",
        "heldout_loss_by_step": curves,
        "best_at_each_step": {str(s): min(curves, key=lambda r: curves[r][str(s)]) for s in common},
    }
    atomic_write_json(args.out, result)
    print(json.dumps(result["best_at_each_step"]), f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
