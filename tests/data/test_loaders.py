"""The loaders on the real files of ../shared/data: exact counts, drops, labels, untouched text.

Every expected number here was counted independently (SOURCES.md of ../shared/data and
plain line counts of the files), not taken from the loaders' output.
"""

from __future__ import annotations

import csv

import numpy as np
import pytest

from sentcl.data import load, registry
from sentcl.data.loaders.sts import sts_subset_name

pytestmark = pytest.mark.realdata

STS_YEARS = {
    "sts12": (3108, {}, {"MSRpar": 750, "MSRvid": 750, "SMTeuroparl": 459, "OnWN": 750, "SMTnews": 399}),
    "sts13": (1500, {}, {"FNWN": 189, "headlines": 750, "OnWN": 561}),
    "sts14": (
        3750,
        {},
        {"deft-forum": 450, "deft-news": 300, "headlines": 750, "images": 750, "OnWN": 750, "tweet-news": 750},
    ),
    "sts15": (
        3000,
        {"unscored": 5500},
        {"answers-forums": 375, "answers-students": 750, "belief": 375, "headlines": 750, "images": 750},
    ),
    "sts16": (
        1186,
        {"unscored": 7997},
        {"answer-answer": 254, "headlines": 249, "plagiarism": 230, "postediting": 244, "question-question": 209},
    ),
}


@pytest.mark.parametrize("name", sorted(STS_YEARS))
def test_semeval_sts_years(shared_data, name):
    count, dropped, subsets = STS_YEARS[name]
    record = load(name, data_dir=shared_data)
    assert (record.split, len(record), record.dropped, record.sample) == ("test", count, dropped, False)
    assert {s: len(record.subset(s)) for s in record.subset_names} == subsets
    # pooled in the registry's file order, each subset contiguous
    assert record.subset_names == [sts_subset_name(shared_data / p) for p in registry()[name].splits["test"].files]
    assert record.scores.min() >= 0 and record.scores.max() <= 5


def test_sts13_has_no_smt_subset(shared_data):
    assert "SMT" not in load("sts13", data_dir=shared_data).subset_names


def test_sts16_drops_exactly_the_rows_without_a_score(shared_data):
    """Independent count: lines whose first tab field is empty, per file."""
    record = load("sts16", data_dir=shared_data)
    for path in sorted((shared_data / "sts/2016").glob("*.test.tsv")):
        lines = path.read_text(encoding="utf-8").splitlines()
        scored = [ln for ln in lines if ln.split("\t")[0] != ""]
        subset = record.subset(sts_subset_name(path))
        assert len(subset) == len(scored)
        assert subset.sentences1 == [ln.split("\t")[1] for ln in scored]
        np.testing.assert_array_equal(subset.scores, [float(ln.split("\t")[0]) for ln in scored])


@pytest.mark.parametrize(("split", "count"), [("train", 5749), ("dev", 1500), ("test", 1379)])
def test_stsbenchmark(shared_data, split, count):
    assert len(load("stsbenchmark", split, shared_data)) == count


def test_stsbenchmark_test_text_is_untouched(shared_data):
    """The text the standard evaluation uses: fields 6 and 7 of each line, as they are
    (case, punctuation, quotes and even trailing spaces kept), read here with the csv module."""
    record = load("stsbenchmark", "test", shared_data)
    with open(shared_data / "stsbenchmark/sts-test.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))
    assert record.sentences1 == [r[5] for r in rows]
    assert record.sentences2 == [r[6] for r in rows]
    np.testing.assert_array_equal(record.scores, [float(r[4]) for r in rows])
    assert record.sentences1[0] == "A girl is styling her hair."
    assert record.sentences2[668] == "Take a look at this: "  # line 669 keeps its trailing space
    assert sum('"' in s for s in record.sentences1 + record.sentences2) > 0
    assert record.subset_names == ["main-captions", "main-forums", "main-news"]


@pytest.mark.parametrize(
    ("split", "count", "labels"),
    [
        ("train", 4500, {"entailment": 1299, "neutral": 2536, "contradiction": 665}),
        ("trial", 500, {"entailment": 144, "neutral": 282, "contradiction": 74}),
        ("test", 4927, {"entailment": 1414, "neutral": 2793, "contradiction": 720}),
    ],
)
def test_sick_relatedness_and_entailment(shared_data, split, count, labels):
    r = load("sickr", split, shared_data)
    e = load("sicke", split, shared_data)
    assert len(r) == len(e) == count
    assert r.scores.min() >= 1 and r.scores.max() <= 5
    assert e.label_counts() == labels
    assert r.sentences1 == e.sentences1


def test_sick_default_split_is_test_and_all_is_every_pair(shared_data):
    assert load("sickr", data_dir=shared_data).split == "test"
    every = load("sickr", "all", shared_data)
    assert len(every) == 9927
    assert every.sentences1[-4927:] == load("sickr", "test", shared_data).sentences1


@pytest.mark.parametrize(
    ("split", "count", "labels"),
    [
        ("dev", 9842, {"entailment": 3329, "neutral": 3235, "contradiction": 3278}),
        ("test", 9824, {"entailment": 3368, "neutral": 3219, "contradiction": 3237}),
    ],
)
def test_snli_dev_test(shared_data, split, count, labels):
    record = load("snli", split, shared_data)
    assert (len(record), record.label_counts(), record.dropped) == (count, labels, {})


def test_snli_text_is_the_tokenized_text(shared_data):
    record = load("snli", "dev", shared_data)
    assert record.sentences1[0] == "Two women are embracing while holding to go packages ."


@pytest.mark.parametrize(("split", "count", "positive"), [("train", 3576, 2407), ("dev", 500, 346), ("test", 1725, 1147)])
def test_mrpc_counts_and_label_balance(shared_data, split, count, positive):
    record = load("mrpc", split, shared_data)
    assert len(record) == count
    assert record.label_counts() == {"not_equivalent": count - positive, "equivalent": positive}
    assert not record.sentences1[0].startswith("\ufeff")


@pytest.mark.parametrize(("split", "count"), [("train", 5231), ("dev", 1458), ("test", 1361)])
def test_cnsd_stsb(shared_data, split, count):
    record = load("cnsd_stsb", split, shared_data)
    assert len(record) == count
    assert set(np.unique(record.scores)) <= {0, 1, 2, 3, 4, 5}


def test_cnsd_stsb_first_test_pair(shared_data):
    record = load("cnsd_stsb", "test", shared_data)
    assert (record.sentences1[0], record.sentences2[0], record.scores[0]) == (
        "一个女孩在给她的头发做发型。",
        "一个女孩在梳头。",
        2,
    )
    assert record.subsets[0] == "2012test"


def test_simclue(shared_data):
    test = load("simclue", "test", shared_data)
    assert (len(test), test.label_counts()) == (28031, {"not_similar": 15091, "similar": 12940})
    assert len(load("simclue", "train_1w", shared_data)) == 10000


def test_wiki1m_prefix(shared_data):
    record = load("wiki1m", "prefix", shared_data)
    assert len(record) == 11914
    assert record.texts[0] == "YMCA in South Australia"


def test_missing_files_name_the_path(shared_data):
    from sentcl.errors import DataMissingError

    with pytest.raises(DataMissingError, match=r"snli_1\.0_train\.jsonl"):
        load("snli", "train", shared_data)
    with pytest.raises(DataMissingError, match="multinli"):
        load("multinli", "train", shared_data)
