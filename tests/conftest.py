"""Shared test fixtures.

- Every test session gets its own cache root (``$SENTCL_CACHE``) so runs never read a
  stale cache, and the hub is forced offline (this machine has no hub access; a test that
  reaches for the network must fail loudly, not hang).
- ``shared_data``: the real data root ``../shared/data`` (or ``$SENTCL_TEST_DATA``);
  tests that need it are skipped, with the reason shown, when it is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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


@pytest.fixture(scope="session")
def project_root() -> Path:
    return ROOT
