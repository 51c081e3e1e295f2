"""A Colab user's disconnect, for real: a chapter notebook run by papermill with ``persistent_dir``
(where Colab would have Google Drive) is killed mid-training; everything machine-local outside that
folder (the working folder, the home folder and its default cache) is deleted, as a recycled VM loses
it; the same command in a fresh working folder says ``resumed <run> from step N`` and ends with the
results of a run that was never interrupted. Then the cached model files of a finished run are cut
short (a full Drive, a killed sync): the rerun says which file was damaged, rebuilds it, and ends
with the same results, never a deserialisation error.

The training steps are slowed in the killed run only (a ``sitecustomize`` that sleeps before each
AdamW step in the notebook's kernel; the numbers do not change) so that the kill lands between
checkpoints; ``checkpoint_steps`` 2 is not part of a run's cache key, so every run computes the same.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sentcl.book.output.results import load_results

from .test_colab_user import assert_same_results

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "mnrl_sbert"
pytestmark = pytest.mark.slow

PACED_KERNEL = """\
import sys
if any("ipykernel" in part for part in getattr(sys, "orig_argv", [])):
    import time
    import torch
    _step = torch.optim.AdamW.step
    def _paced(self, *args, **kwargs):
        time.sleep(0.5)
        return _step(self, *args, **kwargs)
    torch.optim.AdamW.step = _paced
"""


def _command(persistent: Path) -> list[str]:
    return [sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{CHAPTER}.ipynb"), "out.ipynb", "-p", "profile", "smoke",
            "-p", "persistent_dir", str(persistent), "-p", "checkpoint_steps", "2", "--log-output"]


def _env(home: Path, **extra: str) -> dict[str, str]:
    drop = ("SENTCL_CACHE", "SENTCL_DATA", "SENTCL_PROGRESS", "SENTCL_PROGRESS_LABEL", "SENTCL_RUN_ID", "PYTEST_CURRENT_TEST",
            "SENTCL_OUTPUT_CLAIMED")
    return {k: v for k, v in os.environ.items() if k not in drop} | {"HOME": str(home)} | extra


def _run(persistent: Path, vm: Path) -> subprocess.CompletedProcess:
    (vm / "work").mkdir(parents=True)
    return subprocess.run(_command(persistent), cwd=vm / "work", env=_env(vm / "home"), capture_output=True, text=True,
                          timeout=900)


def _checkpoints(persistent: Path) -> list[Path]:
    return sorted((persistent / "cache" / "artifacts").glob("*/.*.partial/checkpoints/checkpoint-*"))


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> Path:
    """The persistent folder of a run that was never interrupted."""
    base = tmp_path_factory.mktemp("uninterrupted")
    proc = _run(base / "persistent", base / "vm")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return base / "persistent"


def test_a_killed_notebook_resumes_from_the_persistent_folder_on_a_fresh_machine(uninterrupted, tmp_path):
    persistent, vm = tmp_path / "persistent", tmp_path / "vm"
    pace = tmp_path / "pace"
    pace.mkdir()
    (pace / "sitecustomize.py").write_text(PACED_KERNEL)
    (vm / "work").mkdir(parents=True)
    victim = subprocess.Popen(_command(persistent), cwd=vm / "work", env=_env(vm / "home", PYTHONPATH=str(pace)),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while not _checkpoints(persistent):
            assert victim.poll() is None, "the notebook ended before its first checkpoint"
            assert time.monotonic() < deadline, "no checkpoint within 10 minutes"
            time.sleep(0.2)
    finally:
        os.killpg(victim.pid, signal.SIGKILL)  # papermill and its kernel, as a recycled VM stops them
        victim.wait()
    assert _checkpoints(persistent)
    shutil.rmtree(vm)  # the machine goes; the persistent folder stays

    proc = _run(persistent, tmp_path / "fresh-vm")
    assert proc.returncode == 0, proc.stderr[-4000:]
    resumed = re.findall(r"^resumed (.+) from step (\d+) ", proc.stderr, re.M)
    assert resumed and all(int(step) >= 2 for _, step in resumed), proc.stderr[-3000:]
    assert_same_results(load_results(persistent / "runs" / "smoke", [CHAPTER]),
                        load_results(uninterrupted / "runs" / "smoke", [CHAPTER]))


def test_cut_short_model_files_in_the_cache_are_rebuilt_not_a_deserialisation_error(uninterrupted, tmp_path):
    persistent = tmp_path / "persistent"
    shutil.copytree(uninterrupted, persistent)
    damaged = sorted((persistent / "cache").rglob("*.safetensors"))
    assert damaged
    for path in damaged:
        with path.open("r+b") as f:
            f.truncate(path.stat().st_size // 3)
    proc = _run(persistent, tmp_path / "vm")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "SafetensorError" not in proc.stderr and "Traceback" not in proc.stderr
    assert re.search(r"^sentcl: damaged file .+ building (it|stage '\S+') again$", proc.stderr, re.M), proc.stderr[-3000:]
    assert_same_results(load_results(persistent / "runs" / "smoke", [CHAPTER]),
                        load_results(uninterrupted / "runs" / "smoke", [CHAPTER]))
