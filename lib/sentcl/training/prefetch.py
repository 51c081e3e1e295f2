"""A batch's inputs made ahead: the next optimizer step's batches tokenised in a background thread while
the device runs the current step, and copied to the device without making the host wait.

Tokenising a batch took 4–12 ms of a 115 ms BSC step on an H100 (issue 30), time in which the host
queued no work for the device. :class:`BatchInputs` tokenises this process's share of each batch's
columns (:meth:`sentcl.data.TrainingData.batch_texts`) with the model's own ``preprocess`` (the same
call, so the same tensors, as tokenising in the loop), in one worker thread, one batch at a time.

The tokenizer is never used by two threads at once (a Hugging Face fast tokenizer refuses it): the
worker tokenises only between :meth:`BatchInputs.ahead` and :meth:`BatchInputs.settle`, which the
trainer calls before it evaluates, encodes or runs callbacks. On a GPU the tensors are pinned and
copied with ``non_blocking=True``: a copy from pageable memory makes the host wait for the device's
queue (a sync :mod:`sentcl.training.dispatch` and ``torch.cuda.set_sync_debug_mode`` report).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np
import torch

Features = list[dict[str, Any]]
"""A batch's tokenised columns, one ``preprocess`` output per column."""


def to_device(value: Any, device: torch.device) -> Any:
    """``value`` (a tensor or a NumPy array; anything else is returned as it is) on ``device``: from
    pinned memory without waiting when that is a GPU."""
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)
    if not isinstance(value, torch.Tensor):
        return value
    if device.type == "cuda" and value.device.type == "cpu":
        return value.pin_memory().to(device, non_blocking=True)
    return value.to(device)


class BatchInputs:
    """Tokenised batches, made by ``tokenize(rows)`` (host tensors) in a worker thread when asked
    :meth:`ahead`, else when :meth:`take`\\ n."""

    def __init__(self, tokenize: Callable[[np.ndarray], Features], device: torch.device) -> None:
        self.tokenize, self.device = tokenize, device
        self._pool: ThreadPoolExecutor | None = None
        self._pending: dict[bytes, Future[Features]] = {}

    def start(self) -> None:
        """Start the worker thread (:meth:`ahead` tokenises in the caller's thread without one)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sentcl-tokenize")

    def close(self) -> None:
        """Wait for the worker's batch in progress, drop the others, stop the thread."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
        self._pool, self._pending = None, {}

    def ahead(self, batches: Iterable[np.ndarray]) -> None:
        """Tokenise ``batches`` in the worker, in order (those already asked for are not asked again)."""
        if self._pool is None:
            return
        for rows in batches:
            key = _key(rows)
            if key not in self._pending:
                self._pending[key] = self._pool.submit(self.tokenize, rows)

    def settle(self) -> None:
        """Wait until the worker is idle (its results stay for :meth:`take`): the tokenizer is free."""
        for future in self._pending.values():
            future.exception()

    def take(self, rows: np.ndarray) -> Features:
        """The batch ``rows``' columns on the device: the worker's, or tokenised now."""
        future = self._pending.pop(_key(rows), None)
        features = future.result() if future is not None else self.tokenize(rows)
        return [{k: to_device(v, self.device) for k, v in column.items()} for column in features]


def _key(rows: np.ndarray) -> bytes:
    return np.asarray(rows, dtype=np.int64).tobytes()


__all__ = ["BatchInputs", "Features", "to_device"]
