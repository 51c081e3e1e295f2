"""The same numbers by every path (issue 45): a profile's book (``sentcl reproduce --no-book``, the smoke profile by
default) run in process from an empty cache (the reference), in process again on a copy of that cache (warm: every
model and embedding is found there), through Ray (``--executor ray``: every planned stage built by a Ray task, the
notebooks then load them from the cache), and in process at another torch thread count, each with its own cache and
output folder; every ``results/``, ``claims/`` and ``geometry/`` file and every training record's health compared with
the reference's, file for file (``ray_executor.differences``: run ids aside, the wall-clock ``cost × MNRL`` cells
listed apart).

The warm and the Ray paths compute with the reference's threads: any difference there is a defect (a number that
depends on how its model or its embeddings reached the notebook). The warm path trains nothing, so it writes no
training record: its health is not compared, and a run it trained is a difference (the cache missed). The other thread count changes how a CPU splits its
float sums, in training and in encoding, so its cells may differ in the last digits: expected, recorded, not a defect.

    .venv/bin/python benchmarks/determinism.py --out benchmarks/results/determinism_cpu.json   # every chapter
    .venv/bin/python benchmarks/determinism.py --only ifcl --out /tmp/determinism_ifcl.json     # one chapter

``--paths`` runs some of the paths only (the reference always runs); ``--work`` keeps the caches, outputs and logs.
"""

from __future__ import annotations

import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ray_executor import ROOT, differences, timed  # noqa: E402  (its run and its file-for-file comparison)

REFERENCE = "cold"
PATHS = {
    "warm": "in process, on a copy of the reference's cache",
    "ray": "through Ray (--executor ray), its own empty cache",
    "threads": "in process at --other-threads torch threads, its own empty cache",
}
"""Each path beside the reference (in process, its own empty cache, --threads torch threads)."""
EXPECTED = {"threads": "another thread count splits the CPU's float sums otherwise (training and encoding)"}
"""The paths whose differences are expected, and why; a difference in any other path is a defect."""


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    parser.add_argument("--profile", default="smoke")
    parser.add_argument("--only", nargs="+", default=None, metavar="CHAPTER", help="these chapters only (default: all)")
    parser.add_argument("--data-dir", type=Path, default=None, help="the data root (none: the profile's own)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the reference, warm and Ray paths")
    parser.add_argument("--other-threads", type=int, default=1, help="torch threads of the threads path")
    parser.add_argument("--paths", nargs="+", choices=list(PATHS), default=list(PATHS), help="the paths beside the reference")
    parser.add_argument("--work", type=Path, default=None, help="where the caches, outputs and logs go (default: a temporary folder)")
    args = parser.parse_args(argv)
    from sentcl.book.output.layout import Layout
    from sentcl.book.output.run_records import environment
    from sentcl.io import atomic_write_json

    work = args.work or Path(tempfile.mkdtemp(prefix=f"determinism-{args.profile}-"))
    work.mkdir(parents=True, exist_ok=True)
    common = ["reproduce", "--profile", args.profile, *(["--only", *args.only] if args.only else []),
              *(["--data-dir", str(args.data_dir.resolve())] if args.data_dir else []), "--no-book"]
    runs = {REFERENCE: (common, args.threads), "warm": (common, args.threads),
            "ray": ([*common, "--executor", "ray"], args.threads), "threads": (common, args.other_threads)}
    paths: dict[str, dict] = {}
    for name in [REFERENCE, *args.paths]:
        command, threads = runs[name]
        cache = work / name / "cache"
        if name == "warm":
            shutil.copytree(work / REFERENCE / "cache", cache)
        load = os.getloadavg()
        print(f"{name}: OMP_NUM_THREADS={threads} sentcl {' '.join(command)}", flush=True)
        wall = timed([*command, "--out", str(work / name / "out")], cache, work / f"{name}.log",
                     env={"OMP_NUM_THREADS": str(threads)})
        print(f"{name}: {wall:.0f} s", flush=True)
        paths[name] = {"what": PATHS.get(name, "in process, its own empty cache (the reference)"),
                       "command": f"OMP_NUM_THREADS={threads} sentcl {' '.join(command)}", "threads": threads,
                       "wall_time_s": wall, "load_average_before": [round(x, 2) for x in load]}
    for name in args.paths:
        differ, timing = differences(work / REFERENCE / "out", work / name / "out")
        if name == "warm":  # it finds every run in the cache: it trains none and writes no training record
            trained = sorted(p.name for p in Layout(work / name / "out").records.glob("training-*.json"))
            differ = [d for d in differ if not d.startswith("health of ")]
            differ += [f"trained {record} (the cache missed)" for record in trained]
        paths[name] |= {"expected": EXPECTED.get(name), "differences": differ, "wall_clock_cells_differing": timing}
    defects = [f"{name}: {d}" for name in args.paths if name not in EXPECTED for d in paths[name]["differences"]]
    git = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result = {
        "benchmark": "determinism", "profile": args.profile, "chapters": args.only or "all",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit + (" with uncommitted changes" if git.stdout.strip() else ""),
        "machine": environment() | {"cpu_cores": os.cpu_count()}, "reference": REFERENCE, "paths": paths,
        "same_numbers": not defects, "defects": defects,
        "note": "one path after the other, each from its own cache (warm: a copy of the reference's), --no-book",
    }
    atomic_write_json(args.out, result)
    for name in args.paths:
        differ = paths[name]["differences"]
        verdict = "the same numbers" if not differ else f"{len(differ)} differences ({'expected' if name in EXPECTED else 'DEFECT'})"
        print(f"{name} vs {REFERENCE}: {verdict}" + "".join(f"\n  {d}" for d in differ[:10]))
    print(f"wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
