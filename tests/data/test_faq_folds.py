"""Grouped, seeded k-fold splits of FAQ pairs (RCL §4.2, Table 2: "5-fold method"), checked as properties
over random COUGH-format FAQ banks with repeated questions and repeated answers: every pair in exactly one
test fold, no test question or relevant answer seen in training, balanced, deterministic, seed-dependent."""

from __future__ import annotations

import csv
import random
import re

import pytest

from sentcl.data import load
from sentcl.data.folds import Fold, fold_pairs, grouped_query_folds, query_groups
from sentcl.errors import ConfigError


def faq_bank(tmp_path, n=60, seed=0, repeats=0.2):
    """A COUGH-format data root (``cough/FAQ_Bank_eval.csv``) of ``n`` FAQ items; about ``repeats`` of
    them repeat an earlier item's question (with another answer) and as many an earlier answer (with
    another question), with changed case and spacing, so that groups chain."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        question, answer = f"question number {i} about topic {rng.randint(0, 9)}?", f"answer {i}: do thing {rng.randint(0, 99)}."
        if rows and rng.random() < repeats:
            question = "  " + rng.choice(rows)[1].upper() + " "
        if rows and rng.random() < repeats:
            answer = rng.choice(rows)[2].replace(" ", "  ")
        rows.append([str(1000 + 3 * i), question, answer, "sample", "", "en"])
    folder = tmp_path / f"root{seed}" / "cough"
    folder.mkdir(parents=True)
    with open(folder / "FAQ_Bank_eval.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["index", "question", "answer", "source", "url", "language"], *rows])
    return load("cough", "faq_pairs", data_dir=folder.parent)


def norm(text):
    return re.sub(r"\s+", " ", text).strip().casefold()


@pytest.fixture(params=[0, 1, 2, 3])
def bank(request, tmp_path):
    return faq_bank(tmp_path, seed=request.param)


@pytest.mark.parametrize("k", [2, 5, 7])
def test_every_pair_is_in_exactly_one_test_fold_and_each_fold_partitions_the_pairs(bank, k):
    folds = grouped_query_folds(bank, k, seed=3, dev_fraction=0.1)
    assert [f.index for f in folds] == list(range(k)) and all(f.k == k for f in folds)
    tested = [q for f in folds for q in f.test]
    assert sorted(tested) == sorted(bank.queries) and len(set(tested)) == len(tested)
    for f in folds:
        parts = [*f.train, *f.dev, *f.test]
        assert sorted(parts) == sorted(bank.queries) and len(set(parts)) == len(parts)
        assert f.train and f.dev and f.test
        order = list(bank.queries)
        for part in (f.train, f.dev, f.test):  # each in the record's order
            assert list(part) == sorted(part, key=order.index)


@pytest.mark.parametrize("k", [2, 5])
def test_no_test_question_and_no_relevant_answer_is_seen_in_training(bank, k):
    """A fold trains on (question, answer) pairs of its train side; its test (and dev) questions never
    occur there, not even with other case or spacing, and none of their relevant answers is a training answer."""
    assert any(len(g) > 1 for g in query_groups(bank))  # the fixture does repeat questions and answers
    for f in grouped_query_folds(bank, k, seed=0, dev_fraction=0.15):
        pairs = fold_pairs(bank, f.train)
        seen_questions = {norm(t) for t in pairs.columns["query"]}
        seen_answers = {norm(t) for t in pairs.columns["index"]}
        for held in (f.test, f.dev):
            for q in held:
                assert norm(bank.queries[q]) not in seen_questions
                assert not {norm(bank.corpus[d]) for d in bank.qrels[q]} & seen_answers
        dev_questions = {norm(bank.queries[q]) for q in f.dev}
        assert not dev_questions & {norm(bank.queries[q]) for q in f.test}


def test_groups_join_repeated_questions_and_repeated_answers_transitively(tmp_path):
    folder = tmp_path / "cough"
    folder.mkdir()
    rows = [["1", "How do I renew?", "At the office."], ["2", "how  do I renew?", "Online."],  # same question
            ["3", "Where to go?", "Online."],  # same answer as 2: joined to 1 through 2
            ["4", "Unrelated?", "Elsewhere."]]
    with open(folder / "FAQ_Bank_eval.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows([["index", "question", "answer"], *rows])
    record = load("cough", "faq_pairs", data_dir=tmp_path)
    assert query_groups(record) == [["1", "2", "3"], ["4"]]
    folds = grouped_query_folds(record, 2, seed=0)
    assert sorted(sorted(f.test) for f in folds) == [["1", "2", "3"], ["4"]]


def test_folds_are_balanced(bank):
    groups = query_groups(bank)
    largest = max(len(g) for g in groups)
    sizes = [len(f.test) for f in grouped_query_folds(bank, 5, seed=1)]
    assert max(sizes) - min(sizes) <= largest


def test_the_same_seed_gives_the_same_folds_and_another_seed_others(bank):
    first = grouped_query_folds(bank, 5, seed=7, dev_fraction=0.1)
    assert first == grouped_query_folds(bank, 5, seed=7, dev_fraction=0.1)
    assert all(isinstance(f, Fold) for f in first)
    tests = {f.test for f in first}
    others = [{f.test for f in grouped_query_folds(bank, 5, seed=s)} for s in range(8, 12)]
    assert all(o != tests for o in others)
    assert len({frozenset(o) for o in others}) == len(others)
    # the dev draw depends on the seed too, and on nothing but the seed and the fold
    assert [f.dev for f in first] != [f.dev for f in grouped_query_folds(bank, 5, seed=8, dev_fraction=0.1)]


def test_the_dev_set_is_about_dev_fraction_of_the_training_side(bank):
    for fraction in (0.0, 0.1, 0.3):
        for f in grouped_query_folds(bank, 5, seed=0, dev_fraction=fraction):
            side = len(f.train) + len(f.dev)
            if fraction == 0:
                assert not f.dev
            else:
                largest = max(len(g) for g in query_groups(bank))
                assert 1 <= len(f.dev) and abs(len(f.dev) - fraction * side) <= largest


@pytest.mark.parametrize("k", [1, 0, -3, 2.5, True, "5", None])
def test_a_bad_number_of_folds_is_a_clear_error(bank, k):
    with pytest.raises(ConfigError, match=r"k \(the number of folds\) must be an integer of at least 2"):
        grouped_query_folds(bank, k)


def test_more_folds_than_groups_and_bad_options_are_clear_errors(bank):
    groups = len(query_groups(bank))
    with pytest.raises(ConfigError, match=f"{groups + 1} folds need at least {groups + 1} groups of queries, there are {groups}"):
        grouped_query_folds(bank, groups + 1)
    assert len(grouped_query_folds(bank, groups)) == groups
    with pytest.raises(ConfigError, match="dev_fraction"):
        grouped_query_folds(bank, 5, dev_fraction=0.9)
    with pytest.raises(ConfigError, match="seed must be an integer"):
        grouped_query_folds(bank, 5, seed=1.5)
    with pytest.raises(ConfigError, match="fold part"):
        grouped_query_folds(bank, 5)[0].rows(bank, "validation")


def test_fold_pairs_pair_each_question_with_its_own_answer_under_stable_ids(bank):
    fold = grouped_query_folds(bank, 5, seed=0)[2]
    pairs = fold_pairs(bank, fold.train, name="fold 3")
    order = list(bank.queries)
    assert pairs.name == "fold 3" and pairs.column_names == ["query", "index"]
    assert list(pairs.ids) == [order.index(q) for q in fold.train]  # the same id in every fold
    for q, question, answer in zip(fold.train, pairs.columns["query"], pairs.columns["index"], strict=True):
        assert question == bank.queries[q] and answer == bank.corpus[q]  # faq_pairs: the item's own answer
    assert fold.rows(bank, "test") == [order.index(q) for q in fold.test]
    assert list(bank.take(fold.rows(bank, "test")).queries) == list(fold.test)
    with pytest.raises(ConfigError, match="no query 'nope'"):
        fold_pairs(bank, ["nope"])
