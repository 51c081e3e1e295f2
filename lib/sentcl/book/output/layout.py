"""The output folder of a run, ``<out>``: every path under it, named once (:class:`Layout`).

``sentcl reproduce`` and each chapter notebook write under ``<out>`` (``runs/<profile>`` by default); the pages and
the book read from it. Every module that writes or reads a file there asks :class:`Layout` for its path::

    <out>/results/<chapter>.csv          the chapter's cells (paper | ours), sentcl.book.output.results
    <out>/claims/<chapter>.csv           its claims with intervals and verdicts, sentcl.book.output.claims
    <out>/evidence/<chapter>/            per-item scores of every row, sentcl.book.output.evidence
    <out>/coverage/<chapter>.csv         what the paper profile fills on the data root, sentcl.book.estimates.coverage
    <out>/geometry/<chapter>.csv         alignment, uniformity, anisotropy per model, sentcl.book.output.geometry_files
    <out>/figures/<chapter>/             its figures (PNG and caption), sentcl.book.pages.report
    <out>/data_used/<chapter>.json       the datasets it loaded, sentcl.book.notebook.chapter_run
    <out>/records/                       run records (notebooks, trainings), sentcl.book.output.run_records
    <out>/records/precision/             what ran in which precision, per kernel
    <out>/notebooks/<chapter>.ipynb      the executed notebook, sentcl.book.publishing.runner
    <out>/<chapter>/                     files of the chapter's own (RCL's per-seed scores, BSC's models a row starts from)
    <out>/book_source/                   the staged book sources, sentcl.book.publishing.site
    <out>/.sentcl.lock[-<chapter>]       the claim of a process on the folder (or one chapter's files)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """The paths under one output folder ``out`` (module doc)."""

    out: Path

    def __init__(self, out: str | os.PathLike) -> None:
        object.__setattr__(self, "out", Path(out))

    @property
    def results_dir(self) -> Path:
        return self.out / "results"

    def results(self, chapter: str) -> Path:
        return self.results_dir / f"{chapter}.csv"

    @property
    def claims_dir(self) -> Path:
        return self.out / "claims"

    def claims(self, chapter: str) -> Path:
        return self.claims_dir / f"{chapter}.csv"

    def evidence(self, chapter: str) -> Path:
        return self.out / "evidence" / chapter

    def coverage(self, chapter: str) -> Path:
        return self.out / "coverage" / f"{chapter}.csv"

    @property
    def geometry_dir(self) -> Path:
        return self.out / "geometry"

    def geometry(self, chapter: str) -> Path:
        return self.geometry_dir / f"{chapter}.csv"

    def figures(self, chapter: str) -> Path:
        return self.out / "figures" / chapter

    def data_used(self, chapter: str) -> Path:
        return self.out / "data_used" / f"{chapter}.json"

    @property
    def records(self) -> Path:
        return self.out / "records"

    def precision_record(self, chapter: str, run_id: str) -> Path:
        return self.records / "precision" / f"{chapter}-{run_id}.json"

    def notebook(self, chapter: str) -> Path:
        return self.out / "notebooks" / f"{chapter}.ipynb"

    def chapter_files(self, chapter: str) -> Path:
        return self.out / chapter

    @property
    def book_source(self) -> Path:
        return self.out / "book_source"

    def lock(self, chapter: str | None = None) -> Path:
        return self.out / (".sentcl.lock" if chapter is None else f".sentcl.lock-{chapter}")


__all__ = ["Layout"]
