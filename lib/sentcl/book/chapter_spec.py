"""What the book needs to know of one chapter, as one object: :class:`Chapter`.

Each chapter's package (``sentcl/chapters/<name>/``) defines its ``CHAPTER``; the registry
(:data:`sentcl.chapters.CHAPTERS`) finds them. The book's generic modules take a :class:`Chapter` and read its
parts (its data needs for :mod:`sentcl.book.estimates.coverage`, its GPU-memory rows for
:mod:`sentcl.book.estimates.gpu_memory`, its measured record for :mod:`sentcl.book.estimates.benchmarks`, its plan of
runs for :mod:`sentcl.book.estimates.cost` and :class:`~sentcl.book.notebook.chapter_run.ChapterRun`); they never name
a chapter and never import the registry. A chapter's name becomes its object only at the entry points, which stand
above the chapters: the runner and its executor, :class:`~sentcl.book.notebook.chapter_run.ChapterRun` and the page
builders (:func:`sentcl.chapters.chapter`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .estimates.benchmarks import Measurement
    from .estimates.coverage import Needs
    from .estimates.gpu_memory import MemoryRow
    from .estimates.plan import Plan, PlannedStage
    from .notebook.chapter_run import ChapterRun
    from .output.claims import Central

Parameters = Mapping[str, Any]
"""A profile's resolved parameters of a chapter notebook (:func:`sentcl.book.parameters.shipped_parameters`)."""


@dataclass(frozen=True)
class Chapter:
    """One chapter: its notebook ``notebooks/<name>.ipynb``, its paper values ``data/papers/<name>.csv`` (none
    for a chapter of our own), and every part of it a generic book module reads."""

    name: str
    title: str
    memory: Callable[[Parameters], list[MemoryRow]]
    """The paper profile's parameters -> its training runs' peak GPU memory, measured or estimated."""
    memory_record: str = ""
    """The ``benchmarks/results`` file :attr:`memory` reads its measurements from ("": its rows are estimates)."""
    memory_note: Callable[[], str] | None = None
    """A paragraph under the chapter's GPU-memory table (e.g. the nearest measurement of an estimate)."""
    order: int = 0
    """Its place in the book (:data:`sentcl.chapters.CHAPTERS` sorts the chapters by it, then by name)."""
    own: bool = False
    """A chapter of our own, reproducing no paper: no paper values, every row is ours."""
    needs: Callable[[Parameters], Needs] | None = None
    """The paper profile's parameters -> the data each computed row needs (None: no paper tables to cover)."""
    measurement: Measurement | None = None
    """A hand-run benchmark the chapter's demo rests on, shown on its page and in its notebook."""
    plan: Callable[[Parameters], Plan] | None = None
    """A profile's parameters -> its plan of runs (:mod:`sentcl.book.estimates.plan`): every stage the notebook builds and
    every encoding it runs, counted (None: not planned here)."""
    build: Callable[[ChapterRun, PlannedStage], None] | None = None
    """Builds one stage of the plan into the artifact cache as the notebook would, given a run of the chapter with its
    parameters (:class:`~sentcl.book.notebook.chapter_run.ChapterRun`): what ``sentcl reproduce --executor ray`` runs per stage
    (None: the chapter's stages are built by its notebook alone)."""
    check: Callable[[Parameters], None] | None = None
    """Refuses, before any work, a profile's parameters the chapter cannot run with (a ``ConfigError`` saying why);
    called by every run of the chapter (:class:`~sentcl.book.notebook.chapter_run.ChapterRun`)."""
    models: Callable[[Parameters], dict[str, str]] | None = None
    """A profile's parameters -> model family (e.g. ``"BERT"``) -> the encoder its runs start from (None: no families)."""
    paper_models: Mapping[str, str] = field(default_factory=dict)
    """Model family -> the paper's encoder (a name or a description); where a run's differs, every row of that family
    says which stands in for which."""
    central: Callable[[Parameters], Sequence[Central]] | None = None
    """A profile's parameters -> the chapter's central claims, its primary family (:class:`~sentcl.book.output.claims.Central`),
    declared before anything runs (None: every claim is secondary)."""
    one_budget: bool = False
    """Whether the chapter compares the methods under one budget (the introduction's answer reads its claims)."""
    one_budget_row: str | None = None
    """This chapter's method's row in that comparison (None: the method's name, its title up to the colon)."""


__all__ = ["Chapter", "Parameters"]
