"""sentcl.data.hf: records <-> datasets.Dataset, exact round trips, one-line errors naming the
column, and sentence-transformers' own trainer training on a dataset made by to_hf."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from sentcl.data import LabelledPairs, RetrievalSet, ScoredPairs, Sentences, TrainingData, Triplets, load, samples_root
from sentcl.data.hf import from_hf, to_hf
from sentcl.errors import ConfigError

datasets = pytest.importorskip("datasets")

SAMPLES = samples_root()


def assert_same_record(a, b):
    """Every field equal: texts, numbers (with their dtype), label names and provenance."""
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y), f.name
        else:
            assert x == y, f.name


def sample_records():
    allnli = load("allnli", "train", SAMPLES)
    return {
        "scored_pairs": load("sts15", "test", SAMPLES),  # subsets and a dropped count
        "labelled_pairs": load("snli", "train", SAMPLES),  # 3 labels, dropped no_gold_label
        "triplets": allnli,
        "sentences": load("wiki1m", "train", SAMPLES),
    }


@pytest.mark.parametrize("kind", ["scored_pairs", "labelled_pairs", "triplets", "sentences"])
def test_records_round_trip_exactly(kind):
    record = sample_records()[kind]
    dataset = to_hf(record)
    assert len(dataset) == len(record) and str(dataset.split) == record.split
    assert dataset.info.dataset_name == record.name
    back = from_hf(dataset, kind)
    assert_same_record(back, record)
    assert back.sample and back.dropped == record.dropped and back.sources == record.sources


def test_columns_and_features_are_the_documented_ones():
    records = sample_records()
    scored = to_hf(records["scored_pairs"])
    assert scored.column_names == ["sentence1", "sentence2", "score", "subset"]
    assert scored.features["score"] == datasets.Value("float64")
    assert list(scored["score"]) == records["scored_pairs"].scores.tolist()
    labelled = to_hf(records["labelled_pairs"])
    assert labelled.column_names == ["sentence1", "sentence2", "label"]
    assert labelled.features["label"] == datasets.ClassLabel(names=["entailment", "neutral", "contradiction"])
    assert to_hf(records["triplets"]).column_names == ["anchor", "positive", "negative"]
    assert to_hf(records["sentences"]).column_names == ["text"]


def test_awkward_texts_survive_the_round_trip():
    texts = [" leading and trailing spaces ", "tab\tinside", "line\u2028separator", "naïve 中文 😀", '"quoted"', "x"]
    record = Triplets(name="odd", split="train", anchors=texts, positives=texts[::-1], negatives=texts)
    assert_same_record(from_hf(to_hf(record), "triplets"), record)
    empty = ScoredPairs(name="none", split="test", sentences1=[], sentences2=[], scores=[], subsets=[])
    assert_same_record(from_hf(to_hf(empty), "scored_pairs"), empty)


@pytest.mark.parametrize("labels", ["classes", "scores", "none"])
def test_training_data_round_trips_with_its_labels_and_ids(labels):
    if labels == "scores":
        data = TrainingData.from_record(load("stsbenchmark", "train", SAMPLES))
    else:
        data = TrainingData.from_record(load("snli", "train", SAMPLES), labels=labels == "classes")
    data = data.take([5, 3, 9, 0], name="four rows")  # ids that are not 0..n-1
    dataset = to_hf(data)
    assert dataset.column_names == ["sentence1", "sentence2"] + (["label"] if labels != "none" else []) + ["id"]
    back = from_hf(dataset, "training_data")
    assert back.fingerprint() == data.fingerprint() and back.name == "four rows"
    assert back.column_names == data.column_names and back.ids.tolist() == [5, 3, 9, 0]
    if labels == "none":
        assert back.labels is None
    else:
        assert back.labels.dtype == data.labels.dtype and np.array_equal(back.labels, data.labels)


def test_training_data_text_columns_that_clash_with_label_or_id_are_refused():
    with pytest.raises(ConfigError, match=r"text columns \['id'\] clash"):
        to_hf(TrainingData(columns={"text": ["a"], "id": ["b"]}))


def test_a_hub_style_dataset_reads_with_a_column_mapping_and_drops_minus_one_labels():
    """stanfordnlp/snli's layout: premise, hypothesis, a ClassLabel label with -1 for no gold label."""
    features = datasets.Features(
        {
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["entailment", "neutral", "contradiction"]),
        }
    )
    rows = {"premise": ["p1", "p2", "p3", "p4"], "hypothesis": ["h1", "h2", "h3", "h4"], "label": [0, -1, 2, -1]}
    dataset = datasets.Dataset.from_dict(rows, features=features, split="train")
    record = from_hf(dataset, "labelled_pairs", name="snli", columns={"sentence1": "premise", "sentence2": "hypothesis"})
    assert isinstance(record, LabelledPairs) and (record.name, record.split) == ("snli", "train")
    assert record.sentences1 == ["p1", "p3"] and record.labels.tolist() == [0, 2]
    assert record.dropped == {"no_gold_label": 2} and record.sources == [] and not record.sample
    # an integer label column needs the names; a scored dataset without subsets uses the name
    plain = datasets.Dataset.from_dict({"s1": ["a"], "s2": ["b"], "label": [1]})
    mapping = {"sentence1": "s1", "sentence2": "s2"}
    pairs = from_hf(plain, "labelled_pairs", name="x", split="dev", columns=mapping, label_names=["no", "yes"])
    assert pairs.label_names == ("no", "yes") and pairs.labels.tolist() == [1]
    scored = datasets.Dataset.from_dict({"sentence1": ["a"], "sentence2": ["b"], "score": [3]})
    assert from_hf(scored, "scored_pairs", name="stsb", split="test").subsets == ["stsb"]


def test_bad_input_names_the_column_and_what_was_expected():
    good = {"sentence1": ["a", "b"], "sentence2": ["c", "d"], "score": [1.0, 2.0]}
    make = datasets.Dataset.from_dict
    with pytest.raises(ConfigError, match=r"column 'sentence2': missing, expected a string column"):
        from_hf(make({"sentence1": ["a"], "score": [1.0]}), "scored_pairs", name="x", split="t")
    with pytest.raises(ConfigError, match=r"column 'score': expected a float or integer score column, found Value\('string'\)"):
        from_hf(make({**good, "score": ["1", "2"]}), "scored_pairs", name="x", split="t")
    with pytest.raises(ConfigError, match=r"column 'sentence1': expected a string column, found Value\('int64'\)"):
        from_hf(make({**good, "sentence1": [1, 2]}), "scored_pairs", name="x", split="t")
    with pytest.raises(ConfigError, match=r"column 'sentence2': row 1 is empty \(None\), expected a string"):
        from_hf(make({**good, "sentence2": ["c", None]}), "scored_pairs", name="x", split="t")
    with pytest.raises(ConfigError, match=r"column 'score': row 0 is nan, expected a finite score"):
        from_hf(make({**good, "score": [float("nan"), 2.0]}), "scored_pairs", name="x", split="t")
    with pytest.raises(ConfigError, match=r"column 'label': expected a ClassLabel column, found Value\('int64'\); pass label_names="):
        from_hf(make({"sentence1": ["a"], "sentence2": ["b"], "label": [0]}), "labelled_pairs", name="x", split="t")
    with pytest.raises(ConfigError, match=r"column 'label': row 0 has label 2, expected -1 \(none\) or 0-1"):
        from_hf(make({"sentence1": ["a"], "sentence2": ["b"], "label": [2]}), "labelled_pairs", name="x", split="t",
                label_names=["no", "yes"])
    record = load("snli", "dev", SAMPLES)
    with pytest.raises(ConfigError, match=r"label_names \['a', 'b', 'c'\] differ from its ClassLabel names"):
        from_hf(to_hf(record), "labelled_pairs", label_names=["a", "b", "c"])
    with pytest.raises(ConfigError, match=r"columns: the dataset has no column 'premise'"):
        from_hf(make(good), "scored_pairs", name="x", split="t", columns={"sentence1": "premise"})
    with pytest.raises(ConfigError, match=r"columns: no scored_pairs column \['anchor'\]"):
        from_hf(make(good), "scored_pairs", name="x", split="t", columns={"anchor": "sentence1"})
    with pytest.raises(ConfigError, match=r"kind='retrieval'; valid: "):
        from_hf(make(good), "retrieval")
    with pytest.raises(ConfigError, match="pass name= and split="):
        from_hf(make(good), "scored_pairs")
    with pytest.raises(ConfigError, match="got a DatasetDict"):
        from_hf(datasets.DatasetDict({"train": make(good)}), "scored_pairs")
    with pytest.raises(ConfigError, match=r"column 'id': expected an integer id column, found Value\('float64'\)"):
        from_hf(make({"text": ["a"], "id": [1.5]}), "training_data")
    retrieval = RetrievalSet(name="r", split="test", queries={"q": "a"}, corpus={"d": "b"}, qrels={"q": {"d": 1}})
    with pytest.raises(ConfigError, match="cannot convert a RetrievalSet"):
        to_hf(retrieval)


def test_without_the_datasets_package_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(ConfigError, match=r"needs the `datasets` package: pip install 'sentcl\[hf\]'"):
        to_hf(load("sts12", "test", SAMPLES))


def test_sentences_from_a_plain_text_column():
    dataset = datasets.Dataset.from_dict({"text": ["one", "two"], "meta": [1, 2]})
    record = from_hf(dataset, "sentences", name="wiki", split="train")
    assert isinstance(record, Sentences) and record.texts == ["one", "two"]


@pytest.mark.slow
def test_sentence_transformers_trainer_trains_on_a_to_hf_dataset(tmp_path):
    """sentence-transformers' own trainer and loss on SNLI sample entailment pairs made by to_hf."""
    import torch
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    from sentcl.models import tiny_model

    pairs = load("snli", "train", data_dir=SAMPLES).with_label("entailment")
    dataset = to_hf(pairs).select_columns(["sentence1", "sentence2"]).rename_columns(
        {"sentence1": "anchor", "sentence2": "positive"}
    )
    assert len(dataset) == len(pairs) >= 32
    model = tiny_model(seed=0, device="cpu")
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "out"),
        per_device_train_batch_size=8,
        max_steps=4,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        eval_strategy="no",
        report_to="none",
        disable_tqdm=True,
        use_cpu=True,
        seed=0,
    )
    trainer = SentenceTransformerTrainer(
        model=model, args=args, train_dataset=dataset, loss=MultipleNegativesRankingLoss(model)
    )
    trainer.train()
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert trainer.state.global_step == 4 and len(losses) == 4 and all(np.isfinite(losses))
    changed = [name for name, p in model.named_parameters() if not torch.equal(p.detach().cpu(), before[name].cpu())]
    assert changed, "no weight changed"
