"""Content hashing for caches: a stable key for any JSON-able configuration."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any


def stable_hash(obj: Any, length: int = 16) -> str:
    """A hex digest of ``obj`` that does not depend on dict order or the Python process.

    ``obj`` must be JSON-serialisable (paths and other objects are turned into strings).
    """
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:length]


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
