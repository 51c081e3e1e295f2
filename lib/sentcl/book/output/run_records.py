"""Run records: what one run was, where it ran, and what it cost.

``<out>/records/<kind>-<name>-<run_id>.json``, one per notebook run (written by
``sentcl reproduce``) or training run (written by the chapter helper around the trainer),
see :class:`RunRecord`. The book's environment page and the chapters' timings read them.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource as _resource
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...errors import ConfigError, DataFormatError
from ...io import atomic_write_json, read_json, report_damaged
from ...precision import cpu_model, describe_machine
from ..profiles import policy
from ..versions import used_versions
from .layout import Layout
from .results import current_run_id

RECORD_KINDS = ("notebook", "training")


@dataclass
class RunRecord:
    """What one run was, where it ran, and what it cost.

    ``kind`` is ``notebook`` (a chapter notebook executed by ``sentcl reproduce``) or
    ``training`` (one training run, written by the trainer); ``name`` names it within the
    chapter (the chapter for a notebook, e.g. ``mnrl-sbert-bert`` for a training run).
    ``parameters`` are the values it ran with (for a notebook, its parameters cell after
    the profile and overrides), ``config`` anything else needed to repeat it (paths,
    the full training configuration). ``peak_memory_mb`` is the peak resident memory of
    the process that did the work, ``peak_gpu_memory_mb`` the peak allocated CUDA memory
    (None where not measured). ``status`` is ``ok`` or ``failed`` (then ``error`` says why).
    ``precision`` says what ran in which precision (:mod:`sentcl.precision`): whether the CPU
    computes bf16 natively (``cpu_native_bf16``); for a training run the precision asked for and
    the one its steps used (``requested``, ``used``); for a notebook, what its kernel counted
    (``uses``: texts encoded, training runs, per precision and device). ``health`` is a training run's
    health record (:mod:`sentcl.training.health`: did it train?).
    """

    kind: str
    name: str
    chapter: str | None
    profile: str | None
    run_id: str
    started: str
    wall_time_s: float | None = None
    status: str = "ok"
    error: str | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    device: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    peak_memory_mb: float | None = None
    peak_gpu_memory_mb: float | None = None
    precision: dict[str, Any] = field(default_factory=dict)
    health: dict[str, Any] | None = None
    schema: int = 1

    def __post_init__(self) -> None:
        if self.kind not in RECORD_KINDS:
            raise ConfigError(f"run record kind {self.kind!r} is not one of {RECORD_KINDS}")
        if self.profile is not None:
            policy(self.profile, "run record")
        if self.status not in ("ok", "failed"):
            raise ConfigError(f"run record status {self.status!r} is not 'ok' or 'failed'")

    @property
    def file_name(self) -> str:
        """``<kind>-<name>-<run_id>.json``, a path separator in the name as ``-`` ("IFCL w/o TL")."""
        return re.sub(r"[/\\]", "-", f"{self.kind}-{self.name}-{self.run_id}") + ".json"

    @classmethod
    def from_dict(cls, raw: dict[str, Any], path: str | os.PathLike = "<record>") -> RunRecord:
        names = {f.name for f in fields(cls)}
        if not isinstance(raw, dict):
            raise DataFormatError(path, None, "a JSON object (a run record)", type(raw).__name__)
        missing = [n for n in ("kind", "name", "chapter", "profile", "run_id", "started") if n not in raw]
        unknown = sorted(set(raw) - names)
        if missing or unknown:
            raise DataFormatError(path, None, f"a run record with the fields {sorted(names)}", f"missing {missing}, unknown {unknown}")
        try:
            return cls(**raw)
        except (ConfigError, TypeError) as exc:
            raise DataFormatError(path, None, "a valid run record", str(exc)) from None


def environment() -> dict[str, Any]:
    """``{"device": ..., "versions": {...}}`` of this process: the compute device and the versions it runs with,
    Python's, sentcl's and each direct dependency's (:func:`~sentcl.book.versions.used_versions`): on a hosted
    runtime that kept its own packages they may differ from the lock's (:func:`~sentcl.book.versions.lock_differences`)."""
    return {"device": device_description(), "versions": used_versions()}


def device_description() -> str:
    """The GPU torch would use (name, count), else the CPU model and its core count."""
    if "torch" in sys.modules or _importable("torch"):
        import torch

        if torch.cuda.is_available():
            n = torch.cuda.device_count()
            return f"{torch.cuda.get_device_name(0)}" + (f" x{n}" if n > 1 else "")
    return f"CPU: {cpu_model()} ({os.cpu_count()} cores)"


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def peak_memory_mb() -> tuple[float, float | None]:
    """(peak resident memory of this process, peak allocated CUDA memory or None), in MiB."""
    rss = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    gpu = None
    if "torch" in sys.modules:
        import torch

        if torch.cuda.is_available():
            gpu = torch.cuda.max_memory_allocated() / 2**20
    return rss, gpu


def write_run_record(out_dir: str | os.PathLike, record: RunRecord) -> Path:
    """Write ``record`` atomically to ``<out_dir>/records/<kind>-<name>-<run_id>.json``."""
    return atomic_write_json(Layout(out_dir).records / record.file_name, asdict(record))


def read_run_records(*folders: str | os.PathLike) -> list[RunRecord]:
    """Every run record in the given ``records`` folders, oldest first. A damaged one (half-written,
    or not a run record) is left out and said in one line: a record is never guessed at."""
    records = []
    for folder in folders:
        folder = Path(folder)
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                records.append(RunRecord.from_dict(read_json(path, "a JSON run record"), path))
            except DataFormatError as exc:
                report_damaged(path, str(exc), "left out of the book's run records")
    return sorted(records, key=lambda r: r.started)


def start_run_record(
    *,
    kind: str,
    name: str,
    chapter: str | None,
    profile: str | None,
    parameters: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
    seed: int | None = None,
    run_id: str | None = None,
) -> RunRecord:
    """A run record for work starting now in this process (device and versions filled in);
    :func:`finish_run_record` adds the wall time and peak memory and writes it."""
    env = environment()
    record = RunRecord(
        precision=describe_machine(),
        kind=kind,
        name=name,
        chapter=chapter,
        profile=profile,
        run_id=run_id or current_run_id(),
        started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        parameters=dict(parameters or {}),
        config=dict(config or {}),
        seed=seed,
        device=env["device"],
        versions=env["versions"],
    )
    record.wall_time_s = -time.perf_counter()  # finish_run_record adds the end time
    return record


def finish_run_record(out_dir: str | os.PathLike, record: RunRecord, error: BaseException | None = None) -> Path:
    """Close a record from :func:`start_run_record` (wall time, this process's peak memory,
    status ``failed`` with the error) and write it to ``<out_dir>/records/``."""
    record.wall_time_s = round(time.perf_counter() + (record.wall_time_s or 0.0), 3)
    record.peak_memory_mb, record.peak_gpu_memory_mb = peak_memory_mb()
    if error is not None:
        record.status, record.error = "failed", f"{type(error).__name__}: {error}"
    return write_run_record(out_dir, record)


@contextlib.contextmanager
def recorded_run(out_dir: str | os.PathLike, **fields_: Any) -> Iterator[RunRecord]:
    """Time the work inside the ``with`` block and write its run record at the end
    (:func:`start_run_record`'s arguments). The block may fill ``record.config``; when it
    raises, the record says ``failed`` with the error, which is re-raised."""
    record = start_run_record(**fields_)
    try:
        yield record
    except BaseException as exc:
        finish_run_record(out_dir, record, exc)
        raise
    finish_run_record(out_dir, record)
