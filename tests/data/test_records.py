"""Record operations keep what a record says about itself (sources, drops, sample data)."""

from sentcl.data import load, samples_root


def test_derived_records_stay_labelled_as_sample_data():
    snli = load("snli", "dev", samples_root())
    assert snli.sample
    entailment = snli.with_label("entailment")
    assert entailment.sample and len(entailment) == snli.label_counts()["entailment"]
    sts12 = load("sts12", "test", samples_root())
    first = sts12.subset_names[0]
    part = sts12.subset(first)
    assert part.sample and set(part.subsets) == {first} and len(part) == sts12.subsets.count(first)


def test_draw_rows_is_one_seeded_ascending_draw_without_replacement():
    import numpy as np
    import pytest

    from sentcl.data.records import draw_rows
    from sentcl.errors import ConfigError

    assert draw_rows(10, 0) is None and draw_rows(10, 10) is None and draw_rows(10, 11) is None
    rows = draw_rows(100, 30, seed=3)
    assert len(set(rows.tolist())) == 30 and rows.tolist() == sorted(rows.tolist()) and rows.max() < 100
    assert np.array_equal(rows, draw_rows(100, 30, seed=3)) and not np.array_equal(rows, draw_rows(100, 30, seed=4))
    # numpy's documented draw, so a budget picks the same rows in every release of this project
    assert np.array_equal(rows, np.sort(np.random.default_rng(3).choice(100, size=30, replace=False)))
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(ConfigError, match="train_pairs must be a non-negative integer"):
            draw_rows(100, bad, what="train_pairs")


def test_subset_draws_the_same_rows_as_draw_rows_for_every_kind_of_data():
    import numpy as np
    import pytest

    from sentcl.data.nli import prepare_nli
    from sentcl.data.records import draw_rows, subset
    from sentcl.errors import ConfigError

    # scored pairs: a seeded subset in the data's order, every per-row field with it
    sts12 = load("sts12", "test", samples_root())
    assert subset(sts12, 0, 4) is sts12 and subset(sts12, len(sts12), 4) is sts12
    part, rows = subset(sts12, 10, 4, "max_pairs"), draw_rows(len(sts12), 10, 4)
    assert len(part) == 10 and part.sentences1 == subset(sts12, 10, 4).sentences1
    assert part.sentences1 == [sts12.sentences1[i] for i in rows] and part.scores.tolist() == sts12.scores[rows].tolist()
    assert part.subsets == [sts12.subsets[i] for i in rows] and part.sample and part.name == "sts12"
    # a retrieval set: its queries (with their judgements), the corpus whole
    cough = load("cough", "faq_pairs", samples_root())
    queries = subset(cough, 7, 2)
    assert list(queries.queries) == [list(cough.queries)[i] for i in draw_rows(len(cough), 7, 2)]
    assert queries.corpus == cough.corpus and set(queries.qrels) <= set(queries.queries)
    # training data: named as a subset, the full data's ids kept
    data = prepare_nli([load("snli", "train", samples_root())]).labelled_pairs
    assert subset(data, 0) is data and subset(data, len(data) + 5) is data
    a, b, c = subset(data, 50, 1, "rows"), subset(data, 50, 1, "rows"), subset(data, 50, 2, "rows")
    assert len(a) == 50 and a.ids.tolist() == b.ids.tolist() != c.ids.tolist()
    assert a.ids.tolist() == draw_rows(len(data), 50, 1).tolist()  # data order kept, ids of the full data
    assert a.columns["sentence1"] == [data.columns["sentence1"][i] for i in a.ids]
    assert a.labels.tolist() == data.labels[a.ids].tolist()
    assert a.name == f"{data.name} (50 of {len(data)}, seed 1)"
    # a list (of texts)
    texts = [f"t{i}" for i in range(30)]
    assert subset(texts, 5, 3) == [texts[i] for i in draw_rows(30, 5, 3)] and subset(texts, 0, 3) is texts
    with pytest.raises(ConfigError, match="train_rows must be a non-negative integer"):
        subset(data, -1, 0, "train_rows")
    with pytest.raises(ConfigError, match="dev_pairs: a subset of a record, TrainingData or a list, got ndarray"):
        subset(np.arange(5), 2, 0, "dev_pairs")
    # the draws the geometry pairs and the RCL dev set used before this function, unchanged in members
    stsb = load("stsbenchmark", "test", samples_root())
    before = np.random.default_rng(0).choice(len(stsb), 9, replace=False)
    assert subset(stsb, 9, 0).sentences1 == stsb.take(np.sort(before)).sentences1


def test_take_and_subset_keep_what_the_record_says_about_itself():
    sts12 = load("sts12", "test", samples_root())
    sts12.dropped = {"unscored": 3}
    rows = [5, 0, 7]
    part = sts12.take(rows)
    assert part.sentences1 == [sts12.sentences1[i] for i in rows] and part.scores.tolist() == sts12.scores[rows].tolist()
    assert part.subsets == [sts12.subsets[i] for i in rows]
    assert part.sources == sts12.sources and part.dropped == {"unscored": 3} and part.sample
    # one subset: its own file, and the year's dropped rows are not counted against it
    name = sts12.subset_names[0]
    one = sts12.subset(name)
    assert one.dropped == {} and all(name in s for s in one.sources) and one.sources


def test_record_builder_collects_rows_and_counts_only_what_was_dropped():
    import pytest

    from sentcl.data import LabelledPairs, ScoredPairs, info
    from sentcl.data.loaders.common import NLI_LABELS, RecordBuilder
    from sentcl.errors import ConfigError

    rows = RecordBuilder(ScoredPairs)
    rows.add("a", "b", 4.5, "MSRvid")
    rows.add("c", "d", 0.0, "OnWN")
    rows.dropped["unscored"] += 2
    rows.dropped["never"] += 0
    record = rows.build(info("sts12"), "test", [samples_root() / "sts/2012/MSRvid.test.tsv"])
    assert (record.name, record.split, record.sentences1, record.subsets) == ("sts12", "test", ["a", "c"], ["MSRvid", "OnWN"])
    assert record.scores.tolist() == [4.5, 0.0] and record.dropped == {"unscored": 2}
    assert record.sources == [str(samples_root() / "sts/2012/MSRvid.test.tsv")]
    labelled = RecordBuilder(LabelledPairs, label_names=NLI_LABELS)
    labelled.add("p", "h", 2)
    assert labelled.build(info("snli"), "dev", []).label_counts() == {"entailment": 0, "neutral": 0, "contradiction": 1}
    with pytest.raises(ConfigError, match=r"a LabelledPairs row has 3 values \('sentences1', 'sentences2', 'labels'\), got 2"):
        labelled.add("p", "h")
