"""The geometry files: where every model of every chapter lies on the hypersphere, and how it got there.

``<out>/geometry/<chapter>.csv``, written by :meth:`sentcl.book.chapter.ChapterRun.record_geometry`,
one row per measured point (columns :data:`GEOMETRY_COLUMNS`)::

    chapter,model,point,step,seed,alignment,uniformity,anisotropy,top_variance_share,largest_dimension,profile,kind,data,run_id,note
    rcl,RCL,final,,0,0.312,-2.41,0.081,0.093,0.071,demo,reproduced,STS-B test 500 pairs ...,20261123T...,
    geometry,MNRL,trajectory,8,0,0.30,-2.39,0.08,0.09,,demo,reproduced,...

``point`` is ``final`` for a model as the chapter evaluated it, ``trajectory`` for a point a
:class:`~sentcl.training.callbacks.GeometryCallback` recorded during a training run (``step``:
optimizer steps done). The measures are those of :func:`sentcl.evaluation.geometry.evaluate_geometry`
(alignment and uniformity of Wang and Isola 2020 on L2-normalised embeddings, SimCSE's STS-B
protocol; anisotropy = mean cosine of random pairs of distinct sentences; the share of variance in
the top dimensions). The files are plain CSV so that a reader can redraw every figure from them.
Writes are atomic and follow the results files' rule: a model's rows from the same run are
replaced, and the first write of a new run drops the rows an earlier run of the chapter left.

The two figures of the geometry chapter are drawn from these files: :func:`alignment_uniformity_figure`
and :func:`anisotropy_figure`.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConfigError, DataFormatError
from ..io import atomic_write_text, file_lock
from .results import KINDS, PROFILES, _number, _read_csv, current_run_id

GEOMETRY_COLUMNS = (
    "chapter", "model", "point", "step", "seed", "alignment", "uniformity", "anisotropy", "top_variance_share",
    "largest_dimension", "profile", "kind", "data", "run_id", "note",
)  # fmt: skip
POINTS = ("final", "trajectory")
MEASURES = ("alignment", "uniformity", "anisotropy", "top_variance_share", "largest_dimension")
REQUIRED = ("alignment", "uniformity", "anisotropy")
"""Measures every point has; the others may be empty (a trajectory point has no largest dimension)."""


def geometry_path(out_dir: str | os.PathLike, chapter: str) -> Path:
    return Path(out_dir) / "geometry" / f"{chapter}.csv"


def save_geometry(
    out_dir: str | os.PathLike, chapter: str, points: Sequence[Mapping[str, Any]], run_id: str | None = None
) -> Path:
    """Write ``points`` (dicts with :data:`GEOMETRY_COLUMNS` less chapter and run_id) into the chapter's
    geometry file, atomically: rows of the same run and model are replaced, rows of other runs dropped."""
    run_id = run_id or current_run_id()
    rows = [_checked_row(chapter, dict(p), run_id) for p in points]
    models = {r["model"] for r in rows}
    path = geometry_path(out_dir, chapter)
    with file_lock(path.with_name(f".{path.name}.lock")):
        kept = []
        if path.is_file():
            kept = [r for _, r in _read_csv(path, GEOMETRY_COLUMNS) if r["run_id"] == run_id and r["model"] not in models]
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(GEOMETRY_COLUMNS), lineterminator="\n")
        writer.writeheader()
        writer.writerows([*kept, *rows])
        atomic_write_text(path, buffer.getvalue())
    return path


def _checked_row(chapter: str, point: dict[str, Any], run_id: str) -> dict[str, str]:
    where = f"{chapter}: geometry point {point.get('model')!r}"
    unknown = set(point) - set(GEOMETRY_COLUMNS)
    if unknown:
        raise ConfigError(f"{where}: unknown fields {sorted(unknown)}; fields: {', '.join(GEOMETRY_COLUMNS)}")
    if not str(point.get("model", "")).strip():
        raise ConfigError(f"{where}: the model name is empty")
    if point.get("point") not in POINTS:
        raise ConfigError(f"{where}: point must be one of {POINTS}, got {point.get('point')!r}")
    if point["point"] == "trajectory" and point.get("step") is None:
        raise ConfigError(f"{where}: a trajectory point needs its step")
    if point.get("profile") not in PROFILES or point.get("kind") not in KINDS:
        raise ConfigError(f"{where}: profile must be one of {PROFILES} and kind one of {KINDS}")
    for name in MEASURES:
        value = point.get(name)
        if value is None and name not in REQUIRED:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ConfigError(f"{where}: {name} must be a finite number, got {value!r}")
    row = {name: "" if point.get(name) is None else str(point[name]) for name in GEOMETRY_COLUMNS}
    for name in MEASURES:
        if point.get(name) is not None:
            row[name] = repr(float(point[name]))
    return row | {"chapter": chapter, "run_id": run_id}


def read_geometry(path: str | os.PathLike) -> pd.DataFrame:
    """One geometry file as a frame (measures as floats, step and seed as nullable integers);
    errors name the file, the line and what was expected."""
    path = Path(path)
    rows = []
    for line, rec in _read_csv(path, GEOMETRY_COLUMNS):
        row: dict[str, Any] = rec  # the measures become numbers (or None)
        if rec["point"] not in POINTS:
            raise DataFormatError(path, line, f"point one of {', '.join(POINTS)}", rec["point"])
        for name in (*MEASURES, "step", "seed"):
            empty = not rec[name] and name not in REQUIRED
            row[name] = None if empty else _number(path, line, name, rec[name])
        if rec["point"] == "trajectory" and row["step"] is None:
            raise DataFormatError(path, line, "the step of a trajectory point", "an empty step")
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(GEOMETRY_COLUMNS))
    for name in MEASURES:
        frame[name] = frame[name].astype(float)
    for name in ("step", "seed"):
        frame[name] = pd.array(frame[name], dtype="Int64")
    return frame


def load_geometry(out_dir: str | os.PathLike, chapters: Sequence[str] | None = None) -> pd.DataFrame:
    """Every geometry file under ``<out_dir>/geometry`` (or only ``chapters``), concatenated."""
    folder = Path(out_dir) / "geometry"
    paths = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    frames = [read_geometry(p) for p in paths if chapters is None or p.stem in chapters]
    frames = [f for f in frames if len(f)]
    if not frames:
        return _empty_geometry()
    return pd.concat(frames, ignore_index=True)


def _empty_geometry() -> pd.DataFrame:
    frame = pd.DataFrame(columns=list(GEOMETRY_COLUMNS))
    for name in MEASURES:
        frame[name] = frame[name].astype(float)
    return frame


# --------------------------------------------------------------------------- figures


def alignment_uniformity_figure(frame: pd.DataFrame, title: str = ""):
    """Wang and Isola's plane: uniformity (x) against alignment (y), lower-left better.

    Every ``final`` point as a marker (one marker shape per chapter, labelled with its model),
    every model's ``trajectory`` as a line from its first recorded step (a hollow circle) to its
    last (an arrow head), one line per (chapter, model, seed)."""
    import matplotlib.pyplot as plt

    finals = frame[frame["point"] == "final"]
    paths = frame[frame["point"] == "trajectory"]
    if finals.empty and paths.empty:
        raise ConfigError("no geometry points to draw (no chapter recorded any)")
    fig, ax = plt.subplots(figsize=(9, 6.5))
    markers = dict(zip(sorted(set(finals["chapter"])), "osD^vP*X", strict=False))  # spare markers left over
    colours = plt.get_cmap("tab10")
    for i, ((chapter, model, seed), path) in enumerate(paths.groupby(["chapter", "model", "seed"], sort=False, dropna=False)):
        path = path.sort_values("step")
        colour = colours(i % 10)
        ax.plot(path["uniformity"], path["alignment"], "-", color=colour, lw=1.5, alpha=0.85,
                label=f"{model} ({chapter}, seed {seed}): steps {path['step'].min()}–{path['step'].max()}")
        ax.plot(path["uniformity"].iloc[0], path["alignment"].iloc[0], "o", mfc="none", color=colour, ms=7)
        if len(path) > 1:
            ax.annotate("", xy=(path["uniformity"].iloc[-1], path["alignment"].iloc[-1]),
                        xytext=(path["uniformity"].iloc[-2], path["alignment"].iloc[-2]),
                        arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.5))
    for chapter, group in finals.groupby("chapter", sort=False):
        ax.scatter(group["uniformity"], group["alignment"], marker=markers[chapter], s=36, color="0.25",
                   alpha=0.8, label=f"{chapter}: final models", zorder=3)
        for row in group.itertuples():
            ax.annotate(row.model, (row.uniformity, row.alignment), fontsize=6.5, color="0.3",
                        xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(r"uniformity $\ell_{uniform}$ = log mean $e^{-2\|x-y\|^2}$ (lower: more uniform)")
    ax.set_ylabel(r"alignment $\ell_{align}$ = mean $\|x-x^+\|^2$ over positive pairs (lower: closer)")
    ax.annotate("better", xy=(0.04, 0.05), xytext=(0.2, 0.22), xycoords="axes fraction",
                arrowprops=dict(arrowstyle="-|>", color="green"), color="green", fontsize=10)
    ax.set_title(title or "Alignment and uniformity on STS-B (L2-normalised embeddings): lower-left is better")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.85)
    fig.tight_layout()
    return fig


def anisotropy_figure(frame: pd.DataFrame, title: str = ""):
    """Per ``final`` model: the mean cosine of random pairs of distinct sentences and the share of
    variance in the top dimensions, as horizontal bars grouped by chapter (lower: more isotropic)."""
    import matplotlib.pyplot as plt

    finals = frame[frame["point"] == "final"].drop_duplicates(["chapter", "model"], keep="last")
    if finals.empty:
        raise ConfigError("no final models to draw (no chapter recorded any)")
    labels = [f"{r.chapter}: {r.model}" for r in finals.itertuples()]
    colours = plt.get_cmap("tab10")
    chapter_colour = {c: colours(i % 10) for i, c in enumerate(dict.fromkeys(finals["chapter"]))}
    bar_colours = [chapter_colour[c] for c in finals["chapter"]]
    height = max(3.0, 0.28 * len(finals) + 1.2)
    fig, axes = plt.subplots(1, 2, figsize=(11, height), sharey=True)
    positions = range(len(finals))[::-1]
    for ax, column, label in (
        (axes[0], "anisotropy", "mean cosine of random pairs\nof distinct sentences"),
        (axes[1], "top_variance_share", "share of the variance\nin the top dimensions"),
    ):
        ax.barh(list(positions), finals[column], color=bar_colours)
        for y, value in zip(positions, finals[column], strict=True):
            if not math.isnan(value):
                ax.annotate(f"{value:.3f}", (value, y), xytext=(2, 0), textcoords="offset points", va="center", fontsize=7)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("lower: more isotropic")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(list(positions), labels, fontsize=7.5)
    fig.suptitle(title or "Anisotropy of every model (STS-B sentences, L2-normalised)")
    fig.tight_layout()
    return fig


__all__ = [
    "GEOMETRY_COLUMNS",
    "MEASURES",
    "POINTS",
    "alignment_uniformity_figure",
    "anisotropy_figure",
    "geometry_path",
    "load_geometry",
    "read_geometry",
    "save_geometry",
]
