"""Numeric precision: what ``"auto"`` means on each device, what a device computes natively, and
which precision each piece of work actually ran in.

``"auto"`` (the default of every chapter's ``precision`` and ``encode_precision``) resolves to

- **fp32 on every CPU**, so that a book built on two laptops gives the same numbers whatever
  their processors. bf16 autocast is opt-in (``"bf16"``): on a CPU with native bf16
  (AVX512-BF16 or AMX-BF16) it encodes about 1.8x faster and moves STS scores by up to ~0.02
  points; on a CPU without it, oneDNN emulates bf16 and it runs 2-3x *slower* than fp32
  (``benchmarks/results/precision_cpu.json``, ``benchmarks/precision_cpu.py``), and it gives
  numbers another machine does not repeat. A bf16 request on such a CPU warns once.
- **bf16 on a CUDA GPU that computes it natively** (compute capability 8.0 and up: A100, L4,
  H100), **fp16 on older ones** (T4, V100; training then uses a gradient scaler). Asking for
  ``"bf16"`` on a GPU without it is an error: it would be emulated at a fraction of the speed.

``$SENTCL_CPU_BF16`` (``0`` or ``1``) overrides the CPU's answer, and ``$ONEDNN_MAX_CPU_ISA``
set to an instruction set without bf16 (e.g. ``AVX512_CORE``, ``AVX2``) counts as no native
bf16, as it does for oneDNN's kernels: ``make test`` runs the precision tests that way a
second time, as on a CPU without bf16.

:func:`note_use` keeps a tally, per process, of what ran in which precision (texts encoded,
training runs); a chapter writes it beside its run records (:meth:`sentcl.book.notebook.chapter_run.ChapterRun`)
and the book's environment page shows it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import warnings
from collections import Counter
from typing import Any

import torch

from .errors import ConfigError, check_choice

PRECISIONS = ("auto", "fp32", "bf16", "fp16")
"""What a ``precision`` or ``encode_precision`` parameter accepts."""
CPU_BF16_ENV = "SENTCL_CPU_BF16"
_ISA_ENV = "ONEDNN_MAX_CPU_ISA"
_ISAS_WITH_BF16 = ("AVX512_CORE_BF16", "AVX512_CORE_AMX", "AVX10", "DEFAULT", "ALL")
_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


class SlowPrecisionWarning(UserWarning):
    """bf16 asked for on a CPU that emulates it (slower than fp32)."""


def resolve_precision(precision: str, device: torch.device | str = "cpu") -> str:
    """``"fp32"``, ``"bf16"`` or ``"fp16"``: what ``precision`` means on ``device`` (see the module doc).

    ``"bf16"`` on a CUDA device without native bf16 is a :class:`~sentcl.errors.ConfigError`; on a
    CPU without it a :class:`SlowPrecisionWarning` (once per process).
    """
    check_choice("precision", precision, PRECISIONS)
    kind = torch.device(device).type
    if kind == "cuda":
        native = cuda_supports_bf16(device)
        if precision == "auto":
            return "bf16" if native else "fp16"
        if precision == "bf16" and not native:
            raise ConfigError(
                f"precision 'bf16' on {_cuda_name(device)}, which has no native bf16 (compute capability "
                f"{_capability(device)}, bf16 needs 8.0): use 'fp16' or 'auto' (fp16 with a gradient scaler there)"
            )
        return precision
    if precision == "auto":
        return "fp32"
    if precision == "bf16" and kind == "cpu" and not cpu_supports_bf16():
        _warn_emulated()
    return precision


def autocast(precision: str, device: torch.device | str):
    """The autocast context of a resolved ``precision`` (fp32: none)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=_DTYPES[precision])


@contextlib.contextmanager
def tf32(enabled: bool, precision: str, device: torch.device | str):
    """Inside, fp32 matrix products and convolutions on a CUDA ``device`` may run in TF32 (10-bit mantissa
    inputs, fp32 accumulation: several times faster on Ampere and later GPUs) when ``enabled`` and ``precision``
    is ``"fp32"``; the flags are restored on exit. Off by default in the trainer (``TrainingConfig.tf32``): it
    moves the numerics (about 1e-3 relative per product). No effect on a CPU."""
    on = enabled and precision == "fp32" and torch.device(device).type == "cuda"
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    if on:
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield on
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def cpu_supports_bf16() -> bool:
    """Whether this CPU computes bf16 natively: ``$SENTCL_CPU_BF16`` when set (0 or 1), else False
    when ``$ONEDNN_MAX_CPU_ISA`` caps oneDNN below bf16, else the ``avx512_bf16`` or ``amx_bf16``
    flag (Linux; elsewhere False)."""
    forced = os.environ.get(CPU_BF16_ENV)
    if forced is not None:
        if forced not in ("0", "1"):
            raise ConfigError(f"${CPU_BF16_ENV} must be 0 or 1, got {forced!r}")
        return forced == "1"
    isa = os.environ.get(_ISA_ENV)
    if isa and not isa.upper().startswith(_ISAS_WITH_BF16):
        return False
    return _cpu_flags_bf16()


@functools.lru_cache(maxsize=1)
def _cpu_flags_bf16() -> bool:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return bool(set(line.split(":", 1)[1].split()) & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; elsewhere what ``platform`` says)."""
    import platform

    with contextlib.suppress(OSError), open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def cuda_supports_bf16(device: torch.device | str = "cuda") -> bool:
    """Whether the CUDA device computes bf16 natively (compute capability 8.0 or higher)."""
    return _capability(device) >= (8, 0)


def _capability(device: torch.device | str) -> tuple[int, int]:
    return tuple(torch.cuda.get_device_capability(torch.device(device)))  # type: ignore[return-value]


def _cuda_name(device: torch.device | str) -> str:
    try:
        return torch.cuda.get_device_name(torch.device(device))
    except (AssertionError, RuntimeError):  # no CUDA build or no device: the capability was mocked
        return "this GPU"


@functools.lru_cache(maxsize=1)
def _warn_emulated() -> None:
    warnings.warn(
        "precision 'bf16' on a CPU without native bf16 (no avx512_bf16/amx_bf16): oneDNN emulates it, "
        "2-3x slower than fp32; use 'fp32' or 'auto'",
        SlowPrecisionWarning,
        stacklevel=3,
    )


# ------------------------------------------------------------------------------ what ran in which precision

_LOCK = threading.Lock()
_USES: Counter[tuple[str, str, str]] = Counter()


def note_use(what: str, precision: str, device: torch.device | str, count: int = 1) -> None:
    """Count ``count`` units of work (``what``: ``"texts encoded"``, ``"training runs"``) that ran in
    the resolved ``precision`` on ``device`` in this process."""
    with _LOCK:
        _USES[(what, precision, torch.device(device).type)] += int(count)


def uses() -> list[dict[str, Any]]:
    """What :func:`note_use` counted in this process: ``[{"what", "precision", "device", "count"}]``."""
    with _LOCK:
        return [{"what": w, "precision": p, "device": d, "count": n} for (w, p, d), n in sorted(_USES.items())]


def describe_machine() -> dict[str, Any]:
    """The precision facts of this machine that decide what ``"auto"`` and ``"bf16"`` do."""
    return {"cpu_native_bf16": cpu_supports_bf16(), "cuda": torch.cuda.is_available()}


__all__ = [
    "CPU_BF16_ENV",
    "PRECISIONS",
    "SlowPrecisionWarning",
    "autocast",
    "cpu_supports_bf16",
    "cuda_supports_bf16",
    "describe_machine",
    "note_use",
    "resolve_precision",
    "uses",
]
