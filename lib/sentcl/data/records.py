"""The few record types every loader returns.

Every record knows which dataset and split it came from, which files were read
(``sources``), what the format told us to drop (``dropped``: reason -> count), so
nothing disappears silently, and whether it is the project's own sample data
(``sample``).

- :class:`ScoredPairs`: sentence pairs with a gold similarity score (STS12-16, STS-B,
  SICK-R, Chinese STS-B). ``subsets`` names the file/genre of each row so STS12-16 can
  be scored per subset or pooled ("all").
- :class:`LabelledPairs`: sentence pairs with a class label (SNLI, MultiNLI, SICK-E,
  MRPC, QQP, SimCLUE). ``labels`` are integer ids into ``label_names``.
- :class:`Triplets`: (anchor, positive, negative) rows, e.g. AllNLI
  (premise, entailment, contradiction).
- :class:`RetrievalSet`: queries, a corpus and graded relevance judgements (qrels);
  ``candidates`` holds per-query candidate lists for re-ranking tasks (SemEval CQA),
  ``None`` when every query ranks the whole corpus (FAQ retrieval, ANTIQUE).
- :class:`Sentences`: plain unlabelled sentences (SimCSE's wiki1m).

:class:`TrainingData` is what the trainer and the batch samplers read: text columns in the
loss's order, optional labels, and each row's id. It is built from the records above
(:meth:`TrainingData.from_record`) or directly from columns::

    pairs = load("snli", "train").with_label("entailment")
    data = TrainingData.from_record(pairs, labels=False)          # (premise, hypothesis) for MNRL
    data = TrainingData.from_record(load("snli", "train"))        # with the 3 NLI labels, for SoftmaxLoss

Columns are passed to the loss in their order (anchor, positive, negatives… for MNRL). A row's
**id** is its index in the dataset the run trains on (``0 … n-1`` unless given): the RCL
chapter looks up the stored augmented embeddings of a row's sentences by it, and
:meth:`TrainingData.take` keeps the ids of the rows it keeps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import ClassVar, TypeVar, overload

import numpy as np

from ..errors import ConfigError
from ..hashing import stable_hash, texts_hash


def draw_rows(size: int, count: int, seed: int = 0, what: str = "count") -> np.ndarray | None:
    """``count`` of ``size`` row indices drawn without replacement with ``seed``, ascending (a
    draw keeps the data's order); ``None`` when ``count`` is 0 or not below ``size``: every row.

    The rows of :func:`subset`, the one seeded subset behind every budget of a run (numpy's
    documented draw, so a budget picks the same rows in every release); ``what`` names the
    parameter in the error."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ConfigError(f"{what} must be a non-negative integer (0: all), got {count!r}")
    if count == 0 or count >= size:
        return None
    return np.sort(np.random.default_rng(seed).choice(size, size=int(count), replace=False))


T = TypeVar("T")
AnyRecord = TypeVar("AnyRecord", bound="_Record")


@overload
def subset(data: list[T], count: int, seed: int = ..., what: str = ...) -> list[T]: ...
@overload
def subset(data: TrainingData, count: int, seed: int = ..., what: str = ...) -> TrainingData: ...
@overload
def subset(data: AnyRecord, count: int, seed: int = ..., what: str = ...) -> AnyRecord: ...
def subset(data, count, seed=0, what="count"):
    """At most ``count`` rows of ``data`` drawn with ``seed`` by :func:`draw_rows`, in ``data``'s
    order; ``data`` itself when ``count`` is 0 or not below its size.

    The one seeded subset of every budget (training rows, evaluation pairs or queries, STS-B
    pairs for geometry, dev pairs, sentences to fit on). ``data`` is a record (its rows; a
    :class:`RetrievalSet`'s queries, the corpus kept whole), :class:`TrainingData` (named
    ``"<name> (<count> of <size>, seed <seed>)"``, its row ids kept) or a plain list (texts);
    ``what`` names the parameter in the error."""
    if not isinstance(data, (_Record, TrainingData, list)):
        raise ConfigError(f"{what}: a subset of a record, TrainingData or a list, got {type(data).__name__}")
    rows = draw_rows(len(data), count, seed, what)
    if rows is None:
        return data
    if isinstance(data, list):
        return [data[i] for i in rows]
    if isinstance(data, TrainingData):
        return data.take(rows, name=f"{data.name} ({count} of {len(data)}, seed {seed})")
    drawn = data.take(rows)
    drawn.population = data.population or len(data)
    return drawn


R = TypeVar("R", bound="_Record")


@dataclass
class _Record:
    name: str
    split: str
    sources: list[str] = field(default_factory=list, kw_only=True)
    dropped: dict[str, int] = field(default_factory=dict, kw_only=True)
    # True when read from the project's own sample data (data/samples), never real data:
    # everything built on it is labelled "sample data" where it is shown.
    sample: bool = field(default=False, kw_only=True)
    # The size of the set this record is a seeded draw of (:func:`subset`), None when it is the whole set:
    # a claim about the whole test set scores n of N items (the item variance's finite-population factor).
    population: int | None = field(default=None, kw_only=True)

    def describe(self) -> str:
        """One line: name, split, size and what was dropped."""
        text = f"{self.name}/{self.split}: {len(self)} {type(self).__name__}"
        if self.sample:
            text += " [sample data]"
        if self.dropped:
            text += " (dropped: " + ", ".join(f"{k} {v}" for k, v in self.dropped.items()) + ")"
        return text

    ROW_FIELDS: ClassVar[tuple[str, ...]] = ()
    """The per-row fields (lists or arrays of one value per row) that :meth:`take` selects from."""

    def __len__(self) -> int:
        return len(getattr(self, self.ROW_FIELDS[0]))

    def take(self: R, rows: Sequence[int] | np.ndarray) -> R:
        """The given rows (indices, in the order given) as a record of the same dataset and split.

        The one way to take a subset of rows for every record type (a seeded draw of
        :func:`subset`, a label filter, an STS subset)."""
        rows = np.asarray(rows, dtype=np.int64)
        picked = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in self.ROW_FIELDS:
                value = value[rows] if isinstance(value, np.ndarray) else [value[i] for i in rows]
            elif isinstance(value, (list, dict)):
                value = type(value)(value)
            picked[f.name] = value
        return type(self)(**picked | {"population": None})  # rows taken by a filter: a set of their own


@dataclass
class ScoredPairs(_Record):
    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray
    subsets: list[str]
    ROW_FIELDS = ("sentences1", "sentences2", "scores", "subsets")

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        n = len(self.sentences1)
        if not (len(self.sentences2) == n == len(self.scores) == len(self.subsets)):
            raise ConfigError(f"{self.name}/{self.split}: columns of unequal length")

    @property
    def subset_names(self) -> list[str]:
        """Subset names in the order they first appear."""
        return list(dict.fromkeys(self.subsets))

    def subset(self, name: str) -> ScoredPairs:
        """The rows of one subset, as a record of their own (its own files; the year's dropped
        counts stay with the whole record)."""
        idx = [i for i, s in enumerate(self.subsets) if s == name]
        if not idx:
            raise ConfigError(f"{self.name}/{self.split} has no subset {name!r}; it has {self.subset_names}")
        part = self.take(idx)
        part.sources = [s for s in self.sources if name in s] or list(self.sources)
        part.dropped = {}
        return part


@dataclass
class LabelledPairs(_Record):
    sentences1: list[str]
    sentences2: list[str]
    labels: np.ndarray
    label_names: tuple[str, ...]
    ROW_FIELDS = ("sentences1", "sentences2", "labels")

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, dtype=np.int64)
        n = len(self.sentences1)
        if not (len(self.sentences2) == n == len(self.labels)):
            raise ConfigError(f"{self.name}/{self.split}: columns of unequal length")
        if n and (self.labels.min() < 0 or self.labels.max() >= len(self.label_names)):
            raise ConfigError(f"{self.name}/{self.split}: label ids outside 0..{len(self.label_names) - 1}")

    def label_counts(self) -> dict[str, int]:
        counts = np.bincount(self.labels, minlength=len(self.label_names))
        return {name: int(c) for name, c in zip(self.label_names, counts, strict=True)}

    def with_label(self, label: str) -> LabelledPairs:
        """Only the rows with this label (e.g. NLI entailment pairs)."""
        return self.take(np.flatnonzero(self.labels == self.label_names.index(label)))


@dataclass
class Triplets(_Record):
    anchors: list[str]
    positives: list[str]
    negatives: list[str]
    ROW_FIELDS = ("anchors", "positives", "negatives")

    def __post_init__(self) -> None:
        if not (len(self.anchors) == len(self.positives) == len(self.negatives)):
            raise ConfigError(f"{self.name}/{self.split}: columns of unequal length")


@dataclass
class RetrievalSet(_Record):
    queries: dict[str, str]
    corpus: dict[str, str]
    qrels: dict[str, dict[str, int]]
    candidates: dict[str, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.queries)

    def take(self, rows: Sequence[int] | np.ndarray) -> RetrievalSet:
        """The given queries (indices into the queries' order), with their judgements and
        candidates; the corpus stays whole."""
        ids = list(self.queries)
        keep = [ids[i] for i in np.asarray(rows, dtype=np.int64)]
        return RetrievalSet(
            name=self.name, split=self.split, sources=list(self.sources), dropped=dict(self.dropped), sample=self.sample,
            queries={q: self.queries[q] for q in keep}, corpus=self.corpus,
            qrels={q: self.qrels[q] for q in keep if q in self.qrels},
            candidates=None if self.candidates is None else {q: self.candidates[q] for q in keep if q in self.candidates},
        )

    def candidates_only(self) -> RetrievalSet:
        """The same queries with the corpus cut to the documents some query re-ranks: a re-ranking
        task scores only its candidates, so the rest need no encoding. Without candidates: itself."""
        if self.candidates is None:
            return self
        kept = {d for docs in self.candidates.values() for d in docs}
        return RetrievalSet(
            name=self.name, split=self.split, sources=list(self.sources), dropped=dict(self.dropped), sample=self.sample,
            queries=dict(self.queries), corpus={d: t for d, t in self.corpus.items() if d in kept},
            qrels={q: dict(r) for q, r in self.qrels.items()}, candidates={q: list(c) for q, c in self.candidates.items()},
        )


@dataclass
class Sentences(_Record):
    texts: list[str]
    ROW_FIELDS = ("texts",)


@dataclass
class TrainingData:
    """Rows of texts (one list per column), optional per-row labels and ids.

    Args:
        columns: column name -> texts, all of the same length; their order is the loss's order.
        labels: one label per row (integers for classes, floats for scores), or None.
        ids: one distinct integer per row (default ``0 … n-1``).
        name: a label for progress bars and records (e.g. ``"snli/train entailment"``).
    """

    columns: dict[str, list[str]]
    labels: np.ndarray | None = None
    ids: np.ndarray = None  # type: ignore[assignment]  # None: 0 … n-1, filled in by __post_init__
    name: str = "train"
    _fingerprint: str | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.columns, Mapping) or not self.columns:
            raise ConfigError("training data needs at least one text column (a dict: column name -> texts)")
        self.columns = {str(name): list(texts) for name, texts in self.columns.items()}
        sizes = {name: len(texts) for name, texts in self.columns.items()}
        n = next(iter(sizes.values()))
        if len(set(sizes.values())) != 1:
            raise ConfigError(f"{self.name}: text columns of unequal length: {sizes}")
        for name, texts in self.columns.items():
            for i, text in enumerate(texts):
                if not isinstance(text, str):
                    raise ConfigError(f"{self.name}: row {i} of column {name!r} is a {type(text).__name__}, expected str")
        if self.labels is not None:
            labels = np.asarray(self.labels)
            if labels.shape != (n,):
                raise ConfigError(f"{self.name}: expected {n} labels (one per row), got shape {labels.shape}")
            if labels.dtype.kind in "iub":
                self.labels = labels.astype(np.int64)
            elif labels.dtype.kind == "f" and np.isfinite(labels).all():
                self.labels = labels.astype(np.float32)
            else:
                raise ConfigError(f"{self.name}: labels must be integers (classes) or finite floats (scores), got {labels.dtype}")
        if self.ids is None:
            self.ids = np.arange(n, dtype=np.int64)
        else:
            ids = np.asarray(self.ids)
            if ids.shape != (n,) or ids.dtype.kind not in "iu":
                raise ConfigError(f"{self.name}: ids must be {n} integers, got dtype {ids.dtype} and shape {ids.shape}")
            if len(np.unique(ids)) != n:
                raise ConfigError(f"{self.name}: ids must be distinct (one per row)")
            self.ids = ids.astype(np.int64)

    def __len__(self) -> int:
        return len(next(iter(self.columns.values())))

    @property
    def column_names(self) -> list[str]:
        return list(self.columns)

    def row_texts(self, row: int) -> tuple[str, ...]:
        """The texts of one row, in column order."""
        return tuple(texts[row] for texts in self.columns.values())

    def batch_texts(self, rows: Sequence[int] | np.ndarray) -> list[list[str]]:
        """For each column, the texts of ``rows`` (in the order given)."""
        return [[texts[i] for i in rows] for texts in self.columns.values()]

    def take(self, rows: Sequence[int] | np.ndarray, name: str | None = None) -> TrainingData:
        """The given rows (in the order given) as training data of their own; ids are kept."""
        rows = np.asarray(rows, dtype=np.int64)
        return TrainingData(
            columns={col: [texts[i] for i in rows] for col, texts in self.columns.items()},
            labels=None if self.labels is None else self.labels[rows],
            ids=self.ids[rows],
            name=name or self.name,
        )

    def fingerprint(self) -> str:
        """A hash of everything in the data (texts in order, labels, ids); part of cache and run keys."""
        if self._fingerprint is None:
            labels = None
            if self.labels is not None:
                labels = [str(self.labels.dtype), hashlib.sha256(np.ascontiguousarray(self.labels).tobytes()).hexdigest()]
            self._fingerprint = stable_hash(
                {
                    "columns": [[name, texts_hash(texts)] for name, texts in self.columns.items()],
                    "n": len(self),
                    "labels": labels,
                    "ids": hashlib.sha256(np.ascontiguousarray(self.ids).tobytes()).hexdigest(),
                }
            )
        return self._fingerprint

    @classmethod
    def from_record(
        cls,
        record: LabelledPairs | ScoredPairs | Triplets | Sentences,
        labels: bool | None = None,
        name: str | None = None,
    ) -> TrainingData:
        """Training data from a loader's record.

        ========================  ======================================  ===========================
        record                    columns                                 labels (``labels=True``)
        ========================  ======================================  ===========================
        :class:`LabelledPairs`    ``sentence1``, ``sentence2``            class ids (int)
        :class:`ScoredPairs`      ``sentence1``, ``sentence2``            gold scores (float)
        :class:`Triplets`         ``anchor``, ``positive``, ``negative``  — (none)
        :class:`Sentences`        ``text``                                — (none)
        ========================  ======================================  ===========================

        Args:
            labels: keep the record's labels; None keeps them when the record has any. Pass
                False for losses that take none (MNRL on entailment pairs): a loss refuses a
                label column it would not use.
        """
        name = name or f"{record.name}/{record.split}"
        if isinstance(record, (LabelledPairs, ScoredPairs)):
            values = record.labels if isinstance(record, LabelledPairs) else record.scores
            return cls(
                columns={"sentence1": record.sentences1, "sentence2": record.sentences2},
                labels=values if labels in (None, True) else None,
                name=name,
            )
        if isinstance(record, (Triplets, Sentences)):
            if labels:
                raise ConfigError(f"{name}: a {type(record).__name__} record has no labels")
            columns = (
                {"anchor": record.anchors, "positive": record.positives, "negative": record.negatives}
                if isinstance(record, Triplets)
                else {"text": record.texts}
            )
            return cls(columns=columns, name=name)
        raise ConfigError(
            f"cannot train on a {type(record).__name__}; expected LabelledPairs, ScoredPairs, Triplets or Sentences"
        )

