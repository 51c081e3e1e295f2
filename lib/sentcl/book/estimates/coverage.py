"""What a paper-profile run fills on a data root: for every row of the paper's tables, whether the run
computes it, needs data the root lacks (which files, and where they come from), or shows the paper's
value as cited.

:func:`chapter_needs` reads which rows a chapter's paper profile computes and which registered datasets
each needs from the paper profile's parameters (the notebook's defaults, shipped with sentcl), by the chapter's
own :attr:`~sentcl.book.chapter_spec.Chapter.needs` (in ``sentcl/chapters/<chapter>.py``); every other
row of the paper's tables is one it cites. The answer is read from the data root's files and the registry
(:mod:`sentcl.data.registry`), before anything trains, so a GPU user knows what a run will and will not
fill; each chapter writes it to ``<out>/coverage/<chapter>.csv``
(:meth:`sentcl.book.notebook.chapter_run.ChapterRun.write_coverage`) and its page shows it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ...errors import ConfigError
from ..chapter_spec import Chapter
from ..output.layout import Layout
from ..output.results import _read_csv, paper_values

Needs = Mapping[str | tuple[str, str], Sequence[str]]
"""A row (or a ``(table, row)``, for a row whose data differ between tables) -> the ``"dataset/split"`` names it
needs; ``"a or b"`` when the chapter falls back to ``b`` where ``a`` is absent (and labels the row so)."""

COVERAGE = ("runs", "needs absent data", "cited")
COVERAGE_COLUMNS = ("table", "row", "coverage", "detail")


def missing_files(name: str, data_root: str | os.PathLike) -> list[str]:
    """The files of the registered ``"dataset/split"`` that ``data_root`` lacks (empty: it has them all)."""
    from ...data.registry import info

    dataset, _, split = name.partition("/")
    entry = info(dataset)
    if split not in entry.splits:
        raise ConfigError(f"{name}: {dataset} has no split {split!r}; its splits: {', '.join(entry.splits)}")
    root = Path(data_root)
    return [f"{entry.folder}/{f}" for f in entry.splits[split].files if not (root / entry.folder / f).is_file()]


def _available(name: str, data_root: str | os.PathLike) -> str:
    """The dataset a need reads: ``"a or b"`` is ``a`` where the root has it, else the fallback ``b`` (which the
    chapter then labels) where the root has that, else ``a``."""
    first, _, fallback = name.partition(" or ")
    if fallback and missing_files(first, data_root) and not missing_files(fallback, data_root):
        return fallback
    return first


def paper_coverage(chapter: str, needs: Needs, data_root: str | os.PathLike) -> pd.DataFrame:
    """One line per (table, row) of the chapter's paper values, in the paper's order: ``runs`` when the
    row is in ``needs`` (:data:`Needs`; a ``(table, row)`` key wins over the row's) and every file of them
    is in ``data_root``; ``needs absent data`` with the missing files and each dataset's source otherwise;
    ``cited`` for a row the chapter does not compute (the paper's value is shown, labelled)."""
    from ...data.registry import info

    values = paper_values(chapter)
    known = set(values["row"]) | set(zip(values["table"], values["row"], strict=True))
    unknown = sorted((k for k in needs if k not in known), key=str)
    if unknown:
        raise ConfigError(f"{chapter}: the paper's tables have no rows {unknown}")
    lines = []
    for (table, row), cells in values.groupby(["table", "row"], sort=False):
        need = needs.get((table, row), needs.get(row))
        if need is None:
            source = next((s for s in cells["source"] if s), "")
            lines.append((table, row, "cited", f"cited from {source}" if source else "the paper's own value, not recomputed"))
            continue
        used = {name: _available(name, data_root) for name in dict.fromkeys(need)}  # a need -> what it reads
        absent = {name: missing_files(name, data_root) for name in used.values()}
        absent = {name: files for name, files in absent.items() if files}
        said = {n: u if u == n.partition(" or ")[0] else f"{u} (instead of {n.partition(' or ')[0]}, absent)"
                for n, u in used.items()}
        if not absent:
            lines.append((table, row, "runs", ", ".join(said.values())))
            continue
        fallbacks = [text for n, text in said.items() if text != used[n]]  # read instead: said beside what is missing
        detail = "; ".join([*(f"{name}: {', '.join(files)} (from {info(name.split('/')[0]).source})"
                              for name, files in absent.items()), *fallbacks])
        lines.append((table, row, "needs absent data", detail))
    return pd.DataFrame(lines, columns=list(COVERAGE_COLUMNS))


def write_coverage(out_dir: str | os.PathLike, chapter: Chapter, data_root: str | os.PathLike) -> pd.DataFrame:
    """What ``chapter``'s paper profile fills on ``data_root`` (:func:`paper_coverage` of :func:`chapter_needs`),
    written atomically to :meth:`sentcl.book.output.layout.Layout.coverage`; returns it."""
    from ...io import atomic_write_text

    frame = paper_coverage(chapter.name, chapter_needs(chapter), data_root)
    atomic_write_text(Layout(out_dir).coverage(chapter.name), frame.to_csv(index=False))
    return frame


def read_coverage(out_dir: str | os.PathLike, chapter: str) -> pd.DataFrame | None:
    """A chapter's coverage file, or None when its run wrote none (a bad header or line: a DataFormatError
    naming the file and line, as for every results file)."""
    path = Layout(out_dir).coverage(chapter)
    if not path.is_file():
        return None
    return pd.DataFrame([rec for _, rec in _read_csv(path, COVERAGE_COLUMNS)], columns=list(COVERAGE_COLUMNS))


def scored_sets(tasks: Sequence[str]) -> list[str]:
    """The ``"dataset/split"`` each evaluation task is computed on (:mod:`sentcl.evaluation.tasks`)."""
    from ...evaluation.tasks import task

    return [f"{task(name).dataset}/{task(name).split}" for name in tasks]


def chapter_needs(chapter: Chapter) -> Needs:
    """The :data:`Needs` of ``chapter``'s paper profile, read from its parameters (the notebook's defaults) by its
    :attr:`~sentcl.book.chapter_spec.Chapter.needs`."""
    from ..parameters import shipped_parameters

    if chapter.needs is None:
        raise ConfigError(f"{chapter.name}: no paper tables to cover (a chapter of our own)")
    return chapter.needs(shipped_parameters(chapter.name))


__all__ = [
    "COVERAGE",
    "COVERAGE_COLUMNS",
    "Needs",
    "chapter_needs",
    "missing_files",
    "paper_coverage",
    "read_coverage",
    "scored_sets",
    "write_coverage",
]
