"""What a chapter notebook uses to report: the data it runs on, its results, its figures.

A chapter notebook starts with its ``parameters`` cell, which always holds ``profile``,
``data_dir`` and ``out_dir`` (``sentcl reproduce`` sets them), then::

    run = ChapterRun("mnrl_sbert", profile=profile, data_dir=data_dir, out_dir=out_dir)
    sts12 = run.load("sts12")                       # from the run's data root, logged
    ...
    run.add_result("Table 1", "MNRLSBERT", {"STS12": 71.9, ...}, seeds=[42])
    run.table("Table 1")                            # paper | ours | Δ, in the paper's layout
    run.save_figure(run.averages_chart("Table 1"), "figure-6", "Average Spearman, paper vs ours")

Every number the book shows is read back from the files these calls write under
``out_dir`` (see :mod:`sentcl.book.results`); the chapter only adds its science.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError
from ..io import atomic_write_json
from ..paths import data_root
from . import report
from .records import finish_run_record, start_run_record
from .results import PROFILES, Result, current_run_id, load_results, save_results

# chapter -> title, in book order; a chapter's notebook is notebooks/<chapter>.ipynb
CHAPTERS = {
    "mnrl_sbert": "MNRL-SBERT: multiple-negatives ranking loss on NLI (Taneja et al. 2023)",
    "bsc": "BSC: batch-softmax contrastive loss (Chernyavskiy et al. 2022)",
    "rcl": "RCL: regularized contrastive learning with entropy models (Tan et al. 2022)",
    "ifcl": "IFCL: identical and fraternal twins (Xiao et al. 2023)",
}


class SampleDataWarning(UserWarning):
    """A demo or paper run reads the project's sample data: its numbers mean nothing."""


@dataclass(frozen=True)
class DataChoice:
    """The data root a run reads, and whether it is the project's sample data."""

    root: Path
    sample: bool
    warning: str | None = None

    def describe(self) -> str:
        return "sample data (data/samples)" if self.sample else f"real data from {self.root}"


def resolve_data(profile: str, data_dir: str | os.PathLike | None = None) -> DataChoice:
    """The data root a profile runs on.

    ``smoke`` always reads ``data/samples``. ``demo`` reads ``data_dir`` (or
    ``$SENTCL_DATA``) and, when neither is set, falls back to ``data/samples`` with a
    warning. ``paper`` requires a real data root.
    """
    from ..data.registry import SAMPLE_MARKER, samples_root

    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; valid: {', '.join(PROFILES)}")
    if profile == "smoke":
        return DataChoice(samples_root(), True)
    root = data_root(data_dir, required=False)
    if root is None:
        if profile == "paper":
            raise ConfigError("the paper profile needs the real data: pass --data-dir DIR or set $SENTCL_DATA")
        return DataChoice(
            samples_root(),
            True,
            "no data root (--data-dir or $SENTCL_DATA): the demo profile falls back to the project's "
            "sample data in data/samples, so its numbers say nothing about the papers",
        )
    if (root / SAMPLE_MARKER).exists() or root == samples_root().resolve():
        return DataChoice(root, True, f"the data root {root} is the project's sample data: its numbers say nothing about the papers")
    return DataChoice(root, False)


class ChapterRun:
    """One run of a chapter notebook: where it reads data and writes results and figures."""

    def __init__(self, chapter: str, *, profile: str, data_dir: str | os.PathLike | None, out_dir: str | os.PathLike):
        if chapter not in CHAPTERS:
            raise ConfigError(f"unknown chapter {chapter!r}; chapters: {', '.join(CHAPTERS)}")
        self.chapter = chapter
        self.profile = profile
        self.data = resolve_data(profile, data_dir)
        if self.data.warning:
            warnings.warn(self.data.warning, SampleDataWarning, stacklevel=2)
        self.out_dir = Path(out_dir).resolve()
        self.run_id = current_run_id()
        self._loaded: list[dict[str, Any]] = []

    @property
    def kind(self) -> str:
        return "sample-data" if self.data.sample else "reproduced"

    def load(self, name: str, split: str | None = None, **options: Any):
        """Load a registered dataset from the run's data root and log it for the
        datasets appendix (``<out>/data_used/<chapter>.json``)."""
        from ..data import load

        record = load(name, split, data_dir=self.data.root, **options)
        self._loaded.append(
            {"name": name, "split": record.split, "records": len(record), "sample": record.sample, "dropped": record.dropped}
        )
        atomic_write_json(
            self.out_dir / "data_used" / f"{self.chapter}.json",
            {"chapter": self.chapter, "run_id": self.run_id, "profile": self.profile,
             "data_root": str(self.data.root), "sample": self.data.sample, "datasets": self._loaded},
        )
        return record

    def train(self, trainer, **cached: Any):
        """Train with ``trainer`` inside the artifact cache (:meth:`sentcl.training.Trainer.train_cached`:
        a finished identical run is loaded, an interrupted one resumed) and, when it trained,
        write its run record (``<out>/records/training-<name>-<run_id>.json``: configuration,
        wall time, pairs/s, peak memory; status ``failed`` with the error if it raised).
        Returns the :class:`~sentcl.training.TrainingResult`."""
        record = start_run_record(
            kind="training", name=trainer.name, chapter=self.chapter, profile=self.profile,
            config={"run": trainer.describe()}, seed=trainer.config.seed, run_id=self.run_id,
        )
        try:
            result = trainer.train_cached(**cached)
        except BaseException as exc:
            finish_run_record(self.out_dir, record, exc)
            raise
        if result.trained and trainer.procs.is_main:
            record.config.update(
                output_dir=str(result.output_dir), resumed_from_step=result.resumed_from_step,
                steps=result.global_step, **result.run,
            )
            finish_run_record(self.out_dir, record)
        return result

    def add_result(
        self,
        table: str,
        row: str,
        values: Mapping[str, float],
        *,
        seeds: Sequence[int],
        std: Mapping[str, float] | None = None,
        data: str | None = None,
        note: str = "",
    ) -> Path:
        """Record one row of a paper table (``values``: column -> value in the paper's
        units, averaged over ``seeds``; ``std``: column -> standard deviation) in the
        results file, at once. ``data`` says what the row was computed on (default:
        which data root). Returns the results file's path."""
        std = std or {}
        unknown = set(std) - set(values)
        if unknown:
            raise ConfigError(f"{self.chapter} {table} {row}: std given for columns without a value: {sorted(unknown)}")
        cells = [
            Result(
                table=table, row=row, column=column, value=float(value), seeds=tuple(int(s) for s in seeds),
                std=None if std.get(column) is None else float(std[column]), profile=self.profile, kind=self.kind,
                data=data or self.data.describe(), note=note,
            )
            for column, value in values.items()
        ]
        return save_results(self.out_dir, self.chapter, cells, run_id=self.run_id)

    def results(self) -> pd.DataFrame:
        """This chapter's results file as a frame."""
        return load_results(self.out_dir, [self.chapter])

    def compare(self, thresholds: Sequence[float] = report.THRESHOLDS) -> pd.DataFrame:
        """Every cell of the paper's tables beside ours (:func:`sentcl.book.report.compare`)."""
        return report.compare(self.chapter, self.results(), thresholds=thresholds)

    def table(self, table: str, thresholds: Sequence[float] = report.THRESHOLDS, caption: str | None = None):
        """One paper table with our rows beside the paper's (:func:`sentcl.book.report.comparison_table`)."""
        return report.comparison_table(self.compare(thresholds), table, thresholds=thresholds, caption=caption)

    def averages_chart(self, table: str, column: str = "Average", rows: Sequence[str] | None = None, title: str | None = None):
        """The paper's and our averages side by side (:func:`sentcl.book.report.averages_chart`)."""
        return report.averages_chart(self.compare(), table, column=column, rows=rows, title=title)

    def save_figure(self, fig, name: str, caption: str) -> Path:
        """Save a figure (PNG + SVG) where the book finds it, with its caption."""
        return report.save_figure(fig, self.out_dir, self.chapter, name, caption)
