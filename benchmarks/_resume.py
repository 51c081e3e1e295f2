"""The SIGKILL-resume checks' shared machinery (``resume_check.py``, ``ifcl_resume_check.py``,
``rcl_resume_check.py``): their command line, the kill and the rerun, the comparison and the record.

Each check is one script with two uses: ``SCRIPT <run> OUT [--pace S]`` runs the job once into ``OUT``
and writes ``OUT/summary.json``; ``SCRIPT [--pace S] [--out PATH] [--workdir DIR]`` starts that command
twice side by side (the reference and the victim), SIGKILLs the victim once ``kill_when`` says so,
runs the victim's command again in its folder, and compares the two summaries.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


def parser(doc: str, run: str, pace: float, result: Path, *, kill_after: int | None = None) -> argparse.ArgumentParser:
    """The command line of a check whose job is ``SCRIPT run OUT``, recording to ``result`` by default
    (``kill_after``: the default of its ``--kill-after``, for a check that kills after a checkpoint
    step; None: no such option)."""
    out = argparse.ArgumentParser(description=doc.splitlines()[0])
    if kill_after is not None:
        out.add_argument("--kill-after", type=int, default=kill_after, help="kill once a checkpoint at this step or later exists")
    out.add_argument("--pace", type=float, default=pace, help="seconds each step sleeps after it")
    out.add_argument("--out", default=str(result), help="the record")
    out.add_argument("--workdir", default=None, help="where the runs go (default: a temporary folder)")
    commands = out.add_subparsers(dest="command")
    one = commands.add_parser(run, help=f"one {run} run (what the check starts three times)")
    one.add_argument("output_dir")
    one.add_argument("--pace", type=float, default=pace)
    return out


def weights_sha256(model) -> str:
    """A SHA-256 of ``model``'s state dict (names and bytes, in name order): equal exactly when the weights are."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode() + tensor.numpy().tobytes())
    return digest.hexdigest()


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """The job's ``out/summary.json``, what the check compares."""
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


@dataclass
class Rerun:
    """What :func:`kill_and_rerun` saw: the kill, and the reference's and the resumed run's summaries."""

    killed: Any
    """``kill_when``'s value at the kill (e.g. the checkpoint step it found)."""
    victim_returncode: int
    summary_after_kill: bool
    """Whether the victim had written its summary when it was killed (it must not have)."""
    at_kill: Any
    """``after_kill(victim folder)``, taken before the rerun (None without ``after_kill``)."""
    expected: dict[str, Any]
    got: dict[str, Any]
    wall_time_s: float

    def same(self, keys: Sequence[str]) -> dict[str, bool]:
        """Per key of the summaries, whether the resumed run's value equals the reference's exactly."""
        return {key: self.got[key] == self.expected[key] for key in keys}


def kill_and_rerun(
    script: str | Path,
    run: str,
    workdir: Path,
    pace: float,
    *,
    kill_when: Callable[[Path], Any],
    not_killed: str,
    after_kill: Callable[[Path], Any] | None = None,
    timeout: float = 240,
    what: str = "training",
) -> Rerun:
    """Start ``script run workdir/reference`` and ``script run workdir/interrupted``; SIGKILL the second
    once ``kill_when(its folder)`` is truthy; let the first finish; run the second's command again.

    Args:
        not_killed: how the error ends when the victim ends first ("the victim ended (exit N) ...").
        after_kill: what to note of the victim's folder right after the kill.
        what: the job's name in the error of a failed process.
    """
    reference, interrupted = workdir / "reference", workdir / "interrupted"
    started = time.perf_counter()
    straight, victim = _start(script, run, reference, pace), _start(script, run, interrupted, pace)
    try:
        deadline, killed = time.monotonic() + timeout, None
        while time.monotonic() < deadline and victim.poll() is None:
            killed = kill_when(interrupted)
            if killed:
                os.kill(victim.pid, signal.SIGKILL)
                break
            time.sleep(0.05)
        victim.wait(timeout=60)
        if not killed:
            raise RuntimeError(f"the victim ended (exit {victim.returncode}) {not_killed}: raise --pace")
        at_kill = after_kill(interrupted) if after_kill is not None else None
        summary_after_kill = (interrupted / "summary.json").exists()
        _finish(straight, timeout, what)
    finally:
        for process in (straight, victim):
            if process.poll() is None:
                process.kill()
                process.wait()
    _finish(_start(script, run, interrupted, pace), timeout, what)  # the same command again
    return Rerun(
        killed=killed,
        victim_returncode=victim.returncode,
        summary_after_kill=summary_after_kill,
        at_kill=at_kill,
        expected=json.loads((reference / "summary.json").read_text(encoding="utf-8")),
        got=json.loads((interrupted / "summary.json").read_text(encoding="utf-8")),
        wall_time_s=round(time.perf_counter() - started, 1),
    )


def write_record(
    args: argparse.Namespace,
    benchmark: str,
    check: Callable[[Path], dict[str, Any]],
    settings: dict[str, Any],
    *,
    command: str | None = None,
    with_platform: bool = True,
) -> dict[str, Any]:
    """Run ``check(workdir)`` and write its outcome to ``args.out`` with the date, the machine (with its
    load averages before and after), the versions and ``settings``; returns the outcome.

    ``command``: the command line, recorded under ``"command"``; ``with_platform``: record the platform.
    """
    from sentcl.book.output.run_records import environment
    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = check(Path(args.workdir or tmp))
    env = environment()
    record = {
        "benchmark": benchmark,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        **({"command": command} if command is not None else {}),
        "machine": {
            "device": env["device"],
            "cpu_count": os.cpu_count(),
            **({"platform": platform.platform()} if with_platform else {}),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": env["versions"],
        "settings": settings,
        **outcome,
    }
    atomic_write_json(args.out, record)
    return outcome


def _start(script: str | Path, run: str, out: Path, pace: float) -> subprocess.Popen:
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, str(Path(script).resolve()), run, str(out), "--pace", str(pace)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(process: subprocess.Popen, timeout: float, what: str) -> None:
    output, _ = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise RuntimeError(f"a {what} process failed (exit {process.returncode}):\n{output[-3000:]}")
