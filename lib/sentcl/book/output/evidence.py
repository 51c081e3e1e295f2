"""What each recorded row rests on: its per-item scores for every seed, and the health of the models it
was trained with, kept so that a difference between two rows can be resampled over seeds and test items.

A chapter records a row with :meth:`sentcl.book.notebook.chapter_run.ChapterRun.record_scores`; beside its cells in
the results file this writes, under ``<out>/evidence/<chapter>/<row key>/``:

``row.json``
    the row and its tables, which (task, metric) each of its columns comes from (``Average``: the mean
    of the English STS columns, as :func:`sentcl.evaluation.tasks.average`), and per task: the number of
    its test items and a fingerprint of them (two rows are compared on a column only when they were
    scored on the same items), the seeds scored, and the health record of every model each seed rests
    on (the final model, and e.g. RCL's entropy models);
``seed-<k>/<task key>.npz``
    the per-item outputs of that seed's model on that task (:class:`sentcl.evaluation.per_item.Items`).

A row may instead rest on a *measure* of its embeddings that is a mean of per-item terms (RCL's anisotropy,
IFCL's mutual information: :class:`sentcl.evaluation.per_item.ItemTerms`), recorded with
:meth:`~sentcl.book.notebook.chapter_run.ChapterRun.record_measures`: its key is the measure's name, no task of
the task table, and its column's metric is the measure itself.

A row the chapter could not run (its data are absent, the profile leaves it out) is recorded with
:func:`record_not_run` and a reason, for the whole row or for some of its columns (a row gathering
several tasks, BSC's Table 2 "BSC" with CQA-A and CQA-B, may miss one of them): a claim about it then
says "not tested" and the reason of its own column.

A model counts as evidence when its health record (:mod:`sentcl.training.health`) says it trained
(``active``) and learned (``learned``: its loss fell beyond its window-to-window noise and did not end
at its chance level): :meth:`RowEvidence.inactive` says why not.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import ConfigError, DataFormatError
from ...evaluation.per_item import Items, items_from_arrays
from ...evaluation.tasks import STS_AVERAGE, task
from ...io import atomic_path, atomic_write_json, read_json
from ...training.health import learning_judged
from .layout import Layout

ROW_FILE = "row.json"
AVERAGE = "Average"


def row_key(row: str, tables: Sequence[str]) -> str:
    """A folder name for ``row`` of ``tables``: the row's letters and digits, then a short hash of the row
    and its tables (two rows that differ only in punctuation, or one name in two tables, stay apart)."""
    slug = re.sub(r"[^A-Za-z0-9]+", "-", row).strip("-")[:60] or "row"
    whole = "\n".join([row, *sorted(tables)])
    return f"{slug}-{hashlib.sha256(whole.encode('utf-8')).hexdigest()[:8]}"


class Evidence(dict):
    """A chapter's recorded rows: ``(table, row) -> RowEvidence`` for every table each was recorded under."""

    def find(self, table: str, row: str, *, elsewhere: bool = True, column: str | None = None) -> RowEvidence | None:
        """The row of ``table``; for a table that is not one of the row's (a claim of our own), the row of
        that name if only one was recorded, or only one of them has ``column`` (RCL's "RCL" has its STS scores and,
        recorded apart, its anisotropy) (unless ``elsewhere`` is False: a paper's claim rests on its own
        table's row, never on a namesake in another table); else None."""
        if (table, row) in self:
            return self[(table, row)]
        if not elsewhere:
            return None
        named = list({id(ev): ev for (_, r), ev in self.items() if r == row}.values())
        if len(named) > 1 and column is not None:
            named = [ev for ev in named if column in ev.columns or column in ev.not_run_columns]
        return named[0] if len(named) == 1 else None


@dataclass
class RowEvidence:
    """One recorded row's evidence (module doc); :meth:`column_values` resamples one of its columns.

    A row may gather several tasks (BSC's Table 2 row "BSC" has the columns of CQA-A and of CQA-B): each
    task keeps its own seeds and the health of the runs behind them, so a claim on a column rests on the
    models scored for that column only."""

    chapter: str
    row: str
    run_id: str
    tables: list[str]  # the tables the row was recorded under (one row name may be several rows: BSC's "BSC" per task)
    columns: dict[str, list[str]]  # column -> [task key, metric label]; "Average" -> ["Average", ""]
    tasks: dict[str, dict[str, Any]]  # task key -> {"n", "population", "fingerprint", "seeds", "health": {seed: [records]}}
    trained_row: bool = False  # said by the chapter when it recorded the row (never inferred from missing health)
    not_run: str | None = None  # why the whole row (or every column not scored) was not run
    not_run_columns: dict[str, str] = field(default_factory=dict)  # column -> why it was not run
    folder: Path | None = None
    _items: dict[tuple[int, str], Items] = field(default_factory=dict, repr=False)

    def not_run_for(self, column: str) -> str | None:
        """Why ``column`` was not run (None when it was): its own reason, else the row's for a column it
        has no scores for."""
        if column in self.not_run_columns:
            return self.not_run_columns[column]
        return self.not_run if column not in self.columns else None

    def column_tasks(self, column: str) -> list[str]:
        """The task keys a column rests on (several for ``Average``)."""
        if column not in self.columns:
            raise ConfigError(f"{self.row} has no column {column!r}; it has {list(self.columns)}")
        key, _label = self.columns[column]
        return [k for k in self.tasks if not self.tasks[k].get("measure") and task(k).name in STS_AVERAGE] if key == AVERAGE else [key]

    def seeds(self, column: str) -> list[int]:
        """The seeds a column was scored with (the same for every task of an ``Average``)."""
        found = {tuple(self.tasks[k]["seeds"]) for k in self.column_tasks(column)}
        if len(found) != 1:
            raise ConfigError(f"{self.row}: the tasks of {column!r} were scored with different seeds {sorted(found)}")
        return list(found.pop())

    def health(self, column: str) -> list[dict[str, Any] | None]:
        """The health records of every run the column's scores rest on (empty: nothing was trained)."""
        return [h for k in self.column_tasks(column) for records in self.tasks[k]["health"].values() for h in records]

    def trained(self, column: str) -> bool:
        """Whether the column rests on trained models (its seeds then carry training noise), as the chapter said
        when it recorded the row (:func:`save_row_evidence`)."""
        return self.trained_row

    def inactive(self, column: str) -> str:
        """Why a model the column rests on cannot count as evidence ("" when every one trained and learned):
        it did not train (``active`` False), or it moved but did not learn (``learned`` False: its loss did
        not fall beyond its noise, or ended at its chance level), or its record predates that judgement."""
        reasons = []
        for record in self.health(column):
            name = (record or {}).get("name") or "a model"
            if record is None:
                reasons.append("a model without a health record")
            elif not record.get("active", False):
                reasons.append(f"{name}: {record.get('reason', '')}")
            elif "learned" not in record:
                reasons.append(f"{name}: its health record does not say whether its loss fell (recorded before "
                               "sentcl judged learning; train it again)")
            elif not record["learned"] and not learning_judged(record):
                reasons.append(f"{name} moved, but {record.get('learned_reason', '')}")
            elif not record["learned"]:
                reasons.append(f"{name} moved but did not learn: {record.get('learned_reason', '')}")
        return "; ".join(dict.fromkeys(reasons))

    def shared(self, column: str) -> list[str]:
        """The models every seed of the column shares (trained once, e.g. RCL's entropy models): a name
        found in the health records of more than one seed of a task. Their training variability is not
        in the seeds' spread. A column over several tasks (``Average``) sees each seed's own models once per
        task: that is one seed, not several."""
        found: dict[str, set[str]] = {}
        for key in self.column_tasks(column):
            for seed, records in self.tasks[key]["health"].items():
                for record in records:
                    if record is not None and record.get("name"):
                        found.setdefault(record["name"], set()).add(str(seed))
        return [name for name, seeds in found.items() if len(seeds) > 1]

    def items(self, seed: int, task_key: str) -> Items:
        if (seed, task_key) not in self._items:
            if self.folder is None:
                raise ConfigError(f"{self.row}: no per-item scores on disk")
            path = self.folder / f"seed-{seed}" / f"{_file_key(task_key)}.npz"
            try:
                with np.load(path) as data:
                    arrays = {k: data[k] for k in data.files}
            except (OSError, ValueError) as exc:
                raise DataFormatError(path, None, "the per-item scores of a row (.npz)", str(exc)) from None
            self._items[(seed, task_key)] = items_from_arrays(arrays)
        return self._items[(seed, task_key)]

    def column_values(self, column: str, resamples: Mapping[str, np.ndarray],
                      shares: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(full, resampled)``: each seed's value of ``column`` on all the test items, ``(seeds,)``, and on
        every item resample, ``(seeds, B)`` (``resamples``: task key -> its ``(B, n)`` index matrix).
        ``shares``: task key -> the factor on its item variance (:func:`sentcl.evaluation.significance.item_share`,
        1 − n/N for a claim about the whole test set): each task's resampled values are drawn towards its full
        value by its square root before the tasks are averaged (None: 1 each)."""
        keys = self.column_tasks(column)
        full, resampled = [], []
        for seed in self.seeds(column):
            per_task = []
            for k in keys:
                value, drawn = self._value(seed, k, column, None), self._value(seed, k, column, resamples[k])
                per_task.append((value, value + math.sqrt((shares or {}).get(k, 1.0)) * (drawn - value)))
            full.append(np.mean([f for f, _ in per_task]))
            resampled.append(np.mean([r for _, r in per_task], axis=0))
        return np.asarray(full, dtype=np.float64), np.asarray(resampled, dtype=np.float64)

    def _value(self, seed: int, key: str, column: str, rows: np.ndarray | None):
        label = "Spearman" if self.columns[column][0] == AVERAGE else self.columns[column][1]
        if self.tasks[key].get("measure"):
            return self.items(seed, key).metric(label, rows)
        metric = next((m for m in task(key).metrics if m.label == label), None)
        if metric is None:
            raise ConfigError(f"{key} has no metric {label!r}; it has {[m.label for m in task(key).metrics]}")
        return self.items(seed, key).metric(metric.key, rows) * metric.scale


def save_row_evidence(
    out_dir: str | os.PathLike,
    chapter: str,
    row: str,
    per_seed: Mapping[int, Mapping[str, Any]],
    columns: Mapping[str, tuple[str, str]],
    *,
    tables: Sequence[str],
    fingerprints: Mapping[str, str],
    health: Mapping[int, Sequence[dict[str, Any] | None]],
    trained: bool,
    run_id: str,
    populations: Mapping[str, int | None] | None = None,
) -> Path:
    """Write a row's evidence (module doc): ``per_seed`` seed -> task key -> its
    :class:`~sentcl.evaluation.scoring.TaskScores`, or measure name -> its :class:`~sentcl.evaluation.per_item.ItemTerms`
    (a measure: its column's metric is the measure's own key); ``columns`` column -> (task key, metric label);
    ``fingerprints`` task key -> what identifies its test items; ``populations`` task key -> the size of the
    test set they were drawn from (None or absent: unknown); ``health`` seed -> the health records of
    the models the seed rests on; ``trained``: whether the row's seeds are trained models (said, never
    inferred: a trained row must give every scored seed's health); ``tables``: those it is recorded under. The row's other tasks recorded by the same run stay (a table row gathering several tasks);
    what an earlier run left is replaced."""
    if trained and set(per_seed) - set(health):
        raise ConfigError(f"{row}: a trained row needs the training health of every scored seed; "
                          f"seeds {sorted(set(per_seed) - set(health))} have none")
    if not trained and any(health.values()):
        raise ConfigError(f"{row}: recorded as untrained, with the training health of seeds {sorted(health)}")
    folder, meta = _this_runs_row(out_dir, chapter, row, tables, run_id)
    if meta["tasks"] and meta.get("trained") is not None and meta["trained"] != trained:
        raise ConfigError(f"{row}: recorded once as trained and once as untrained in the same run")
    meta["trained"] = bool(trained)
    for seed, scores in per_seed.items():
        for key, scored in scores.items():
            items = scored if isinstance(scored, Items) else scored.items
            n = len(items)
            known = meta["tasks"].setdefault(key, {"n": n, "population": (populations or {}).get(key),
                                                   "fingerprint": fingerprints.get(key) or f"unknown, {n} items",
                                                   "seeds": [], "health": {}, "measure": isinstance(scored, Items)})
            if known["n"] != n:
                raise ConfigError(f"{row}: seed {seed} scored {key} on {n} items, another seed on {known['n']}")
            known["seeds"] = sorted({*known["seeds"], int(seed)})
            known["health"][str(seed)] = list(health.get(seed, []))
            with atomic_path(folder / f"seed-{seed}" / f"{_file_key(key)}.npz") as tmp, open(tmp, "wb") as fh:
                np.savez(fh, **items.arrays())
    meta["columns"] |= {c: list(v) for c, v in columns.items()}
    return atomic_write_json(folder / ROW_FILE, meta).parent


def _this_runs_row(
    out_dir: str | os.PathLike, chapter: str, row: str, tables: Sequence[str], run_id: str
) -> tuple[Path, dict[str, Any]]:
    """The row's folder and what run ``run_id`` recorded of it so far (an earlier run's record removed)."""
    folder = Layout(out_dir).evidence(chapter) / row_key(row, tables)
    meta = read_json(folder / ROW_FILE, "a row's evidence") if (folder / ROW_FILE).is_file() else None
    if meta is None or meta.get("run_id") != run_id:
        if folder.exists():
            shutil.rmtree(folder)
        meta = {"chapter": chapter, "row": row, "run_id": run_id, "tables": list(tables), "columns": {}, "tasks": {},
                "not_run": None, "trained": None}
    return folder, meta


def record_not_run(
    out_dir: str | os.PathLike,
    chapter: str,
    row: str,
    reason: str,
    *,
    tables: Sequence[str],
    run_id: str,
    columns: Sequence[str] | None = None,
) -> Path:
    """Say that ``row`` of ``tables`` was not run in this build, and why (claims about it: "not tested"):
    for ``columns`` only (a row gathering several tasks, one of them not run), or for every column the
    row has no scores for (None). What the same run recorded of the row stays (its scored columns, the
    reasons of its other columns: two whole-row reasons are both kept); an earlier run's is replaced."""
    folder, meta = _this_runs_row(out_dir, chapter, row, tables, run_id)
    if columns is None:
        meta["not_run"] = "; ".join(dict.fromkeys(filter(None, [meta.get("not_run"), reason])))
    else:
        meta["not_run_columns"] = meta.get("not_run_columns", {}) | dict.fromkeys(columns, reason)
    return atomic_write_json(folder / ROW_FILE, meta)


def load_evidence(out_dir: str | os.PathLike, chapter: str, run_ids: set[str] | None = None) -> Evidence:
    """Every recorded row's evidence of ``chapter`` (of the runs ``run_ids`` only, when given)."""
    found = Evidence()
    root = Layout(out_dir).evidence(chapter)
    for path in sorted(root.glob(f"*/{ROW_FILE}")) if root.is_dir() else []:
        raw = read_json(path, "a row's evidence")
        if run_ids is not None and raw.get("run_id") not in run_ids:
            continue
        try:
            ev = RowEvidence(
                chapter=raw["chapter"], row=raw["row"], run_id=raw["run_id"], tables=list(raw["tables"]),
                columns=raw["columns"], tasks=raw["tasks"], not_run=raw["not_run"],
                not_run_columns=dict(raw.get("not_run_columns", {})), folder=path.parent,
                trained_row=bool(raw["trained"]) if raw["tasks"] else False,
            )
        except (KeyError, TypeError) as exc:
            raise DataFormatError(path, None, "a row's evidence (row.json)", str(exc)) from None
        for table in ev.tables:
            found[(table, ev.row)] = ev
    return found


def _file_key(task_key: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", task_key)


def items_fingerprint(record: Any) -> str:
    """What identifies a record's test items, in order (two rows are compared on a task only when their
    fingerprints agree): the dataset, split and every per-item field (texts, gold, queries)."""
    from ...data.records import RetrievalSet
    from ...hashing import stable_hash, texts_hash

    if isinstance(record, RetrievalSet):
        parts = [texts_hash(list(record.queries)), texts_hash(list(record.queries.values())),
                 stable_hash({q: record.qrels.get(q, {}) for q in record.queries})]
    else:
        parts = [texts_hash([str(v) for v in getattr(record, f)]) for f in record.ROW_FIELDS]
    return stable_hash({"name": record.name, "split": record.split, "n": len(record), "items": parts})


__all__ = [
    "AVERAGE",
    "Evidence",
    "RowEvidence",
    "items_fingerprint",
    "load_evidence",
    "record_not_run",
    "row_key",
    "save_row_evidence",
]
