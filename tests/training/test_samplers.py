"""Batch samplers: whole-epoch plans, no duplicate texts, seeded, with state that resumes exactly."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.data import TrainingData
from sentcl.data.records import LabelledPairs
from sentcl.errors import ConfigError
from sentcl.training import (
    BatchSampler,
    NoDuplicatesBatchSampler,
    RandomBatchSampler,
    SequentialBatchSampler,
)
from sentcl.training.checkpoint import load_state, save_state


def nli_like(n_premises: int = 40, hypotheses: int = 3) -> TrainingData:
    """Each premise with several hypotheses (as in SNLI), and some hypotheses shared between premises."""
    premises = [f"premise {i}" for i in range(n_premises) for _ in range(hypotheses)]
    hyps = [f"hypothesis {(i * 7 + j) % (n_premises * 2)}" for i in range(n_premises) for j in range(hypotheses)]
    return TrainingData({"premise": premises, "hypothesis": hyps})


def used_once(batches: list[np.ndarray], n: int) -> bool:
    rows = np.concatenate(batches)
    return len(rows) == n and set(rows.tolist()) == set(range(n))


@pytest.mark.parametrize("sampler_class", [RandomBatchSampler, SequentialBatchSampler, NoDuplicatesBatchSampler])
def test_every_row_once_per_epoch(sampler_class):
    data = nli_like()
    sampler = sampler_class()
    sampler.seed(3)
    for _ in range(3):
        batches = sampler.epoch_batches(data, 16)
        assert used_once(batches, len(data))
        assert all(0 < len(b) <= 16 for b in batches)
    assert sampler.epoch == 3


def test_no_duplicates_keeps_every_text_once_per_batch():
    data = nli_like()
    sampler = NoDuplicatesBatchSampler()
    sampler.seed(0)
    for _ in range(5):
        batches = sampler.epoch_batches(data, 16)
        assert len(batches) == -(-len(data) // 16)  # duplicates are rare enough not to need extra batches
        for batch in batches:
            texts = [t for row in batch for t in data.row_texts(int(row))]
            assert len(texts) == len(set(texts))
    # the random sampler does put a premise's hypotheses together (the case the sampler exists for)
    random_sampler = RandomBatchSampler()
    random_sampler.seed(0)
    clashes = 0
    for batch in random_sampler.epoch_batches(data, 16):
        texts = [t for row in batch for t in data.row_texts(int(row))]
        clashes += len(texts) - len(set(texts))
    assert clashes > 0


def test_no_duplicates_when_one_text_is_everywhere():
    # every row shares the anchor: each batch can hold only one row
    data = TrainingData({"a": ["same"] * 5, "b": [f"b{i}" for i in range(5)]})
    sampler = NoDuplicatesBatchSampler()
    sampler.seed(0)
    batches = sampler.epoch_batches(data, 4)
    assert [len(b) for b in batches] == [1] * 5
    assert used_once(batches, 5)
    dropped = NoDuplicatesBatchSampler(drop_last=True)
    dropped.seed(0)
    with pytest.raises(ConfigError, match="no batches"):  # nothing left to train on
        dropped.epoch_batches(data, 4)


def test_seeded_and_epochs_differ():
    data = nli_like()
    plans = []
    for _ in range(2):
        sampler = NoDuplicatesBatchSampler()
        sampler.seed(11)
        plans.append([sampler.epoch_batches(data, 8) for _ in range(2)])
    first, second = plans
    assert all(np.array_equal(a, b) for e1, e2 in zip(first, second, strict=True) for a, b in zip(e1, e2, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first[0], first[1], strict=True))  # a new order every epoch
    other = NoDuplicatesBatchSampler()
    other.seed(12)
    assert not all(np.array_equal(a, b) for a, b in zip(first[0], other.epoch_batches(data, 8), strict=True))


def test_drop_last_and_sequential_order():
    data = TrainingData({"t": [str(i) for i in range(10)]})
    sampler = SequentialBatchSampler()
    sampler.seed(0)
    assert [b.tolist() for b in sampler.epoch_batches(data, 4)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    dropping = RandomBatchSampler(drop_last=True)
    dropping.seed(0)
    assert [len(b) for b in dropping.epoch_batches(data, 4)] == [4, 4]


def test_state_round_trip_through_a_checkpoint_continues_identically(tmp_path):
    data = nli_like()
    sampler = NoDuplicatesBatchSampler()
    sampler.seed(5)
    sampler.epoch_batches(data, 8)
    save_state(tmp_path, sampler.state_dict())
    expected = sampler.epoch_batches(data, 8)
    restored = NoDuplicatesBatchSampler()
    restored.seed(999)
    restored.load_state_dict(load_state(tmp_path))
    assert restored.epoch == 1
    got = restored.epoch_batches(data, 8)
    assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True))


class ByFirstCoordinate(BatchSampler):
    """A re-encoding sampler: sorts the rows by the first coordinate of their embedding."""

    reencodes = True

    def __init__(self):
        super().__init__()
        self.seen = []

    def plan(self, data, batch_size, rng, encode):
        vectors = encode(data.columns[data.column_names[0]])
        self.seen.append(vectors)
        order = np.argsort(vectors[:, 0], kind="stable")
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def test_reencoding_sampler_gets_encode():
    data = TrainingData({"t": ["b", "c", "a", "d"]})
    sampler = ByFirstCoordinate()
    with pytest.raises(ConfigError, match="needs encode"):
        sampler.epoch_batches(data, 2)
    table = {"a": 0.0, "b": 1.0, "c": 2.0, "d": 3.0}
    batches = sampler.epoch_batches(data, 2, encode=lambda texts: np.array([[table[t], 0.0] for t in texts]))
    assert [b.tolist() for b in batches] == [[2, 0], [1, 3]]


class Broken(BatchSampler):
    def __init__(self, batches):
        super().__init__()
        self.batches = batches

    def plan(self, data, batch_size, rng, encode):
        return self.batches


@pytest.mark.parametrize(
    ("batches", "message"),
    [
        ([[0, 1, 2]], "expected 1 to 2"),
        ([[0, 1], [1, 2]], "repeats a row"),
        ([[0, 5]], "outside"),
        ([[]], "expected 1 to 2"),
    ],
)
def test_a_plan_is_checked(batches, message):
    data = TrainingData({"t": ["a", "b", "c", "d"]})
    with pytest.raises(ConfigError, match=message):
        Broken(batches).epoch_batches(data, 2)


def test_training_data_from_records_and_checks():
    pairs = LabelledPairs("snli", "dev", ["p1", "p2"], ["h1", "h2"], np.array([0, 2]), ("e", "n", "c"))
    with_labels = TrainingData.from_record(pairs)
    assert with_labels.column_names == ["sentence1", "sentence2"]
    assert with_labels.labels.tolist() == [0, 2] and with_labels.labels.dtype == np.int64
    assert TrainingData.from_record(pairs, labels=False).labels is None
    assert with_labels.fingerprint() != TrainingData.from_record(pairs, labels=False).fingerprint()
    sub = with_labels.take([1])
    assert sub.ids.tolist() == [1] and sub.columns["sentence1"] == ["p2"]
    with pytest.raises(ConfigError, match="unequal length"):
        TrainingData({"a": ["x"], "b": ["y", "z"]})
    with pytest.raises(ConfigError, match="distinct"):
        TrainingData({"a": ["x", "y"]}, ids=[3, 3])
    with pytest.raises(ConfigError, match="expected str"):
        TrainingData({"a": ["x", 3]})
