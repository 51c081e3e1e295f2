"""Batch samplers: each decides a whole epoch's batches before the epoch starts.

Fixing an epoch's batch contents up front is what the BSC chapter's shufflers need (they
choose which examples share a batch, so that a batch holds hard negatives), and it makes
resuming exact: the trainer stores the current epoch's batches in its checkpoints and
continues with the next unused one.

The protocol (:class:`BatchSampler`)
    ``epoch_batches(data, batch_size, encode=None)`` returns the next epoch's batches, a list
    of integer arrays of row indices into the :class:`~sentcl.data.records.TrainingData`;
    within an epoch a row is used at most once. A sampler draws its randomness from its own
    generator, seeded by the trainer (:meth:`BatchSampler.seed`, from the run's seed), and its
    state (epoch counter, generator state, anything a subclass adds) is saved in every
    checkpoint and restored on resume (:meth:`BatchSampler.state_dict`,
    :meth:`BatchSampler.load_state_dict`).

Re-encoding samplers
    A sampler whose class sets ``reencodes = True`` (BSC's example-based shuffling, Algorithm 1
    of Chernyavskiy et al. 2022: kNN groups over the *current* model's embeddings, recomputed
    every epoch) receives ``encode``: ``texts -> np.ndarray`` of shape ``(len(texts), dim)``,
    the model being trained, run in evaluation mode without gradients, without touching the
    training's random state. The trainer calls it between epochs (before the first, too).
    With several processes the first one plans every epoch and sends the plan to the others.

Samplers here: :class:`RandomBatchSampler` (a fresh permutation per epoch),
:class:`SequentialBatchSampler` (the data's own order, BSC's "w/o shuffle"),
:class:`NoDuplicatesBatchSampler` (random, with no text twice in a batch, as
sentence-transformers' NoDuplicatesBatchSampler).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np

from sentcl.data.records import TrainingData
from sentcl.embeddings import Embed
from sentcl.errors import ConfigError


class BatchSampler(ABC):
    """Base of the batch samplers (see the module docstring for the protocol).

    A subclass implements :meth:`plan` (one epoch's batches, drawing randomness from ``rng``)
    and returns its parameters from :meth:`options` (they become part of the run's configuration
    and cache key); one that keeps more state than the epoch and the generator extends
    :meth:`state_dict` / :meth:`load_state_dict`.
    """

    reencodes: ClassVar[bool] = False
    """True for samplers that embed the data with the current model to plan an epoch."""

    def __init__(self) -> None:
        self.epoch = 0
        self.rng = np.random.default_rng(0)

    def seed(self, seed: int) -> None:
        """Start afresh from ``seed``: epoch 0 and a generator of its own (independent of other seeded streams)."""
        self.epoch = 0
        self.rng = np.random.default_rng([int(seed), 0x5A4D])

    def epoch_batches(self, data: TrainingData, batch_size: int, encode: Embed | None = None) -> list[np.ndarray]:
        """The next epoch's batches (row indices, each row at most once); advances the epoch."""
        if self.reencodes and encode is None:
            raise ConfigError(f"{type(self).__name__} re-encodes the data every epoch: it needs encode")
        batches = [np.asarray(b, dtype=np.int64) for b in self.plan(data, batch_size, self.rng, encode)]
        check_batches(batches, len(data), batch_size, type(self).__name__)
        self.epoch += 1
        return batches

    @abstractmethod
    def plan(
        self, data: TrainingData, batch_size: int, rng: np.random.Generator, encode: Embed | None
    ) -> list[np.ndarray]:
        """One epoch's batches; ``encode`` is given to samplers with ``reencodes = True``."""

    def options(self) -> dict[str, Any]:
        """The sampler's parameters (JSON data)."""
        return {}

    def config(self) -> dict[str, Any]:
        """Class and parameters: what the run's configuration (and cache key) records."""
        return {"sampler": type(self).__name__, **self.options()}

    def state_dict(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "rng": self.rng.bit_generator.state}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch = int(state["epoch"])
        self.rng = np.random.default_rng()
        self.rng.bit_generator.state = state["rng"]


def check_batches(batches: list[np.ndarray], n: int, batch_size: int, who: str) -> None:
    """At least one batch; every batch non-empty, at most ``batch_size`` rows in ``[0, n)``; no row twice in the epoch."""
    if not batches:
        raise ConfigError(f"{who} planned no batches for {n} rows (batch size {batch_size})")
    seen = np.zeros(n, dtype=bool)
    for k, batch in enumerate(batches):
        if batch.ndim != 1 or not 0 < len(batch) <= batch_size:
            raise ConfigError(f"{who}: batch {k} has {batch.size} rows; expected 1 to {batch_size}")
        if batch.min() < 0 or batch.max() >= n:
            raise ConfigError(f"{who}: batch {k} has row indices outside [0, {n})")
        if seen[batch].any() or len(np.unique(batch)) != len(batch):
            raise ConfigError(f"{who}: batch {k} repeats a row already used in this epoch")
        seen[batch] = True


def _chunks(order: np.ndarray, batch_size: int, drop_last: bool) -> list[np.ndarray]:
    batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
    if drop_last and batches and len(batches[-1]) < batch_size:
        batches.pop()
    return batches


class RandomBatchSampler(BatchSampler):
    """A fresh random permutation every epoch, cut into batches (the last one shorter unless ``drop_last``)."""

    def __init__(self, drop_last: bool = False) -> None:
        super().__init__()
        self.drop_last = bool(drop_last)

    def plan(self, data, batch_size, rng, encode):
        return _chunks(rng.permutation(len(data)), batch_size, self.drop_last)

    def options(self):
        return {"drop_last": self.drop_last}


class SequentialBatchSampler(BatchSampler):
    """The data's own order, every epoch (BSC's "w/o shuffle": e.g. CQA data grouped by question)."""

    def __init__(self, drop_last: bool = False) -> None:
        super().__init__()
        self.drop_last = bool(drop_last)

    def plan(self, data, batch_size, rng, encode):
        return _chunks(np.arange(len(data)), batch_size, self.drop_last)

    def options(self):
        return {"drop_last": self.drop_last}


class NoDuplicatesBatchSampler(BatchSampler):
    """Random batches in which no text occurs twice, across all text columns.

    With in-batch negatives a duplicate text is a false negative (a text that is another row's
    positive counts as a negative; see :mod:`sentcl.losses.mnrl`), so contrastive training on
    NLI, where a premise comes with several hypotheses, keeps them apart, as
    sentence-transformers' NoDuplicatesBatchSampler does.

    Each epoch the rows are taken in a fresh random order and each goes into the oldest batch
    that is not full and shares none of its texts (first fit). Rows left over at the end, when
    they clash with the one batch that still has room, are moved into it by swapping each with
    a row of a full batch where that clashes with nothing. Every row is used exactly once; the
    number of batches is ``ceil(n / batch_size)`` unless duplicates force more (e.g. a text in
    more than ``n / batch_size`` rows); ``drop_last`` drops the short batches. Texts are
    compared exactly (equal strings).
    """

    def __init__(self, drop_last: bool = False) -> None:
        super().__init__()
        self.drop_last = bool(drop_last)

    def plan(self, data, batch_size, rng, encode):
        open_batches: list[tuple[list[int], set[str]]] = []  # in creation order
        batches: list[list[int]] = []  # every batch, in creation order
        for row in rng.permutation(len(data)).tolist():
            texts = set(data.row_texts(row))
            for k, (rows, used) in enumerate(open_batches):
                if used.isdisjoint(texts):
                    rows.append(row)
                    used.update(texts)
                    if len(rows) == batch_size:
                        del open_batches[k]
                    break
            else:
                rows = [row]
                batches.append(rows)
                if batch_size > 1:
                    open_batches.append((rows, texts))
        batches = _merge_short_batches(batches, batch_size, data)
        if self.drop_last:
            batches = [b for b in batches if len(b) == batch_size]
        return [np.asarray(b, dtype=np.int64) for b in batches]

    def options(self):
        return {"drop_last": self.drop_last}


def _merge_short_batches(batches: list[list[int]], batch_size: int, data: TrainingData) -> list[list[int]]:
    """Move the rows of the later short batches into the first short one, directly or by a swap
    with a full batch, as long as no text repeats within a batch; empty batches disappear."""
    used = [{t for row in b for t in data.row_texts(row)} for b in batches]

    def place(row: int, target: int) -> bool:
        texts = set(data.row_texts(row))
        if texts.isdisjoint(used[target]):
            batches[target].append(row)
            used[target] |= texts
            return True
        for k, batch in enumerate(batches):
            if k == target or len(batch) < batch_size:
                continue
            for i, other in enumerate(batch):
                other_texts = set(data.row_texts(other))
                if texts.isdisjoint(used[k] - other_texts) and other_texts.isdisjoint(used[target]):
                    batch[i] = row
                    used[k] = (used[k] - other_texts) | texts
                    batches[target].append(other)
                    used[target] |= other_texts
                    return True
        return False

    short = [k for k, b in enumerate(batches) if len(b) < batch_size]
    while len(short) > 1:
        target, last = short[0], short[-1]
        rows = batches[last]
        while rows and len(batches[target]) < batch_size and place(rows[-1], target):
            rows.pop()
            used[last] = {t for row in rows for t in data.row_texts(row)}
        if rows and len(batches[target]) < batch_size:
            break  # a row that fits nowhere: keep the short batches as they are
        short = [k for k, b in enumerate(batches) if 0 < len(b) < batch_size]
    return [b for b in batches if b]


__all__ = [
    "BatchSampler",
    "NoDuplicatesBatchSampler",
    "RandomBatchSampler",
    "SequentialBatchSampler",
    "check_batches",
]
