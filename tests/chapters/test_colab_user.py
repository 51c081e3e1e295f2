"""What a Colab user does, offline: a fresh Python with torch already installed (Colab's own build;
here the CPU wheel from ``$TORCH_WHEELS``) and the packages sentcl needs but transformers, and no
sentcl; a chapter notebook run by papermill from a folder outside the checkout with only ``-p profile
smoke``. Its install cell installs sentcl from the wheel ``make wheel`` builds, uploaded beside the notebook,
then transformers at the lock's version from a local folder that also holds a newer one (what an
unpinned install would take), and the run must give the results ``sentcl reproduce --profile smoke``
gives. Without ``$SENTCL_SOURCE`` (the placeholder address) it stops at the install cell with one line.

pip runs with ``PIP_NO_INDEX=1`` and that folder as its only source: the install cell may download
nothing, so the test proves that it keeps the installed torch and needs nothing it was not given.
The fresh environment is filled by uv from its cache where it can (``make setup`` filled it), else
from the package registry; the two transformers wheels are downloaded once per session.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sentcl.book.build import install
from sentcl.book.output.results import load_results
from sentcl.chapters import CHAPTERS

ROOT = Path(__file__).resolve().parents[2]
TORCH_WHEELS = Path(os.environ.get("TORCH_WHEELS", "/opt/wheels"))
CHAPTER = "mnrl_sbert"  # the fastest chapter of the smoke book
LEFT_TO_THE_CELL = "transformers"  # not preinstalled: the install cell installs it, at the lock's version
pytestmark = pytest.mark.slow


def _locked(name: str) -> str:
    """The lock's version of ``name``."""
    found = re.search(rf"^{re.escape(name)}==(\S+)$", (ROOT / "requirements" / "lock.txt").read_text(), re.M)
    assert found, f"{name} is not in requirements/lock.txt"
    return found.group(1)


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """A folder holding :data:`LEFT_TO_THE_CELL` at the lock's version and at the newest newer one."""
    folder = tmp_path_factory.mktemp("wheelhouse")
    version = _locked(LEFT_TO_THE_CELL)
    for spec in (f"{LEFT_TO_THE_CELL}=={version}", f"{LEFT_TO_THE_CELL}>{version}"):
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                               "-d", str(folder), spec], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            pytest.skip(f"could not download {spec} from the package registry: {proc.stderr.strip()[-300:]}")
    assert len(list(folder.glob("*.whl"))) == 2
    return folder


@pytest.fixture(scope="module")
def released_wheel(tmp_path_factory) -> Path:
    """The wheel the README's command builds: ``make wheel`` runs ``sentcl wheel --out dist``, here into a
    temporary folder; the checkout is left as it was (no build/, no egg-info: git sees nothing new)."""
    out = tmp_path_factory.mktemp("dist")
    before = _checkout_state()
    proc = subprocess.run([str(Path(sys.executable).with_name("sentcl")), "wheel", "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=out)
    assert proc.returncode == 0, proc.stderr
    built = sorted(out.glob("sentcl-*-py3-none-any.whl"))
    assert [str(p) for p in built] == [proc.stdout.strip()]
    assert _checkout_state() == before and not (ROOT / "build").exists()
    return built[0]


def _checkout_state() -> str:
    """Every file git sees in the checkout that is not committed as it is, ignored ones included."""
    return subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--ignored"], capture_output=True, text=True,
                          check=True).stdout


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
    dependencies at the lock's pins, but not sentcl nor :data:`LEFT_TO_THE_CELL`."""
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
    subprocess.run([_uv(), "pip", "uninstall", "--python", str(python), "sentcl", LEFT_TO_THE_CELL], check=True,
                   capture_output=True)
    assert not _imports_sentcl(python) and _version(python, LEFT_TO_THE_CELL) is None
    return python


def _imports_sentcl(python: Path) -> str | None:
    proc = subprocess.run([str(python), "-c", "import sentcl; print(sentcl.__file__)"], capture_output=True, text=True,
                          cwd="/")
    return proc.stdout.strip() if proc.returncode == 0 else None


def _colab_env(source: str | None, cache: Path, wheelhouse: Path | None = None) -> dict[str, str]:
    drop = ("SENTCL_DATA", "SENTCL_PROGRESS", "SENTCL_PROGRESS_LABEL", "SENTCL_RUN_ID", "PYTHONPATH", "VIRTUAL_ENV",
            "PYTEST_CURRENT_TEST", "SENTCL_SOURCE", "SENTCL_DEBUG")
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"PIP_NO_INDEX": "1", "SENTCL_CACHE": str(cache)}
    if wheelhouse is not None:
        env["PIP_FIND_LINKS"] = str(wheelhouse)
    return env if source is None else env | {"SENTCL_SOURCE": source}


def _papermill(python: Path, work: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    work.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(python), "-m", "papermill", str(ROOT / "notebooks" / f"{CHAPTER}.ipynb"), "out.ipynb",
         "-p", "profile", "smoke", "--log-output"],
        cwd=work, env=env, capture_output=True, text=True, timeout=1200,
    )


def _version(python: Path, package: str) -> str | None:
    proc = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def _torch_version(python: Path) -> str | None:
    return _version(python, "torch")


def _install_error(work: Path):
    """The one error of the executed notebook, raised by its install cell, which stopped the run."""
    nb = nbformat.read(work / "out.ipynb", as_version=4)
    errors = [(i, o) for i, c in enumerate(nb.cells) if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1
    index, error = errors[0]
    assert error.ename == "SystemExit" and "\n" not in error.evalue
    assert install.cell_source(nb.cells[index].source) is not None  # raised by the install cell
    assert all(c.get("execution_count") is None for c in nb.cells[index + 1:] if c.cell_type == "code")  # stopped there
    return error


def test_the_install_cell_stops_the_notebook_with_one_line_when_pip_fails(colab_python, tmp_path):
    work = tmp_path / "colab"
    missing = (tmp_path / "no-such" / "sentcl-0.1.0-py3-none-any.whl").as_uri()
    proc = _papermill(colab_python, work, _colab_env(missing, tmp_path / "cache"))
    assert proc.returncode != 0
    error = _install_error(work)
    assert error.evalue.startswith("sentcl could not be installed from ") and "no-such" in error.evalue
    assert "To exit" not in proc.stderr  # IPython's hint after a SystemExit, silenced by the cell
    assert not _imports_sentcl(colab_python)


def test_without_a_source_the_install_cell_says_how_to_install_and_tries_nothing(colab_python, tmp_path):
    """The committed notebook on a fresh runtime, no $SENTCL_SOURCE, no wheel uploaded: the placeholder
    address is not tried (a `git` on PATH that would record a clone stays unused); one line says what to do."""
    work, bin_dir, called = tmp_path / "colab", tmp_path / "bin", tmp_path / "git-called"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f"#!/bin/sh\ntouch {called}\nexit 1\n")
    (bin_dir / "git").chmod(0o755)
    env = _colab_env(None, tmp_path / "cache")
    proc = _papermill(colab_python, work, env | {"PATH": f"{bin_dir}:{env['PATH']}"})
    assert proc.returncode != 0
    assert _install_error(work).evalue == install.INSTALL_INSTRUCTION
    assert not called.exists() and "To exit" not in proc.stderr
    assert not _imports_sentcl(colab_python)


def test_a_colab_user_runs_a_chapter_outside_the_checkout_with_only_the_profile(colab_python, released_wheel, wheelhouse,
                                                                                smoke_book, tmp_path):
    """From a folder outside the checkout, `papermill <nb> out.ipynb -p profile smoke`: the install
    cell installs sentcl from the released wheel, uploaded to that folder (the committed notebook names the
    placeholder address, no $SENTCL_SOURCE), and its missing dependency at the lock's version
    (nothing downloaded, torch kept), the notebook applies the smoke profile from the package, shows
    its training progress in papermill's log, and writes the results `sentcl reproduce --profile
    smoke` wrote, under runs/smoke of the working folder."""
    torch_before = _torch_version(colab_python)
    work = tmp_path / "colab"
    work.mkdir()
    shutil.copy2(released_wheel, work / released_wheel.name)  # the upload
    proc = _papermill(colab_python, work, _colab_env(None, tmp_path / "cache", wheelhouse))
    assert proc.returncode == 0, proc.stderr[-4000:]
    installed = _imports_sentcl(colab_python)
    assert installed and str(ROOT) not in installed and "site-packages" in installed  # the wheel, not the checkout
    assert _torch_version(colab_python) == torch_before
    assert _version(colab_python, LEFT_TO_THE_CELL) == _locked(LEFT_TO_THE_CELL)  # the lock's, not the newer one
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
    env["SENTCL_CACHE"] = str(out.parent / "cache")  # the smoke book's own cache (tests/conftest.py)
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
