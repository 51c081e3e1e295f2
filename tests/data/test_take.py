"""One way to take a subset of rows for every record type (``take``)."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.data import LabelledPairs, RetrievalSet, ScoredPairs, Sentences, TrainingData, Triplets
from sentcl.errors import ConfigError

META = {"sources": ["a.tsv"], "dropped": {"no gold label": 2}, "sample": True}


def records():
    return [
        ScoredPairs("sts12", "test", ["a", "b", "c"], ["A", "B", "C"], [1.0, 2.0, 3.0], ["x", "y", "x"], **META),
        LabelledPairs("snli", "dev", ["a", "b", "c"], ["A", "B", "C"], [0, 2, 1], ("e", "n", "c"), **META),
        Triplets("allnli", "train", ["a", "b", "c"], ["A", "B", "C"], ["1", "2", "3"], **META),
        Sentences("wiki1m", "train", ["a", "b", "c"], **META),
    ]


@pytest.mark.parametrize("record", records(), ids=lambda r: type(r).__name__)
def test_take_selects_the_rows_in_the_order_given_and_keeps_the_rest(record):
    part = record.take([2, 0])
    assert type(part) is type(record) and len(part) == 2
    for name in record.ROW_FIELDS:
        whole, taken = getattr(record, name), getattr(part, name)
        assert list(taken) == [whole[2], whole[0]], name
    assert (part.name, part.split, part.sources, part.dropped, part.sample) == (record.name, record.split, *META.values())
    part.sources.append("b.tsv")
    assert record.sources == ["a.tsv"]  # a copy, not the same list
    assert len(record.take([])) == 0


def test_with_label_and_subset_are_takes():
    pairs = records()[1]
    entail = pairs.with_label("e")
    assert entail.sentences1 == ["a"] and entail.labels.tolist() == [0] and entail.label_names == pairs.label_names
    scored = records()[0]
    x = scored.subset("x")
    assert x.sentences1 == ["a", "c"] and x.scores.tolist() == [1.0, 3.0] and x.dropped == {}
    with pytest.raises(ConfigError, match="no subset 'z'"):
        scored.subset("z")


def test_retrieval_take_keeps_the_chosen_queries_and_the_whole_corpus():
    record = RetrievalSet(
        "cqa", "test", queries={"q1": "one", "q2": "two", "q3": "three"}, corpus={"d1": "x", "d2": "y"},
        qrels={"q1": {"d1": 1}, "q3": {"d2": 1}}, candidates={"q1": ["d1", "d2"], "q2": ["d2"], "q3": ["d1"]},
    )
    part = record.take([2, 1])
    assert list(part.queries) == ["q3", "q2"] and part.corpus == record.corpus
    assert part.qrels == {"q3": {"d2": 1}} and part.candidates == {"q3": ["d1"], "q2": ["d2"]}


def test_training_data_take_keeps_ids_and_labels():
    data = TrainingData({"s1": ["a", "b", "c"], "s2": ["A", "B", "C"]}, labels=np.array([0, 1, 2]), ids=np.array([7, 8, 9]))
    part = data.take([2, 0], name="two rows")
    assert part.columns == {"s1": ["c", "a"], "s2": ["C", "A"]} and part.labels.tolist() == [2, 0]
    assert part.ids.tolist() == [9, 7] and part.name == "two rows"


def test_unequal_columns_are_a_config_error():
    with pytest.raises(ConfigError, match="columns of unequal length"):
        ScoredPairs("sts12", "test", ["a"], ["A", "B"], [1.0], ["x"])


def test_candidates_only_keeps_what_a_re_ranking_task_scores():
    from sentcl.evaluation.retrieval import evaluate_retrieval

    corpus = {f"d{i}": f"document {i} " + "word " * i for i in range(8)}
    full = RetrievalSet("cqa", "test", queries={"q1": "document 1", "q2": "document 5"}, corpus=corpus,
                        qrels={"q1": {"d1": 1}, "q2": {"d5": 1, "d4": 1}},
                        candidates={"q1": ["d0", "d1", "d2"], "q2": ["d4", "d5"]}, **META)
    part = full.take([1]).candidates_only()
    assert sorted(part.corpus) == ["d4", "d5"] and part.queries == {"q2": "document 5"} and len(full.corpus) == 8
    cut = full.candidates_only()
    assert sorted(cut.corpus) == ["d0", "d1", "d2", "d4", "d5"] and cut.sample is True

    def embed(texts):
        return np.array([[len(t), t.count("1") + 1.0, t.count("5") + 1.0] for t in texts])

    assert evaluate_retrieval(cut, embed, metrics=["map", "mrr"]) == evaluate_retrieval(full, embed, metrics=["map", "mrr"])
    plain = RetrievalSet("x", "test", queries={"q": "a"}, corpus={"d": "a"}, qrels={"q": {"d": 1}}, **META)
    assert plain.candidates_only() is plain
