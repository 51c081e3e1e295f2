"""The library pieces the MNRL-SBERT chapter added: NLI preparation (sentcl.nli), weighted and
text-based whitening and re-pooling (sentcl.baselines), STS subsets (sentcl.evaluation.sts)
and the paper's orderings checked on our results (sentcl.claims)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from sentcl.baselines import fit_whitening, fit_whitening_on_texts, pooled_encoder, whiten, whitened
from sentcl.claims import orderings
from sentcl.data import load, samples_root
from sentcl.data.records import LabelledPairs, ScoredPairs
from sentcl.embeddings import encode
from sentcl.errors import ConfigError
from sentcl.evaluation.sts import evaluate_sts, evaluate_sts_datasets, sample_pairs
from sentcl.models import load_encoder, pooling_of, tiny_checkpoint, tiny_model
from sentcl.nli import nli_sentences, prepare_nli, sample_rows
from sentcl.report import compare
from sentcl.results import Result, load_results, save_results

LABELS = ("entailment", "neutral", "contradiction")


def nli_record(name, pairs, dropped=0):
    """A LabelledPairs from (premise, hypothesis, label name) triples, with ``dropped`` rows without a gold label."""
    return LabelledPairs(
        name=name, split="train", sentences1=[p for p, _, _ in pairs], sentences2=[h for _, h, _ in pairs],
        labels=[LABELS.index(label) for _, _, label in pairs], label_names=LABELS,
        dropped={"no_gold_label": dropped} if dropped else {},
    )


# --------------------------------------------------------------------------- sentcl.nli


def test_prepare_nli_keeps_entailment_pairs_for_mnrl_and_every_labelled_pair_for_softmax():
    snli = nli_record("snli", [("p1", "h1", "entailment"), ("p1", "h2", "neutral"), ("p2", "h3", "contradiction"),
                               ("p2", "h4", "entailment")], dropped=2)
    mnli = nli_record("multinli", [("q1", "g1", "neutral"), ("q2", "g2", "entailment")])
    nli = prepare_nli([snli, mnli])
    assert nli.entailment_pairs.columns == {"anchor": ["p1", "p2", "q2"], "positive": ["h1", "h4", "g2"]}
    assert nli.entailment_pairs.labels is None  # MNRL takes no labels
    assert nli.labelled_pairs.columns["sentence1"] == ["p1", "p1", "p2", "p2", "q1", "q2"]
    assert nli.labelled_pairs.labels.tolist() == [0, 1, 2, 0, 1, 0]
    total = nli.total
    assert (total.rows, total.labelled, total.entailment, total.without_gold_label) == (8, 6, 3, 2)
    assert total.labels == {"entailment": 3, "neutral": 2, "contradiction": 1}
    assert nli.counts["snli/train"].rows == 6 and nli.counts["multinli/train"].entailment == 1
    assert nli.entailment_pairs.name == "snli/train+multinli/train entailment"


def test_prepare_nli_on_the_sample_files_matches_the_loaders_counts():
    snli, mnli = load("snli", "train", samples_root()), load("multinli", "train", samples_root())
    nli = prepare_nli([snli, mnli])
    assert nli.total.rows == len(snli) + len(mnli) + snli.dropped.get("no_gold_label", 0)
    assert nli.total.entailment == len(snli.with_label("entailment")) + len(mnli.with_label("entailment"))
    assert len(nli.entailment_pairs) == nli.total.entailment and len(nli.labelled_pairs) == nli.total.labelled


def test_prepare_nli_errors():
    with pytest.raises(ConfigError, match="at least one"):
        prepare_nli([])
    other = LabelledPairs(name="x", split="train", sentences1=["a"], sentences2=["b"], labels=[0], label_names=("yes", "no"))
    with pytest.raises(ConfigError, match="different label sets"):
        prepare_nli([nli_record("snli", [("a", "b", "entailment")]), other])
    with pytest.raises(ConfigError, match="no 'entailment' label"):
        prepare_nli([other])


def test_sample_rows_is_a_seeded_subset_in_data_order():
    data = prepare_nli([load("snli", "train", samples_root())]).labelled_pairs
    assert sample_rows(data, 0) is data and sample_rows(data, len(data) + 5) is data
    a, b, c = sample_rows(data, 50, seed=1), sample_rows(data, 50, seed=1), sample_rows(data, 50, seed=2)
    assert len(a) == 50 and a.ids.tolist() == b.ids.tolist() != c.ids.tolist()
    assert np.all(np.diff(a.ids) > 0)  # data order kept, ids of the full data
    assert a.columns["sentence1"] == [data.columns["sentence1"][i] for i in a.ids]
    assert a.labels.tolist() == data.labels[a.ids].tolist()
    assert "50 of" in a.name
    with pytest.raises(ConfigError, match="non-negative"):
        sample_rows(data, -1)


def test_nli_sentences_lists_both_sentences_of_every_pair_with_repeats():
    record = nli_record("snli", [("p1", "h1", "entailment"), ("p1", "h2", "neutral")])
    assert nli_sentences([record, record]) == ["p1", "h1", "p1", "h2"] * 2


# --------------------------------------------------------------------------- sentcl.baselines


def anisotropic(n, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return 10.0 + rng.standard_normal((n, d)) @ rng.standard_normal((d, d))


def test_weighted_whitening_equals_whitening_the_repeated_rows():
    x = anisotropic(40)
    counts = np.random.default_rng(1).integers(1, 5, size=40)
    weighted = fit_whitening(x, weights=counts)
    repeated = fit_whitening(np.repeat(x, counts, axis=0))
    np.testing.assert_allclose(weighted.mu, repeated.mu, rtol=1e-12)
    np.testing.assert_allclose(weighted.kernel, repeated.kernel, rtol=1e-8, atol=1e-10)
    # chunked accumulation gives the same fit as one pass; an independent reference: numpy's weighted cov
    chunked = fit_whitening(x, weights=counts, chunk_rows=7)
    np.testing.assert_allclose(chunked.kernel, weighted.kernel, rtol=1e-8, atol=1e-10)
    y = whiten(np.repeat(x, counts, axis=0), weighted)
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-9)
    np.testing.assert_allclose(np.cov(y.T, bias=True), np.eye(5), atol=1e-9)
    reference = np.cov(x.T, fweights=counts, bias=True)
    np.testing.assert_allclose(np.linalg.inv(weighted.kernel @ weighted.kernel.T), reference, rtol=1e-8, atol=1e-8)  # W Wᵀ = Σ⁻¹
    with pytest.raises(ConfigError, match="weights must be 40"):
        fit_whitening(x, weights=counts[:5])
    with pytest.raises(ConfigError, match="weights must be"):
        fit_whitening(x, weights=-counts)


def test_whitening_on_texts_counts_repeats_and_embeds_each_distinct_text_once():
    vocabulary = [f"sentence {i}" for i in range(30)]
    table = dict(zip(vocabulary, anisotropic(30, seed=2)))
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.stack([table[t] for t in texts])

    texts = [vocabulary[i] for i in np.random.default_rng(3).integers(0, 30, size=200)]
    fitted = fit_whitening_on_texts(embed, texts, chunk_texts=8)
    expected = fit_whitening(np.stack([table[t] for t in texts]))
    np.testing.assert_allclose(fitted.kernel, expected.kernel, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fitted.mu, expected.mu, rtol=1e-12)
    seen = [t for chunk in calls for t in chunk]
    assert sorted(seen) == sorted(set(texts)) and max(len(c) for c in calls) <= 8
    np.testing.assert_allclose(whitened(embed, fitted)(texts[:3]), whiten(embed(texts[:3]), fitted))
    with pytest.raises(ConfigError, match="non-empty"):
        fit_whitening_on_texts(embed, [])


def test_pooled_encoder_keeps_the_weights_and_changes_only_the_pooling():
    texts = ["a dog runs in the park", "two people are cooking"]
    mean = tiny_model(0)
    first_last = pooled_encoder(mean, "first_last_avg")
    direct = load_encoder("tiny", pooling="first_last_avg")
    assert pooling_of(first_last) == "first_last_avg" and first_last.max_seq_length == mean.max_seq_length
    np.testing.assert_allclose(encode(first_last, texts, cache=False, precision="fp32"),
                               encode(direct, texts, cache=False, precision="fp32"), atol=1e-6)
    assert not np.allclose(encode(first_last, texts, cache=False, precision="fp32"),
                           encode(mean, texts, cache=False, precision="fp32"), atol=1e-3)
    assert pooled_encoder(mean, "mean") is mean
    # another model (as after training) is re-pooled with its own weights, not the first one's
    other = pooled_encoder(tiny_model(1), "first_last_avg")
    np.testing.assert_allclose(encode(other, texts, cache=False, precision="fp32"),
                               encode(load_encoder(tiny_checkpoint(1), pooling="first_last_avg"), texts, cache=False, precision="fp32"),
                               atol=1e-6)
    assert pooled_encoder("tiny", "cls_before_pooler", max_seq_length=32).max_seq_length == 32
    with pytest.raises(ConfigError, match="unknown pooling"):
        pooled_encoder(mean, "max")


# --------------------------------------------------------------------------- sentcl.evaluation.sts: subsets, datasets


def scored(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return ScoredPairs(
        name="toy", split="test", sentences1=[f"a{i}" for i in range(n)], sentences2=[f"b{i % 25}" for i in range(n)],
        scores=rng.uniform(0, 5, n), subsets=["x" if i % 3 else "y" for i in range(n)],
    )


def test_sample_pairs_is_a_seeded_subset_in_order():
    pairs = scored()
    assert sample_pairs(pairs, 0) is pairs and sample_pairs(pairs, 40) is pairs
    sub = sample_pairs(pairs, 10, seed=4)
    assert len(sub) == 10 and sub.sentences1 == sample_pairs(pairs, 10, seed=4).sentences1
    rows = [pairs.sentences1.index(s) for s in sub.sentences1]
    assert rows == sorted(rows)
    assert sub.scores.tolist() == pairs.scores[rows].tolist() and sub.subsets == [pairs.subsets[i] for i in rows]
    with pytest.raises(ConfigError, match="at least 2"):
        sample_pairs(pairs, 1)


def test_evaluate_sts_datasets_is_the_pooled_spearman_per_task_and_their_mean():
    rng = np.random.default_rng(5)
    table = {}

    def embed(texts):
        embed.calls += 1
        return np.stack([table.setdefault(t, rng.standard_normal(8)) for t in texts])

    embed.calls = 0
    tasks = {"T1": scored(30, 1), "T2": scored(20, 2)}
    scores = evaluate_sts_datasets(embed, tasks)["scores"]
    assert embed.calls == 1  # every distinct sentence of every task in one call
    for name, pairs in tasks.items():
        a, b = np.stack([table[s] for s in pairs.sentences1]), np.stack([table[s] for s in pairs.sentences2])
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert scores[name] == pytest.approx(100 * spearmanr(cos, pairs.scores).statistic, abs=1e-9)
        assert scores[name] == pytest.approx(evaluate_sts(pairs, embed)["spearman"]["all"], abs=1e-9)
    assert scores["avg"] == pytest.approx((scores["T1"] + scores["T2"]) / 2)
    with pytest.raises(ConfigError, match="'avg'"):
        evaluate_sts_datasets(embed, {"avg": scored()})


# --------------------------------------------------------------------------- sentcl.claims


def test_orderings_orient_pairs_as_the_paper_and_say_whether_ours_agree(tmp_path):
    values = {"MNRLSBERT": 70.0, "SBERT": 72.0, "BERT-whitening": 60.0}  # paper: 78.60, 74.89, 66.28
    cells = [Result(table="Table 2" if row != "BERT-whitening" else "Table 1", row=row, column="Average", value=v,
                    seeds=(0,), profile="demo", kind="reproduced", data="d") for row, v in values.items()]
    cells.append(Result(table="Table 2", row="SBERT-whitening", column="Average", value=71.0, seeds=(0,),
                        profile="demo", kind="reproduced", data="d"))
    save_results(tmp_path, "mnrl_sbert", cells, run_id="r")
    compared = compare("mnrl_sbert", load_results(tmp_path))
    found = {(o.higher, o.lower): o for o in orderings(compared, "Table 2")}
    # SBERT-whitening 77.00 > SBERT 74.89 in the paper; MNRLSBERT 78.60 above both; cited rows are left out
    assert set(found) == {("MNRLSBERT", "SBERT"), ("MNRLSBERT", "SBERT-whitening"), ("SBERT-whitening", "SBERT")}
    central = found[("MNRLSBERT", "SBERT")]
    assert (central.paper_higher, central.paper_lower, central.ours_higher, central.ours_lower) == (78.60, 74.89, 70.0, 72.0)
    assert not central.holds and "does NOT hold" in central.sentence() and "-2.00" in central.sentence()
    assert not found[("SBERT-whitening", "SBERT")].holds and not found[("MNRLSBERT", "SBERT-whitening")].holds
    assert orderings(compared, "Table 1") == []  # one computed row: no pair
    with pytest.raises(ConfigError, match="no cells"):
        orderings(compared, "Table 9")
    tie = pd.DataFrame({"table": ["T"] * 2, "row": ["a", "b"], "column": ["Average"] * 2, "paper_value": [1.0, 1.0],
                        "value": [2.0, 1.0], "status": ["reproduced"] * 2, "profile": ["demo"] * 2})
    assert orderings(tie, "T") == []
