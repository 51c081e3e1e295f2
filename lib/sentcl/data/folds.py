"""Grouped, seeded k-fold splits of a retrieval set's queries (RCL's "5-fold method", §4.2, Table 2).

Tan et al. (2022) evaluate FAQ retrieval "with 5-fold method" and say nothing more. Our reading,
for the ``faq_pairs`` view (each FAQ question is a query, its answer the document to find, the
whole FAQ bank the candidates):

- **What is split**: the queries, i.e. the question–answer pairs. Each pair is in exactly one
  test fold; a fold trains on the pairs of the other folds and ranks the **whole** bank for its
  test questions (the corpus is never split: a deployed FAQ system ranks every answer).
- **Groups, not pairs**: queries are joined into groups that never straddle a fold's train and
  test sides: two queries are in one group when they have the same text (compared casefolded,
  whitespace collapsed) or when one is relevant to an answer whose text is relevant to the other
  (a shared relevant answer text). Grouping by question alone would let a test question's answer
  be a training positive under a duplicate FAQ item with another wording, so the test would
  reward remembering the answer; grouping by answer alone would let the very question text of a
  test query be trained on (an FAQ bank repeats questions with different answers). The groups
  are the connected components of both links, so a test question is unseen **and** none of its
  relevant answers was a training positive; a training answer stays in the bank as a distractor.
- **Balance and seed**: the groups are shuffled with ``seed``, then, largest first (ties in the
  shuffled order), each goes to the fold with the fewest queries so far (ties: the lowest index);
  the same seed gives the same folds, another seed other folds.
- **Dev set** (``dev_fraction``): RCL selects its models "by the MAP on the development dataset"
  (Appendix A.1) without naming one; each fold's dev queries are whole groups of its training
  side, drawn with the seed and the fold's index, about ``dev_fraction`` of it, and not trained on.

:func:`fold_pairs` turns a fold's training queries into (query, index) training rows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError, check_number
from .records import RetrievalSet, TrainingData


@dataclass(frozen=True)
class Fold:
    """One fold: query ids to train on, to select models on (dev) and to test on, each in the record's order."""

    index: int
    k: int
    train: tuple[str, ...]
    dev: tuple[str, ...]
    test: tuple[str, ...]

    def rows(self, record: RetrievalSet, part: str) -> list[int]:
        """Positions of ``part``'s ("train", "dev" or "test") queries in ``record.queries`` (for :meth:`RetrievalSet.take`)."""
        if part not in ("train", "dev", "test"):
            raise ConfigError(f"fold part {part!r}; valid: train, dev, test")
        position = {q: i for i, q in enumerate(record.queries)}
        return [position[q] for q in getattr(self, part)]


def _key(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def query_groups(record: RetrievalSet, relevance_level: int = 1) -> list[list[str]]:
    """The queries joined by the same text or a shared relevant document text (graded ≥
    ``relevance_level``): connected components, each in the record's order, ordered by first query."""
    ids = list(record.queries)
    parent = list(range(len(ids)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    first: dict[tuple[str, str], int] = {}
    for i, q in enumerate(ids):
        relevant = [d for d, grade in record.qrels.get(q, {}).items() if grade >= relevance_level]
        missing = [d for d in relevant if d not in record.corpus]
        if missing:
            raise ConfigError(f"{record.name}/{record.split}: relevant document {missing[0]!r} of query {q!r} is not in the corpus")
        for key in [("query", _key(record.queries[q])), *(("document", _key(record.corpus[d])) for d in relevant)]:
            j = first.setdefault(key, i)
            parent[root(i)] = root(j)
    groups: dict[int, list[str]] = {}
    for i, q in enumerate(ids):
        groups.setdefault(root(i), []).append(q)
    return list(groups.values())


def grouped_query_folds(
    record: RetrievalSet, k: int = 5, seed: int = 0, *, dev_fraction: float = 0.0, relevance_level: int = 1
) -> list[Fold]:
    """``k`` folds of ``record``'s queries, grouped by :func:`query_groups`, seeded (see the module's docstring).

    Every query with a relevant document is in exactly one fold's ``test``; a query without one
    cannot be scored and is an error (the loaders drop those already). ``dev_fraction`` of each
    fold's training side (whole groups, at least one when the fraction is above 0) is its ``dev``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise ConfigError(f"k (the number of folds) must be an integer of at least 2, got {k!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ConfigError(f"seed must be an integer, got {seed!r}")
    check_number("dev_fraction", dev_fraction, low=0.0, high=0.5)  # a dev set beyond half the training side: a mistake
    unjudged = [q for q in record.queries if not any(g >= relevance_level for g in record.qrels.get(q, {}).values())]
    if unjudged:
        raise ConfigError(f"{record.name}/{record.split}: {len(unjudged)} queries have no relevant document "
                          f"(first {unjudged[0]!r}); a fold's test query must have one")
    groups = query_groups(record, relevance_level)
    if len(groups) < k:
        raise ConfigError(f"{record.name}/{record.split}: {k} folds need at least {k} groups of queries, "
                          f"there are {len(groups)} (of {len(record)} queries)")
    rng = np.random.default_rng(seed)
    shuffled = [groups[i] for i in rng.permutation(len(groups))]
    order = sorted(range(len(shuffled)), key=lambda i: (-len(shuffled[i]), i))
    members: list[list[list[str]]] = [[] for _ in range(k)]
    sizes = [0] * k
    for i in order:
        smallest = min(range(k), key=lambda f: (sizes[f], f))
        members[smallest].append(shuffled[i])
        sizes[smallest] += len(shuffled[i])
    position = {q: i for i, q in enumerate(record.queries)}

    def ordered(queries) -> tuple[str, ...]:
        return tuple(sorted(queries, key=position.__getitem__))

    folds = []
    for f in range(k):
        rest = [g for other in range(k) if other != f for g in members[other]]
        dev: list[str] = []
        if dev_fraction > 0:
            target = dev_fraction * sum(len(g) for g in rest)
            for i in np.random.default_rng([seed, f]).permutation(len(rest)):
                if dev and len(dev) + len(rest[i]) > target:
                    continue
                dev += rest[i]
        held = set(dev)
        train = [q for g in rest for q in g if q not in held]
        folds.append(Fold(f, k, ordered(train), ordered(dev), ordered(q for g in members[f] for q in g)))
    return folds


def fold_pairs(record: RetrievalSet, queries: Sequence[str], *, relevance_level: int = 1, name: str | None = None) -> TrainingData:
    """(query, index) training rows, one per query of ``queries``: its text and the text of its
    relevant document (the document with the query's own id when relevant, as in ``faq_pairs``,
    where a question's id is its FAQ item's; else its first relevant one). The row ids are the
    queries' positions in ``record.queries``, the same in every fold (the augmented-embedding
    stores are addressed by them)."""
    position = {q: i for i, q in enumerate(record.queries)}
    texts, documents, ids = [], [], []
    for q in queries:
        if q not in position:
            raise ConfigError(f"{record.name}/{record.split}: no query {q!r}")
        relevant = [d for d, grade in record.qrels.get(q, {}).items() if grade >= relevance_level]
        if not relevant:
            raise ConfigError(f"{record.name}/{record.split}: query {q!r} has no relevant document to train on")
        texts.append(record.queries[q])
        documents.append(record.corpus[q if q in relevant else relevant[0]])
        ids.append(position[q])
    if not texts:
        raise ConfigError(f"{record.name}/{record.split}: no queries to make training pairs of")
    return TrainingData({"query": texts, "index": documents}, ids=np.asarray(ids, dtype=np.int64),
                        name=name or f"{record.name}/{record.split} pairs")


__all__ = ["Fold", "fold_pairs", "grouped_query_folds", "query_groups"]
