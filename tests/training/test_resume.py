"""Resume after SIGKILL, for real: kill a training process, run the same command again, and it must
end with exactly the scores and weights of a run that was never interrupted (CPU, same seed).

The processes, the kill and the comparison are ``benchmarks/resume_check.py`` (which records the
same check on this machine in ``benchmarks/results/resume_check_cpu.json``); this test runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

STEPS = 30  # the script's run: 2 epochs of 15 steps
KILL_AFTER = 12  # well inside the run


@pytest.mark.slow
def test_sigkill_then_same_command_resumes_to_the_same_final_score(tmp_path, project_root):
    script = project_root / "benchmarks" / "resume_check.py"
    out = tmp_path / "record.json"
    command = [sys.executable, str(script), "--kill-after", str(KILL_AFTER), "--out", str(out), "--workdir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert out.is_file(), (done.stdout + done.stderr)[-3000:]
    record = json.loads(out.read_text())

    assert record["victim_returncode"] == -signal.SIGKILL
    assert record["killed_after_checkpoint"] >= KILL_AFTER and not record["summary_after_kill"]
    expected, got = record["reference"], record["resumed"]
    assert expected["resumed_from"] is None
    assert record["killed_after_checkpoint"] <= got["resumed_from"] < STEPS  # it continued from a checkpoint
    assert got["final"] == expected["final"]  # the same final dev score, exactly
    assert got["evaluations"] == expected["evaluations"] and got["losses"] == expected["losses"]
    assert [e["step"] for e in got["evaluations"]] == [8, 15, 23, 30]
    assert got["best_step"] == expected["best_step"] and got["weights"] == expected["weights"]
    assert record["identical"] and done.returncode == 0
    assert not record["checkpoints_left_after_resume"]  # cleaned up once the model was written
