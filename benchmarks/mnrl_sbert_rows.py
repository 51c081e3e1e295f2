"""How the MNRL-SBERT demo's verdicts move with its training rows: the demo run at several row counts.

The demo fine-tunes all-MiniLM-L6-v2 with MNRL and with SBERT's softmax loss on the same number of SNLI
rows per seed (``train_pairs``). How far each objective moves the pretrained encoder depends on how long
it trains, so the gap between them, the claim the chapter tests, may depend on that budget too. This
script runs the chapter's notebook in the demo profile (``sentcl reproduce --only mnrl_sbert -p
train_pairs N``, everything else as the profile says) for each row count, each into its own output
folder, and gathers from what each run wrote: the average Spearman of the three rows (mean and spread
over the seeds), the claims file's verdicts with their 95 % intervals, and each trained model's health.
Trained models go to the artifact cache (``$SENTCL_CACHE``): the demo's own row count is then cached for
``make book`` with the same cache.

    .venv/bin/python benchmarks/mnrl_sbert_rows.py --data-dir ../shared/data   # -> results/mnrl_sbert_rows_cpu.json

The chapter page shows the result (:mod:`sentcl.book.benchmarks`).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHAPTER = "mnrl_sbert"


def gather(out: Path, rows: int, wall_s: float) -> dict:
    """What one demo run at ``rows`` wrote: averages, claims, health of the trained models."""
    import pandas as pd

    from sentcl.book.claims import read_claims
    from sentcl.book.evidence import load_evidence
    from sentcl.book.records import read_run_records
    from sentcl.book.results import load_results

    results = load_results(out, [CHAPTER])
    average = results[(results["column"] == "Average")].drop_duplicates("row").set_index("row")
    claims = read_claims(out, CHAPTER)
    tested = claims[claims["left"].isin(average.index) & claims["right"].isin(average.index)]  # between rows it ran
    healths: dict[str, dict] = {}
    for ev in load_evidence(out, CHAPTER).values():
        for column in ev.columns:
            for h in ev.health(column):
                if h is not None:
                    healths.setdefault(h["name"], h)
    [record] = [r for r in read_run_records(out / "records") if r.kind == "notebook" and r.chapter == CHAPTER]
    return {
        "train_pairs": rows,
        "notebook_wall_s": record.wall_time_s,
        "command_wall_s": round(wall_s, 1),
        "average": {row: {"value": round(float(r["value"]), 3), "std": None if pd.isna(r["std"]) else round(float(r["std"]), 3),
                          "seeds": list(r["seeds"])} for row, r in average.iterrows()},
        "claims": [{k: (None if pd.isna(c[k]) else c[k]) for k in ("claim", "left", "right", "delta", "ci_low", "ci_high",
                                                                  "p_holm", "verdict", "reason", "source")}
                   for c in tested.to_dict("records")],
        "health": {name: {k: h.get(k) for k in ("trained_steps", "planned_steps", "peak_lr", "start_cosine", "loss_start",
                                                 "loss_end", "active", "reason")} for name, h in sorted(healths.items())},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--rows", type=int, nargs="+", default=[1000, 2000, 3000])
    parser.add_argument("--work", default=None, help="where the runs' output folders go (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="gather a row count from its folder in --work when a finished run is there (no rerun)")
    parser.add_argument("--out", default=str(HERE / "results" / "mnrl_sbert_rows_cpu.json"))
    args = parser.parse_args()

    from encode_throughput import machine

    from sentcl.book.parameters import chapter_profiles
    from sentcl.io import atomic_write_json
    from sentcl.paths import notebook_file

    work = Path(args.work or tempfile.mkdtemp(prefix="mnrl_sbert_rows-"))
    demo = chapter_profiles(notebook_file(f"{CHAPTER}.ipynb"))["demo"]
    runs, loads = [], []
    for rows in args.rows:
        out = work / f"rows-{rows}"
        if args.reuse and (out / "claims" / f"{CHAPTER}.csv").is_file() and (out / "load.json").is_file():
            done = json.loads((out / "load.json").read_text(encoding="utf-8"))
            loads.append(done["load"])
            runs.append(gather(out, rows, done["command_wall_s"]))
            continue
        before = os.getloadavg()
        started = datetime.datetime.now(datetime.timezone.utc)
        subprocess.run([sys.executable, "-m", "sentcl", "reproduce", "--profile", "demo", "--only", CHAPTER, "--no-book",
                        "--data-dir", args.data_dir, "--out", str(out), "-p", "train_pairs", str(rows)], check=True)
        wall = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
        loads.append({"train_pairs": rows, "before": [round(x, 2) for x in before], "after": [round(x, 2) for x in os.getloadavg()]})
        atomic_write_json(out / "load.json", {"load": loads[-1], "command_wall_s": wall})
        runs.append(gather(out, rows, wall))
        print(json.dumps({k: runs[-1][k] for k in ("train_pairs", "average", "claims")}, default=str)[:2000], flush=True)
    atomic_write_json(args.out, {
        "benchmark": "mnrl_sbert_rows",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_1_5_15_min": loads,
        "note": "wall times are of a shared machine under the load averages shown: only the verdicts, intervals and health "
                "compare across row counts",
        "demo_profile": {k: demo[k] for k in ("base_models", "train_pairs", "seeds", "learning_rate", "mnrl_batch_size",
                                              "softmax_batch_size", "sts_max_pairs", "precision")},
        "runs": runs,
    })
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
