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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError


def draw_rows(size: int, count: int, seed: int = 0, what: str = "count") -> np.ndarray | None:
    """``count`` of ``size`` row indices drawn without replacement with ``seed``, ascending (a
    draw keeps the data's order); ``None`` when ``count`` is 0 or not below ``size``: every row.

    The one seeded subset behind every budget of a run (training pairs, STS pairs, the sentences
    a whitening kernel is fitted on); ``what`` names the parameter in the error."""
    if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
        raise ConfigError(f"{what} must be a non-negative integer (0: all), got {count!r}")
    if count == 0 or count >= size:
        return None
    return np.sort(np.random.default_rng(seed).choice(size, size=int(count), replace=False))


@dataclass
class _Record:
    name: str
    split: str
    sources: list[str] = field(default_factory=list, kw_only=True)
    dropped: dict[str, int] = field(default_factory=dict, kw_only=True)
    # True when read from the project's own sample data (data/samples), never real data:
    # everything built on it is labelled "sample data" where it is shown.
    sample: bool = field(default=False, kw_only=True)

    def describe(self) -> str:
        """One line: name, split, size and what was dropped."""
        text = f"{self.name}/{self.split}: {len(self)} {type(self).__name__}"
        if self.sample:
            text += " [sample data]"
        if self.dropped:
            text += " (dropped: " + ", ".join(f"{k} {v}" for k, v in self.dropped.items()) + ")"
        return text

    def __len__(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError


@dataclass
class ScoredPairs(_Record):
    sentences1: list[str]
    sentences2: list[str]
    scores: np.ndarray
    subsets: list[str]

    def __post_init__(self) -> None:
        self.scores = np.asarray(self.scores, dtype=np.float64)
        n = len(self.sentences1)
        if not (len(self.sentences2) == n == len(self.scores) == len(self.subsets)):
            raise ValueError(f"{self.name}/{self.split}: columns of unequal length")

    def __len__(self) -> int:
        return len(self.sentences1)

    @property
    def subset_names(self) -> list[str]:
        """Subset names in the order they first appear."""
        return list(dict.fromkeys(self.subsets))

    def take(self, rows) -> "ScoredPairs":
        """The given rows (indices, in the order given) as a record of the same dataset and split."""
        rows = np.asarray(rows, dtype=np.int64)
        return ScoredPairs(
            name=self.name,
            split=self.split,
            sentences1=[self.sentences1[i] for i in rows],
            sentences2=[self.sentences2[i] for i in rows],
            scores=self.scores[rows],
            subsets=[self.subsets[i] for i in rows],
            sources=list(self.sources),
            dropped=dict(self.dropped),
            sample=self.sample,
        )

    def subset(self, name: str) -> "ScoredPairs":
        """The rows of one subset, as a record of their own (its own files; the year's dropped
        counts stay with the whole record)."""
        idx = [i for i, s in enumerate(self.subsets) if s == name]
        if not idx:
            raise KeyError(f"{self.name}/{self.split} has no subset {name!r}; it has {self.subset_names}")
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

    def __post_init__(self) -> None:
        self.labels = np.asarray(self.labels, dtype=np.int64)
        n = len(self.sentences1)
        if not (len(self.sentences2) == n == len(self.labels)):
            raise ValueError(f"{self.name}/{self.split}: columns of unequal length")
        if n and (self.labels.min() < 0 or self.labels.max() >= len(self.label_names)):
            raise ValueError(f"{self.name}/{self.split}: label ids outside 0..{len(self.label_names) - 1}")

    def __len__(self) -> int:
        return len(self.sentences1)

    def label_counts(self) -> dict[str, int]:
        counts = np.bincount(self.labels, minlength=len(self.label_names))
        return {name: int(c) for name, c in zip(self.label_names, counts)}

    def with_label(self, label: str) -> "LabelledPairs":
        """Only the rows with this label (e.g. NLI entailment pairs)."""
        lid = self.label_names.index(label)
        keep = np.flatnonzero(self.labels == lid)
        return LabelledPairs(
            name=self.name,
            split=self.split,
            sentences1=[self.sentences1[i] for i in keep],
            sentences2=[self.sentences2[i] for i in keep],
            labels=self.labels[keep],
            label_names=self.label_names,
            sources=list(self.sources),
            dropped=dict(self.dropped),
            sample=self.sample,
        )


@dataclass
class Triplets(_Record):
    anchors: list[str]
    positives: list[str]
    negatives: list[str]

    def __post_init__(self) -> None:
        if not (len(self.anchors) == len(self.positives) == len(self.negatives)):
            raise ValueError(f"{self.name}/{self.split}: columns of unequal length")

    def __len__(self) -> int:
        return len(self.anchors)


@dataclass
class RetrievalSet(_Record):
    queries: dict[str, str]
    corpus: dict[str, str]
    qrels: dict[str, dict[str, int]]
    candidates: dict[str, list[str]] | None = None

    def __len__(self) -> int:
        return len(self.queries)


@dataclass
class Sentences(_Record):
    texts: list[str]

    def __len__(self) -> int:
        return len(self.texts)
