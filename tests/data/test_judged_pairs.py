"""Training rows for the BSC chapter from judged retrieval data and graded pairs."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.data import load, samples_root
from sentcl.data.judged_pairs import anchor_triplets, judged_pairs, log_rank_negatives, scaled_scores
from sentcl.data.records import RetrievalSet, ScoredPairs
from sentcl.errors import ConfigError


def retrieval():
    return RetrievalSet(
        name="toy", split="train", queries={"q1": "first?", "q2": "second?"},
        corpus={"a": "A", "b": "B", "c": "C", "d": "D"},
        qrels={"q1": {"b": 0, "a": 2}, "q2": {"c": 4, "d": 1}}, candidates={"q1": ["a", "b"], "q2": ["d", "c"]},
    )


def test_judged_pairs_keep_the_order_and_label_binary_or_scaled():
    binary = judged_pairs(retrieval(), relevance_level=2)
    assert binary.columns["query"] == ["first?", "first?", "second?", "second?"]
    assert binary.columns["document"] == ["A", "B", "D", "C"]  # candidate order, question by question
    assert binary.labels.tolist() == [1, 0, 0, 1]
    scaled = judged_pairs(retrieval(), labels="scaled")
    np.testing.assert_allclose(scaled.labels, [0.5, 0.0, 0.25, 1.0])  # (grade - 0) / (4 - 0)


def test_on_the_sample_cqa_data_every_judgement_is_a_row():
    record = load("semeval2016_cqa_a", "train", samples_root())
    data = judged_pairs(record)
    assert len(data) == sum(len(j) for j in record.qrels.values())
    assert data.labels.sum() == sum(v >= 1 for j in record.qrels.values() for v in j.values())


def test_scaled_scores_and_triplets():
    pairs = ScoredPairs(name="s", split="train", sentences1=["a", "b"], sentences2=["c", "d"], scores=[5.0, 2.0],
                        subsets=["x", "x"])
    np.testing.assert_allclose(scaled_scores(pairs).labels, [1.0, 0.4])
    triplets = anchor_triplets(judged_pairs(retrieval(), relevance_level=2))
    assert list(zip(*triplets.columns.values(), strict=True)) == [("first?", "A", "B"), ("second?", "C", "D")]
    with pytest.raises(ConfigError):
        anchor_triplets(judged_pairs(retrieval(), relevance_level=9))


def test_log_rank_negatives_are_at_ranks_100_plus_powers_of_two():
    sims = -np.arange(300, dtype=float)[None, :]  # document j at rank j + 1
    [picked] = log_rank_negatives(sims)
    assert picked.tolist() == [100, 101, 103, 107, 115, 131, 163, 227]  # ranks 101, 102, 104, ..., 228
    [skipping] = log_rank_negatives(sims, exclude=[[0]])
    assert skipping.tolist() == [101, 102, 104, 108, 116, 132, 164, 228]
