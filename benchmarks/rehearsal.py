"""The rehearsal (issue 23): what a ``sentcl reproduce --profile rehearsal`` run did, from its run records.

Run the rehearsal from a fresh clone with an empty cache, timed, then summarise its output folder::

    SENTCL_CACHE=$(mktemp -d) /usr/bin/time -f %e .venv/bin/sentcl reproduce --profile rehearsal \\
        --data-dir ../shared/data --out runs/rehearsal
    .venv/bin/python benchmarks/rehearsal.py --out runs/rehearsal --wall-s SECONDS --commit $(git rev-parse --short HEAD)

Writes ``results/rehearsal_cpu.json``: the machine; per chapter its notebook's wall time, peak memory and status;
every training record's steps, share of steps at half the peak rate or more, cosine to its start and health; and
the RCL entropy models apart (the stage the paper profile's literal reading left untrained). It checks nothing
and times nothing itself: the wall time of the whole command is the one given.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from sentcl.book.output.run_records import environment, read_run_records
from sentcl.chapters import CHAPTERS
from sentcl.io import atomic_write_json

RESULTS = Path(__file__).resolve().parent / "results" / "rehearsal_cpu.json"


def summary(out: Path) -> dict[str, Any]:
    records = [r for r in read_run_records(out / "records") if r.profile == "rehearsal"]
    if not records:
        raise SystemExit(f"no rehearsal run records under {out / 'records'}: run sentcl reproduce --profile rehearsal first")
    notebooks = {r.chapter: r for r in records if r.kind == "notebook"}  # the latest run of each chapter
    chapters: dict[str, Any] = {}
    for chapter in CHAPTERS:
        nb = notebooks.get(chapter)
        if nb is None:
            chapters[chapter] = {"status": "not run"}
            continue
        runs = [r for r in records if r.kind == "training" and r.chapter == chapter and r.run_id == nb.run_id]
        health = [r.health or {} for r in runs]
        chapters[chapter] = {
            "status": nb.status, "wall_time_s": nb.wall_time_s, "peak_memory_mb": nb.peak_memory_mb,
            "training_records": len(runs), "active": sum(bool(h.get("active")) for h in health),
            "inactive": {h.get("name", "?"): h.get("reason") for h in health if not h.get("active")},
            "steps": sorted({h.get("trained_steps") for h in health if h}),
            "start_cosine_max": max((h["start_cosine"] for h in health if "start_cosine" in h), default=None),
        }
    entropy = [r.health for r in records if r.kind == "training" and r.health and r.name.startswith("entropy model")
               and r.run_id == (notebooks.get("rcl") and notebooks["rcl"].run_id)]
    return {"chapters": chapters, "rcl_entropy_models": [
        {k: h[k] for k in ("name", "planned_steps", "trained_steps", "steps_at_half_peak", "share_at_half_peak",
                           "start_cosine", "active", "loss_start", "loss_end")} for h in entropy]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, type=Path, help="the rehearsal's output folder (sentcl reproduce --out)")
    parser.add_argument("--wall-s", type=float, required=True, help="the whole command's wall time, measured outside it")
    parser.add_argument("--commit", required=True, help="the commit the fresh clone was at")
    parser.add_argument("--note", default="", help="how it ran (fresh clone, empty cache, other load)")
    parser.add_argument("--results", type=Path, default=RESULTS)
    args = parser.parse_args()
    found = summary(args.out)
    record = {"benchmark": "rehearsal", "machine": environment(), "commit": args.commit, "note": args.note,
              "command": "sentcl reproduce --profile rehearsal --data-dir ../shared/data",
              "wall_time_s": args.wall_s, **found}
    atomic_write_json(args.results, record)
    total = sum(c.get("wall_time_s") or 0 for c in found["chapters"].values())
    active = sum(c.get("active", 0) for c in found["chapters"].values())
    runs = sum(c.get("training_records", 0) for c in found["chapters"].values())
    print(f"{args.results}: {args.wall_s / 60:.1f} min in all ({total / 60:.1f} in the notebooks); {active} of {runs} "
          "training records active")


if __name__ == "__main__":
    main()
