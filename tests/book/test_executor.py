"""sentcl reproduce --executor ray on a real local Ray cluster (no mock of Ray): the chapters' planned stages built as
Ray tasks give the in-process smoke run's results, claims, geometry and training health, bit for bit, also when the
worker of a training stage is killed with SIGKILL in the middle of it (Ray runs it again; it resumes from its
checkpoint); a stage that raises is one line naming it, and the other stages are built.

Each test runs the command the README's cluster section gives, with a local cluster (no --address)."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from sentcl.artifacts import MANIFEST
from sentcl.book.output.layout import Layout
from sentcl.book.parameters import shipped_parameters
from sentcl.book.publishing.executor import jobs, last_line
from sentcl.chapters import CHAPTERS as REGISTRY
from sentcl.training.checkpoint import checkpoints

ROOT = Path(__file__).resolve().parents[2]
BUILDABLE = [name for name, chapter in REGISTRY.items() if chapter.build is not None]
"""The chapters whose stages a task builds (a Chapter.build): every chapter."""
pytestmark = pytest.mark.timeout(900)


def readme_command() -> list[str]:
    """The README's cluster section's first command (a local cluster), as arguments of ``sentcl``."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("## Many GPUs, many machines: Ray")[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "the README's cluster section has no commands"
    return shlex.split(block.group(1).splitlines()[0].split("  #")[0])[1:]


def only_span(argv: list[str]) -> slice:
    """Where the chapters of a command's ``--only`` are in its arguments."""
    start = argv.index("--only") + 1
    return slice(start, next((i for i in range(start, len(argv)) if argv[i].startswith("-")), len(argv)))


def readme_chapters() -> list[str]:
    """The chapters the README's first command runs through Ray (its ``--only``)."""
    argv = readme_command()
    return argv[only_span(argv)]


CHAPTERS = readme_chapters()
"""The chapters run through Ray here: RCL and another (the whole smoke book through Ray, compared file for file
with the in-process one, is ``benchmarks/ray_executor.py --profile smoke``: too long for make test's budget)."""


def reproduce(out: Path, *extra: str, only: list[str] | None = None) -> subprocess.Popen:
    """The README's command (a local cluster), writing to ``out`` and a cache beside it (``only``: these chapters
    instead of the README's)."""
    argv = readme_command()
    if only is not None:
        argv[only_span(argv)] = only
    env = {k: v for k, v in os.environ.items() if k != "SENTCL_DATA"} | {"SENTCL_CACHE": str(out.parent / "cache")}
    return subprocess.Popen([sys.executable, "-m", "sentcl", *argv, "--out", str(out), *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def test_the_readmes_command_runs_rcl_and_another_chapter_on_a_local_cluster():
    argv = readme_command()
    assert argv[:3] == ["reproduce", "--profile", "smoke"] and "--address" not in argv
    assert argv[argv.index("--executor") + 1] == "ray"
    assert "rcl" in CHAPTERS and len(CHAPTERS) >= 2 and set(CHAPTERS) <= set(BUILDABLE)


def kill_a_training_stage(cache: Path, done: threading.Event, killed: list[str]) -> None:
    """SIGKILL the Ray workers running stages once a training stage has written a complete checkpoint (a ``.partial``
    folder under a stage of the cache holding one), once."""
    while not done.is_set():
        for partial in cache.glob("artifacts/*/.*.partial"):
            if not checkpoints(partial):  # none complete yet
                continue
            workers = [p for p in psutil.process_iter(["cmdline"]) if (p.info["cmdline"] or [""])[0].startswith("ray::_task")]
            for worker in workers:
                worker.send_signal(signal.SIGKILL)
                killed.append(f"{partial.parent.name} (pid {worker.pid})")
            if workers:
                return
        time.sleep(0.02)


def csv_rows(path: Path) -> list[str]:
    """A results-like file's lines without its run ids (each run has its own)."""
    import pandas as pd

    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.drop(columns=[c for c in ("run_id",) if c in frame]).to_csv(index=False).splitlines()


def health(out: Path) -> dict[tuple[str, str], dict]:
    """The training records under ``out`` of the chapters run through Ray, by (chapter, run name): two chapters may
    name runs alike (RCL's and the geometry chapter's entropy models)."""
    found = {}
    for path in Layout(out).records.glob("training-*.json"):
        record = json.loads(path.read_text())
        if record["chapter"] in CHAPTERS:
            found[record["chapter"], record["name"]] = record
    return found


def test_the_ray_executor_gives_the_in_process_numbers_also_after_a_killed_worker(smoke_book, tmp_path):
    _project, book, status, output = smoke_book
    assert status == 0, output[-3000:]
    out = tmp_path / "out"
    done, killed = threading.Event(), []
    watcher = threading.Thread(target=kill_a_training_stage, args=(tmp_path / "cache", done, killed), daemon=True)
    watcher.start()
    proc = reproduce(out, "-p", "checkpoint_steps", "2")  # not in a run's key: the same runs, with checkpoints
    log, _ = proc.communicate(timeout=800)
    done.set()
    assert proc.returncode == 0, log[-4000:]
    assert killed, "no training stage was caught in the middle: nothing was killed\n" + log[-2000:]
    lay, theirs = Layout(out), Layout(book)
    for chapter in CHAPTERS:
        for path, expected in ((lay.results(chapter), theirs.results(chapter)), (lay.claims(chapter), theirs.claims(chapter)),
                               (lay.geometry(chapter), theirs.geometry(chapter))):
            assert csv_rows(path) == csv_rows(expected), path.name
    records, in_process = health(out), health(book)
    assert sorted(records) == sorted(in_process) and records
    for name, record in records.items():
        assert record["health"] == in_process[name]["health"], name
        assert record["config"]["built_by"].endswith(f"({record['device']})")  # the node and the device
    resumed = [r for r in records.values() if r["config"].get("resumed_from_step")]
    assert resumed, f"killed {killed}, but no stage resumed from a checkpoint"
    assert "stages" in log and all(chapter in log for chapter in CHAPTERS)  # their progress bars


@pytest.mark.slow  # ~30 s: a Ray cluster building a chapter's stages (make check stays within its 2 minutes)
def test_a_stage_that_raises_is_one_line_and_the_others_are_built(tmp_path):
    out = tmp_path / "out"
    proc = reproduce(out, "-p", "softmax_batch_sampler", "no-such-sampler", only=["mnrl_sbert"])  # its softmax rows' stages raise
    log, _ = proc.communicate(timeout=800)
    assert proc.returncode == 1, log[-3000:]
    failed = [line for line in log.splitlines() if line.startswith("sentcl: FAILED mnrl_sbert: stage")]
    smoke = shipped_parameters("mnrl_sbert", "smoke")
    assert len(failed) == len(smoke["softmax_rows"]) * len(smoke["seeds"]), log[-3000:]
    assert all(".SBERT.seed." in line and "KeyError: 'no-such-sampler'" in line for line in failed), failed
    built = {p.parent.parent.name for p in (tmp_path / "cache" / "artifacts").glob(f"mnrl_sbert.*/*/{MANIFEST}")}
    assert built == {f"mnrl_sbert.MNRLSBERT.seed.{s}" for s in smoke["seeds"]}  # the MNRL stages were built and kept
    assert not Layout(out).results("mnrl_sbert").exists()  # its notebook did not run on stages that failed


def test_jobs_are_the_chapters_a_task_can_build_with_their_plans():
    p = {name: shipped_parameters(name, "smoke") for name in REGISTRY}
    found = jobs(p)
    assert [j.chapter for j in found] == BUILDABLE
    mnrl = next(j for j in found if j.chapter == "mnrl_sbert")
    assert [s.name for s in mnrl.plan.alone()] == \
        [f"mnrl_sbert.{row}.seed.{s}" for row in ("MNRLSBERT", "SBERT") for s in p["mnrl_sbert"]["seeds"]]
    rcl = next(j for j in found if j.chapter == "rcl").plan  # every stage alone: the STS tasks' and Table 2's folds' (the smoke data's COUGH)
    assert [s.name for s in rcl.alone()] == rcl.names and {n.split(".")[1] for n in rcl.names} == {"base", "entropy", "store", "final", "faq"}


def test_last_line_is_the_error_raised_in_the_worker():
    err = RuntimeError("ray::_task() (pid=1, ip=10.0.0.1)\n  File \"x.py\", line 3, in f\n    raise KeyError\nKeyError: 'x'\n")
    assert last_line(err) == "KeyError: 'x'"
    assert last_line(RuntimeError("")) == "RuntimeError"


def test_two_chapters_runs_of_one_name_keep_a_record_each(tmp_path, monkeypatch):
    """The tasks of a chapter write their records under that chapter's run id (Job.run_id), as its notebook does in
    process: RCL's and the geometry chapter's entropy models share a run name, and each keeps its record (under one
    run id for every task, the second overwrote the first)."""
    from sentcl.book.publishing.executor import build_stage
    from sentcl.chapters import geometry, rcl

    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SENTCL_DATA", raising=False)
    out = tmp_path / "out"
    params = {name: shipped_parameters(name, "smoke") | {"out_dir": str(out), "data_dir": None} for name in ("rcl", "geometry")}
    work = {job.chapter: job for job in jobs(params)}
    phi = params["rcl"]["phis"][0]
    family = params["geometry"]["base_models"][next(iter(params["geometry"]["base_models"]))]
    stages = {"rcl": rcl.entropy_stage(phi), "geometry": geometry.entropy_stage(family, params["geometry"]["rcl_phis"][0])}
    assert work["rcl"].run_id != work["geometry"].run_id
    for chapter, stage in stages.items():
        build_stage(chapter, params[chapter], stage, run_id=work[chapter].run_id)
    records = [json.loads(p.read_text()) for p in Layout(out).records.glob("training-*.json")]
    assert {(r["chapter"], r["run_id"]) for r in records} == {(c, work[c].run_id) for c in stages}
    entropy = [r for r in records if r["name"].startswith("entropy model")]  # RCL's task trained its base first
    assert sorted((r["chapter"], r["run_id"]) for r in entropy) == sorted((c, work[c].run_id) for c in stages)
    assert len({r["name"] for r in entropy}) == 1  # one name, two records
