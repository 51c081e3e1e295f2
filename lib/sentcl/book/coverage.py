"""What a paper-profile run fills on a data root: for every row of the paper's tables, whether the run
computes it, needs data the root lacks (which files, and where they come from), or shows the paper's
value as cited.

A chapter says which rows it computes and which registered datasets each needs
(:meth:`sentcl.book.chapter.ChapterRun.paper_coverage`); every other row of the paper's tables is one it
cites. The answer is read from the data root's files and the registry (:mod:`sentcl.data.registry`),
before anything trains, so a GPU user knows what a run will and will not fill.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pandas as pd

from ..errors import ConfigError
from .results import paper_values

COVERAGE = ("runs", "needs absent data", "cited")
COVERAGE_COLUMNS = ("table", "row", "coverage", "detail")


def missing_files(name: str, data_root: str | os.PathLike) -> list[str]:
    """The files of the registered ``"dataset/split"`` that ``data_root`` lacks (empty: it has them all)."""
    from ..data.registry import info

    dataset, _, split = name.partition("/")
    entry = info(dataset)
    if split not in entry.splits:
        raise ConfigError(f"{name}: {dataset} has no split {split!r}; its splits: {', '.join(entry.splits)}")
    root = Path(data_root)
    return [f"{entry.folder}/{f}" for f in entry.splits[split].files if not (root / entry.folder / f).is_file()]


def paper_coverage(chapter: str, needs: Mapping[str, Sequence[str]], data_root: str | os.PathLike) -> pd.DataFrame:
    """One line per (table, row) of the chapter's paper values, in the paper's order: ``runs`` when the
    row is in ``needs`` (row -> the ``"dataset/split"`` names it needs) and every file of them is in
    ``data_root``; ``needs absent data`` with the missing files and each dataset's source otherwise;
    ``cited`` for a row the chapter does not compute (the paper's value is shown, labelled)."""
    from ..data.registry import info

    values = paper_values(chapter)
    unknown = sorted(set(needs) - set(values["row"]))
    if unknown:
        raise ConfigError(f"{chapter}: the paper's tables have no rows {unknown}")
    lines = []
    for (table, row), cells in values.groupby(["table", "row"], sort=False):
        if row not in needs:
            source = next((s for s in cells["source"] if s), "")
            lines.append((table, row, "cited", f"cited from {source}" if source else "the paper's own value, not recomputed"))
            continue
        absent = {name: missing_files(name, data_root) for name in needs[row]}
        absent = {name: files for name, files in absent.items() if files}
        if not absent:
            lines.append((table, row, "runs", ", ".join(needs[row])))
            continue
        detail = "; ".join(f"{name}: {', '.join(files)} (from {info(name.split('/')[0]).source})" for name, files in absent.items())
        lines.append((table, row, "needs absent data", detail))
    return pd.DataFrame(lines, columns=list(COVERAGE_COLUMNS))


__all__ = ["COVERAGE", "COVERAGE_COLUMNS", "missing_files", "paper_coverage"]
