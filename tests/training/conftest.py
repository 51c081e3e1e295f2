"""Fixtures shared by the training tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def one_thread():
    """The tiny model is too small for intra-op threads: on a shared 2-core machine they only spin.
    A module asks for it with ``pytestmark = pytest.mark.usefixtures("one_thread")``."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
