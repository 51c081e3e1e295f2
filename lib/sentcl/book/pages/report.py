"""Comparison tables ("paper | ours | Δ") and figures from paper values and results files.

:func:`compare` joins a chapter's paper values with its results, cell by cell;
:func:`comparison_table` lays one table out as the paper did (rows in the paper's order,
the paper's columns), with three lines per reproduced row -- the paper's value, ours and
the difference Δ = ours − paper -- and one line, labelled *cited*, for each row we do not
recompute; :func:`averages_chart` draws the paper's and our averages side by side.

Agreement is judged only where it means something: for cells of a run with the paper's
model and data (profile ``paper``, kind ``reproduced``, see :func:`judged`). There it is
measured in points on a 0–100 scale (a difference of 0.01 on a [0, 1] metric is 1 point):
``|Δ| ≤ thresholds[0]`` agrees (green), ``≤ thresholds[1]`` is close (amber), anything
larger differs (red). A miniature -- the demo profile (a small stand-in encoder, already
trained on other data, fine-tuned on a subset), the smoke profile or any run on the
project's sample data -- shows its Δ uncoloured and is never counted as agreeing or not:
how close its numbers come to the paper's is coincidence. What a miniature can test is
the paper's ordering of its rows (:mod:`sentcl.book.output.claims`).

Text that ends up on a published page (the data a row was computed on, notes) goes
through :func:`sentcl.book.redaction.public_text`, which replaces local absolute paths.
"""

from __future__ import annotations

import html
import math
import os
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from ...errors import ConfigError
from ...io import atomic_path, atomic_write_json, read_json
from ..output.layout import Layout
from ..output.results import current_run_id, paper_values
from ..profiles import PROFILES
from ..redaction import public_text

THRESHOLDS = (1.0, 3.0)
AGREEMENT = ("agrees", "close", "differs")
COLOURS = {
    "agrees": "#c8e6c9",
    "close": "#ffe3a3",
    "differs": "#f6b8b8",
}
_MARKER = re.compile(r"^\[[^\]]+\]")  # the paper's citation marker, e.g. "[#]" in "[#] Gao et al. (2021)"


def judged(profile: object, status: object) -> bool:
    """Whether a cell's agreement with the paper means something: computed by a run with the
    paper's model and data (a judged profile: :attr:`sentcl.book.profiles.Profile.judged`) on real data (kind ``reproduced``)."""
    return profile in PROFILES and PROFILES[profile].judged and status == "reproduced"


def agreement(points: float, thresholds: Sequence[float] = THRESHOLDS) -> str | None:
    """'agrees', 'close' or 'differs' for a difference in points (None for NaN)."""
    if points is None or math.isnan(points):
        return None
    good, fair = thresholds
    if not 0 <= good <= fair:
        raise ConfigError(f"thresholds must satisfy 0 <= agrees <= close, got {tuple(thresholds)}")
    size = abs(points)
    return "agrees" if size <= good else "close" if size <= fair else "differs"


def compare(
    chapter: str,
    results: pd.DataFrame,
    paper: pd.DataFrame | None = None,
    thresholds: Sequence[float] = THRESHOLDS,
) -> pd.DataFrame:
    """Every cell of the chapter's paper tables and results, one row per cell.

    ``results`` is a results frame (:func:`sentcl.book.output.results.load_results`; rows of other
    chapters are ignored), ``paper`` the paper values (default: the chapter's file).
    Columns: chapter, table, row, column, paper_value, scale, source, value, std, seeds,
    profile, kind, data, note, run_id, delta (ours − paper, in the paper's units),
    points (delta on a 0–100 scale), status, judged and agreement. ``status`` is ``cited``
    for a paper cell we have no result for, else the result's kind (``reproduced`` or
    ``sample-data``); ``judged`` (:func:`judged`) is True for cells of a paper-profile run
    on real data, and ``agreement`` is set only for judged cells the paper reports.
    Order: the paper's tables, rows and columns, then what only we have.
    """
    paper = paper_values(chapter) if paper is None else paper
    ours = results[results["chapter"] == chapter] if len(results) else results
    key = ["table", "row", "column"]
    merged = pd.merge(
        paper.rename(columns={"value": "paper_value"}),
        ours.drop(columns=["chapter", "paper_value"]),
        on=key,
        how="outer",
        sort=False,
        indicator=True,
    )
    merged.insert(0, "chapter", chapter)
    for col in ("paper_value", "value", "std"):
        merged[col] = pd.to_numeric(merged[col]).astype(float)
    merged["scale"] = merged["scale"].fillna(100.0).astype(float)
    merged["source"] = merged["source"].fillna("")
    merged["delta"] = merged["value"] - merged["paper_value"]
    merged["points"] = merged["delta"] * 100.0 / merged["scale"]
    merged["status"] = merged["kind"].where(merged["_merge"] != "left_only", "cited")
    merged["judged"] = [judged(p, s) for p, s in zip(merged["profile"], merged["status"], strict=True)]
    merged["agreement"] = [agreement(p, thresholds) if j else None for p, j in zip(merged["points"], merged["judged"], strict=True)]
    merged = merged.drop(columns="_merge")
    return _in_paper_order(merged, paper, ours)


def _in_paper_order(merged: pd.DataFrame, paper: pd.DataFrame, ours: pd.DataFrame) -> pd.DataFrame:
    """Sort cells by first appearance (the paper's, then ours): tables, then rows and
    columns within their table."""
    seen = pd.concat([paper[["table", "row", "column"]], ours[["table", "row", "column"]]], ignore_index=True)

    def first(keys) -> dict:
        return {k: i for i, k in reversed(list(enumerate(keys)))}

    table = first(seen["table"])
    row = first(zip(seen["table"], seen["row"], strict=True))
    column = first(zip(seen["table"], seen["column"], strict=True))
    rank = [(table[t], row[(t, r)], column[(t, c)]) for t, r, c in zip(merged["table"], merged["row"], merged["column"], strict=True)]
    return merged.iloc[sorted(range(len(merged)), key=rank.__getitem__)].reset_index(drop=True)


def tables(compared: pd.DataFrame) -> list[str]:
    """The tables of a comparison, in order."""
    return list(dict.fromkeys(compared["table"]))


def comparison_frame(compared: pd.DataFrame, table: str) -> pd.DataFrame:
    """One table in the paper's layout: a (row, line) index with line 'paper', 'ours'
    and 'Δ' (only the lines that exist for that row), the paper's columns, numbers."""
    part = compared[compared["table"] == table]
    if part.empty:
        raise ConfigError(f"no table {table!r}; tables: {tables(compared)}")
    columns = list(dict.fromkeys(part["column"]))
    lines: dict[tuple[str, str], dict[str, float]] = {}
    for row in dict.fromkeys(part["row"]):
        cells = part[part["row"] == row]
        for line, col in (("paper", "paper_value"), ("ours", "value"), ("Δ", "delta")):
            if cells[col].notna().any():
                lines[(row, line)] = dict(zip(cells["column"], cells[col], strict=True))
    frame = pd.DataFrame.from_dict(lines, orient="index", columns=columns)
    frame.index = pd.MultiIndex.from_tuples(frame.index, names=["model", "line"])
    return frame


class ComparisonTable:
    """One paper table beside ours: ``styler`` (a pandas Styler) and a legend.

    Shows itself in a notebook; :meth:`to_html` gives the table and its legend for a page.
    """

    def __init__(self, styler, legend: list[str]):
        self.styler = styler
        self.legend = legend

    def to_html(self) -> str:
        items = "".join(f"<li>{html.escape(item)}</li>" for item in self.legend)
        return (
            '<div class="sentcl-table" style="overflow-x: auto">'
            + self.styler.to_html()
            + f'<ul class="sentcl-legend">{items}</ul></div>'
        )

    def _repr_html_(self) -> str:
        return self.to_html()


def comparison_table(
    compared: pd.DataFrame,
    table: str,
    thresholds: Sequence[float] = THRESHOLDS,
    caption: str | None = None,
) -> ComparisonTable:
    """One paper table laid out as the paper did, ours beside the paper's numbers.

    Lines per row: ``paper`` (the paper's value, with its citation marker where the
    paper cites it) and, when we reproduced the row, ``ours · <profile>`` (± std over
    seeds) and ``Δ``, coloured by agreement; a row we do not recompute shows only
    ``paper (cited)`` (a value the paper cites from another paper) or ``paper (not run)``
    (one of the paper's own rows this run did not compute); a row only we have shows only ours.
    Only the cells of a paper-profile run on real data are coloured (:func:`judged`); a
    miniature's Δ stays uncoloured. The legend explains markers, colours, the data used and
    any notes.
    """
    part = compared[compared["table"] == table]
    frame = comparison_frame(compared, table)
    text = pd.DataFrame("", index=frame.index, columns=frame.columns)
    css = pd.DataFrame("", index=frame.index, columns=frame.columns)
    labels = []
    by_cell = {(r.row, r.column): r for r in part.itertuples(index=False)}
    for row, line in frame.index:
        cells = [by_cell.get((row, c)) for c in frame.columns]
        present = [c for c in cells if c is not None]
        reproduced = any(c.status != "cited" for c in present)
        if line == "paper":
            marker = _marker(next((c.source for c in present if c.source), ""))
            if reproduced:
                labels.append("paper" + (f" {marker}" if marker else ""))
            else:  # a row the paper cites from elsewhere, or one of its own this run did not compute
                labels.append(f"paper {marker} (cited)" if marker else "paper (not run)")
        elif line == "ours":
            first = next(c for c in present if c.status != "cited")
            what = "sample data" if first.status == "sample-data" else first.profile
            seeds = len(first.seeds)
            labels.append(f"ours · {what}" + (f" · {seeds} seeds" if seeds > 1 else ""))
        else:
            labels.append("Δ")
        for col, cell in zip(frame.columns, cells, strict=True):
            if cell is None:
                continue
            digits = 2 if cell.scale == 100 else 3
            if line == "paper" and not math.isnan(cell.paper_value):
                text.loc[(row, line), col] = f"{cell.paper_value:.{digits}f}"
            elif line == "ours" and not math.isnan(cell.value):
                # the spread under the mean, so that a many-column table stays narrow
                std = "" if math.isnan(cell.std) else f"<br><small>± {cell.std:.{digits}f}</small>"
                text.loc[(row, line), col] = f"{cell.value:.{digits}f}{std}"
            elif line == "Δ" and not math.isnan(cell.delta):
                text.loc[(row, line), col] = f"{cell.delta:+.{digits}f}".replace("-", "−")
            if line in ("ours", "Δ") and cell.judged and cell.agreement in COLOURS:
                css.loc[(row, line), col] = f"background-color: {COLOURS[cell.agreement]}; color: #111"
    text.index = pd.MultiIndex.from_tuples(
        [(row, label) for (row, _), label in zip(frame.index, labels, strict=True)], names=["model", ""]
    )
    css.index = text.index
    styler = (
        text.style.apply(lambda _: css, axis=None)
        .set_caption(html.escape(caption or f"{table}: paper vs ours"))
        .set_uuid(_slug(f"{part['chapter'].iloc[0]}-{table}"))
        .set_table_attributes('class="sentcl-comparison"')
        .set_table_styles(
            [  # compact, so that a paper's table fits a book page beside both sidebars (book/_static/sentcl.css)
                {"selector": "td", "props": "text-align: right; vertical-align: top; white-space: nowrap; padding: 0.1em 0.25em"},
                {"selector": "th", "props": "text-align: left; vertical-align: top; white-space: nowrap; padding: 0.1em 0.3em"},
                {"selector": "th.row_heading.level0", "props": "white-space: normal; min-width: 5em; width: 7em"},
                {"selector": "th.row_heading.level1", "props": "white-space: normal; min-width: 4em"},
                {"selector": "caption", "props": "caption-side: top; font-weight: bold; text-align: left"},
                {"selector": "", "props": "margin-left: 0"},
            ]
        )
    )
    return ComparisonTable(styler, legend(part, thresholds))


def legend(part: pd.DataFrame, thresholds: Sequence[float] = THRESHOLDS) -> list[str]:
    """The lines under a comparison table: citations, colours (or why there are none), data used, notes."""
    good, fair = thresholds
    items = []
    sources = dict.fromkeys(s for s in part["source"] if s)
    if sources:
        items.append("Cited by the paper: " + "; ".join(sources) + ".")
    items.append(
        "paper (cited): a value the paper cites from the work marked, not recomputed here; "
        "paper (not run): the paper's own result, not computed by this run. Δ = ours − paper."
    )
    done = part[part["status"] != "cited"]
    if done["judged"].astype(bool).any():
        items.append(
            f"Agreement (paper-profile runs: the paper's models on the paper's data): green |Δ| ≤ {good:g}, "
            f"amber ≤ {fair:g}, red > {fair:g} points on a 0–100 scale."
        )
    miniature = done[~done["judged"].astype(bool)]
    if len(miniature):
        if (miniature["status"] == "sample-data").any():
            items.append(
                "ours · sample data: computed on the project's sample data, which tests the code; "
                "its numbers say nothing about the paper, so Δ is not coloured."
            )
        profiles = sorted(set(miniature.loc[miniature["status"] != "sample-data", "profile"].dropna()))
        if profiles:
            items.append(
                f"ours · {', '.join(profiles)}: a miniature run (a smaller stand-in encoder, already trained on other "
                "data, fine-tuned on a fraction of the paper's training data), not the paper's setup. How close its numbers "
                "come to the paper's is coincidence, so Δ is not coloured as agreement; what a miniature can test "
                "is the paper's ordering of its rows."
            )
    for data in dict.fromkeys(done["data"].dropna()):
        if data:
            items.append(f"Data: {public_text(data)}.")
    for row, note in dict.fromkeys(zip(done["row"], done["note"].fillna(""), strict=True)):
        if note:
            items.append(f"{row}: {public_text(note)}")
    return items


def summary(compared: pd.DataFrame) -> dict[str, int]:
    """Counts of a comparison: the paper's cells, those this run computed, and of those the
    judged ones (:func:`judged`) by agreement and the miniature ones (not judged); the
    paper's cells we did not compute (cited), and the cells only we have."""
    in_paper = compared["paper_value"].notna()
    computed = in_paper & (compared["status"] != "cited")
    is_judged = compared["judged"].astype(bool)
    counts = {
        "paper cells": int(in_paper.sum()),
        "computed": int(computed.sum()),
        "judged": int((computed & is_judged).sum()),
    }
    for a in AGREEMENT:
        counts[a] = int((computed & is_judged & (compared["agreement"] == a)).sum())
    counts["miniature"] = int((computed & ~is_judged).sum())
    counts["cited"] = int((compared["status"] == "cited").sum())
    counts["ours only"] = int((~in_paper).sum())
    return counts


def averages_chart(
    compared: pd.DataFrame,
    table: str,
    column: str = "Average",
    rows: Sequence[str] | None = None,
    title: str | None = None,
):
    """A horizontal bar chart of one column (the average) per model: the paper's value
    and ours side by side (ours hatched when computed on sample data).

    ``rows`` picks and orders the models (default: every row of the table).
    Returns the matplotlib Figure; save it with :func:`save_figure`.
    """
    import matplotlib.pyplot as plt
    import numpy as np

    part = compared[(compared["table"] == table) & (compared["column"] == column)]
    if part.empty:
        columns = list(dict.fromkeys(compared.loc[compared["table"] == table, "column"]))
        raise ConfigError(f"{table} has no column {column!r}; its columns: {columns}")
    order = list(rows) if rows is not None else list(dict.fromkeys(part["row"]))
    cells = part.set_index("row").reindex(order)
    missing = [r for r in order if r not in set(part["row"])]
    if missing:
        raise ConfigError(f"{table} has no rows {missing} in {column!r}; its rows: {list(dict.fromkeys(part['row']))}")
    y = np.arange(len(order))
    h = 0.38
    fig, ax = plt.subplots(figsize=(7.5, 0.42 * len(order) + 1.3))
    paper_vals = cells["paper_value"].to_numpy(dtype=float)
    ours_vals = cells["value"].to_numpy(dtype=float)
    ax.barh(y - h / 2, np.nan_to_num(paper_vals), h, label="paper", color="#7a8fb3")
    sample = (cells["status"] == "sample-data").to_numpy()
    ax.barh(
        y + h / 2, np.nan_to_num(ours_vals), h, label="ours", color="#e8913a",
        hatch=["//" if s else "" for s in sample] if sample.any() else None,
    )
    digits = 2 if float(cells["scale"].iloc[0]) == 100 else 3
    for yi, (p, o) in enumerate(zip(paper_vals, ours_vals, strict=True)):
        for v, off in ((p, -h / 2), (o, h / 2)):
            if not math.isnan(v):
                ax.text(v, yi + off, f" {v:.{digits}f}", va="center", fontsize=7)
    ax.set_yticks(y, order)
    ax.invert_yaxis()
    ax.set_xlabel(column)
    top = np.nanmax(np.concatenate([paper_vals, ours_vals]))
    ax.set_xlim(0, top * 1.12 if np.isfinite(top) and top > 0 else 1)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if sample.any():
        ax.text(1.01, 0.0, "hatched:\nsample data", transform=ax.transAxes, ha="left", va="bottom", fontsize=7)
    ax.set_title(title or f"{table}: {column}, paper vs ours", fontsize=10)
    fig.tight_layout()
    return fig


def save_figure(fig, out_dir: str | os.PathLike, chapter: str, name: str, caption: str) -> Path:
    """Save ``fig`` as ``<out>/figures/<chapter>/<name>.png`` and ``.svg`` (atomically),
    with ``<name>.json`` holding the caption and the run id the book shows it with.
    Returns the PNG's path."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
        raise ConfigError(f"figure name {name!r}: use letters, digits, '-' and '_'")
    folder = Layout(out_dir).figures(chapter)
    for ext in ("png", "svg"):
        with atomic_path(folder / f"{name}.{ext}") as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight")
    atomic_write_json(folder / f"{name}.json", {"caption": caption, "run_id": current_run_id()})
    return folder / f"{name}.png"


def figures(out_dir: str | os.PathLike, chapter: str) -> list[dict]:
    """The figures a chapter saved: ``{"name", "png", "svg", "caption", "run_id"}``, by name."""
    folder = Layout(out_dir).figures(chapter)
    found = []
    for meta in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        png = meta.with_suffix(".png")
        if png.is_file():
            info = read_json(meta, "a figure caption file")
            found.append({"name": meta.stem, "png": png, "svg": meta.with_suffix(".svg"), **info})
    return found


def _marker(source: str) -> str:
    m = _MARKER.match(source)
    return m.group(0) if m else ("[cited]" if source else "")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
