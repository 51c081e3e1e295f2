"""Shared test fixtures.

- Every test session gets its own cache root (``$SENTCL_CACHE``) so runs never read a
  stale cache, and the hub is forced offline (this machine has no hub access; a test that
  reaches for the network must fail loudly, not hang).
- ``smoke_book``: `sentcl reproduce --profile smoke` of every chapter, run once per `make test` (its two
  pytest-xdist workers share the one build); each chapter's tests read its output.
- ``one_thread``: torch on one thread for a module that trains the tiny model.
- ``shared_data``: the real data root ``../shared/data`` (or ``$SENTCL_TEST_DATA``);
  tests that need it are skipped, with the reason shown, when it is absent.
- ``sentcl_wheel``: sentcl's wheel, built once per session from the checkout.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sentcl.book.publishing import site

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# torch's worker threads spin while waiting; on a loaded 2-core machine that makes two
# threads slower than one (measured: tiny-model encode 3.5 s -> 0.15 s with PASSIVE)
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    """A fresh sentcl cache for the whole session (shared by its tests)."""
    old = os.environ.get("SENTCL_CACHE")
    os.environ["SENTCL_CACHE"] = str(tmp_path_factory.mktemp("sentcl-cache"))
    yield
    if old is None:
        os.environ.pop("SENTCL_CACHE", None)
    else:
        os.environ["SENTCL_CACHE"] = old


def _shared_data_root() -> Path | None:
    explicit = os.environ.get("SENTCL_TEST_DATA")
    candidate = Path(explicit) if explicit else ROOT.parent / "shared" / "data"
    return candidate if candidate.is_dir() else None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data root (../shared/data); skips the test when it is absent."""
    root = _shared_data_root()
    if root is None:
        pytest.skip("real data root ../shared/data not present (set SENTCL_TEST_DATA to point at one)")
    return root


@pytest.fixture(scope="module")
def one_thread():
    """The tiny model is too small for intra-op threads: on a shared 2-core machine they only spin.
    A module asks for it with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def sentcl_wheel(tmp_path_factory) -> Path:
    """sentcl's wheel built from the checkout (what the book puts beside its pages)."""
    from sentcl.book.publishing import install

    return install.build_wheel(ROOT, tmp_path_factory.mktemp("wheel"))


# --------------------------------------------------------------------------- the smoke book

@pytest.fixture(scope="session")
def mathjax():
    """Fails the test when the vendored MathJax is missing (the offline book needs it)."""
    if not (ROOT / site.MATHJAX).is_file():
        pytest.fail(f"MathJax is missing ({ROOT / site.MATHJAX}): run `python3 scripts/fetch_mathjax.py` (make setup does)")


def copy_project(target: Path) -> Path:
    """A copy of the checkout's book sources, notebooks and recorded benchmark results (which
    chapters show), MathJax linked."""
    target.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(ROOT / "book", target / "book", ignore=shutil.ignore_patterns("_vendor", "_generated", ".ipynb_checkpoints"))
    (target / "book" / "_vendor").symlink_to(ROOT / "book" / "_vendor", target_is_directory=True)
    shutil.copytree(ROOT / "notebooks", target / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "benchmarks" / "results", target / "benchmarks" / "results")
    return target


def smoke_cache(base: Path) -> Path:
    """The smoke book's own cache root (``$SENTCL_CACHE``), beside its project and output."""
    return base / "cache"


@pytest.fixture(scope="session")
def smoke_book(tmp_path_factory, mathjax):
    """`sentcl reproduce --profile smoke` on a copy of the project (its real notebooks),
    built outside the checkout, once per `make test`: under pytest-xdist the first worker that needs it builds it
    (the others wait on a file lock) and every worker reads the one build. Returns (project, out, status, output)."""
    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the folder above each worker's own: one for the whole run
    base = shared / "smoke-book"
    project, out, done = base / "project", base / "out", base / "status.json"
    with FileLock(str(shared / "smoke-book.lock")):
        if not done.is_file():
            shutil.rmtree(base, ignore_errors=True)
            copy_project(project)
            assert (project / "notebooks" / "mnrl_sbert.ipynb").is_file(), "the MNRL-SBERT chapter's notebook is missing"
            env = {k: v for k, v in os.environ.items() if k != "SENTCL_DATA"}
            env["SENTCL_CACHE"] = str(smoke_cache(base))  # its own: the artifacts it built are the smoke notebooks' alone
            proc = subprocess.run(
                [sys.executable, "-m", "sentcl", "reproduce", "--profile", "smoke", "--out", str(out), "--book-dir",
                 str(out)], capture_output=True, text=True, timeout=1500, cwd=project, env=env,
            )
            done.write_text(json.dumps({"status": proc.returncode, "output": proc.stdout + proc.stderr}))
    built = json.loads(done.read_text())
    return project, out, built["status"], built["output"]


def measured_seconds(readme: Path = ROOT / "tests" / "README.md") -> dict[str, float]:
    """Module -> the one-process seconds of its slow tests, as tests/README.md lists them (0 where it lists none)."""
    found: dict[str, float] = {}
    if readme.is_file():
        for module, seconds in re.findall(r"^\| `(tests/[^`:]+)::test_\w+` \| (\d+\.\d) \|", readme.read_text(encoding="utf-8"), re.M):
            found[module] = found.get(module, 0.0) + float(seconds)
    return found


def pytest_collection_modifyitems(config, items):
    """A test that reads the smoke book (every chapter run on the tiny model, minutes) is slow: `make check`
    leaves it, with the other slow tests, to `make test`.

    Then the modules are put in the order that keeps `make test`'s two pytest-xdist workers (``--dist loadscope``:
    a module runs on one worker) both busy to the end, longest first by the times tests/README.md lists: the
    longest module that reads the smoke book first (its worker builds the book, then runs it), then the slow
    modules that do not read it (the other worker, meanwhile), then the other smoke-book readers, then the quick
    modules in their own order; each module keeps its tests' order."""
    for item in items:
        if "smoke_book" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
    smoke: dict[str, bool] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        smoke[module] = smoke.get(module, False) or "smoke_book" in getattr(item, "fixturenames", ())
    seconds = measured_seconds()
    first_smoke = max((m for m in smoke if smoke[m]), key=lambda m: seconds.get(m, 0.0), default=None)

    def rank(module: str) -> tuple[int, float]:
        if module == first_smoke:
            return 0, 0.0
        if not seconds.get(module):
            return 3, 0.0
        return (2 if smoke[module] else 1), -seconds[module]

    order = {m: i for i, m in enumerate(smoke)}
    items.sort(key=lambda item: (*rank(item.nodeid.split("::")[0]), order[item.nodeid.split("::")[0]]))
