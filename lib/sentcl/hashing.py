"""Content hashing for caches: a stable key for any JSON-able configuration."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from typing import Any


def stable_hash(obj: Any, length: int = 16) -> str:
    """A hex digest of ``obj`` that does not depend on dict order or the Python process.

    ``obj`` must be JSON-serialisable (paths and other objects are turned into strings).
    """
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


def file_sha256(path: str | os.PathLike, chunk: int = 1 << 20) -> str:
    """The sha256 hex digest of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def texts_hash(texts: Iterable[str], length: int = 16) -> str:
    """A digest of an ordered sequence of texts (order and content both matter)."""
    h = hashlib.sha256()
    n = 0
    for t in texts:
        b = t.encode("utf-8")
        h.update(len(b).to_bytes(8, "little"))
        h.update(b)
        n += 1
    h.update(n.to_bytes(8, "little"))
    return h.hexdigest()[:length]
