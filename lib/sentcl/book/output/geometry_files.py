"""The geometry files: where every model of every chapter lies on the hypersphere, and how it got there.

``<out>/geometry/<chapter>.csv``, written by :meth:`sentcl.book.notebook.chapter_run.ChapterRun.record_geometry`,
one row per measured point (columns :data:`GEOMETRY_COLUMNS`)::

    chapter,model,point,step,seed,alignment,uniformity,anisotropy,top_variance_share,largest_dimension,dimension,encoder,untouched,profile,kind,data,run_id,note
    rcl,RCL,final,,0,0.312,-2.41,0.081,0.093,0.071,384,sentence-transformers/all-MiniLM-L6-v2,,demo,reproduced,STS-B test 500 pairs ...,20261123T...,
    geometry,MNRL,trajectory,8,0,0.30,-2.39,0.08,0.09,,,sentence-transformers/all-MiniLM-L6-v2,,demo,reproduced,...

``encoder`` is the checkpoint the model is, or was trained from (empty where the chapter did not say),
``untouched`` says ("yes") that the model *is* that checkpoint, untrained: the figures draw such a model
once, however many chapters measured it, and name it by its checkpoint, never by the paper model it
stands in for. ``dimension`` is the embedding size (the isotropic reference of ``top_variance_share``
is ``10 / dimension``).

``point`` is ``final`` for a model as the chapter evaluated it, ``trajectory`` for a point a
:class:`~sentcl.training.callbacks.GeometryCallback` recorded during a training run (``step``:
optimizer steps done). The measures are those of :func:`sentcl.evaluation.geometry.evaluate_geometry`
(alignment and uniformity of Wang and Isola 2020 on L2-normalised embeddings, SimCSE's STS-B
protocol; anisotropy = mean cosine of random pairs of distinct sentences; the share of variance in
the top dimensions). The files are plain CSV so that a reader can redraw every figure from them.
Writes are atomic and follow the results files' rule: a model's rows of one seed from the same run
are replaced, and the first write of a new run drops the rows an earlier run of the chapter left.

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

import numpy as np
import pandas as pd

from ...errors import ConfigError, DataFormatError
from ...io import atomic_write_text, file_lock
from ..profiles import NAMES
from .layout import Layout
from .results import KINDS, _number, _read_csv, current_run_id

GEOMETRY_COLUMNS = (
    "chapter", "model", "point", "step", "seed", "alignment", "uniformity", "anisotropy", "top_variance_share",
    "largest_dimension", "dimension", "encoder", "untouched", "profile", "kind", "data", "run_id", "note",
)  # fmt: skip
POINTS = ("final", "trajectory")
MEASURES = ("alignment", "uniformity", "anisotropy", "top_variance_share", "largest_dimension")
REQUIRED = ("alignment", "uniformity", "anisotropy")
"""Measures every point has; the others may be empty (a trajectory point has no largest dimension)."""
TOP_DIMENSIONS = 10
"""The dimensions ``top_variance_share`` sums (:func:`sentcl.evaluation.geometry.evaluate_geometry`'s default)."""


def save_geometry(
    out_dir: str | os.PathLike, chapter: str, points: Sequence[Mapping[str, Any]], run_id: str | None = None
) -> Path:
    """Write ``points`` (dicts with :data:`GEOMETRY_COLUMNS` less chapter and run_id) into the chapter's
    geometry file, atomically: rows of the same run, model and seed are replaced, rows of other runs dropped."""
    run_id = run_id or current_run_id()
    rows = [_checked_row(chapter, dict(p), run_id) for p in points]
    models = {(r["model"], r["seed"]) for r in rows}
    path = Layout(out_dir).geometry(chapter)
    with file_lock(path.with_name(f".{path.name}.lock")):
        kept = []
        if path.is_file():
            kept = [r for _, r in _read_csv(path, GEOMETRY_COLUMNS)
                    if r["run_id"] == run_id and (r["model"], r["seed"]) not in models]
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
    if point.get("profile") not in NAMES or point.get("kind") not in KINDS:
        raise ConfigError(f"{where}: profile must be one of {NAMES} and kind one of {KINDS}")
    for name in MEASURES:
        value = point.get(name)
        if value is None and name not in REQUIRED:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
            raise ConfigError(f"{where}: {name} must be a finite number, got {value!r}")
    dimension = point.get("dimension")
    if dimension is not None and (isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1):
        raise ConfigError(f"{where}: dimension must be a positive integer, got {dimension!r}")
    row = {name: "" if point.get(name) is None else str(point[name]) for name in GEOMETRY_COLUMNS}
    for name in MEASURES:
        if point.get(name) is not None:
            row[name] = repr(float(point[name]))
    row["untouched"] = "yes" if point.get("untouched") else ""
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
        for name in (*MEASURES, "step", "seed", "dimension"):
            empty = not rec[name] and name not in REQUIRED
            row[name] = None if empty else _number(path, line, name, rec[name])
        if rec["point"] == "trajectory" and row["step"] is None:
            raise DataFormatError(path, line, "the step of a trajectory point", "an empty step")
        if rec["untouched"] not in ("", "yes"):
            raise DataFormatError(path, line, "untouched 'yes' or empty", rec["untouched"])
        row["untouched"] = rec["untouched"] == "yes"
        rows.append(row)
    return _typed(pd.DataFrame(rows, columns=list(GEOMETRY_COLUMNS)))


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    for name in MEASURES:
        frame[name] = frame[name].astype(float)
    for name in ("step", "seed", "dimension"):
        frame[name] = pd.array(frame[name], dtype="Int64")
    frame["untouched"] = frame["untouched"].astype(bool)
    return frame


def load_geometry(out_dir: str | os.PathLike, chapters: Sequence[str] | None = None) -> pd.DataFrame:
    """Every geometry file under ``<out_dir>/geometry`` (or only ``chapters``), concatenated."""
    folder = Layout(out_dir).geometry_dir
    paths = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    frames = [read_geometry(p) for p in paths if chapters is None or p.stem in chapters]
    frames = [f for f in frames if len(f)]
    if not frames:
        return _empty_geometry()
    return pd.concat(frames, ignore_index=True)


def _empty_geometry() -> pd.DataFrame:
    return _typed(pd.DataFrame(columns=list(GEOMETRY_COLUMNS)))


# --------------------------------------------------------------------------- figures

SAME_MODEL_DIGITS = 6
"""Two final points whose measures agree to this many decimals are one model measured twice."""


def checkpoint_name(encoder: str) -> str:
    """A checkpoint's short name: ``sentence-transformers/all-MiniLM-L6-v2`` -> ``all-MiniLM-L6-v2``."""
    return str(encoder).rstrip("/").split("/")[-1]


def distinct_models(frame: pd.DataFrame) -> pd.DataFrame:
    """The final points to draw, one per distinct model: each chapter's model at its first recorded seed,
    and points whose measures agree (to :data:`SAME_MODEL_DIGITS` decimals: one model measured twice, such
    as the untouched encoder every chapter measures, or a row whose run is another row's) merged into the
    first. Adds ``label`` (an untouched model by its checkpoint, ``"all-MiniLM-L6-v2 (untouched)"``, never
    by the paper model it stands in for; a trained one by its rows' names, ``"A = B"`` when two rows are
    one model) and ``chapters`` (the chapters that measured it, in order)."""
    finals = frame[frame["point"] == "final"]
    finals = finals.sort_values("seed", kind="stable", na_position="first").drop_duplicates(["chapter", "model"]).sort_index()
    groups: dict[tuple, list] = {}
    for i, row in zip(finals.index, finals[["alignment", "uniformity", "anisotropy"]].to_numpy(), strict=True):
        groups.setdefault(tuple(round(float(v), SAME_MODEL_DIGITS) for v in row), []).append(i)
    kept, labels, chapters = [], [], []
    for members in groups.values():
        rows = finals.loc[members]
        first = rows[rows["untouched"]].index[0] if rows["untouched"].any() else members[0]
        kept.append(first)
        chapters.append(list(dict.fromkeys(rows["chapter"])))
        encoder = finals.loc[first, "encoder"]
        if finals.loc[first, "untouched"] and isinstance(encoder, str) and encoder:
            labels.append(f"{checkpoint_name(encoder)} (untouched)")
        else:
            labels.append(" = ".join(dict.fromkeys(rows["model"])))
    out = finals.loc[kept].copy()
    out["label"], out["chapters"] = labels, chapters
    return out.sort_index()


def _text_box(ann, renderer):
    """The box of an annotation's text alone (an annotation's own extent includes its leader line), with a margin."""
    from matplotlib.text import Text

    return Text.get_window_extent(ann, renderer).expanded(1.08, 1.15)


def _place_labels(ax, points: list[tuple[float, float, str]], fontsize: float = 7.0) -> list:
    """Number labels beside their points, none overprinting another: for each point the first offset (on rings
    of growing radius, with a leader line beyond the first) whose box overlaps no label placed before."""
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    placed: list[Any] = []
    boxes: list[Any] = []
    rings = [(r, a) for r in (5, 12, 20, 30, 42, 56) for a in range(0, 360, 30)]
    for x, y, text in points:
        ann = ax.annotate(text, (x, y), xytext=(5, 5), textcoords="offset points", fontsize=fontsize, color="0.15",
                          zorder=5)
        for radius, angle in rings:
            dx, dy = radius * np.cos(np.radians(angle + 45)), radius * np.sin(np.radians(angle + 45))
            ann.xyann = (dx - (6 if dx < 0 else 0), dy - (4 if dy < 0 else 0))
            box = _text_box(ann, renderer)
            if not any(box.overlaps(b) for b in boxes):
                break
        if radius > 5:  # placed away from its point: drawn again with a leader line to it
            offset = ann.xyann
            ann.remove()
            ann = ax.annotate(text, (x, y), xytext=offset, textcoords="offset points", fontsize=fontsize, color="0.15",
                              zorder=5, arrowprops=dict(arrowstyle="-", color="0.6", lw=0.5, shrinkA=0, shrinkB=2))
        boxes.append(_text_box(ann, renderer))
        placed.append(ann)
    return placed


def alignment_uniformity_figure(frame: pd.DataFrame, title: str = ""):
    """Wang and Isola's plane: uniformity (x) against alignment (y), lower-left better.

    Every distinct final model (:func:`distinct_models`) as a marker (one shape per chapter) with a
    number beside it, placed so that no two numbers overprint, and a key below the plot naming each
    number; every model's ``trajectory`` as a line from its first recorded step (a hollow circle) to
    its last (an arrow head), one line per (chapter, model, seed)."""
    import matplotlib.pyplot as plt

    finals = distinct_models(frame)
    paths = frame[frame["point"] == "trajectory"]
    if finals.empty and paths.empty:
        raise ConfigError("no geometry points to draw (no chapter recorded any)")
    key_lines = math.ceil(len(finals) / 2) + 1
    fig, ax = plt.subplots(figsize=(9.5, 6.5 + 0.17 * key_lines))
    markers = dict(zip(dict.fromkeys(finals["chapter"]), "osD^vP*X", strict=False))  # spare markers left over
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
                   alpha=0.8, label=f"final models measured by {chapter}", zorder=3)
    numbered = [(r.uniformity, r.alignment, str(k)) for k, r in enumerate(finals.itertuples(), 1)]
    _place_labels(ax, numbered)
    key = [f"{k}  {r.label} [{', '.join(r.chapters)}]" for k, r in enumerate(finals.itertuples(), 1)]
    half = math.ceil(len(key) / 2)
    for column, part in enumerate((key[:half], key[half:])):
        fig.text(0.02 + 0.5 * column, 0.01, "\n".join(part), fontsize=6.5, va="bottom", ha="left", family="monospace")
    ax.set_xlabel(r"uniformity $\ell_{uniform}$ = log mean $e^{-2\|x-y\|^2}$ (lower: more uniform)")
    ax.set_ylabel(r"alignment $\ell_{align}$ = mean $\|x-x^+\|^2$ over positive pairs (lower: closer)")
    ax.annotate("better", xy=(0.04, 0.05), xytext=(0.2, 0.22), xycoords="axes fraction",
                arrowprops=dict(arrowstyle="-|>", color="green"), color="green", fontsize=10)
    ax.set_title(title or "Alignment and uniformity on STS-B (L2-normalised embeddings): lower-left is better")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.85)
    fig.subplots_adjust(left=0.09, right=0.98, top=0.95, bottom=0.09 + 0.022 * key_lines)
    return fig


def anisotropy_figure(frame: pd.DataFrame, title: str = ""):
    """Per distinct final model (:func:`distinct_models`): the mean cosine of random pairs of distinct
    sentences and the share of variance in the top :data:`TOP_DIMENSIONS` dimensions, as horizontal bars
    grouped by chapter (lower: more isotropic); the variance panel marks the isotropic reference
    ``TOP_DIMENSIONS / d`` for each embedding size d."""
    import matplotlib.pyplot as plt

    finals = distinct_models(frame)
    if finals.empty:
        raise ConfigError("no final models to draw (no chapter recorded any)")
    labels = [f"{r.label} [{', '.join(r.chapters)}]" for r in finals.itertuples()]
    colours = plt.get_cmap("tab10")
    chapter_colour = {c: colours(i % 10) for i, c in enumerate(dict.fromkeys(finals["chapter"]))}
    bar_colours = [chapter_colour[c] for c in finals["chapter"]]
    height = max(3.0, 0.28 * len(finals) + 1.4)
    fig, axes = plt.subplots(1, 2, figsize=(11.5, height), sharey=True)
    positions = range(len(finals))[::-1]
    for ax, column, label in (
        (axes[0], "anisotropy", "mean cosine of random pairs\nof distinct sentences"),
        (axes[1], "top_variance_share", f"share of the variance\nin the top {TOP_DIMENSIONS} dimensions"),
    ):
        ax.barh(list(positions), finals[column], color=bar_colours)
        for y, value in zip(positions, finals[column], strict=True):
            if not math.isnan(value):
                ax.annotate(f"{value:.3f}", (value, y), xytext=(2, 0), textcoords="offset points", va="center", fontsize=7)
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("lower: more isotropic")
        ax.grid(axis="x", alpha=0.3)
    for d in sorted({int(d) for d in finals["dimension"].dropna()}):
        axes[1].axvline(TOP_DIMENSIONS / d, color="k", ls="--", lw=1,
                        label=f"isotropic: {TOP_DIMENSIONS}/d = {TOP_DIMENSIONS / d:.3f} (d = {d})")
    if axes[1].get_legend_handles_labels()[0]:
        axes[1].legend(fontsize=7, loc="lower right", framealpha=0.9)
    axes[0].set_yticks(list(positions), labels, fontsize=7.5)
    fig.suptitle(title or "Anisotropy of every model (STS-B sentences, L2-normalised)")
    fig.tight_layout()
    return fig


def score_figure(models: Sequence[Mapping[str, Any]], score: str, correlations: Sequence[Mapping[str, Any]],
                 group: str = "model", title: str = ""):
    """Does the geometry order the models as ``score`` does? One panel per correlation
    (:func:`sentcl.evaluation.geometry.rank_correlations`): each model's measure (x) against its ``score``
    (y), coloured by its ``group`` (e.g. its method), with Spearman's rho and n in the panel's title."""
    import matplotlib.pyplot as plt

    if not models or not correlations:
        raise ConfigError("no models or correlations to draw")
    fig, axes = plt.subplots(1, len(correlations), figsize=(3.6 * len(correlations), 3.4), sharey=True, squeeze=False)
    colours = plt.get_cmap("tab10")
    names = list(dict.fromkeys(str(m[group]) for m in models))
    for ax, c in zip(axes[0], correlations, strict=True):
        for k, name in enumerate(names):
            mine = [m for m in models if str(m[group]) == name]
            ax.scatter([m[c["measure"]] for m in mine], [m[score] for m in mine], color=colours(k % 10), s=28,
                       label=name, alpha=0.85)
        rho = "n/a" if math.isnan(c["rho"]) else f"{c['rho']:+.2f}"
        ax.set_title(f"{c['measure']}: Spearman rho {rho} (n = {c['n']})", fontsize=9)
        ax.set_xlabel(f"{c['measure']} (lower: better)" if c["measure"] != "top_variance_share" else c["measure"], fontsize=8)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(score)
    axes[0][-1].legend(fontsize=7, loc="best", framealpha=0.85)
    fig.suptitle(title or f"Geometry against {score}, one point per model", fontsize=10)
    fig.tight_layout()
    return fig


__all__ = [
    "GEOMETRY_COLUMNS",
    "MEASURES",
    "POINTS",
    "TOP_DIMENSIONS",
    "alignment_uniformity_figure",
    "anisotropy_figure",
    "checkpoint_name",
    "distinct_models",
    "load_geometry",
    "read_geometry",
    "save_geometry",
    "score_figure",
]
