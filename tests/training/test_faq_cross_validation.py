"""Table 2's protocol (Tan et al. 2022, §4.2 and Appendix A.1) end to end on a tiny COUGH-format FAQ bank
written here: per fold the FAQ variant of Algorithm 1 on the fold's training pairs, models selected by dev
MAP, every row scored on the fold's test questions against the whole bank; the rows' values are fold means."""

from __future__ import annotations

import csv
from dataclasses import replace

import numpy as np
import pytest

from sentcl.artifacts import ArtifactCache
from sentcl.book.estimates.plan import stage_name
from sentcl.data import load
from sentcl.data.folds import grouped_query_folds
from sentcl.embeddings import encode
from sentcl.errors import ConfigError
from sentcl.evaluation.retrieval import evaluate_retrieval
from sentcl.evaluation.scoring import dev_evaluator
from sentcl.models import set_attention_dropout, tiny_model
from sentcl.training import SequentialBatchSampler, TrainingConfig
from sentcl.training.cross_validation import (
    ENTROPY_MODEL,
    FINAL,
    INITIAL,
    STORE,
    UNTOUCHED,
    faq_cross_validation,
    faq_fold_stage,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py

TOPICS = ["visa", "passport", "tax return", "parking permit", "library card", "vaccination", "mask", "school"]


@pytest.fixture(scope="module")
def bank(tmp_path_factory):
    """A COUGH ``FAQ_Bank_eval.csv`` of 24 items (8 topics x 3 intents); two items share an answer."""
    root = tmp_path_factory.mktemp("faq-root")
    (root / "cough").mkdir()
    rows = [["index", "question", "answer", "source", "url", "language"]]
    for t, topic in enumerate(TOPICS):
        rows.append([f"{t}0", f"How do I get a {topic}?", f"To get a {topic}, fill in the {topic} form online.", "s", "", "en"])
        rows.append([f"{t}1", f"Where do I apply for a {topic}?", f"The {topic} office in the town hall.", "s", "", "en"])
        rows.append([f"{t}2", f"What does a {topic} cost?", f"A {topic} costs {10 + t} euros.", "s", "", "en"])
    rows[-1][2] = rows[-2][2]  # a repeated answer: its two questions go to one fold
    with open(root / "cough" / "FAQ_Bank_eval.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    return load("cough", "faq_pairs", data_dir=root)


def configs():
    selection = TrainingConfig(batch_size=6, epochs=1, max_steps=2, seed=0, eval_steps=1, metric_for_best="map",
                               log_steps=1, learning_rate=1e-4)
    return selection, TrainingConfig(batch_size=6, max_steps=2, seed=0, log_steps=1, learning_rate=1e-4)


@pytest.mark.slow
def test_table2_protocol_runs_the_faq_variant_per_fold_and_averages_over_folds(bank):
    folds = grouped_query_folds(bank, 3, seed=0, dev_fraction=0.2)
    selection, entropy = configs()
    runs, seeds = [], []

    def train(trainer):
        result = trainer.train_cached()
        runs.append((trainer.name, result))
        seeds.append(trainer.config.seed)
        return result

    base = lambda: tiny_model(seed=0)  # noqa: E731
    # p = 0.3: the tiny BERT, like BERT and RoBERTa, already has attention dropout 0.1 (p = 0.1 is Eq. 1 itself)
    switches = {"Attention dropout (p=0.3)": lambda m: set_attention_dropout(m, 0.3)}
    table = faq_cross_validation(base, bank, folds, [0.01, 0.02], selection, entropy, task="COUGH", scale=20.0,
                                 baselines=switches, sampler=SequentialBatchSampler, train=train, precision="fp32")
    rows = [UNTOUCHED, INITIAL, "Attention dropout (p=0.3)", FINAL]
    assert list(table.per_fold) == rows and table.task == "COUGH"
    for row in rows:
        assert len(table.per_fold[row]) == 3
        for metric in ("Acc@1", "Acc@3", "Acc@5", "MAP"):
            values = [v[metric] for v in table.per_fold[row]]
            assert all(0.0 <= v <= 100.0 for v in values)
            mean, std = table.summary(row)
            assert mean[metric] == pytest.approx(np.mean(values)) and std[metric] == pytest.approx(np.std(values, ddof=1))
        assert table.per_fold[row][0]["Acc@1"] <= table.per_fold[row][0]["Acc@3"] <= table.per_fold[row][0]["Acc@5"]

    # the base row, recomputed independently: each fold's test questions rank all 24 answers (percent)
    for fold, values in zip(folds, table.per_fold[UNTOUCHED], strict=True):
        test = bank.take(fold.rows(bank, "test"))
        assert len(test.corpus) == 24 and list(test.queries) == list(fold.test)
        result = evaluate_retrieval(test, lambda t: encode(base(), t, cache=False, precision="fp32"),
                                    metrics=["acc@1", "acc@3", "acc@5", "map"])["scores"]
        assert values == pytest.approx({"Acc@1": 100 * result["acc@1"], "Acc@3": 100 * result["acc@3"],
                                        "Acc@5": 100 * result["acc@5"], "MAP": 100 * result["map"]})

    # per fold: the initial model, the baseline, 2 entropy models, the final model; the selected ones on dev MAP
    names = [name for name, _ in runs]
    assert names[:5] == ["COUGH fold 1/3 initial model (Eq. 1)", "COUGH fold 1/3 Attention dropout (p=0.3)",
                         "COUGH fold 1/3 entropy model phi=0.01", "COUGH fold 1/3 entropy model phi=0.02",
                         "COUGH fold 1/3 RCL"]
    assert len(runs) == 15 and all(result.trained for _, result in runs)
    for name, result in runs:
        if "entropy" not in name:
            assert result.best_metric == max(e["map"] for e in result.evaluations)
    assert len({r.output_dir for _, r in runs}) == 15  # every fold trains its own models
    assert table.seeds == [0, 1, 2] and seeds == [0] * 5 + [1] * 5 + [2] * 5  # one run per fold, its own seed

    # a rerun trains nothing (every run cached) and gives the same table
    runs.clear()
    again = faq_cross_validation(base, bank, folds, [0.01, 0.02], selection, entropy, task="COUGH", scale=20.0,
                                 baselines=switches, sampler=SequentialBatchSampler, train=train, precision="fp32")
    assert len(runs) == 15 and not any(result.trained for _, result in runs)
    assert again.to_json() == table.to_json()


@pytest.mark.slow
def test_each_fold_builds_its_runs_and_stores_under_the_stages_its_caller_names(bank, tmp_path):
    """``stages(fold, model, phi)`` names every artifact of a fold (a chapter's plan of runs): the initial model, each
    baseline, the entropy models and their stores, the final model; a named run goes through ``train(trainer, stage=...)``."""
    folds = grouped_query_folds(bank, 2, seed=0, dev_fraction=0.2)
    selection, entropy = configs()
    selection, entropy = replace(selection, max_steps=1), replace(entropy, max_steps=1)
    cache = ArtifactCache(tmp_path / "cache")
    named: list[str] = []

    def train(trainer, stage):
        named.append(stage)
        return trainer.train_cached(cache, stage_name=stage)

    def stages(fold, model, phi=None):
        return stage_name("x", fold, model, *([] if phi is None else [phi]))  # "x.0.initial-model-Eq-1", "x.1.store.0-01"

    switches = {"Attention dropout (p=0.3)": lambda m: set_attention_dropout(m, 0.3)}
    faq_cross_validation(lambda: tiny_model(seed=0), bank, folds, [0.01], selection, entropy, task="COUGH", scale=20.0,
                         baselines=switches, sampler=SequentialBatchSampler, train=train, cache=cache, precision="fp32",
                         stages=stages)
    runs = [INITIAL, "Attention dropout (p=0.3)", (ENTROPY_MODEL, 0.01), FINAL]
    expected = [stages(f, *(r if isinstance(r, tuple) else (r,))) for f in (0, 1) for r in runs]
    assert named == expected
    stores = [stages(f, STORE, 0.01) for f in (0, 1)]
    assert sorted(d.name for d in cache.root.iterdir()) == sorted(expected + stores)


@pytest.mark.slow
def test_a_run_of_a_fold_built_alone_is_the_one_the_cross_validation_finds(bank, tmp_path):
    """faq_fold_stage builds one named run of one fold (a chapter's task), the runs it reads too, under the keys
    faq_cross_validation then finds: a baseline of fold 0 alone, then fold 1's final model (its initial model,
    entropy model and store with it); the cross-validation trains only the others."""
    folds = grouped_query_folds(bank, 2, seed=0, dev_fraction=0.2)
    selection, entropy = configs()
    selection, entropy = replace(selection, max_steps=1), replace(entropy, max_steps=1)
    cache = ArtifactCache(tmp_path / "cache")
    trained: list[str] = []

    def train(trainer, stage):
        result = trainer.train_cached(cache, stage_name=stage)
        trained.extend([stage] if result.trained else [])
        return result

    def stages(fold, model, phi=None):
        return stage_name("x", fold, model, *([] if phi is None else [phi]))

    switches = {"Attention dropout (p=0.3)": lambda m: set_attention_dropout(m, 0.3)}
    same = {"task": "COUGH", "scale": 20.0, "baselines": switches, "sampler": SequentialBatchSampler, "train": train,
            "cache": cache, "precision": "fp32", "stages": stages}
    base = lambda: tiny_model(seed=0)  # noqa: E731
    faq_fold_stage(base, bank, folds[0], [0.01], selection, entropy, model="Attention dropout (p=0.3)", **same)
    faq_fold_stage(base, bank, folds[1], [0.01], selection, entropy, model=FINAL, **same)
    assert trained == [stages(0, "Attention dropout (p=0.3)"), stages(1, INITIAL), stages(1, ENTROPY_MODEL, 0.01),
                       stages(1, FINAL)] and (cache.root / stages(1, STORE, 0.01)).is_dir()
    trained.clear()
    faq_cross_validation(base, bank, folds, [0.01], selection, entropy, **same)
    assert trained == [stages(0, INITIAL), stages(0, ENTROPY_MODEL, 0.01), stages(0, FINAL), stages(1, "Attention dropout (p=0.3)")]


def test_the_dev_evaluator_is_map_on_the_dev_questions_against_the_whole_bank(bank):
    dev = bank.take([0, 5, 9])
    model = tiny_model(seed=0)
    expected = evaluate_retrieval(dev, lambda t: encode(model, t, cache=False, precision="fp32"), metrics=["map"])
    assert dev_evaluator("COUGH", dev, metric_keys=["map"], precision="fp32")(model) == pytest.approx(
        {"map": expected["scores"]["map"]})


def test_table2_protocol_rejects_what_it_cannot_run(bank):
    selection, entropy = configs()
    base = lambda: tiny_model(seed=0)  # noqa: E731
    folds = grouped_query_folds(bank, 3, seed=0, dev_fraction=0.2)
    with pytest.raises(ConfigError, match="computed on faqir/faq_pairs, got cough/faq_pairs"):
        faq_cross_validation(base, bank, folds, [0.01], selection, entropy, task="FAQIR", scale=20.0)
    with pytest.raises(ConfigError, match="selected by dev MAP"):
        faq_cross_validation(base, bank, folds, [0.01], entropy, entropy, task="COUGH", scale=20.0)
    with pytest.raises(ConfigError, match="no dev queries"):
        faq_cross_validation(base, bank, grouped_query_folds(bank, 3, seed=0), [0.01], selection, entropy,
                             task="COUGH", scale=20.0)
    with pytest.raises(ConfigError, match="one training seed per fold: 3 folds, 2 seeds"):
        faq_cross_validation(base, bank, folds, [0.01], selection, entropy, task="COUGH", scale=20.0, seeds=[0, 1])
    with pytest.raises(ConfigError, match="named like the models"):
        faq_cross_validation(base, bank, folds, [0.01], selection, entropy, task="COUGH", scale=20.0,
                             baselines={FINAL: lambda m: m})
