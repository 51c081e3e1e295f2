"""Whether the BSC demo could decide the paper's shuffle ablation on CQA-A: the demo run on CQA-A at several step counts.

The paper's shuffle ablation (Table 2) is on CQA-A and CQA-B: BSC with example-based shuffling against
random batches and against the data's own order ("w/o shuffle", each question's comments together). The
book's demo decides the ablation on STSb instead (rows of our own); this script measures what CQA-A
would cost and whether its rows differ. It runs the chapter's notebook in the demo profile on CQA-A only
(all-MiniLM-L6-v2, three seeds, the paper's CQA-A optimizer: AdamW with bias correction at 2e-5, 90
sub-tokens) with the rows BSC, "BSC - random shuffle", "BSC - w/o shuffle" and the untouched encoder, in
batches of 8 (one example-based group of 8 a batch), for each number of optimizer steps (the first
``8 x steps`` judged pairs of the training file: whole questions, ten comments each, in its order), each
into its own folder, every model scored on all 327 CQA-A test questions. It gathers each row's MAP (mean
and spread over the seeds), the claims between the rows with their 95 % intervals and verdicts, the
models' health and the wall time.

    .venv/bin/python benchmarks/bsc_cqa_shuffle.py --data-dir ../shared/data   # -> results/bsc_cqa_shuffle_cpu.json

The BSC chapter shows the result (:mod:`sentcl.book.estimates.benchmarks`).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from _demo_runs import demo_run, gather, write_result

HERE = Path(__file__).resolve().parent
CHAPTER = "bsc"
TASK = "CQA-A"
ROWS = ["BSC", "BSC - random shuffle", "BSC - w/o shuffle", "SimCSE (unsup.)"]
BATCH = 8


def overrides(steps: int, learning_rate: float) -> dict[str, str]:
    """The ``-p`` values of a CQA-A-only demo run of ``steps`` optimizer steps (one epoch of ``8 x steps`` pairs)."""
    def one(value: object) -> str:  # a per-task parameter holding CQA-A's value only
        return json.dumps({TASK: value})

    return {"tasks": json.dumps([TASK]), "not_run_tasks": "{}", "rows": one(ROWS),
            "train_data": one("semeval2016_cqa_a/train"), "train_rows": one(BATCH * steps), "batch_size": one(BATCH),
            "epochs": one(1), "learning_rate": one(learning_rate), "bias_correction": one(True), "eval_max_queries": "{}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--steps", type=int, nargs="+", default=[60, 240])
    parser.add_argument("--work", default=None, help="where the runs' output folders go (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="gather a step count from its folder in --work when a finished run is there (no rerun)")
    parser.add_argument("--out", default=str(HERE / "results" / "bsc_cqa_shuffle_cpu.json"))
    args = parser.parse_args()

    from sentcl.book.parameters import shipped_parameters

    paper = shipped_parameters(CHAPTER, "paper")
    demo = shipped_parameters(CHAPTER, "demo")
    work = Path(args.work or tempfile.mkdtemp(prefix="bsc_cqa_shuffle-"))
    runs, loads = [], []
    for steps in args.steps:
        out = work / f"steps-{steps}"
        wall, load = demo_run(CHAPTER, out, overrides(steps, paper["learning_rate"][TASK]), args.data_dir, reuse=args.reuse)
        loads.append({"steps": steps, **load})
        runs.append({"steps": steps, "train_pairs": BATCH * steps, "command_wall_s": round(wall, 1),
                     **gather(out, CHAPTER, f"{TASK} MAP")})
        print({k: runs[-1][k] for k in ("steps", "average", "claims")}, flush=True)
    write_result(args.out, "bsc_cqa_shuffle", "step count", loads, runs, settings={
        "task": TASK, "rows": ROWS, "batch_size": BATCH, "learning_rate": paper["learning_rate"][TASK],
        "bias_correction": True, "max_seq_length": paper["max_seq_length"], "seeds": demo["seeds"],
        "base_model": demo["base_model"], "test_questions": "all", "precision": demo["precision"]})


if __name__ == "__main__":
    main()
