"""A chapter's plan of runs: every stage its notebook builds, as data, before anything is built.

A chapter's package computes its :class:`Plan` from a profile's resolved parameters
(:attr:`~sentcl.book.chapter_spec.Chapter.plan`). Each :class:`PlannedStage` with a ``name`` is one artifact
the notebook builds in the artifact cache (a training run, an embedding store) under exactly that stage name
(``<chapter>.<what>``, :func:`stage_name`), with the names of the stages it reads (``upstream``) and what it
costs (its optimizer steps, the sentences it encodes: the fields of :class:`~sentcl.book.estimates.cost.Stage`). A
stage without a name is work the artifact cache does not hold (scoring every row on the test sets), counted
for the cost only.

The notebook trains through the plan: :meth:`sentcl.book.notebook.chapter_run.ChapterRun.train` takes the planned stage's
name and refuses a name the plan does not hold, so the artifacts a run builds are the plan's (a test runs each
smoke notebook and compares the cache's stage names with its plan). The cost tables are the plan's stages
summed by ``what`` (:meth:`Plan.counted`), and the data a row needs is read from the same parameters: a
renamed parameter is renamed in the chapter's package once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, fields
from typing import Any

from ...errors import ConfigError
from .cost import Stage


@dataclass(frozen=True)
class PlannedStage(Stage):
    """One stage of a plan: ``runs`` of the :class:`~sentcl.book.estimates.cost.Stage` it is counted as (1 for a named
    artifact), its artifact stage ``name`` ("": not an artifact), the names of its ``upstream`` stages and the
    ``args`` its chapter's builder takes."""

    runs: int = 1
    name: str = ""
    upstream: tuple[str, ...] = ()
    args: tuple[Any, ...] = ()
    """What the chapter's builder needs to build it (:attr:`~sentcl.book.chapter_spec.Chapter.build`), e.g. (row, seed)."""
    alone: bool = True
    """Whether the chapter's builder can build it alone (False: only its notebook builds it, e.g. a stage that a
    library function builds together with others; :mod:`sentcl.book.publishing.executor` leaves it, and what reads it, to the
    notebook)."""


def stage_name(chapter: str, *parts: object) -> str:
    """The artifact stage name of a planned stage: the chapter's name and ``parts``, each made a folder-name
    word (letters, digits, '_', '.', '-'; anything else one '-'), joined by '.': ``stage_name("rcl", "final",
    "Eq. 1", "seed", 0)`` is ``"rcl.final.Eq-1.seed.0"``."""
    words = [re.sub(r"[^A-Za-z0-9_]+", "-", str(p)).strip("-") or "-" for p in parts]
    return ".".join([chapter, *words])


class Plan:
    """A chapter's planned stages in build order (each after the stages it reads)."""

    def __init__(self, chapter: str, stages: Iterable[PlannedStage]):
        self.chapter = chapter
        self.stages: list[PlannedStage] = list(stages)
        self._by_name: dict[str, PlannedStage] = {}
        for s in self.stages:
            if not s.name:
                if s.upstream:
                    raise ConfigError(f"{chapter}'s plan: {s.what!r} has upstream stages but no name")
                continue
            if not s.name.startswith(f"{chapter}."):
                raise ConfigError(f"{chapter}'s plan: stage {s.name!r} is not named under the chapter ('{chapter}.')")
            if s.name in self._by_name:
                raise ConfigError(f"{chapter}'s plan names stage {s.name!r} twice")
            if s.runs != 1:
                raise ConfigError(f"{chapter}'s plan: the artifact stage {s.name!r} counts {s.runs} runs, not one")
            missing = [u for u in s.upstream if u not in self._by_name]
            if missing:
                raise ConfigError(f"{chapter}'s plan: stage {s.name!r} reads {missing}, not planned before it")
            self._by_name[s.name] = s

    @property
    def names(self) -> list[str]:
        """Every artifact stage's name, in build order."""
        return list(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __getitem__(self, name: str) -> PlannedStage:
        try:
            return self._by_name[name]
        except KeyError:
            raise ConfigError(f"{self.chapter}'s plan has no stage {name!r}; it plans {len(self._by_name)}: "
                              f"{', '.join(self._by_name) or 'none'}") from None

    def __iter__(self) -> Iterator[PlannedStage]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    def counted(self) -> list[Stage]:
        """The cost's rows: the named stages summed by ``what`` (in the order each first appears), their ``runs``
        added (stages counted under one ``what`` must cost the same each); a stage without a name is a row."""
        rows: dict[str | int, Stage] = {}
        for i, s in enumerate(self.stages):
            row = Stage(**{f.name: getattr(s, f.name) for f in fields(Stage)})
            key = s.what if s.name else i  # a stage without a name is a row of its own, already counted
            if key not in rows:
                rows[key] = row
                continue
            first = rows[key]
            if asdict(first) | {"runs": 0} != asdict(row) | {"runs": 0}:
                raise ConfigError(f"{self.chapter}'s plan counts stages of different costs under {s.what!r}: "
                                  f"{asdict(first)} and {asdict(row)}")
            rows[key] = Stage(**(asdict(first) | {"runs": first.runs + row.runs}))
        return list(rows.values())

    def alone(self) -> list[PlannedStage]:
        """The named stages a task can build alone: each marked so, and every stage it reads too."""
        found: dict[str, PlannedStage] = {}
        for s in self:
            if s.alone and all(u in found for u in s.upstream):
                found[s.name] = s
        return list(found.values())

    def upstream_of(self, name: str) -> list[PlannedStage]:
        """The planned stages ``name`` reads."""
        return [self._by_name[u] for u in self[name].upstream]


__all__ = ["Plan", "PlannedStage", "stage_name"]
