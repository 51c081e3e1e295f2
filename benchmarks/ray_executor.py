"""A profile in-process and through Ray (issue 32): the wall time of ``sentcl reproduce --profile P`` (every
chapter) with the default executor and with ``--executor ray`` on a local Ray cluster, each from its own empty
cache, and whether the two give the same numbers, file for file.

Both commands run here, one after the other (``--no-book``: the book is the same work either way). The Ray run
builds every planned stage of every chapter as Ray tasks, ``--cpus-per-run`` CPUs and torch threads each (default:
the executor's, as many as the command computes with, which keeps the in-process numbers bit for bit), so this
machine's CPUs / that many tasks at once (its "workers"), then runs the notebooks, which find every stage in the
cache. On 2 cores the default is one task at a time: what is measured there is Ray's overhead. The comparison reads every ``results/``, ``claims/`` and
``geometry/`` file (run ids aside) and every training record's health.

The smoke profile (the project's sample data) and the rehearsal, on this project's 2-core machine (2 workers), and
the rehearsal on a 16-core one (8 workers)::

    .venv/bin/python benchmarks/ray_executor.py --profile smoke --out benchmarks/results/ray_executor_smoke_cpu.json
    .venv/bin/python benchmarks/ray_executor.py --data-dir ../shared/data --out benchmarks/results/ray_executor_rehearsal_cpu.json
    .venv/bin/python benchmarks/ray_executor.py --data-dir ../shared/data --cpus-per-run 2 --out benchmarks/results/ray_executor_rehearsal_16cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def timed(argv: list[str], cache: Path, log: Path, env: dict[str, str] | None = None) -> float:
    """Run ``sentcl`` with ``argv`` on its own cache (and ``env`` set); its wall time in seconds (its output goes to
    ``log``)."""
    env = {k: v for k, v in os.environ.items() if k != "SENTCL_DATA"} | (env or {}) | {"SENTCL_CACHE": str(cache)}
    started = time.perf_counter()
    with open(log, "w") as fh:
        status = subprocess.run([sys.executable, "-m", "sentcl", *argv], stdout=fh, stderr=subprocess.STDOUT, env=env,
                                cwd=ROOT).returncode
    if status:
        raise SystemExit(f"sentcl {' '.join(argv)} failed ({status}): see {log}")
    return round(time.perf_counter() - started, 1)


WALL_CLOCK = "cost × "
"""Results columns that are measured wall-clock ratios (the geometry chapter's "cost × MNRL"): they differ between
any two runs, in-process or not, and are listed apart."""


def differences(a: Path, b: Path) -> tuple[list[str], list[str]]:
    """The files of ``results/``, ``claims/`` and ``geometry/`` that differ between two output folders (run ids
    aside; a file with differing rows: its name and the rows' (table, row, column)), and the training runs whose
    health differs; then the wall-clock cells (:data:`WALL_CLOCK`) that differ, apart."""
    import pandas as pd

    from sentcl.book.output.layout import Layout

    found, timing = [], []
    for sub in ("results", "claims", "geometry"):
        names = {p.name for p in (a / sub).glob("*.csv")} | {p.name for p in (b / sub).glob("*.csv")}
        for name in sorted(names):
            frames = [pd.read_csv(d / sub / name, dtype=str, keep_default_na=False) if (d / sub / name).exists() else None
                      for d in (a, b)]
            if any(f is None for f in frames):
                found.append(f"{sub}/{name}: in one folder only")
                continue
            x, y = (f.drop(columns=[c for c in ("run_id",) if c in f]) for f in frames)
            if x.equals(y):
                continue
            if list(x.columns) != list(y.columns) or len(x) != len(y) or "column" not in x:
                found.append(f"{sub}/{name}")
                continue
            for i in x.index[(x != y).any(axis=1)]:
                cell = f"{sub}/{name}: {x.loc[i, 'table']} / {x.loc[i, 'row']} / {x.loc[i, 'column']}"
                (timing if x.loc[i, "column"].startswith(WALL_CLOCK) else found).append(cell)

    def health(out: Path) -> dict[tuple[str, str], Any]:
        records = (json.loads(p.read_text()) for p in Layout(out).records.glob("training-*.json"))
        return {(r["chapter"], r["name"]): r["health"] for r in records}

    ha, hb = health(a), health(b)
    found += [f"health of {c} {n}" for c, n in sorted(set(ha) | set(hb)) if ha.get((c, n)) != hb.get((c, n))]
    return found, timing


def threads() -> int:
    """The torch threads a ``sentcl`` command computes with on this machine."""
    import torch

    return torch.get_num_threads()


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="the JSON record to write")
    parser.add_argument("--profile", default="rehearsal")
    parser.add_argument("--data-dir", type=Path, default=None, help="the data root (e.g. ../shared/data; none: the profile's own)")
    parser.add_argument("--cpus-per-run", type=int, default=None,
                        help="CPUs (and torch threads) each Ray task asks for (default: the executor's, the command's threads)")
    parser.add_argument("--runs-per-gpu", type=int, default=1, help="Ray tasks sharing one GPU (a machine with GPUs)")
    parser.add_argument("--work", type=Path, default=None, help="where the two runs' caches and outputs go (default: a temporary folder)")
    args = parser.parse_args(argv)
    from sentcl.book.output.run_records import environment
    from sentcl.io import atomic_write_json

    work = args.work or Path(tempfile.mkdtemp(prefix=f"ray-{args.profile}-"))
    work.mkdir(parents=True, exist_ok=True)
    common = ["reproduce", "--profile", args.profile, *(["--data-dir", str(args.data_dir.resolve())] if args.data_dir else []),
              "--no-book"]
    ray_options = ["--executor", "ray", "--runs-per-gpu", str(args.runs_per_gpu),
                   *(["--cpus-per-run", str(args.cpus_per_run)] if args.cpus_per_run else [])]
    walls = {}
    for name, extra in (("in-process", []), ("ray", ray_options)):
        print(f"{name}: sentcl {' '.join(common + extra)}", flush=True)
        walls[name] = timed([*common, *extra, "--out", str(work / name / "out")], work / name / "cache", work / f"{name}.log")
        print(f"{name}: {walls[name]:.0f} s", flush=True)
    differ, timing = differences(work / "in-process" / "out", work / "ray" / "out")
    cpus = os.cpu_count() or 1
    result = {
        "benchmark": "ray_executor", "profile": args.profile, "machine": environment(), "cpus": cpus,
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "commands": {"in-process": "sentcl " + " ".join(common), "ray": "sentcl " + " ".join(common + ray_options)},
        "workers": cpus // (args.cpus_per_run or threads()), "wall_time_s": walls,
        "ray_over_in_process": round(walls["ray"] / walls["in-process"], 3),
        "same_numbers": not differ, "differences": differ, "wall_clock_cells_differing": timing,
        "note": "each from its own empty cache, one after the other, nothing else running; --no-book",
    }
    atomic_write_json(args.out, result)
    print(f"in-process {walls['in-process']:.0f} s, ray {walls['ray']:.0f} s ({result['ray_over_in_process']:.2f} x); "
          + ("the same numbers" if not differ else f"{len(differ)} differences: {', '.join(differ[:5])}"))
    print(f"wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
