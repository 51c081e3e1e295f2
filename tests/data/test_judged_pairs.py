"""Training rows for the BSC chapter from judged retrieval data and graded pairs."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.data import load, samples_root
from sentcl.data.judged_pairs import (
    anchor_triplets,
    first_questions,
    judged_pairs,
    log_rank_negative_pairs,
    log_rank_negatives,
    scaled_scores,
    training_pairs,
    training_rows,
)
from sentcl.data.records import LabelledPairs, RetrievalSet, ScoredPairs, TrainingData
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


def test_training_pairs_of_each_kind_of_record():
    judged = training_pairs(retrieval(), grades="scaled")
    np.testing.assert_allclose(judged.labels, [0.5, 0.0, 0.25, 1.0])
    assert training_pairs(retrieval()).labels.tolist() == [1, 0, 1, 1]  # binary at relevance 1
    scored = ScoredPairs(name="s", split="train", sentences1=["a"], sentences2=["b"], scores=[3.0], subsets=["x"])
    np.testing.assert_allclose(training_pairs(scored).labels, [0.6])
    mrpc = LabelledPairs(name="mrpc", split="train", sentences1=["a", "b"], sentences2=["c", "d"], labels=[1, 0],
                         label_names=("not_equivalent", "equivalent"))
    pairs = training_pairs(mrpc, positive_label="equivalent")
    assert pairs.labels.tolist() == [1.0, 0.0] and pairs.name == "mrpc/train"  # label id 1 is "equivalent"
    with pytest.raises(ConfigError, match="positive_label"):
        training_pairs(mrpc)
    with pytest.raises(ConfigError, match="no label 'paraphrase'"):
        training_pairs(mrpc, positive_label="paraphrase")


def test_first_questions_keep_whole_questions_within_the_budget():
    assert list(first_questions(retrieval(), 2).queries) == ["q1"]  # two judged pairs each
    assert list(first_questions(retrieval(), 3).queries) == ["q1"]
    assert list(first_questions(retrieval(), 4).queries) == ["q1", "q2"]
    assert list(first_questions(retrieval(), 1).queries) == ["q1"]  # at least one question


def labelled():
    return TrainingData(columns={"query": ["q1", "q1", "q2", "q2"], "document": ["A", "B", "C", "D"]},
                        labels=np.array([1.0, 0.0, 0.7, 0.2], dtype=np.float32), name="toy")


def test_training_rows_of_each_variant_without_sampled_negatives():
    data = labelled()
    assert training_rows(data, "pairs") is data
    assert training_rows(data, "pointwise") is data  # the MSE trains on every labelled pair
    positives = training_rows(data, "positives", threshold=0.6)
    assert positives.columns["document"] == ["A", "C"] and positives.ids.tolist() == [0, 2]
    assert training_rows(data, "positives", threshold=0.8).columns["document"] == ["A"]  # 0.7 is not above 0.8
    triplets = training_rows(data, "triplets")
    assert list(zip(*triplets.columns.values(), strict=True)) == [("q1", "A", "B"), ("q2", "C", "D")]
    with pytest.raises(ConfigError, match="rows"):
        training_rows(data, "mse")


def test_training_rows_with_sampled_negatives_oversample_the_positives():
    data = labelled().take([0, 2], name="positives only")  # PFCC-S: no labelled negatives
    asked = []

    def negatives(rows):
        asked.append(rows.name)
        return [("q1", "N1"), ("q1", "N2"), ("q2", "N3"), ("q2", "N4"), ("q2", "N5")]

    assert training_rows(data, "pairs", negatives=negatives) is data and not asked  # only asked when needed
    pointwise = training_rows(data, "pointwise", negatives=negatives)
    # 5 negatives // 2 positives: the positives twice, then the negatives labelled 0
    assert pointwise.columns["query"] == ["q1", "q2", "q1", "q2", "q1", "q1", "q2", "q2", "q2"]
    assert pointwise.columns["document"] == ["A", "C", "A", "C", "N1", "N2", "N3", "N4", "N5"]
    assert pointwise.labels.tolist() == pytest.approx([1.0, 0.7, 1.0, 0.7, 0, 0, 0, 0, 0])
    triplets = training_rows(data, "triplets", negatives=negatives)
    assert triplets.columns["positive"] == ["A", "A", "C", "C", "C"]
    assert triplets.columns["negative"] == ["N1", "N2", "N3", "N4", "N5"]
    assert asked == ["positives only", "positives only"]


def test_log_rank_negative_pairs_rank_the_database_by_cosine_and_skip_the_own_positive():
    documents = [f"d{j}" for j in range(120)]
    # anchor "a" points along x; document j's cosine to it falls with j ("d0" is the closest)
    vectors = {"a": [1.0, 0.0], **{d: [np.cos(j / 100), np.sin(j / 100)] for j, d in enumerate(documents)}}
    embed = lambda texts: np.array([vectors[t] for t in texts]) * 3.0  # noqa: E731 -- unnormalised on purpose
    data = TrainingData(columns={"query": ["a"], "document": ["d0"]}, labels=np.ones(1, np.float32))
    pairs = log_rank_negative_pairs(data, [*documents, "d5"], embed, start=100)  # a duplicate document is ranked once
    # d0 (the positive) left out, so the document at rank r is d<r>: ranks 101, 102, 104, 108, 116
    assert pairs == [("a", "d101"), ("a", "d102"), ("a", "d104"), ("a", "d108"), ("a", "d116")]
    with pytest.raises(ConfigError, match="not in the documents"):
        log_rank_negative_pairs(data, documents[1:], embed)
