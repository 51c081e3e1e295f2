"""Batch shuffling of Chernyavskiy et al. (2022, §3.2): batches that hold hard negatives.

Every shuffler here is a :class:`~sentcl.training.samplers.BatchSampler`: before an epoch it
fixes the order of all the rows, putting *groups* of similar rows (similar by their first or
second element, ``column``) next to each other, and the order is cut into consecutive batches,
so that each positive pair meets hard negatives from its own group and easier ones from the
other groups of its batch. Each epoch is a permutation of all the rows.

- :class:`ExampleBasedShuffler` — Algorithm 1: shuffle the rows; for each row not used yet, take
  its n nearest neighbours (faiss, over the *current* model's embeddings, re-encoded every epoch),
  keep the first ``group_size − 1`` unused ones, and emit the row and them as a group; finally
  reverse the sequence, so that the one-element groups left at the end come first
  (a curriculum). The core is :func:`example_based_groups`.
- :class:`ShingleShuffler` — Algorithm 2 ("fast shuffling by words"): each row gets a random
  shingle of ``shingle_size`` consecutive words of its text, stop-words and punctuation removed;
  rows are sorted by shingle, runs of equal shingles cut into groups of at most ``group_size``,
  and the groups put in random order (:func:`group_by_keys`).
- :class:`ClusterShuffler` — the same with k-means cluster ids as one-word shingles (the paper's
  CQA-A ablation uses 300 clusters).
- :class:`NeighbourShingleShuffler` — the same with "sentences" whose words are the positions of
  a row's k nearest neighbours.

The ablation baselines are :class:`~sentcl.training.samplers.RandomBatchSampler` (random
shuffle) and :class:`~sentcl.training.samplers.SequentialBatchSampler` (w/o shuffle: the data's
order). Neighbours are by cosine similarity (inner product of L2-normalised embeddings; the
authors' code uses a flat L2 index on the raw embeddings). Exact search (``index="flat"``) costs
O(n²d); ``index="ivf"`` (an inverted-file index, ``nprobe`` cells searched) is approximate and
fast: ``benchmarks/bsc_shuffling.py`` measures both and how often their groups agree.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from sentcl.data.records import TrainingData
from sentcl.embeddings import Embed
from sentcl.errors import ConfigError, check_choice, check_positive_int
from sentcl.training.samplers import BatchSampler

INDEXES = ("auto", "flat", "ivf")
AUTO_FLAT_MAX = 20_000
"""``index="auto"`` searches exactly up to this many rows, with an IVF index beyond."""
NPROBE = 8
"""IVF cells searched by default: on 100,000 clustered 384-d rows, 99.8 % of the 7 nearest neighbours
(99.9 % at 16 cells) in half the time of 16 (``benchmarks/bsc_shuffling.py``)."""

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most
    my myself no nor not now of off on once only or other our ours ourselves out over own same she should
    so some such than that the their theirs them themselves then there these they this those through to
    too under until up very was we were what when where which while who whom why will with would you
    your yours yourself yourselves s t don""".split()
)
"""English stop-words ignored by word shingles (Algorithm 2: "ignoring stop-words")."""

_WORD = re.compile(r"[^\W_]+")


def _chunks(order: np.ndarray, batch_size: int) -> list[np.ndarray]:
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def neighbour_index(x: np.ndarray, index: str = "auto", nprobe: int = NPROBE, seed: int = 0):
    """A faiss inner-product index over the L2-normalised rows ``x``: exact (``"flat"``) or
    inverted-file (``"ivf"``: √n cells trained on at most 64 rows per cell, ``nprobe`` cells
    searched); ``"auto"``: flat up to :data:`AUTO_FLAT_MAX` rows."""
    import faiss  # imported here: the GPU script and the command line do without it

    check_choice("index", index, INDEXES)
    n, d = x.shape
    if index == "flat" or (index == "auto" and n <= AUTO_FLAT_MAX):
        flat = faiss.IndexFlatIP(d)
        flat.add(x)
        return flat
    cells = max(1, min(int(np.sqrt(n)), n // 39))
    ivf = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, cells, faiss.METRIC_INNER_PRODUCT)
    ivf.cp.seed = seed
    train = x if n <= 64 * cells else x[np.random.default_rng(seed).choice(n, 64 * cells, replace=False)]
    ivf.train(train)
    ivf.add(x)
    ivf.nprobe = nprobe
    return ivf


def example_based_groups(
    embeddings: np.ndarray,
    group_size: int,
    neighbours: int,
    rng: np.random.Generator,
    *,
    index: str = "auto",
    nprobe: int = NPROBE,
    chunk: int = 1024,
) -> list[np.ndarray]:
    """Algorithm 1 before its final reversal: the groups (row indices, the example first), in the
    order they are formed. Two stages (§3.2): the top-``neighbours`` of each example, then the first
    ``group_size − 1`` of them not used yet. Searched chunk by chunk along the shuffled order, only
    for the examples still unused, so the neighbour lists never all sit in memory."""
    check_positive_int("group_size", group_size)
    check_positive_int("neighbours", neighbours)
    x = _unit(embeddings)
    n = len(x)
    order = rng.permutation(n)
    if group_size == 1 or n == 1:
        return [np.array([e]) for e in order]
    found = neighbour_index(x, index, nprobe, seed=int(rng.integers(2**31)))
    k = min(neighbours + 1, n)  # the example itself is usually its own first neighbour
    used = np.zeros(n, dtype=bool)
    groups: list[np.ndarray] = []
    for start in range(0, n, chunk):
        block = order[start : start + chunk]
        todo = block[~used[block]]
        if not len(todo):
            continue
        _, found_ids = found.search(x[todo], k)
        for e, ids in zip(todo.tolist(), found_ids, strict=True):
            if used[e]:
                continue
            used[e] = True
            ids = ids[ids >= 0]
            free = ids[~used[ids]][: group_size - 1]
            used[free] = True
            groups.append(np.concatenate(([e], free)).astype(np.int64))
    return groups


def group_by_keys(keys: np.ndarray, group_size: int, rng: np.random.Generator) -> np.ndarray:
    """Algorithm 2's grouping: sort by key (ties in random order), cut each run of equal keys into
    groups of at most ``group_size``, and return the rows group by group, the groups in random
    order (sorting by a random group id)."""
    check_positive_int("group_size", group_size)
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    shuffled = rng.permutation(n)
    by_key = shuffled[np.argsort(keys[shuffled], kind="stable")]
    sorted_keys = keys[by_key]
    new_run = np.empty(n, dtype=bool)
    new_run[0] = True
    np.not_equal(sorted_keys[1:], sorted_keys[:-1], out=new_run[1:])
    run_start = np.flatnonzero(new_run)
    run_of = np.cumsum(new_run) - 1
    position = np.arange(n) - run_start[run_of]
    group = np.cumsum(new_run | (position % group_size == 0)) - 1
    group_id = rng.permutation(int(group[-1]) + 1)[group]
    return by_key[np.argsort(group_id, kind="stable")]


class TokenTable:
    """Each row's "sentence" as integer word ids (flat array + offsets): words of texts, or neighbour ids."""

    def __init__(self, flat: np.ndarray, lengths: np.ndarray):
        self.flat = np.asarray(flat, dtype=np.int64)
        self.lengths = np.asarray(lengths, dtype=np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)

    @classmethod
    def from_texts(cls, texts: list[str], stop_words: frozenset[str] = STOP_WORDS) -> TokenTable:
        """Lower-cased words of each text, punctuation and ``stop_words`` removed.

        Each distinct text is read once (pair data repeat their queries: CQA's 10 comments per
        question) and its word ids copied to every row that holds it; the ids are those of a
        row-by-row reading (numbered in order of first appearance)."""
        vocabulary: dict[str, int] = {}
        seen: dict[str, int] = {}  # text -> its index among the distinct texts
        distinct_words: list[list[int]] = []
        distinct_of = np.empty(len(texts), dtype=np.int64)
        for row, text in enumerate(texts):
            index = seen.get(text)
            if index is None:
                index = seen[text] = len(distinct_words)
                distinct_words.append([vocabulary.setdefault(w, len(vocabulary))
                                       for w in _WORD.findall(text.lower()) if w not in stop_words])
            distinct_of[row] = index
        distinct_lengths = np.fromiter(map(len, distinct_words), dtype=np.int64, count=len(distinct_words))
        distinct_flat = np.fromiter((w for words in distinct_words for w in words), dtype=np.int64,
                                    count=int(distinct_lengths.sum()))
        lengths = distinct_lengths[distinct_of]
        source_start = (np.cumsum(distinct_lengths) - distinct_lengths)[distinct_of]  # row's words in distinct_flat
        row_start = np.cumsum(lengths) - lengths  # row's words in the table
        flat = distinct_flat[np.repeat(source_start - row_start, lengths) + np.arange(int(lengths.sum()))]
        return cls(flat, lengths)

    @classmethod
    def from_rows(cls, ids: np.ndarray) -> TokenTable:
        """A table whose row i is ``ids[i]`` (e.g. the positions of row i's nearest neighbours)."""
        ids = np.asarray(ids, dtype=np.int64)
        return cls(ids.reshape(-1), np.full(len(ids), ids.shape[1], dtype=np.int64))

    def shingle_keys(self, size: int, rng: np.random.Generator) -> np.ndarray:
        """One random shingle per row, ``size`` consecutive words (all of them when fewer), hashed to
        uint64; a row without words gets a key of its own (a group of its own)."""
        check_positive_int("shingle_size", size)
        n = len(self.lengths)
        spare = np.maximum(self.lengths - size, 0)
        start = self.offsets + np.floor(rng.random(n) * (spare + 1)).astype(np.int64)
        keys = np.zeros(n, dtype=np.uint64)
        last = np.maximum(self.offsets + self.lengths - 1, 0)
        with np.errstate(over="ignore"):
            for j in range(size):
                valid = j < self.lengths
                word = np.where(valid, self.flat[np.minimum(start + j, last)] if len(self.flat) else 0, -1)
                keys = keys * np.uint64(1_000_003) + (word + 2).astype(np.uint64)
        empty = self.lengths == 0
        keys[empty] = np.uint64(1 << 63) + np.flatnonzero(empty).astype(np.uint64)
        return keys


def _column(data: TrainingData, column: int) -> list[str]:
    names = data.column_names
    if not 0 <= column < len(names):
        raise ConfigError(f"column {column}: the data has columns {names}")
    return data.columns[names[column]]


class _GroupingShuffler(BatchSampler):
    """Common options: ``group_size``, ``column`` (0: group by the first element, 1: by the
    second), ``start_epoch`` (epochs before it keep the data's order; 0: shuffle from the first)."""

    def __init__(self, group_size: int = 8, column: int = 0, start_epoch: int = 0) -> None:
        super().__init__()
        self.group_size = check_positive_int("group_size", group_size)
        self.column = int(column)
        if self.column not in (0, 1):
            raise ConfigError(f"column must be 0 (first element) or 1 (second), got {column!r}")
        if not isinstance(start_epoch, int) or start_epoch < 0:
            raise ConfigError(f"start_epoch must be a non-negative integer, got {start_epoch!r}")
        self.start_epoch = start_epoch

    def plan(self, data, batch_size, rng, encode):
        if self.epoch < self.start_epoch:
            return _chunks(np.arange(len(data)), batch_size)
        return _chunks(self.order(data, rng, encode), batch_size)

    def order(self, data: TrainingData, rng: np.random.Generator, encode: Embed | None) -> np.ndarray:
        raise NotImplementedError

    def options(self) -> dict[str, Any]:
        return {"group_size": self.group_size, "column": self.column, "start_epoch": self.start_epoch}


class ExampleBasedShuffler(_GroupingShuffler):
    """Algorithm 1 over the current model's embeddings of the grouped column, every epoch.

    Args:
        group_size: s, the example and its s − 1 neighbours (§5.2: 8; 5 for CQA-B, 4 for MRPC).
        neighbours: n, the first-stage neighbour pool (§3.2: 500; the authors' code 200).
        reverse: return the reversed sequence (one-element groups first), as Algorithm 1.
        index: ``"flat"`` (exact), ``"ivf"`` (approximate) or ``"auto"``; ``nprobe``: IVF cells searched.
    """

    reencodes = True

    def __init__(self, group_size: int = 8, neighbours: int = 500, *, column: int = 0, reverse: bool = True,
                 start_epoch: int = 0, index: str = "auto", nprobe: int = NPROBE) -> None:
        super().__init__(group_size, column, start_epoch)
        self.neighbours = check_positive_int("neighbours", neighbours)
        self.reverse = bool(reverse)
        self.index = check_choice("index", index, INDEXES)
        self.nprobe = check_positive_int("nprobe", nprobe)

    def order(self, data, rng, encode):
        embeddings = np.asarray(encode(_column(data, self.column)))
        groups = example_based_groups(embeddings, self.group_size, self.neighbours, rng, index=self.index, nprobe=self.nprobe)
        sequence = np.concatenate(groups)
        return sequence[::-1].copy() if self.reverse else sequence

    def options(self):
        return {**super().options(), "neighbours": self.neighbours, "reverse": self.reverse, "index": self.index,
                "nprobe": self.nprobe}


class ShingleShuffler(_GroupingShuffler):
    """Algorithm 2: group rows sharing a random shingle of ``shingle_size`` words of the grouped column."""

    def __init__(self, group_size: int = 8, shingle_size: int = 1, *, column: int = 0, start_epoch: int = 0) -> None:
        super().__init__(group_size, column, start_epoch)
        self.shingle_size = check_positive_int("shingle_size", shingle_size)
        self._tokens: tuple[str, TokenTable] | None = None  # (data fingerprint, table): words are read once

    def tokens(self, data: TrainingData) -> TokenTable:
        key = f"{data.fingerprint()}:{self.column}"
        if self._tokens is None or self._tokens[0] != key:
            self._tokens = (key, TokenTable.from_texts(_column(data, self.column)))
        return self._tokens[1]

    def order(self, data, rng, encode):
        return group_by_keys(self.tokens(data).shingle_keys(self.shingle_size, rng), self.group_size, rng)

    def options(self):
        return {**super().options(), "shingle_size": self.shingle_size}


class ClusterShuffler(_GroupingShuffler):
    """Algorithm 2 with each row's k-means cluster (faiss, over the current model's embeddings) as its shingle;
    ``restarts`` k-means runs, the one with the lowest objective kept."""

    reencodes = True

    def __init__(self, group_size: int = 8, clusters: int = 300, *, column: int = 0, start_epoch: int = 0,
                 iterations: int = 20, restarts: int = 1) -> None:
        super().__init__(group_size, column, start_epoch)
        self.clusters = check_positive_int("clusters", clusters)
        self.iterations = check_positive_int("iterations", iterations)
        self.restarts = check_positive_int("restarts", restarts)

    def order(self, data, rng, encode):
        import faiss

        x = _unit(np.asarray(encode(_column(data, self.column))))
        k = min(self.clusters, len(x))
        kmeans = faiss.Kmeans(x.shape[1], k, niter=self.iterations, nredo=self.restarts, seed=int(rng.integers(2**31)),
                              spherical=True, min_points_per_centroid=1, max_points_per_centroid=256)
        kmeans.train(x)
        _, cluster = kmeans.index.search(x, 1)
        return group_by_keys(cluster[:, 0].astype(np.uint64), self.group_size, rng)

    def options(self):
        return {**super().options(), "clusters": self.clusters, "iterations": self.iterations,
                "restarts": self.restarts}


class NeighbourShingleShuffler(_GroupingShuffler):
    """Algorithm 2 on "sentences" of neighbour positions: row i's words are its ``neighbours``
    nearest rows (itself included), its shingle ``shingle_size`` consecutive ones of them."""

    reencodes = True

    def __init__(self, group_size: int = 8, neighbours: int = 3, shingle_size: int = 1, *, column: int = 0,
                 start_epoch: int = 0, index: str = "auto", nprobe: int = NPROBE) -> None:
        super().__init__(group_size, column, start_epoch)
        self.neighbours = check_positive_int("neighbours", neighbours)
        self.shingle_size = check_positive_int("shingle_size", shingle_size)
        self.index = check_choice("index", index, INDEXES)
        self.nprobe = check_positive_int("nprobe", nprobe)

    def order(self, data, rng, encode):
        x = _unit(np.asarray(encode(_column(data, self.column))))
        found = neighbour_index(x, self.index, self.nprobe, seed=int(rng.integers(2**31)))
        _, ids = found.search(x, min(self.neighbours, len(x)))
        keys = TokenTable.from_rows(ids).shingle_keys(self.shingle_size, rng)
        return group_by_keys(keys, self.group_size, rng)

    def options(self):
        return {**super().options(), "neighbours": self.neighbours, "shingle_size": self.shingle_size,
                "index": self.index, "nprobe": self.nprobe}


__all__ = [
    "STOP_WORDS",
    "ClusterShuffler",
    "ExampleBasedShuffler",
    "NeighbourShingleShuffler",
    "ShingleShuffler",
    "TokenTable",
    "example_based_groups",
    "group_by_keys",
    "neighbour_index",
]
