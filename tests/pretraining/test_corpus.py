"""sentcl-mini's corpus: no text the book evaluates on, counted drops, a held-out share by hash."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentcl.data.records import RetrievalSet, ScoredPairs, Sentences
from sentcl.errors import DataMissingError
from sentcl.pretraining.card import CARD, shipped_dir
from sentcl.pretraining.corpus import (
    MIN_CONTAINED_WORDS,
    EvaluationTexts,
    build_corpus,
    evaluation_texts,
    is_heldout,
    normalise,
    overlap,
    record_texts,
)

TEST_SENTENCE = "A man is slicing a tomato on the kitchen counter."


def _evaluation(*texts: str) -> EvaluationTexts:
    return EvaluationTexts({normalise(t) for t in texts}, {"fake": len(texts)}, {})


def _pairs(name, s1, s2):
    return ScoredPairs(name=name, split="train", sentences1=list(s1), sentences2=list(s2), scores=np.zeros(len(s1)),
                       subsets=["x"] * len(s1))


def test_normalise_ignores_case_whitespace_and_punctuation():
    assert normalise("  A man is  riding a horse .") == normalise("a man is riding a horse.") == "a man is riding a horse"


def test_the_builder_drops_evaluation_texts_texts_quoting_them_and_repeats_and_counts_each():
    records = {
        ("a", "train"): Sentences(name="a", split="train", texts=[
            "A MAN  is slicing a tomato on the kitchen counter",  # equal after normalising
            "He said: a man is slicing a tomato on the kitchen counter. Then left.",  # contains it
            "A cat sleeps.",
            "a cat sleeps",  # a repeat after normalising
            "",
        ]),
        ("b", "train"): _pairs("b", ["A cat sleeps.", "Dogs bark loudly."], ["Birds sing.", "Fish swim."]),
    }
    corpus = build_corpus("unused", list(records), evaluation=_evaluation(TEST_SENTENCE), loader=lambda n, s: records[n, s])
    a, b = corpus.sources
    assert (a.texts, a.kept, a.evaluation, a.containing, a.repeated, a.empty) == (5, 1, 1, 1, 1, 1)
    assert (b.texts, b.kept, b.repeated) == (4, 3, 1)
    assert sorted(corpus.train + corpus.heldout) == sorted(["A cat sleeps.", "Dogs bark loudly.", "Birds sing.", "Fish swim."])
    assert not overlap(corpus.train + corpus.heldout, _evaluation(TEST_SENTENCE))


def test_a_short_evaluation_text_inside_a_longer_one_is_not_a_quote():
    short = "a man is cooking"  # fewer than MIN_CONTAINED_WORDS words
    assert len(short.split()) < MIN_CONTAINED_WORDS
    assert _evaluation(short).contained_in(normalise("Today a man is cooking dinner.")) is None
    assert _evaluation(TEST_SENTENCE).contained_in(normalise("so " + TEST_SENTENCE + " again")) == normalise(TEST_SENTENCE)


def test_the_overlap_check_finds_what_the_builder_would_have_to_drop():
    """The independent check (a plain set and substring search) is not vacuous: a planted test text is found,
    equal or quoted, and a near miss is not."""
    evaluation = _evaluation(TEST_SENTENCE)
    assert overlap([TEST_SENTENCE.upper()], evaluation)["equal"] == 1
    assert overlap([f"Look: {TEST_SENTENCE} Nice."], evaluation)["containing"] == 1
    assert not overlap(["A man is slicing a potato on the kitchen counter."], evaluation)


def test_the_held_out_share_depends_on_the_text_not_its_position():
    texts = [f"sentence {i}" for i in range(3000)]
    held = {t for t in texts if is_heldout(normalise(t))}
    assert 10 <= len(held) <= 60  # about 1 %
    records = {("a", "train"): Sentences(name="a", split="train", texts=texts)}
    reverse = {("a", "train"): Sentences(name="a", split="train", texts=texts[::-1])}
    one = build_corpus("x", [("a", "train")], evaluation=_evaluation(), loader=lambda n, s: records[n, s])
    two = build_corpus("x", [("a", "train")], evaluation=_evaluation(), loader=lambda n, s: reverse[n, s])
    assert set(one.heldout) == set(two.heldout) == held


def test_a_retrieval_set_gives_its_queries_and_the_documents_it_is_scored_against():
    record = RetrievalSet(name="r", split="test", queries={"q": "query"}, corpus={"d1": "one", "d2": "two", "d3": "three"},
                          qrels={"q": {"d2": 1}})
    assert record_texts(record) == ["query", "one", "two", "three"]
    assert record_texts(record, evaluated=True) == ["query", "two"]
    record.candidates = {"q": ["d1", "d3"]}
    assert record_texts(record, evaluated=True) == ["query", "one", "three"]


def test_a_missing_source_names_itself(tmp_path):
    with pytest.raises(DataMissingError, match="pretraining corpus source wiki1m/prefix"):
        build_corpus(tmp_path, [("wiki1m", "prefix")], evaluation=_evaluation())


@pytest.mark.realdata
def test_no_evaluation_sentence_is_in_the_real_corpus(shared_data, real_corpus):
    """Issue 46, item 2: no sentence of any evaluation split the book scores (STS12-16, STS-B test, SICK test,
    MRPC test, the CQA and CLEF test sets, the Chinese test sets) is in the pretraining corpus, exactly, after
    normalising case and whitespace, or quoted in a longer text."""
    corpus = real_corpus
    evaluation = evaluation_texts(shared_data)
    assert {"STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "MRPC", "CQA-A-2016", "CQA-B-2016", "CLEF-2020",
            "Chinese STS-B", "SimCLUE"} <= set(evaluation.checked)
    texts = corpus.train + corpus.heldout
    assert len(set(texts) & {t for t in _raw_evaluation_texts(shared_data)}) == 0  # exactly
    loose = {" ".join(t.lower().split()) for t in _raw_evaluation_texts(shared_data)}
    assert not [t for t in texts if " ".join(t.lower().split()) in loose]  # case and whitespace
    assert not overlap(texts, evaluation)  # words only, and quoted
    dropped = sum(s.evaluation for s in corpus.sources)
    assert dropped > 10_000  # STS-B train/dev hold thousands of STS12-16 test sentences: the filter did work


def _raw_evaluation_texts(root):
    from sentcl.evaluation.tasks import TASKS, load_task

    found = []
    for name in TASKS:
        try:
            found += record_texts(load_task(name, root), evaluated=True)
        except DataMissingError:
            continue
    return found


@pytest.mark.realdata
def test_the_shipped_card_counts_the_corpus_this_data_root_gives(real_corpus):
    card = json.loads((shipped_dir() / CARD).read_text(encoding="utf-8"))
    assert real_corpus.summary() == card["corpus"]
