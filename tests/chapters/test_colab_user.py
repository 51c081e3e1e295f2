"""What a Colab user does, offline: a fresh Python with torch already installed (Colab's own build;
here the CPU wheel from ``$TORCH_WHEELS``) and the packages sentcl needs, but no sentcl; a chapter
notebook run by papermill from a folder outside the checkout with only ``-p profile smoke``. Its
install cell installs sentcl from a locally built wheel (``$SENTCL_SOURCE``, where Colab takes the
repository) and the run must give the results ``sentcl reproduce --profile smoke`` gives.

pip runs with ``PIP_NO_INDEX=1``: the install cell may download nothing, so the test proves that
it keeps the installed torch and needs only sentcl itself. The fresh environment is filled by uv
from its cache where it can (``make setup`` filled it), else from the package registry.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sentcl.book import install
from sentcl.book.chapter import CHAPTERS
from sentcl.book.results import load_results

ROOT = Path(__file__).resolve().parents[2]
TORCH_WHEELS = Path(os.environ.get("TORCH_WHEELS", "/opt/wheels"))
CHAPTER = "mnrl_sbert"  # the fastest chapter of the smoke book
pytestmark = pytest.mark.slow


def _uv() -> str:
    uv = Path(sys.executable).with_name("uv")
    found = str(uv) if uv.exists() else shutil.which("uv")
    assert found, "uv is installed in the project's environment by the Makefile"
    return found


def _uv_install(python: Path, *args: str) -> None:
    """``uv pip install`` into ``python``'s environment: from uv's cache alone, else the registry."""
    base = [_uv(), "pip", "install", "--python", str(python), *args]
    if subprocess.run([*base, "--offline"], capture_output=True, text=True).returncode != 0:
        subprocess.run(base, check=True, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory, sentcl_wheel) -> Path:
    """A fresh virtual environment (with pip, as Colab's Python has) holding torch and sentcl's
    dependencies at the lock's pins, but not sentcl."""
    torch = (ROOT / "requirements" / "torch.txt").read_text().strip()
    if not sorted(TORCH_WHEELS.glob("torch-*.whl")):
        pytest.skip(f"no torch wheel in {TORCH_WHEELS} (set $TORCH_WHEELS to a folder holding {torch}'s wheel): "
                    "a fresh environment would download torch from the network")
    venv = tmp_path_factory.mktemp("colab") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    _uv_install(python, "--find-links", str(TORCH_WHEELS), torch)
    _uv_install(python, "--find-links", str(TORCH_WHEELS), "-c", str(ROOT / "requirements" / "lock.txt"),
                f"sentcl[offline] @ {sentcl_wheel.as_uri()}")
    subprocess.run([_uv(), "pip", "uninstall", "--python", str(python), "sentcl"], check=True, capture_output=True)
    assert not _imports_sentcl(python)
    return python


def _imports_sentcl(python: Path) -> str | None:
    proc = subprocess.run([str(python), "-c", "import sentcl; print(sentcl.__file__)"], capture_output=True, text=True,
                          cwd="/")
    return proc.stdout.strip() if proc.returncode == 0 else None


def _colab_env(source: str, cache: Path) -> dict[str, str]:
    drop = ("SENTCL_DATA", "SENTCL_PROGRESS", "SENTCL_PROGRESS_LABEL", "SENTCL_RUN_ID", "PYTHONPATH", "VIRTUAL_ENV",
            "PYTEST_CURRENT_TEST")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return env | {"SENTCL_SOURCE": source, "PIP_NO_INDEX": "1", "SENTCL_CACHE": str(cache)}


def _papermill(python: Path, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    work.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(python), "-m", "papermill", str(ROOT / "notebooks" / f"{CHAPTER}.ipynb"), "out.ipynb",
         "-p", "profile", "smoke", "--log-output"],
        cwd=work, env=env, capture_output=True, text=True, timeout=1200,
    )


def _torch_version(python: Path) -> str:
    return subprocess.run([str(python), "-c", "import importlib.metadata as m; print(m.version('torch'))"],
                          capture_output=True, text=True, check=True).stdout.strip()


def test_the_install_cell_stops_the_notebook_with_one_line_when_pip_fails(colab_python, tmp_path):
    work = tmp_path / "colab"
    proc = _papermill(colab_python, work, _colab_env(str(tmp_path / "no-such" / "sentcl-0.1.0-py3-none-any.whl"), tmp_path / "cache"))
    assert proc.returncode != 0
    nb = nbformat.read(work / "out.ipynb", as_version=4)
    errors = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1
    index, error = errors[0]
    assert error.ename == "SystemExit" and "\n" not in error.evalue
    assert error.evalue.startswith("sentcl could not be installed from ") and "no-such" in error.evalue
    assert install.cell_source(nb.cells[index].source) is not None  # raised by the install cell
    assert all(c.get("execution_count") is None for c in nb.cells[index + 1:] if c.cell_type == "code")  # stopped there
    assert not _imports_sentcl(colab_python)


def test_a_colab_user_runs_a_chapter_outside_the_checkout_with_only_the_profile(colab_python, sentcl_wheel, smoke_book, tmp_path):
    """From a folder outside the checkout, `papermill <nb> out.ipynb -p profile smoke`: the install
    cell installs sentcl from the wheel (nothing downloaded, torch kept), the notebook applies the
    smoke profile from the package, shows its training progress in papermill's log, and writes the
    results `sentcl reproduce --profile smoke` wrote, under runs/smoke of the working folder."""
    torch_before = _torch_version(colab_python)
    work = tmp_path / "colab"
    proc = _papermill(colab_python, work, _colab_env(str(sentcl_wheel), tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr[-4000:]
    installed = _imports_sentcl(colab_python)
    assert installed and str(ROOT) not in installed and "site-packages" in installed  # the wheel, not the checkout
    assert _torch_version(colab_python) == torch_before
    log = proc.stderr
    assert f"{CHAPTER}, profile smoke:" in log and "(profile smoke)" in log  # the resolved parameters, printed first
    assert "MNRLSBERT seed 0:" in log and "step/s" in log  # the trainer's bar in papermill's log
    _, out, status, output = smoke_book
    assert status == 0, output
    assert_same_results(load_results(work / "runs" / "smoke", [CHAPTER]), load_results(out, [CHAPTER]))


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c != CHAPTER])
def test_every_chapter_runs_under_papermill_with_only_the_profile(chapter, smoke_book, tmp_path):
    """`papermill notebooks/<chapter>.ipynb out.ipynb -p profile smoke` from a folder outside the
    checkout, in the project's environment (the test above runs CHAPTER in a fresh one): the results
    of `sentcl reproduce --profile smoke`. It
    shares the smoke book's cache, so finished training runs load instead of training again; a
    parameter resolved differently would change their cache key, hence train anew and differ."""
    _, out, status, output = smoke_book
    assert status == 0, output
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SENTCL_DATA", "SENTCL_PROGRESS", "SENTCL_PROGRESS_LABEL",
                                                            "SENTCL_RUN_ID", "PYTEST_CURRENT_TEST")}
    if chapter == "geometry":  # it draws every chapter's geometry files found in its out_dir: give it the others'
        shutil.copytree(out / "geometry", work / "runs" / "smoke" / "geometry")
        for path in (work / "runs" / "smoke" / "geometry").glob("geometry*"):
            path.unlink()
    proc = subprocess.run([sys.executable, "-m", "papermill", str(ROOT / "notebooks" / f"{chapter}.ipynb"), "out.ipynb",
                           "-p", "profile", "smoke"], cwd=work, env=env, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert_same_results(load_results(work / "runs" / "smoke", [chapter]), load_results(out, [chapter]))


def assert_same_results(ours, reproduced) -> None:
    """Every cell of two results frames equal: value and std (to 1e-9), seeds, profile, kind, data, note."""
    key = ["table", "row", "column"]
    compared = ["value", "std", "seeds", "profile", "kind", "data", "note"]
    assert len(ours) == len(reproduced) > 0
    left = ours.set_index(key).sort_index()[compared]
    right = reproduced.set_index(key).sort_index()[compared]
    assert left.index.equals(right.index)
    assert left.drop(columns=["value", "std"]).equals(right.drop(columns=["value", "std"]))
    assert left["value"].tolist() == pytest.approx(right["value"].tolist(), abs=1e-9)
    assert left["std"].fillna(-1).tolist() == pytest.approx(right["std"].fillna(-1).tolist(), abs=1e-9)
