"""The demo-budget benchmarks' shared machinery (``mnrl_sbert_rows.py``, ``bsc_cqa_shuffle.py``): run a
chapter's notebook in the demo profile with a few parameters changed, each budget into its own folder, and
gather from what the run wrote its scores, claims and training health.

A run goes through ``sentcl reproduce --profile demo --only CHAPTER --no-book -p NAME VALUE ...``, so it is
the book's own code path; ``--reuse`` gathers a budget from its folder when a finished run is there (with
the wall time and load it recorded), so an interrupted benchmark does not redo its finished budgets.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def demo_run(chapter: str, out: Path, overrides: dict[str, str], data_dir: str, *, reuse: bool) -> tuple[float, dict]:
    """Run ``chapter``'s demo into ``out`` with ``overrides`` (``-p`` name -> value text), or, with ``reuse``,
    take the finished run there. Returns its command wall time (s) and the load averages before and after."""
    from sentcl.io import atomic_write_json

    done = out / "load.json"
    if reuse and (out / "claims" / f"{chapter}.csv").is_file() and done.is_file():
        found = json.loads(done.read_text(encoding="utf-8"))
        return found["command_wall_s"], found["load"]
    before = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    params = [arg for name, value in overrides.items() for arg in ("-p", name, value)]
    subprocess.run([sys.executable, "-m", "sentcl", "reproduce", "--profile", "demo", "--only", chapter, "--no-book",
                    "--data-dir", data_dir, "--out", str(out), *params], check=True)
    wall = (datetime.datetime.now(datetime.timezone.utc) - started).total_seconds()
    load = {"before": [round(x, 2) for x in before], "after": [round(x, 2) for x in os.getloadavg()]}
    atomic_write_json(done, {"load": load, "command_wall_s": wall})
    return wall, load


def trained_models(out: Path, chapter: str) -> dict[str, Any]:
    """Name -> the training record of every model the run in ``out`` trained (its health, its artifact folder): each
    once, a model that several rows rest on too (RCL's Eq. 1 run is its attention-dropout row), and a model no row
    rests on too (RCL's NLI-trained base)."""
    from sentcl.book.output.run_records import read_run_records

    return {r.name: r for r in read_run_records(out / "records") if r.kind == "training" and r.chapter == chapter}


HEALTH_FIELDS = ("trained_steps", "planned_steps", "peak_lr", "start_cosine", "loss_start", "loss_end", "active", "reason",
                 "learned", "learned_reason")
"""The fields of a model's health record a benchmark keeps."""


def gather(out: Path, chapter: str, column: str) -> dict[str, Any]:
    """What one demo run of ``chapter`` wrote to ``out``: each row's ``column`` (mean, std and seeds over its
    seeds), the claims on ``column`` between rows it computed (difference, 95 % interval, Holm p, verdict), the health of
    every trained model, the notebook's wall time from its run record and the median wall time of its training runs."""
    import pandas as pd

    from sentcl.book.output.claims import read_claims
    from sentcl.book.output.evidence import load_evidence
    from sentcl.book.output.results import load_results
    from sentcl.book.output.run_records import read_run_records

    results = load_results(out, [chapter])
    scores = results[results["column"] == column].drop_duplicates("row").set_index("row")
    claims = read_claims(out, chapter)
    tested = claims[(claims["column"] == column) & claims["left"].isin(scores.index) & claims["right"].isin(scores.index)]
    healths: dict[str, dict] = {}
    for ev in load_evidence(out, chapter).values():
        for name in ev.columns:
            for h in ev.health(name):
                if h is not None:
                    healths.setdefault(h["name"], h)
    records = read_run_records(out / "records")
    [record] = [r for r in records if r.kind == "notebook" and r.chapter == chapter]
    trainings = sorted(r.wall_time_s for r in records
                       if r.kind == "training" and r.chapter == chapter and r.wall_time_s is not None)
    return {
        "notebook_wall_s": record.wall_time_s,
        "training_run_s": {"runs": len(trainings), "median": trainings[len(trainings) // 2] if trainings else None},
        "average": {row: {"value": round(float(r["value"]), 4), "std": None if pd.isna(r["std"]) else round(float(r["std"]), 4),
                          "seeds": list(r["seeds"])} for row, r in scores.iterrows()},
        "claims": [{k: (None if pd.isna(c[k]) else c[k]) for k in ("claim", "left", "right", "delta", "ci_low", "ci_high",
                                                                  "p_holm", "verdict", "reason", "source")}
                   for c in tested.to_dict("records")],
        "health": {name: {k: h.get(k) for k in HEALTH_FIELDS} for name, h in sorted(healths.items())},
    }


def write_result(path: str, benchmark: str, budget: str, loads: list[dict], runs: list[dict], **fields: Any) -> None:
    """Write the benchmark's results file (atomically): its name, the date, this machine, the load averages of
    each run, ``fields`` (its settings) and the runs, one per ``budget`` (what varies: "row count", "step count")."""
    from encode_throughput import machine

    from sentcl.io import atomic_write_json

    atomic_write_json(path, {
        "benchmark": benchmark,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_1_5_15_min": loads,
        "note": f"wall times are of a shared machine under the load averages shown: only the verdicts, intervals and health "
                f"compare across {budget}s",
        **fields,
        "runs": runs,
    })
    print(f"wrote {path}")
