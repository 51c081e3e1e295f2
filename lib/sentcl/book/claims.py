"""Does the paper's ordering of its rows hold in our results?

A reproduction, a miniature one above all, may miss a paper's numbers and still confirm (or
refute) what the paper concludes from them: that one method beats another. :func:`orderings`
takes every pair of rows of a table that the paper reports and we computed, and says for each
whether our values order them as the paper's do; :meth:`Ordering.sentence` writes that as a
sentence, so a chapter states its conclusions from its numbers rather than typing them.
:func:`table_orderings` and :func:`ordering_counts` do it for every table, on its Average column
or, in a table without one, on each of its columns, for the book's scorecard: what a miniature run can test, where agreement of its numbers with
the paper's would be coincidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from ..errors import ConfigError


@dataclass(frozen=True)
class Ordering:
    """Two rows of a paper table, ``higher`` above ``lower`` in the paper's ``column``, and ours."""

    table: str
    column: str
    higher: str
    lower: str
    paper_higher: float
    paper_lower: float
    ours_higher: float
    ours_lower: float
    profile: str

    @property
    def holds(self) -> bool:
        """Whether our values order the two rows as the paper's do (strictly)."""
        return self.ours_higher > self.ours_lower

    def sentence(self) -> str:
        """E.g. "MNRLSBERT above SBERT (Table 2, Average): paper 78.60 vs 74.89 (+3.71), ours ... : holds"."""
        paper_gap, ours_gap = self.paper_higher - self.paper_lower, self.ours_higher - self.ours_lower
        verdict = "the paper's ordering holds" if self.holds else "the paper's ordering does NOT hold"
        return (
            f"{self.higher} above {self.lower} ({self.table}, {self.column}): paper {self.paper_higher:.2f} vs "
            f"{self.paper_lower:.2f} ({paper_gap:+.2f}), ours ({self.profile}) {self.ours_higher:.2f} vs "
            f"{self.ours_lower:.2f} ({ours_gap:+.2f}): {verdict}."
        )


def orderings(compared: pd.DataFrame, table: str, column: str = "Average") -> list[Ordering]:
    """Every pair of ``table``'s rows that the paper reports and we computed (not only cited), in
    the paper's row order, each oriented as the paper orders it; pairs the paper ties are left out.

    ``compared`` is :func:`sentcl.book.report.compare`'s frame (e.g. ``ChapterRun.compare()``).
    """
    part = compared[(compared["table"] == table) & (compared["column"] == column)]
    if part.empty:
        raise ConfigError(f"no cells of {table!r}, column {column!r} in the comparison")
    done = part[(part["status"] != "cited") & part["paper_value"].notna() & part["value"].notna()]
    out = []
    for (_, a), (_, b) in combinations(done.iterrows(), 2):
        if math.isclose(a["paper_value"], b["paper_value"]):
            continue
        hi, lo = (a, b) if a["paper_value"] > b["paper_value"] else (b, a)
        out.append(
            Ordering(
                table=table, column=column, higher=hi["row"], lower=lo["row"],
                paper_higher=float(hi["paper_value"]), paper_lower=float(lo["paper_value"]),
                ours_higher=float(hi["value"]), ours_lower=float(lo["value"]),
                profile=str(hi["profile"]),
            )
        )
    return out


def headline_columns(compared: pd.DataFrame, table: str) -> list[str]:
    """The columns a table's orderings are read on: its ``Average`` when it has one (the papers'
    summary of several tasks), else every column it has (one metric or task each), in order."""
    columns = list(dict.fromkeys(compared.loc[compared["table"] == table, "column"]))
    return ["Average"] if "Average" in columns else columns


def table_orderings(compared: pd.DataFrame, column: str | None = None) -> dict[str, list[Ordering]]:
    """:func:`orderings` of every table of ``compared``, by table in order: on ``column`` (a table
    without it is left out) or, by default, on each of the table's :func:`headline_columns`. A
    table with fewer than two computed rows has none."""
    found = {}
    for table in dict.fromkeys(compared["table"]):
        columns = headline_columns(compared, table) if column is None else [column]
        present = [c for c in columns if ((compared["table"] == table) & (compared["column"] == c)).any()]
        if present:
            found[table] = [o for c in present for o in orderings(compared, table, c)]
    return found


def ordering_counts(compared: pd.DataFrame, column: str | None = None) -> tuple[int, int]:
    """(orderings this run computed, orderings that hold), over every table (see :func:`table_orderings`)."""
    found = [o for table in table_orderings(compared, column).values() for o in table]
    return len(found), sum(o.holds for o in found)


__all__ = ["Ordering", "headline_columns", "ordering_counts", "orderings", "table_orderings"]
