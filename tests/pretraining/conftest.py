"""The real pretraining corpus, built once for the tests that read it (about 7 s on 2 cores)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def real_corpus(shared_data):
    from sentcl.pretraining.corpus import build_corpus

    return build_corpus(shared_data)
