"""How the MNRL-SBERT demo's verdicts move with its training rows: the demo run at several row counts.

The demo fine-tunes its stand-in encoder with MNRL and with SBERT's softmax loss on the same number of SNLI
rows per seed (``train_pairs``). How far each objective moves the pretrained encoder depends on how long
it trains, so the gap between them, the claim the chapter tests, may depend on that budget too. This
script runs the chapter's notebook in the demo profile (``sentcl reproduce --only mnrl_sbert -p
train_pairs N``, everything else as the profile says) for each row count, each into its own output
folder, and gathers from what each run wrote: the average Spearman of the three rows (mean and spread
over the seeds), the claims file's verdicts with their 95 % intervals, and each trained model's health.
Trained models go to the artifact cache (``$SENTCL_CACHE``): the demo's own row count is then cached for
``make book`` with the same cache.

    .venv/bin/python benchmarks/mnrl_sbert_rows.py --data-dir ../shared/data   # -> results/mnrl_sbert_rows_cpu.json

Its record was made on the chapter's earlier demo (all-MiniLM-L6-v2 at 2e-5, three seeds); the page now shows the
demo's rate rule (``rate_rule.py``) instead.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from _demo_runs import demo_run, gather, write_result

HERE = Path(__file__).resolve().parent
CHAPTER = "mnrl_sbert"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 2000, 3000])
    parser.add_argument("--work", default=None, help="where the runs' output folders go (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="gather a row count from its folder in --work when a finished run is there (no rerun)")
    parser.add_argument("--out", default=str(HERE / "results" / "mnrl_sbert_rows_cpu.json"))
    args = parser.parse_args()

    from sentcl.book.parameters import shipped_parameters

    work = Path(args.work or tempfile.mkdtemp(prefix="mnrl_sbert_rows-"))
    demo = shipped_parameters(CHAPTER, "demo")
    runs, loads = [], []
    for rows in args.rows:
        out = work / f"rows-{rows}"
        wall, load = demo_run(CHAPTER, out, {"train_pairs": str(rows)}, args.data_dir, reuse=args.reuse)
        loads.append({"train_pairs": rows, **load})
        runs.append({"train_pairs": rows, "command_wall_s": round(wall, 1), **gather(out, CHAPTER, "Average")})
        print({k: runs[-1][k] for k in ("train_pairs", "average", "claims")}, flush=True)
    write_result(args.out, "mnrl_sbert_rows", "row count", loads, runs, demo_profile={
        k: demo[k] for k in ("base_models", "train_pairs", "seeds", "learning_rate", "mnrl_batch_size", "softmax_batch_size",
                             "sts_max_pairs", "precision")})


if __name__ == "__main__":
    main()
