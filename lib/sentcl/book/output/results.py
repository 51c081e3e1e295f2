"""The files every number in the book comes from: paper values, results files, run records.

Three kinds of files, each with one schema, validated on read with errors naming the
file, the line and what was expected:

**Paper values** -- ``data/papers/<chapter>.csv``, typed in from the paper, one row per
table cell, in the paper's row and column order::

    table,row,column,value,scale,source
    Table 1,Avg. GloVe embeddings,STS12,55.14,100,[@] Reimers and Gurevych (2019)

``scale`` is the score's full scale (100 for scores x100 and percentages, 1 for scores in
[0, 1]) so that differences can be judged in points; ``source`` is the paper's own
citation marker and reference where the paper cites the value from another paper, and
empty where the value is the paper's own result.

**Results** -- ``<out>/results/<chapter>.csv``, written by a chapter notebook, one row
per table cell it reproduced (columns :data:`RESULT_COLUMNS`): the value, its standard
deviation over the seeds, the seeds, the paper's value for that cell (empty for a row the
paper does not have), the profile, ``kind`` (``reproduced``, or ``sample-data`` when the
run read the project's sample data: such numbers say nothing about the paper), the data
used, the run id and a free note. Writes are atomic and idempotent:
:func:`save_results` replaces the cells it is given, and the first save of a new run
drops every row an earlier run of the same chapter left.

**Run records** -- ``<out>/records/<kind>-<name>-<run_id>.json``, one per notebook run
(written by ``sentcl reproduce``) or training run (written by the trainer), see
:class:`RunRecord`.
"""

from __future__ import annotations

import csv
import io
import math
import os
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ...errors import ConfigError, DataFormatError, DataMissingError
from ...io import atomic_write_text, file_lock
from ...paths import resource
from ..profiles import NAMES, policy
from .layout import Layout

KINDS = ("reproduced", "sample-data")  # kinds of result rows; "cited" is what the report calls a paper cell without one
PAPER_COLUMNS = ("table", "row", "column", "value", "scale", "source")
RESULT_COLUMNS = (
    "chapter",
    "table",
    "row",
    "column",
    "value",
    "std",
    "seeds",
    "paper_value",
    "profile",
    "kind",
    "data",
    "run_id",
    "note",
)
RUN_ID_ENV = "SENTCL_RUN_ID"


# --------------------------------------------------------------------------- paper values


def paper_values_path(chapter: str) -> Path:
    return resource("papers", f"{chapter}.csv")


def read_paper_values(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate a paper-values file (see the module docstring).

    Returns a DataFrame with columns :data:`PAPER_COLUMNS` in file order (the paper's
    order of tables, rows and columns). Raises :class:`DataFormatError` naming the line.
    """
    path = Path(path)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, rec in _read_csv(path, PAPER_COLUMNS):
        for field in ("table", "row", "column"):
            if not rec[field].strip():
                raise DataFormatError(path, line, f"a non-empty {field!r}", rec[field])
        value = _number(path, line, "value", rec["value"])
        scale = _number(path, line, "scale", rec["scale"])
        if scale not in (1.0, 100.0):
            raise DataFormatError(path, line, "scale 100 (scores x100, percentages) or 1 (scores in [0, 1])", rec["scale"])
        key = (rec["table"], rec["row"], rec["column"])
        if key in seen:
            raise DataFormatError(path, line, f"one value per cell (the cell {key} is already on line {seen[key]})", rec["value"])
        seen[key] = line
        rows.append({**rec, "value": value, "scale": scale})
    return pd.DataFrame(rows, columns=list(PAPER_COLUMNS))


def paper_values(chapter: str) -> pd.DataFrame:
    """The reported values of a chapter's paper (``data/papers/<chapter>.csv``).

    A chapter whose paper values are not typed in yet gets an empty frame.
    """
    path = paper_values_path(chapter)
    if not path.is_file():
        return pd.DataFrame(columns=list(PAPER_COLUMNS))
    return read_paper_values(path)


# --------------------------------------------------------------------------- results files


@dataclass(frozen=True)
class Result:
    """One reproduced table cell, as a chapter notebook reports it.

    ``value`` and ``std`` are in the paper's units (e.g. Spearman x100 where the paper
    reports x100); ``std`` is the standard deviation over ``seeds`` (None for one seed).
    """

    table: str
    row: str
    column: str
    value: float
    seeds: tuple[int, ...]
    profile: str
    kind: str
    data: str
    std: float | None = None
    note: str = ""


def new_run_id() -> str:
    """A sortable, unique run id: UTC time plus 6 random hex digits."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


_PROCESS_RUN_ID: str | None = None


def current_run_id() -> str:
    """The id of the run this process belongs to.

    ``sentcl reproduce`` sets ``$SENTCL_RUN_ID`` for each notebook's kernel; a notebook
    run by hand (Jupyter, Colab, papermill) gets one id per kernel process.
    """
    global _PROCESS_RUN_ID
    env = os.environ.get(RUN_ID_ENV)
    if env:
        return env
    if _PROCESS_RUN_ID is None:
        _PROCESS_RUN_ID = new_run_id()
    return _PROCESS_RUN_ID


def save_results(out_dir: str | os.PathLike, chapter: str, results: Iterable[Result], run_id: str | None = None) -> Path:
    """Write reproduced cells into ``<out_dir>/results/<chapter>.csv``, atomically.

    Idempotent: a cell (table, row, column) already in the file from the same run is
    replaced; rows from any other run of this chapter are dropped, so re-running a
    notebook replaces its rows instead of mixing two runs. Each cell's paper value is
    looked up in the chapter's paper values; a cell in one of the paper's tables must use
    one of that table's columns (a misspelt column is an error, not a new column).
    """
    run_id = run_id or current_run_id()
    results = list(results)
    paper = paper_values(chapter)
    paper_index = {(r.table, r.row, r.column): r.value for r in paper.itertuples(index=False)}
    paper_columns: dict[str, list[str]] = {}
    for r in paper.itertuples(index=False):
        paper_columns.setdefault(r.table, [])
        if r.column not in paper_columns[r.table]:
            paper_columns[r.table].append(r.column)

    new_rows: dict[tuple[str, str, str], dict[str, str]] = {}
    for res in results:
        _check_result(chapter, res, paper_columns)
        key = (res.table, res.row, res.column)
        if key in new_rows:
            raise ConfigError(f"{chapter}: the cell {key} is given twice")
        new_rows[key] = {
            "chapter": chapter,
            "table": res.table,
            "row": res.row,
            "column": res.column,
            "value": _fmt(res.value),
            "std": _fmt(res.std),
            "seeds": " ".join(str(int(s)) for s in res.seeds),
            "paper_value": _fmt(paper_index.get(key)),
            "profile": res.profile,
            "kind": res.kind,
            "data": res.data,
            "run_id": run_id,
            "note": res.note,
        }

    path = Layout(out_dir).results(chapter)
    with file_lock(path.with_name(f".{path.name}.lock")):  # read, merge and replace under one lock
        kept: list[dict[str, str]] = []
        if path.exists():
            for row in _read_result_rows(path, chapter):
                if row["run_id"] != run_id:
                    continue  # an earlier run of this chapter: replaced as a whole
                key = (row["table"], row["row"], row["column"])
                kept.append(new_rows.pop(key) if key in new_rows else row)
        kept.extend(new_rows.values())
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=RESULT_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
        atomic_write_text(path, buf.getvalue())
    return path


def read_results(path: str | os.PathLike) -> pd.DataFrame:
    """Read and validate one results file (its name must be ``<chapter>.csv``)."""
    path = Path(path)
    rows = _read_result_rows(path, path.stem)
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    for col in ("value", "std", "paper_value"):
        frame[col] = pd.to_numeric(frame[col].replace("", math.nan))
    frame["seeds"] = [tuple(int(s) for s in v.split()) for v in frame["seeds"]]
    return frame


def load_results(out_dir: str | os.PathLike, chapters: Sequence[str] | None = None) -> pd.DataFrame:
    """Every results file under ``<out_dir>/results`` (or only ``chapters``), concatenated."""
    folder = Layout(out_dir).results_dir
    paths = sorted(folder.glob("*.csv")) if folder.is_dir() else []
    if chapters is not None:
        paths = [p for p in paths if p.stem in chapters]
    frames = [read_results(p) for p in paths]
    if not frames:
        return _empty_results()
    return pd.concat(frames, ignore_index=True)


def _empty_results() -> pd.DataFrame:
    frame = pd.DataFrame(columns=list(RESULT_COLUMNS))
    for col in ("value", "std", "paper_value"):
        frame[col] = frame[col].astype(float)
    return frame


def _check_result(chapter: str, res: Result, paper_columns: dict[str, list[str]]) -> None:
    where = f"{chapter}: result ({res.table!r}, {res.row!r}, {res.column!r})"
    for name in ("table", "row", "column"):
        if not str(getattr(res, name)).strip():
            raise ConfigError(f"{where}: {name} is empty")
    policy(res.profile, where)
    if res.kind not in KINDS:
        raise ConfigError(f"{where}: kind {res.kind!r} is not one of {KINDS}")
    if not _finite(res.value):
        raise ConfigError(f"{where}: value {res.value!r} is not a finite number")
    if res.std is not None and not (_finite(res.std) and res.std >= 0):
        raise ConfigError(f"{where}: std {res.std!r} is not a finite number >= 0")
    if not res.seeds:
        raise ConfigError(f"{where}: no seeds given (the seeds the value was averaged over)")
    if res.std is not None and len(res.seeds) < 2:
        raise ConfigError(f"{where}: a std needs at least two seeds, got {list(res.seeds)}")
    cols = paper_columns.get(res.table)
    if cols is not None and res.column not in cols:
        raise ConfigError(f"{where}: {res.table} of the paper has no column {res.column!r}; its columns: {', '.join(cols)}")


def _read_result_rows(path: Path, chapter: str) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, rec in _read_csv(path, RESULT_COLUMNS):
        if rec["chapter"] != chapter:
            raise DataFormatError(path, line, f"chapter {chapter!r} (the file's name)", rec["chapter"])
        for field in ("table", "row", "column", "run_id"):
            if not rec[field].strip():
                raise DataFormatError(path, line, f"a non-empty {field!r}", rec[field])
        _number(path, line, "value", rec["value"])
        if rec["std"]:
            _number(path, line, "std", rec["std"])
        if rec["paper_value"]:
            _number(path, line, "paper_value", rec["paper_value"])
        if not rec["seeds"] or not all(s.lstrip("-").isdigit() for s in rec["seeds"].split()):
            raise DataFormatError(path, line, "seeds as integers separated by spaces", rec["seeds"])
        if rec["profile"] not in NAMES:
            raise DataFormatError(path, line, f"a profile in {NAMES}", rec["profile"])
        if rec["kind"] not in KINDS:
            raise DataFormatError(path, line, f"a kind in {KINDS}", rec["kind"])
        key = (rec["table"], rec["row"], rec["column"])
        if key in seen:
            raise DataFormatError(path, line, f"one row per cell (the cell {key} is already on line {seen[key]})", rec["value"])
        seen[key] = line
        rows.append(rec)
    return rows


def _read_csv(path: Path, columns: Sequence[str]) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, record) for every data row of a CSV file with exactly ``columns``."""
    if not path.is_file():
        raise DataMissingError(f"{path} not found")
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if header != list(columns):
            raise DataFormatError(path, 1, f"the header {','.join(columns)}", ",".join(header or []))
        for rec in reader:
            line = reader.line_num
            if not rec:
                continue
            if len(rec) != len(columns):
                raise DataFormatError(path, line, f"{len(columns)} fields", f"{len(rec)} fields: {','.join(rec)}")
            yield line, dict(zip(columns, rec, strict=True))


def _number(path: Path, line: int, name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise DataFormatError(path, line, f"a number in {name!r}", text) from None
    if not math.isfinite(value):
        raise DataFormatError(path, line, f"a finite number in {name!r}", text)
    return value


def _finite(x: Any) -> bool:
    try:
        return math.isfinite(float(x))
    except (TypeError, ValueError):
        return False


def _fmt(x: float | None) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else repr(float(x))


