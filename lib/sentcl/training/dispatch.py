"""What a training step asks of the device: the operations it dispatches, and the host-device syncs.

A GPU step is fast only while the host queues work ahead of the device. Two things stop that: too many
small operations (each costs the host a few microseconds to dispatch, however little the device does),
and a *sync*, where the host waits for the device to finish everything queued so far, because it needs
a value (``loss.item()``, ``float(t)``, ``if t.any():``) or a shape that depends on values
(``torch.unique``, ``nonzero``, boolean-mask indexing). :class:`DispatchCounter` counts both on any
device, the CPU included, where no sync costs anything but the code that would sync on a GPU runs the
same: a test on the CPU fails when a step gains one (``tests/training/test_dispatch.py``).

Counted as syncs: the ATen operations in :data:`SYNCING_OPS` (what ``item``, ``float``, ``int``,
``bool`` of a tensor and the value-dependent shapes call), indexing with a boolean mask, and the tensor
methods in :data:`HOST_READS` (a copy to the host: ``.tolist()``, ``.cpu()``, ``.numpy()``). Not
counted: copies written as ``.to(device)`` (on a CPU they are the identity, and the host-to-device
copy of a batch's inputs is not a wait for the device's queue), and CUDA's own stream syncs; on a GPU,
``torch.cuda.set_sync_debug_mode("warn")`` sees every one (``benchmarks/gpu_check.py`` uses both).
"""

from __future__ import annotations

import traceback
from collections import Counter
from pathlib import Path
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

aten = torch.ops.aten
SYNCING_OPS = frozenset({
    aten._local_scalar_dense.default,  # item(), float(), int(), bool() of a tensor
    aten.nonzero.default,
    aten._unique2.default,
    aten.unique_dim.default,
    aten.unique_consecutive.default,
    aten.masked_select.default,
    aten.equal.default,
    aten.is_nonzero.default,
    aten.repeat_interleave.Tensor,
})
"""ATen operations whose result the host must wait for (a value, or a shape that depends on values)."""
HOST_READS = frozenset({"tolist", "cpu", "numpy"})
"""Tensor methods that copy a tensor to the host (a wait for the device when it is on one)."""


class DispatchCounter:
    """Counts the operations dispatched and the syncs (module doc) while active; ``with counter:``.

    ``ops``: operations dispatched; ``syncs``: syncs; ``where``: per sync, the operation and the
    innermost frame of sentcl or its tests that asked for it (what a failing test shows).
    """

    def __init__(self) -> None:
        self.ops = 0
        self.syncs = 0
        self.where: Counter[str] = Counter()
        self._modes: list[Any] = []

    def _sync(self, what: str) -> None:
        self.syncs += 1
        frames = [f for f in traceback.extract_stack() if f.filename != __file__ and "/torch/" not in f.filename]
        place = " < ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames[-3:]))
        self.where[f"{what} at {place}"] += 1

    def __enter__(self) -> DispatchCounter:
        counter = self

        class _Ops(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                counter.ops += 1
                if func in SYNCING_OPS or (func is aten.index.Tensor and _boolean_index(args)):
                    counter._sync(str(func))
                return func(*args, **(kwargs or {}))

        class _Reads(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                if getattr(func, "__name__", "") in HOST_READS:
                    counter._sync(f"Tensor.{func.__name__}")
                return func(*args, **(kwargs or {}))

        self._modes = [_Reads(), _Ops()]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        self._modes = []

    def snapshot(self) -> tuple[int, int]:
        """(operations, syncs) so far."""
        return self.ops, self.syncs


def _boolean_index(args: tuple[Any, ...]) -> bool:
    indices = args[1] if len(args) > 1 else ()
    return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in indices or ())


__all__ = ["HOST_READS", "SYNCING_OPS", "DispatchCounter"]
