"""The one scoring path: a model's embeddings -> each task's metrics and per-item scores.

::

    records = load_tasks(["STS12", "STSb", "CQA-A-2016", "MRPC"], data_dir)   # sentcl.evaluation.tasks
    scored = score(embedder(model), records)          # every distinct text encoded once
    scored["STSb"].values                             # {"Spearman": 82.03}: the table's cell
    scored["STSb"].value("Spearman", resamples)       # the same metric on (B, n) resamples of the pairs

Every number of the book's evaluation tables goes through :func:`score`: the chapters' notebooks
(through :func:`evaluate_tasks`, which keeps only the values), the command line
(``sentcl evaluate tasks|sts``), the geometry chapter and the dev evaluators that select models
during training (:func:`dev_evaluator`). :mod:`.tasks` says which dataset, split, evaluator,
protocol and metrics each paper's column is; the evaluators (:mod:`.sts`, :mod:`.retrieval`,
:mod:`.classification`) compute them; this module runs them and keeps, besides each evaluator's
full result, its **per-item outputs** (:class:`Items`), from which every metric of the task can be
recomputed on any resample of the test items, so that a difference between two models can be
bootstrapped over the items:

- STS (:class:`PairSimilarities`): each pair's cosine similarity and gold score; Spearman and
  Pearson ×100 over the pairs pooled (SentEval's "all" setting, every table's);
- retrieval (:class:`QueryMetrics`): each query's value of every metric the task computes (average
  precision, reciprocal rank, success@k...); a metric is their mean over the queries, exactly as
  trec_eval and the SemEval CQA scorer average them (queries without a relevant document
  included, at 0);
- pair classification (:class:`PairPredictions`): each pair's cosine and whether it is positive;
  F1, precision and recall at the best-F1 threshold, and accuracy at the best-accuracy threshold,
  both chosen again on the items, as on the evaluated set.

Items keep the test items in a fixed order (the record's pairs; the record's queries, or its
candidate lists'), the same for every model scored on the same record, so that two models'
items pair up for a paired bootstrap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..data.records import LabelledPairs, RetrievalSet, ScoredPairs
from ..embeddings import Embed, encode
from ..errors import ConfigError
from .classification import evaluate_pair_classification
from .common import embed_groups, pairwise_cosine
from .retrieval import evaluate_retrieval
from .sts import evaluate_sts
from .tasks import SPEARMAN, STS_AVERAGE, EvalTask, Metric, load_tasks, task

if TYPE_CHECKING:
    from ..training.trainer import Evaluator

Record = ScoredPairs | LabelledPairs | RetrievalSet

# Resamples are scored this many items at a time (rows of a (B, n) array): bounded memory for
# QQP-sized sets, one vectorised computation per chunk.
_CHUNK_ITEMS = 1 << 22


def _as_resamples(rows: np.ndarray | Sequence[int] | None, n: int) -> tuple[np.ndarray, bool]:
    """``rows`` as a 2-D (B, m) integer array of item indices, and whether it was given 2-D."""
    if rows is None:
        return np.arange(n)[None, :], False
    rows = np.asarray(rows)
    if rows.dtype.kind not in "iu" or rows.ndim not in (1, 2) or rows.shape[-1] == 0:
        raise ConfigError(f"rows must be a non-empty 1-D or 2-D integer array of item indices, got "
                          f"dtype {rows.dtype} and shape {rows.shape}")
    if rows.size and (rows.min() < 0 or rows.max() >= n):
        raise ConfigError(f"rows must be item indices in 0..{n - 1}, got values from {rows.min()} to {rows.max()}")
    return (rows, True) if rows.ndim == 2 else (rows[None, :], False)


def _chunks(rows: np.ndarray):
    """Slices of the resamples (rows of ``rows``) holding about :data:`_CHUNK_ITEMS` items each."""
    step = max(1, _CHUNK_ITEMS // rows.shape[1])
    for start in range(0, len(rows), step):
        yield rows[start : start + step]


def _row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's correlation of ``x[b]`` with ``y[b]`` for every row b (NaN where a row is constant)."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.einsum("ij,ij->i", xc, yc) / np.sqrt(np.einsum("ij,ij->i", xc, xc) * np.einsum("ij,ij->i", yc, yc))
    return np.clip(r, -1.0, 1.0)


class Items:
    """Per-item outputs of one task's evaluation of one model, test items in a fixed order (the same
    for every model scored on the same record), from which every metric of the task can be
    recomputed on any resample of the items."""

    kind: ClassVar[str]
    """``"pairs"`` (STS), ``"queries"`` (retrieval) or ``"classification"``."""

    def __len__(self) -> int:
        raise NotImplementedError

    @property
    def keys(self) -> tuple[str, ...]:
        """The metric keys :meth:`metric` computes."""
        raise NotImplementedError

    def metric(self, key: str, rows: np.ndarray | Sequence[int] | None = None) -> float | np.ndarray:
        """The metric ``key`` (the evaluator's name: ``"spearman"``, ``"map"``, ``"acc@5"``, ``"f1"``...)
        in the evaluator's units (STS ×100, retrieval and classification fractions) on the items ``rows``.

        ``rows``: None, every item (what the evaluator reports, to float precision); a 1-D integer
        array, one resample (items may repeat) -> a float; a 2-D ``(B, n)`` array, B resamples -> a
        ``(B,)`` array, computed for all of them at once. A resample on which the metric is undefined
        (STS: constant similarities or gold; classification: one class only) gives NaN.
        """
        if key not in self.keys:
            raise ConfigError(f"unknown metric {key!r} of {self.kind} items; valid: {', '.join(self.keys)}")
        resamples, many = _as_resamples(rows, len(self))
        values = np.concatenate([self._metric(key, chunk) for chunk in _chunks(resamples)])
        return values if many else float(values[0])

    def _metric(self, key: str, rows: np.ndarray) -> np.ndarray:
        """``key`` on each row of the 2-D ``rows``: a (B,) array."""
        raise NotImplementedError

    def arrays(self) -> dict[str, np.ndarray]:
        """Plain arrays to save in an ``.npz`` (``"kind"`` among them); :func:`items_from_arrays` reads them back."""
        raise NotImplementedError

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> Items:
        """The inverse of :meth:`arrays` (``arrays`` may be a loaded ``.npz``)."""
        raise NotImplementedError

    @classmethod
    def _check_kind(cls, arrays: Mapping[str, np.ndarray]) -> None:
        if "kind" not in arrays or str(np.asarray(arrays["kind"])) != cls.kind:
            found = str(np.asarray(arrays["kind"])) if "kind" in arrays else "no kind"
            raise ConfigError(f"expected arrays of {cls.kind} items, got {found}")


def _vector(values: Any, name: str, n: int | None = None, dtype=np.float64) -> np.ndarray:
    array = np.asarray(values, dtype=dtype)
    if array.ndim != 1 or len(array) == 0 or (n is not None and len(array) != n):
        raise ConfigError(f"{name} must be a non-empty 1-D array{'' if n is None else f' of {n} items'}, got shape {array.shape}")
    if dtype is np.float64 and not np.isfinite(array).all():
        raise ConfigError(f"{name} contains NaN or infinite values")
    return array


@dataclass(frozen=True, eq=False)
class PairSimilarities(Items):
    """STS: each pair's cosine similarity and gold score, in the record's order.

    ``"spearman"`` and ``"pearson"``: the correlation ×100 over the pairs pooled, SentEval's
    ``"all"`` setting, the one every table uses; Spearman is Pearson's correlation of the ranks,
    ties given their average rank (as :func:`scipy.stats.spearmanr`), so an item drawn twice ties
    with itself. A task of another ``setting`` (the mean of per-subset correlations) cannot be
    recomputed from pooled pairs: its :meth:`metric` raises :class:`ConfigError`.
    """

    similarities: np.ndarray
    gold: np.ndarray
    setting: str = "all"
    kind: ClassVar[str] = "pairs"

    def __post_init__(self) -> None:
        object.__setattr__(self, "similarities", _vector(self.similarities, "similarities"))
        object.__setattr__(self, "gold", _vector(self.gold, "gold", len(self.similarities)))

    def __len__(self) -> int:
        return len(self.similarities)

    @property
    def keys(self) -> tuple[str, ...]:
        return ("spearman", "pearson")

    def _metric(self, key: str, rows: np.ndarray) -> np.ndarray:
        from scipy.stats import rankdata

        if self.setting != "all":
            raise ConfigError(f"per-pair similarities give the pooled ('all') correlation; this task's setting is "
                              f"{self.setting!r}, a mean over subsets")
        x, y = self.similarities[rows], self.gold[rows]
        if key == "spearman":
            x, y = rankdata(x, method="average", axis=1), rankdata(y, method="average", axis=1)
        return 100.0 * _row_pearson(x, y)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"kind": np.array(self.kind), "similarities": self.similarities, "gold": self.gold,
                "setting": np.array(self.setting)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> PairSimilarities:
        cls._check_kind(arrays)
        return cls(np.asarray(arrays["similarities"]), np.asarray(arrays["gold"]), str(np.asarray(arrays["setting"])))


@dataclass(frozen=True, eq=False)
class QueryMetrics(Items):
    """Retrieval: each scored query's value of every metric the task computes (``{key: (n,) array}``),
    in the order the evaluator averages them; a metric on some queries is its mean over them.

    The queries are those the evaluator's mean is over: with trec_eval semantics the queries with
    judgements (a query without a relevant document scores 0 and counts), with the SemEval CQA
    scorer every question with candidates; per query, average precision (``"map"``, ``"map@k"``),
    reciprocal rank (``"mrr"``), success (``"acc@k"``), precision (``"p@k"``), nDCG...
    """

    values: dict[str, np.ndarray]
    kind: ClassVar[str] = "queries"
    _PREFIX: ClassVar[str] = "query_"

    def __post_init__(self) -> None:
        if not self.values:
            raise ConfigError("per-query values need at least one metric")
        first = _vector(next(iter(self.values.values())), "per-query values")
        object.__setattr__(self, "values", {k: _vector(v, f"per-query {k}", len(first)) for k, v in self.values.items()})

    def __len__(self) -> int:
        return len(next(iter(self.values.values())))

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(self.values)

    def _metric(self, key: str, rows: np.ndarray) -> np.ndarray:
        return self.values[key][rows].mean(axis=1)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"kind": np.array(self.kind)} | {self._PREFIX + k: v for k, v in self.values.items()}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> QueryMetrics:
        cls._check_kind(arrays)
        return cls({k[len(cls._PREFIX):]: np.asarray(arrays[k]) for k in arrays if k.startswith(cls._PREFIX)})


@dataclass(frozen=True, eq=False)
class PairPredictions(Items):
    """Pair classification: each pair's cosine similarity and whether it is positive (1) or not (0).

    On any items, the threshold is chosen again on those items, as
    :func:`~sentcl.evaluation.classification.best_threshold_scores` chooses it on the evaluated set:
    ``"f1"``, ``"precision"`` and ``"recall"`` at the threshold of the best F1, ``"accuracy"`` at
    the threshold of the best accuracy (the highest threshold among equally good ones; pairs with
    equal scores always predicted alike). Fractions; NaN on a resample with one class only.
    """

    similarities: np.ndarray
    labels: np.ndarray
    kind: ClassVar[str] = "classification"

    def __post_init__(self) -> None:
        similarities = _vector(self.similarities, "similarities")
        labels = _vector(self.labels, "labels", len(similarities), dtype=np.int64)
        if not np.isin(labels, (0, 1)).all():
            raise ConfigError("labels must be 0 or 1")
        object.__setattr__(self, "similarities", similarities)
        object.__setattr__(self, "labels", labels)

    def __len__(self) -> int:
        return len(self.similarities)

    @property
    def keys(self) -> tuple[str, ...]:
        return ("f1", "precision", "recall", "accuracy")

    def _metric(self, key: str, rows: np.ndarray) -> np.ndarray:
        # Each resample's items in descending score order (ties in a fixed order): sort their
        # positions in the order of all items.
        order = np.argsort(-self.similarities, kind="stable")
        position = np.empty(len(order), dtype=np.int64)
        position[order] = np.arange(len(order))
        ranked = np.sort(position[rows], axis=1)
        s, y = self.similarities[order][ranked], self.labels[order][ranked]
        m = rows.shape[1]
        # a threshold between two groups of equal scores predicts the groups above it positive
        ends = np.ones(s.shape, dtype=bool)
        ends[:, :-1] = s[:, 1:] != s[:, :-1]
        tp = np.cumsum(y, axis=1)
        predicted = np.arange(1, m + 1)
        positives = tp[:, -1:]
        both_classes = (positives[:, 0] > 0) & (positives[:, 0] < m)
        with np.errstate(invalid="ignore", divide="ignore"):
            if key == "accuracy":  # candidate 0: every pair negative
                correct = np.where(ends, tp + ((m - positives) - (predicted - tp)), -1)
                value = np.maximum(correct.max(axis=1), m - positives[:, 0]) / m
            else:
                precision = tp / predicted
                recall = tp / positives
                f1 = np.where(tp > 0, 2 * precision * recall / (precision + recall), 0.0)
                best = np.argmax(np.where(ends, f1, -np.inf), axis=1)
                value = {"f1": f1, "precision": precision, "recall": recall}[key][np.arange(len(rows)), best]
        return np.where(both_classes, value, np.nan)

    def arrays(self) -> dict[str, np.ndarray]:
        return {"kind": np.array(self.kind), "similarities": self.similarities, "labels": self.labels}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> PairPredictions:
        cls._check_kind(arrays)
        return cls(np.asarray(arrays["similarities"]), np.asarray(arrays["labels"]))


_ITEMS = {cls.kind: cls for cls in (PairSimilarities, QueryMetrics, PairPredictions)}


def items_from_arrays(arrays: Mapping[str, np.ndarray]) -> Items:
    """The :class:`Items` that :meth:`Items.arrays` saved (e.g. ``np.load(path)``), of the kind they name."""
    kind = str(np.asarray(arrays["kind"])) if "kind" in arrays else None
    if kind not in _ITEMS:
        raise ConfigError(f"per-item arrays of kind {kind!r}; expected one of {', '.join(_ITEMS)}")
    return _ITEMS[kind].from_arrays(arrays)


@dataclass(frozen=True)
class TaskScores:
    """One task's evaluation of one model: the table's values, the per-item outputs and the evaluator's result."""

    task: EvalTask
    """The task (from the task table) the values are for."""
    values: dict[str, float]
    """``{metric label: value}`` in the paper's units: the table's cells."""
    items: Items
    """The per-item outputs every metric can be recomputed from on resampled items."""
    result: dict
    """The evaluator's full JSON-able result (counts, per-subset correlations, thresholds...)."""

    def value(self, label: str, rows: np.ndarray | Sequence[int] | None = None) -> float | np.ndarray:
        """The table's metric ``label`` (``"Spearman"``, ``"MAP"``, ``"HP@5"``, ``"F1"``...) in the paper's
        units on the items ``rows`` (None, 1-D or 2-D, as :meth:`Items.metric`)."""
        for m in self.task.metrics:
            if m.label == label:
                return self.items.metric(m.key, rows) * m.scale
        raise ConfigError(f"{self.task.name} has no metric {label!r}; its metrics: {', '.join(m.label for m in self.task.metrics)}")


def _evaluated(name: str, t: EvalTask, record: Any) -> Record:
    """``record`` as the task's evaluator takes it, after checking it is the task's data."""
    if (getattr(record, "name", None), getattr(record, "split", None)) != (t.dataset, t.split):
        found = f"{record.name}/{record.split}" if hasattr(record, "split") else type(record).__name__
        raise ConfigError(f"{name} is computed on {t.dataset}/{t.split}, got {found} (load it with load_task)")
    if t.evaluator == "sts" and t.positive_label is not None and isinstance(record, LabelledPairs):
        if t.positive_label not in record.label_names:
            raise ConfigError(f"{name}: no label {t.positive_label!r}; labels are {list(record.label_names)}")
        positive = record.label_names.index(t.positive_label)
        return ScoredPairs(
            name=record.name, split=record.split, sources=list(record.sources), dropped=dict(record.dropped),
            sample=record.sample, sentences1=record.sentences1, sentences2=record.sentences2,
            scores=(record.labels == positive).astype(np.float64), subsets=[record.name] * len(record),
        )
    expected: type[Record] = {"sts": ScoredPairs, "classification": LabelledPairs, "retrieval": RetrievalSet}[t.evaluator]
    if not isinstance(record, expected):
        raise ConfigError(f"{name}: the {t.evaluator} evaluator takes {expected.__name__}, got {type(record).__name__}")
    return record


def _texts(record: Record) -> list[str]:
    if isinstance(record, RetrievalSet):
        return [*record.queries.values(), *record.corpus.values()]
    return [*record.sentences1, *record.sentences2]


def _report(t: EvalTask, result: Mapping[str, Any]) -> dict[str, float]:
    """The task's metrics, ``{label: value}`` in the paper's units, from its evaluator's result."""
    out = {}
    for m in t.metrics:
        if t.evaluator == "sts":
            value = result[m.key][t.setting]
        elif t.evaluator == "retrieval":
            value = result["scores"][m.key]
        else:
            value = result[m.key]
        out[m.label] = float(value) * m.scale
    return out


def _scored(t: EvalTask, record: Record, vectors: np.ndarray) -> TaskScores:
    """Run the task's evaluator on ``record`` with the rows of ``vectors`` (its texts' embeddings, in :func:`_texts` order)."""
    items: Items
    if isinstance(record, RetrievalSet):  # _evaluated gave each task its evaluator's kind of record
        assert t.relevance_level is not None and t.protocol is not None  # a retrieval task has both (EvalTask)
        nq = len(record.queries)
        result = evaluate_retrieval(
            record, query_embeddings=vectors[:nq], corpus_embeddings=vectors[nq:], metrics=[m.key for m in t.metrics],
            relevance_level=t.relevance_level, protocol=t.protocol, per_query=True,
        )
        per_query = result.pop("per_query")
        items = QueryMetrics({m.key: np.array([v[m.key] for v in per_query.values()]) for m in t.metrics})
    else:
        n = len(record)
        e1, e2 = vectors[:n], vectors[n:]
        similarities = pairwise_cosine(e1, e2)
        if isinstance(record, ScoredPairs):
            assert t.setting is not None  # an STS task has one (EvalTask)
            result = evaluate_sts(record, embeddings1=e1, embeddings2=e2)
            items = PairSimilarities(similarities, record.scores, t.setting)
        else:
            assert t.positive_label is not None  # a classification task has one (EvalTask)
            result = evaluate_pair_classification(record, embeddings1=e1, embeddings2=e2, positive_label=t.positive_label)
            items = PairPredictions(similarities, np.asarray(record.labels == record.label_names.index(t.positive_label)))
    return TaskScores(t, _report(t, result), items, result)


def score(embed: Embed, records: Mapping[str, Any], *, tasks: Mapping[str, EvalTask] | None = None) -> dict[str, TaskScores]:
    """Every task of ``records`` scored from **one** call of ``embed``: ``{name: TaskScores}``.

    ``records`` maps task names (any accepted spelling; the keys are kept) to their records
    (:func:`~sentcl.evaluation.tasks.load_task`, or a subset of one). The texts of all the tasks
    are collected, every distinct text is encoded once, and each task is scored from its rows of
    that matrix with its evaluator and protocol. ``tasks`` replaces the table's task for some of
    the names with a variant of it (``dataclasses.replace(task("SICK-R"), split="all")``, MTEB's
    SICK-R; a dev split, as :func:`dev_evaluator` does); each record must be its task's dataset
    and split.
    """
    if not records:
        raise ConfigError("no evaluation task given")
    given = dict(tasks or {})
    unknown = [name for name in given if name not in records]
    if unknown:
        raise ConfigError(f"tasks given for {unknown}, which have no record; records: {list(records)}")
    chosen = {name: given.get(name) or task(name) for name in records}
    seen: dict[str, str] = {}
    for name, t in chosen.items():
        if seen.setdefault(t.name, name) != name:
            raise ConfigError(f"{seen[t.name]!r} and {name!r} are the same task ({t.name})")
    data = {name: _evaluated(name, chosen[name], record) for name, record in records.items()}
    matrices = embed_groups(embed, [_texts(record) for record in data.values()])
    return {name: _scored(chosen[name], record, vectors) for (name, record), vectors in zip(data.items(), matrices, strict=True)}


def evaluate_tasks(
    embed: Embed,
    tasks: Sequence[str] | Mapping[str, Any],
    *,
    data_dir: str | Path | None = None,
    max_pairs: int = 0,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """Score ``embed`` on several tasks: ``{task: {metric label: value}}`` in the papers' units.

    ``tasks`` is a list of task names, loaded from ``data_dir`` by
    :func:`~sentcl.evaluation.tasks.load_tasks` (with ``max_pairs`` and ``seed``), or a mapping
    name -> record already loaded (e.g. a chapter's subsampled STS sets), used as given. Every
    distinct text of all the tasks is encoded in one call of ``embed`` (:func:`score`, whose
    values these are). Keys are the names as given.
    """
    if isinstance(tasks, Mapping):
        if data_dir is not None or max_pairs or seed:
            raise ConfigError("data_dir, max_pairs and seed apply to task names; records are used as given")
        records = tasks
    else:
        records = load_tasks(tasks, data_dir, max_pairs, seed)
    return {name: scores.values for name, scores in score(embed, records).items()}


def average(scores: Mapping[str, Mapping[str, float]]) -> float:
    """The tables' "Average" column: the mean Spearman over the English STS columns
    (:data:`~sentcl.evaluation.tasks.STS_AVERAGE`) present in ``scores`` (an :func:`evaluate_tasks` result)."""
    columns = [name for name in scores if task(name).name in STS_AVERAGE]
    if not columns:
        raise ConfigError(f"no STS column to average in {list(scores)}; the average is over {', '.join(STS_AVERAGE)}")
    return float(np.mean([scores[name][SPEARMAN.label] for name in columns]))


def dev_evaluator(
    name_or_task: str | EvalTask,
    record: Record,
    *,
    metric_keys: Sequence[str] | None = None,
    precision: str = "auto",
    batch_size: int = 64,
) -> Evaluator:
    """A trainer evaluator (``model -> {metric: value}``, :data:`sentcl.training.trainer.Evaluator`)
    scoring ``record``, a dev set, as the task scores its test set.

    The papers select models on dev data: MNRL-SBERT, RCL and IFCL on STS-B dev (Spearman), RCL's
    FAQ models on dev questions (MAP, Appendix A.1), BSC on each task's dev data (§5.2).
    ``record`` may be of any dataset and split the task's evaluator takes (STS-B dev for
    ``"STSb"``); it is scored through :func:`score` with the task's evaluator, protocol, setting,
    relevance level and positive label. The keys are the evaluator's (``metric_for_best`` names
    one): ``metric_keys``, by default ``"spearman"`` and ``"pearson"`` (×100) for an STS task and
    the task's metric keys otherwise (fractions: ``"map"``, ``"mrr"``, ``"f1"``...). The
    embeddings bypass the embedding cache: the weights differ at every evaluation.
    """
    t = name_or_task if isinstance(name_or_task, EvalTask) else task(name_or_task)
    if metric_keys is None:
        keys = ("spearman", "pearson") if t.evaluator == "sts" else tuple(m.key for m in t.metrics)
    elif isinstance(metric_keys, str):
        raise ConfigError(f"metric_keys must be a list of metric keys, got the string {metric_keys!r}")
    else:
        keys = tuple(dict.fromkeys(metric_keys))
    if not keys:
        raise ConfigError(f"{t.name}: no metric to evaluate on the dev set")
    on_dev = replace(t, dataset=str(getattr(record, "name", "")), split=str(getattr(record, "split", "")),
                     metrics=tuple(Metric(k, k) for k in keys))
    _evaluated(t.name, on_dev, record)  # a record of the wrong kind fails now, not at the first evaluation

    def evaluate(model) -> dict[str, float]:
        def embed(texts: Sequence[str]) -> np.ndarray:
            return encode(model, texts, batch_size=batch_size, precision=precision, cache=False, show_progress=False)

        return score(embed, {t.name: record}, tasks={t.name: on_dev})[t.name].values

    return evaluate


__all__ = [
    "Items",
    "PairPredictions",
    "PairSimilarities",
    "QueryMetrics",
    "TaskScores",
    "average",
    "dev_evaluator",
    "evaluate_tasks",
    "items_from_arrays",
    "score",
]
