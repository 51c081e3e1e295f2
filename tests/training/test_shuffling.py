"""BSC batch shuffling (Chernyavskiy et al. 2022, Algorithms 1–2): permutations, neighbour groups, seeds, resume."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sentcl.data.records import TrainingData
from sentcl.errors import ConfigError
from sentcl.training import RandomBatchSampler, SequentialBatchSampler
from sentcl.training.shuffling import (
    STOP_WORDS,
    ClusterShuffler,
    ExampleBasedShuffler,
    NeighbourShingleShuffler,
    ShingleShuffler,
    TokenTable,
    example_based_groups,
    group_by_keys,
)


def clustered(n_clusters=12, per=8, d=16, seed=0, noise=0.05):
    """Points in tight, well separated clusters (row i in cluster i % n_clusters), and their cluster ids."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(n_clusters, d))
    labels = np.arange(n_clusters * per) % n_clusters
    return (centres[labels] + noise * rng.normal(size=(len(labels), d))).astype(np.float32), labels


def data_for(x, words=None):
    n = len(x)
    texts = words or [f"sentence {i}" for i in range(n)]
    return TrainingData(columns={"q": texts, "a": [f"answer {i}" for i in range(n)]}, name="toy")


def encoder_of(x, texts):
    lookup = {t: i for i, t in enumerate(texts)}
    return lambda batch: x[[lookup[t] for t in batch]]


def shufflers():
    return [
        ExampleBasedShuffler(group_size=4, neighbours=20),
        ExampleBasedShuffler(group_size=4, neighbours=20, reverse=False, index="ivf", nprobe=4),
        ShingleShuffler(group_size=4, shingle_size=1),
        ClusterShuffler(group_size=4, clusters=6),
        NeighbourShingleShuffler(group_size=4, neighbours=3),
        RandomBatchSampler(),
        SequentialBatchSampler(),
    ]


@pytest.mark.parametrize("sampler", shufflers(), ids=lambda s: s.config()["sampler"] + str(s.options().get("index", "")))
def test_each_epoch_is_a_permutation_seeded_and_deterministic(sampler):
    x, _ = clustered()
    data = data_for(x)
    encode = encoder_of(x, data.columns["q"])
    sampler.seed(3)
    first = [sampler.epoch_batches(data, 10, encode) for _ in range(2)]
    for batches in first:
        rows = np.concatenate(batches)
        assert sorted(rows.tolist()) == list(range(len(data)))  # every row once: no example twice, none dropped
        assert all(len(b) <= 10 for b in batches)
    sampler.seed(3)
    again = [sampler.epoch_batches(data, 10, encode) for _ in range(2)]
    for a, b in zip(first, again, strict=True):
        assert all(np.array_equal(u, v) for u, v in zip(a, b, strict=True))


def test_example_based_groups_hold_nearest_neighbours():
    x, labels = clustered(n_clusters=12, per=8)
    groups = example_based_groups(x, 8, 50, np.random.default_rng(0), index="flat")
    assert sorted(np.concatenate(groups).tolist()) == list(range(len(x)))
    assert all(len(g) <= 8 for g in groups)
    # clusters of 8 well apart: each group of 8 is one whole cluster
    full = [g for g in groups if len(g) == 8]
    assert len(full) >= 10 and all(len(set(labels[g])) == 1 for g in full)


def test_example_based_two_stages_and_reversal():
    """n limits the candidates: with n = 1 a group is the example and at most its nearest neighbour;
    the sequence is reversed, so the late one-element groups come first."""
    x, _ = clustered(n_clusters=4, per=6)
    groups = example_based_groups(x, 8, 1, np.random.default_rng(1), index="flat")
    assert max(len(g) for g in groups) <= 2
    sampler = ExampleBasedShuffler(group_size=8, neighbours=3)
    data = data_for(x)
    sampler.seed(0)
    forward = np.concatenate(example_based_groups(x, 8, 3, np.random.default_rng([0, 0x5A4D]), index="auto"))
    reversed_plan = np.concatenate(sampler.epoch_batches(data, 5, encoder_of(x, data.columns["q"])))
    assert np.array_equal(reversed_plan, forward[::-1])


def test_example_based_first_epoch_and_start_epoch():
    x, _ = clustered()
    data = data_for(x)
    calls = []

    def encode(texts):
        calls.append(len(texts))
        return encoder_of(x, data.columns["q"])(texts)

    sampler = ExampleBasedShuffler(group_size=4, neighbours=10)
    sampler.seed(0)
    sampler.epoch_batches(data, 8, encode)
    assert calls == [len(data)]  # re-encoded before the first epoch too (the paper; the authors' code waits one)
    late = ExampleBasedShuffler(group_size=4, neighbours=10, start_epoch=1)
    late.seed(0)
    first = late.epoch_batches(data, 8, encode)
    assert np.array_equal(np.concatenate(first), np.arange(len(data)))
    with pytest.raises(ConfigError):
        late.epoch_batches(data, 8, None)


def test_resume_mid_run_replays_the_same_plan():
    x, _ = clustered()
    data = data_for(x)
    encode = encoder_of(x, data.columns["q"])
    for make in (lambda: ExampleBasedShuffler(group_size=4, neighbours=10), lambda: ShingleShuffler(4)):
        sampler = make()
        sampler.seed(5)
        sampler.epoch_batches(data, 8, encode)
        state = sampler.state_dict()
        expected = sampler.epoch_batches(data, 8, encode)
        restored = make()
        restored.load_state_dict(state)
        replay = restored.epoch_batches(data, 8, encode)
        assert all(np.array_equal(u, v) for u, v in zip(expected, replay, strict=True))


def test_group_by_keys_is_algorithm_2():
    keys = np.array([5, 1, 5, 5, 2, 5, 5, 1, 5], dtype=np.uint64)
    order = group_by_keys(keys, 3, np.random.default_rng(0))
    assert sorted(order.tolist()) == list(range(9))
    # runs: six 5s -> two groups of 3, two 1s, one 2: every group contiguous and one key
    runs, i = [], 0
    seq = keys[order]
    while i < len(seq):
        j = i
        while j < len(seq) and seq[j] == seq[i] and j - i < 3:
            j += 1
        runs.append((int(seq[i]), j - i))
        i = j
    assert sorted(runs) == [(1, 2), (2, 1), (5, 3), (5, 3)]


def test_word_shingles_ignore_stop_words_and_group_shared_words():
    texts = ["The cat sat", "a cat", "of the dog", "dog!", "the", "bird sings"]
    table = TokenTable.from_texts(texts)
    assert table.lengths.tolist() == [2, 1, 1, 1, 0, 2]
    keys = table.shingle_keys(2, np.random.default_rng(0))
    assert keys[2] == keys[3]  # "dog" and "dog": the same (short) shingle
    assert keys[4] != keys[0] and len(set(keys.tolist())) == 5  # the empty text stands alone
    one = TokenTable.from_texts(["cat dog", "cat", "dog"]).shingle_keys(1, np.random.default_rng(0))
    assert one[0] in (one[1], one[2])


def test_token_table_reads_repeated_texts_once_and_matches_a_row_by_row_reading():
    rng = np.random.default_rng(3)
    pool = ["The cat sat on the mat", "a dog!", "", "the", "Cat, dog and bird", "bird song at dawn"]
    texts = [pool[i] for i in rng.integers(len(pool), size=200)]
    vocabulary, flat, lengths = {}, [], []  # the plain reading: every row, in order
    for text in texts:
        words = [w for w in re.findall(r"[^\W_]+", text.lower()) if w not in STOP_WORDS]
        flat += [vocabulary.setdefault(w, len(vocabulary)) for w in words]
        lengths.append(len(words))
    table = TokenTable.from_texts(texts)
    assert table.flat.tolist() == flat and table.lengths.tolist() == lengths
    assert table.offsets.tolist() == (np.cumsum(lengths) - lengths).tolist()


def test_shingle_shuffler_puts_rows_with_a_shared_word_together():
    words = [f"the topic{i % 5} of it" for i in range(40)]  # one word each once stop-words go
    data = data_for(np.zeros((40, 2)), words)
    sampler = ShingleShuffler(group_size=8, shingle_size=1)
    sampler.seed(0)
    batches = sampler.epoch_batches(data, 8, None)
    assert all(len({words[r] for r in b}) == 1 for b in batches)  # 5 runs of 8: each batch one group
    assert sorted(np.concatenate(batches).tolist()) == list(range(40))
    sampler.seed(1)
    other = np.concatenate(sampler.epoch_batches(data, 8, None))
    assert not np.array_equal(other, np.concatenate(batches))  # another seed, another order


def test_cluster_shuffler_groups_a_cluster():
    x, labels = clustered(n_clusters=6, per=8)
    data = data_for(x)
    sampler = ClusterShuffler(group_size=8, clusters=6, restarts=5)
    sampler.seed(0)
    batches = sampler.epoch_batches(data, 8, encoder_of(x, data.columns["q"]))
    assert sum(len(set(labels[b])) == 1 for b in batches) >= 4


def test_bad_options_are_refused():
    with pytest.raises(ConfigError):
        ExampleBasedShuffler(group_size=0)
    with pytest.raises(ConfigError):
        ExampleBasedShuffler(index="hnsw32")
    with pytest.raises(ConfigError):
        ShingleShuffler(column=2)
