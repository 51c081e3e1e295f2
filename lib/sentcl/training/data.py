"""Training data: text columns in the loss's order, optional labels, and each row's id.

:class:`TrainingData` is what the trainer and the batch samplers read. It is built from the
loaders' records (:meth:`TrainingData.from_record`) or directly from columns::

    pairs = load("snli", "train").with_label("entailment")
    data = TrainingData.from_record(pairs, labels=False)          # (premise, hypothesis) for MNRL
    data = TrainingData.from_record(load("snli", "train"))        # with the 3 NLI labels, for SoftmaxLoss

Columns are passed to the loss in their order (anchor, positive, negatives… for MNRL). A row's
**id** is its index in the dataset the run trains on (``0 … n-1`` unless given): the RCL
chapter looks up the stored augmented embeddings of a row's sentences by it, and
:meth:`TrainingData.subset` keeps the ids of the rows it keeps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from sentcl.cache import stable_hash, texts_hash
from sentcl.data.records import LabelledPairs, ScoredPairs, Sentences, Triplets
from sentcl.errors import ConfigError


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
    ids: np.ndarray | None = None
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

    def batch_texts(self, rows: Sequence[int]) -> list[list[str]]:
        """For each column, the texts of ``rows`` (in the order given)."""
        return [[texts[i] for i in rows] for texts in self.columns.values()]

    def subset(self, rows: Sequence[int] | np.ndarray, name: str | None = None) -> "TrainingData":
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
    ) -> "TrainingData":
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


__all__ = ["TrainingData"]
