"""Per-item outputs of one task's evaluation of one model: every metric recomputed on any resample of
the test items, so that a difference between two models can be bootstrapped over the items
(:func:`sentcl.evaluation.scoring.score` makes them; :mod:`sentcl.book.output.claims` resamples them):

- STS (:class:`PairSimilarities`): each pair's cosine similarity and gold score; Spearman and
  Pearson ×100 over the pairs pooled (SentEval's "all" setting, every table's);
- retrieval (:class:`QueryMetrics`): each query's value of every metric the task computes (average
  precision, reciprocal rank, success@k...); a metric is their mean over the queries, exactly as
  trec_eval and the SemEval CQA scorer average them (queries without a relevant document
  included, at 0);
- pair classification (:class:`PairPredictions`): each pair's cosine and whether it is positive;
  F1, precision and recall at the best-F1 threshold, and accuracy at the best-accuracy threshold,
  both chosen again on the items, as on the evaluated set;
- a measure of the embeddings that is a mean of per-item terms (:class:`ItemTerms`): anisotropy
  (each sentence's term, :func:`sentcl.evaluation.geometry.anisotropy_terms`) and the InfoNCE bound
  on mutual information (each pair's term, :func:`sentcl.evaluation.information.infonce_mutual_information`).

Items keep the test items in a fixed order (the record's pairs; the record's queries, or its
candidate lists'), the same for every model scored on the same record, so that two models'
items pair up for a paired bootstrap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from ..errors import ConfigError

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
    """``"pairs"`` (STS), ``"queries"`` (retrieval), ``"classification"`` or ``"terms"`` (a measure's terms)."""

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


@dataclass(frozen=True, eq=False)
class ItemTerms(QueryMetrics):
    """A measure of a model's embeddings that is the mean of one term per item (``{measure: (n,) array}``),
    not a task of the papers' tables: RCL's anisotropy (a term per sentence), IFCL's Table 4 mutual
    information (a term per pair). Resampled as query metrics are: the mean over the drawn items."""

    kind: ClassVar[str] = "terms"
    _PREFIX: ClassVar[str] = "term_"


_ITEMS = {cls.kind: cls for cls in (PairSimilarities, QueryMetrics, PairPredictions, ItemTerms)}


def items_from_arrays(arrays: Mapping[str, np.ndarray]) -> Items:
    """The :class:`Items` that :meth:`Items.arrays` saved (e.g. ``np.load(path)``), of the kind they name."""
    kind = str(np.asarray(arrays["kind"])) if "kind" in arrays else None
    if kind not in _ITEMS:
        raise ConfigError(f"per-item arrays of kind {kind!r}; expected one of {', '.join(_ITEMS)}")
    return _ITEMS[kind].from_arrays(arrays)




__all__ = ["ItemTerms", "Items", "PairPredictions", "PairSimilarities", "QueryMetrics", "items_from_arrays"]
