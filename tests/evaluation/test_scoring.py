"""The one scoring path: per-item scores that give back each evaluator's number on all the items,
and, on any resample of them, what an independent computation gives on the resampled items
(scipy for STS, a plain loop per query for retrieval, every threshold tried for classification);
the vectorised (B, n) path row by row equal to one resample at a time; items saved and read back;
the dev evaluator that replaced the STS, FAQ and BSC ones."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy.stats import pearsonr, rankdata, spearmanr

from sentcl.data import load, samples_root
from sentcl.data.records import LabelledPairs, RetrievalSet, ScoredPairs
from sentcl.embeddings import encode
from sentcl.errors import ConfigError, DataMissingError
from sentcl.evaluation import per_item as items_module
from sentcl.evaluation import scoring
from sentcl.evaluation.classification import best_threshold_scores, evaluate_pair_classification
from sentcl.evaluation.per_item import PairPredictions, PairSimilarities, QueryMetrics, items_from_arrays
from sentcl.evaluation.retrieval import evaluate_retrieval
from sentcl.evaluation.scoring import dev_evaluator, score
from sentcl.evaluation.sts import evaluate_sts
from sentcl.evaluation.tasks import TASKS, EvalTask, Metric, load_task
from sentcl.models import tiny_model


def hash_embed(texts, dim=16):
    """Deterministic pseudo-embeddings: the same text always gets the same vector."""
    return np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=dim) for t in texts])


def cosine(a, b):
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def resamples(n, b, seed):
    """``b`` bootstrap resamples of ``n`` items (with replacement), a (b, n) array; b != n so that a
    computation along the wrong axis cannot pass."""
    assert b != n
    return np.random.default_rng(seed).integers(0, n, size=(b, n))


# --------------------------------------------------------------------------- STS


def sts_pairs(n=60, seed=0):
    """Pairs with repeated sentences and integer gold scores: ties on both sides."""
    rng = np.random.default_rng(seed)
    sentences = [f"sentence {i}" for i in range(25)]
    first, second = rng.integers(0, 25, n), rng.integers(0, 25, n)
    return ScoredPairs(name="toy", split="test", sentences1=[sentences[i] for i in first],
                       sentences2=[sentences[i] for i in second], scores=rng.integers(0, 6, n).astype(float),
                       subsets=["a" if i % 2 else "b" for i in range(n)])


STS_TOY = EvalTask("toy STS", "toy", "test", "sts", (Metric("Spearman", "spearman"), Metric("Pearson", "pearson")),
                   setting="all")


def test_pair_similarities_give_the_evaluators_correlations_and_scipys_on_a_resample():
    pairs = sts_pairs()
    scored = score(hash_embed, {"toy STS": pairs}, tasks={"toy STS": STS_TOY})["toy STS"]
    items = scored.items
    assert isinstance(items, PairSimilarities) and len(items) == len(pairs)
    result = evaluate_sts(pairs, hash_embed)
    assert scored.result == result
    assert items.metric("spearman") == pytest.approx(result["spearman"]["all"], rel=1e-12)
    assert items.metric("pearson") == pytest.approx(result["pearson"]["all"], rel=1e-12)

    cos = np.array([cosine(a, b) for a, b in zip(hash_embed(pairs.sentences1), hash_embed(pairs.sentences2), strict=True)])
    itself = np.array(pairs.sentences1) == np.array(pairs.sentences2)
    assert itself.any()
    cos[itself] = 1.0  # a sentence paired with itself: exactly 1 (pairwise_cosine), so such pairs tie
    rows = resamples(len(pairs), 7, seed=1)
    for r in rows:  # the resampled pairs, scored by scipy: repeated pairs tie with themselves
        assert len(set(r.tolist())) < len(r)
        expected = 100 * spearmanr(cos[r], pairs.scores[r]).statistic
        assert items.metric("spearman", r) == pytest.approx(expected, abs=1e-9)
        assert items.metric("pearson", r) == pytest.approx(100 * pearsonr(cos[r], pairs.scores[r]).statistic, abs=1e-9)
        # the table's units: x100 once (the metric is already x100, the task's scale is 1)
        assert scored.value("Spearman", r) == pytest.approx(expected, abs=1e-9)
    # ranking without averaging ties would be caught: it gives another number on these resamples
    r = rows[0]
    ordinal = 100 * pearsonr(rankdata(cos[r], method="ordinal"), rankdata(pairs.scores[r], method="ordinal")).statistic
    assert abs(ordinal - items.metric("spearman", r)) > 1e-3

    for key in ("spearman", "pearson"):
        many = items.metric(key, rows)
        assert many.shape == (7,)
        np.testing.assert_allclose(many, [items.metric(key, r) for r in rows], rtol=0, atol=1e-12)


def test_correlations_of_a_non_pooled_setting_are_refused_on_items():
    items = PairSimilarities(np.array([0.1, 0.5, 0.9]), np.array([1.0, 2.0, 3.0]), setting="wmean")
    with pytest.raises(ConfigError, match=r"pooled .*'all'.*setting is 'wmean'"):
        items.metric("spearman", np.array([0, 1, 2]))


def test_a_constant_resample_has_no_correlation():
    items = PairSimilarities(np.array([0.1, 0.5, 0.9]), np.array([1.0, 2.0, 3.0]))
    assert math.isnan(items.metric("spearman", np.array([1, 1, 1])))
    assert items.metric("spearman", np.array([0, 1, 2])) == pytest.approx(100.0)


# --------------------------------------------------------------------------- retrieval


def corpus_retrieval():
    """Queries ranking a whole corpus: duplicated document texts (exact ties, ordered by id), graded
    judgements, a query whose only judgement is not relevant."""
    rng = np.random.default_rng(3)
    texts = [f"answer {i}" for i in range(12)]
    corpus = {f"d{i:02d}": texts[i % 12] for i in range(18)}  # d12-d17 repeat d00-d05's texts
    queries = {f"q{i}": f"question {i}" for i in range(9)}
    qrels = {}
    for q in queries:
        docs = rng.choice(list(corpus), size=3, replace=False)
        qrels[q] = {d: int(rng.integers(1, 4)) for d in docs}
    qrels["q8"] = {"d03": 0}  # judged, nothing relevant: scores 0 and counts
    return RetrievalSet(name="toy", split="test", queries=queries, corpus=corpus, qrels=qrels)


def candidate_retrieval():
    """Questions re-ranking 12 candidates (cut at 10), some texts shared (ties keep the list order)."""
    rng = np.random.default_rng(4)
    corpus = {f"c{i:02d}": f"comment {i % 20}" for i in range(30)}
    queries = {f"q{i}": f"question {i}" for i in range(8)}
    candidates = {q: list(rng.choice(list(corpus), size=12, replace=False)) for q in queries}
    qrels = {q: {c: int(rng.random() < 0.3) for c in cands} for q, cands in candidates.items()}
    qrels["q7"] = {c: 0 for c in candidates["q7"]}
    return RetrievalSet(name="toy", split="test", queries=queries, corpus=corpus, qrels=qrels, candidates=candidates)


TREC_TOY = EvalTask("toy trec", "toy", "test", "retrieval",
                    tuple(Metric(k, k) for k in ("map", "mrr", "acc@1", "acc@3", "p@1", "ndcg@1", "map@5")),
                    protocol="trec", relevance_level=2)
SEMEVAL_TOY = EvalTask("toy semeval", "toy", "test", "retrieval", (Metric("MAP", "map", 100.0), Metric("MRR", "mrr")),
                       protocol="semeval", relevance_level=1)


def trec_loop(record, q, relevance_level):
    """One query's metrics by a plain loop: documents by cosine descending, ties by id descending."""
    vq = hash_embed([record.queries[q]])[0]
    ranked = sorted(record.corpus, key=lambda d: (cosine(vq, hash_embed([record.corpus[d]])[0]), d), reverse=True)
    judged = record.qrels[q]
    relevant = {d for d, g in judged.items() if g >= relevance_level}
    ranks = [i + 1 for i, d in enumerate(ranked) if d in relevant]
    precisions = [(j + 1) / r for j, r in enumerate(ranks)]
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)
    return {
        "map": sum(precisions) / len(relevant) if relevant else 0.0,
        "mrr": 1 / ranks[0] if ranks else 0.0,
        "acc@1": float(bool(ranks) and ranks[0] <= 1),
        "acc@3": float(bool(ranks) and ranks[0] <= 3),
        "p@1": float(ranked[0] in relevant),
        "ndcg@1": max(judged.get(ranked[0], 0), 0) / ideal[0] if ideal else 0.0,
        "map@5": sum(p for p, r in zip(precisions, ranks, strict=True) if r <= 5) / len(relevant) if relevant else 0.0,
    }


def semeval_loop(record, q):
    """One question's AP and RR as the SemEval scorer: stable sort of the candidate list, cut at 10."""
    vq = hash_embed([record.queries[q]])[0]
    cands = record.candidates[q]
    order = sorted(range(len(cands)), key=lambda i: -cosine(vq, hash_embed([record.corpus[cands[i]]])[0]))[:10]
    hits = [k + 1 for k, i in enumerate(order) if record.qrels[q].get(cands[i], 0) >= 1]
    return {"map": float(np.mean([(j + 1) / r for j, r in enumerate(hits)])) if hits else 0.0,
            "mrr": 1 / hits[0] if hits else 0.0}


@pytest.mark.parametrize("protocol", ["trec", "semeval"])
def test_query_metrics_average_to_the_scorers_values_and_match_a_loop_on_a_resample(protocol):
    record, t = (corpus_retrieval(), TREC_TOY) if protocol == "trec" else (candidate_retrieval(), SEMEVAL_TOY)
    scored = score(hash_embed, {t.name: record}, tasks={t.name: t})[t.name]
    items = scored.items
    assert isinstance(items, QueryMetrics) and len(items) == len(record.queries)
    assert scored.result["queries_without_relevant"] >= 1  # they count, at 0
    assert "per_query" not in scored.result
    direct = evaluate_retrieval(record, hash_embed, metrics=[m.key for m in t.metrics],
                                relevance_level=t.relevance_level, protocol=protocol)
    assert scored.result == direct
    for m in t.metrics:  # every metric, on all queries: exactly the scorer's mean
        assert items.metric(m.key) == direct["scores"][m.key]
        assert scored.value(m.label) == m.scale * direct["scores"][m.key] == scored.values[m.label]

    queries = list(record.queries)
    loop = {q: trec_loop(record, q, t.relevance_level) if protocol == "trec" else semeval_loop(record, q) for q in queries}
    rows = resamples(len(queries), 5, seed=2)
    for r in rows:
        for m in t.metrics:
            expected = np.mean([loop[queries[i]][m.key] for i in r])
            assert items.metric(m.key, r) == pytest.approx(expected, abs=1e-12), m.key
            assert scored.value(m.label, r) == pytest.approx(m.scale * expected, abs=1e-10)
    for m in t.metrics:
        np.testing.assert_array_equal(items.metric(m.key, rows), [items.metric(m.key, r) for r in rows])
    # the loop is not trivially the same on every query: the resamples tell metrics and queries apart
    assert len({round(items.metric("map", r), 12) for r in rows}) > 1


# --------------------------------------------------------------------------- pair classification


def brute_force(sims, labels):
    """Best-F1 (precision, recall at it) and best-accuracy thresholds by trying every score as a
    threshold, highest first, keeping the first best (the highest threshold among equal values)."""
    positives = labels.sum()
    best_f1, best_acc = (-1.0, 0.0, 0.0), np.mean(labels == 0)  # accuracy: every pair negative
    for threshold in sorted(set(sims.tolist()), reverse=True):
        pred = sims >= threshold
        tp = int(np.sum(pred & (labels == 1)))
        precision, recall = tp / pred.sum(), tp / positives
        f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
        if f1 > best_f1[0]:
            best_f1 = (f1, precision, recall)
        best_acc = max(best_acc, float(np.mean(pred == (labels == 1))))
    return {"f1": best_f1[0], "precision": best_f1[1], "recall": best_f1[2], "accuracy": best_acc}


def classification_pairs(n=50, seed=5):
    rng = np.random.default_rng(seed)
    sentences = [f"s{i}" for i in range(20)]
    first, second = rng.integers(0, 20, n), rng.integers(0, 20, n)
    second[:6] = first[:6]  # a sentence paired with itself: cosine exactly 1, tied
    return LabelledPairs(name="toy", split="test", sentences1=[sentences[i] for i in first],
                         sentences2=[sentences[i] for i in second], labels=rng.integers(0, 2, n),
                         label_names=("no", "yes"))


CLASSIFICATION_TOY = EvalTask("toy classification", "toy", "test", "classification",
                              (Metric("F1", "f1", 100.0), Metric("Accuracy", "accuracy", 100.0),
                               Metric("Precision", "precision"), Metric("Recall", "recall")), positive_label="yes")


def test_pair_predictions_rechoose_the_best_threshold_on_every_resample():
    pairs = classification_pairs()
    t = CLASSIFICATION_TOY
    scored = score(hash_embed, {t.name: pairs}, tasks={t.name: t})[t.name]
    items = scored.items
    assert isinstance(items, PairPredictions) and len(items) == len(pairs)
    direct = evaluate_pair_classification(pairs, hash_embed, positive_label="yes")
    assert scored.result == direct
    for key in ("f1", "precision", "recall", "accuracy"):
        assert items.metric(key) == direct[key]  # exactly the evaluator's numbers
    assert scored.value("F1") == 100 * direct["f1"] == scored.values["F1"]  # x100 once

    sims = np.array([cosine(a, b) for a, b in zip(hash_embed(pairs.sentences1), hash_embed(pairs.sentences2), strict=True)])
    sims[:6] = 1.0
    rows = resamples(len(pairs), 9, seed=6)
    for r in rows:
        expected = brute_force(sims[r], pairs.labels[r])
        for key, value in expected.items():
            assert items.metric(key, r) == pytest.approx(value, abs=1e-12), key
        assert scored.value("F1", r) == pytest.approx(100 * expected["f1"], abs=1e-10)
    for key in ("f1", "precision", "recall", "accuracy"):
        np.testing.assert_array_equal(items.metric(key, rows), [items.metric(key, r) for r in rows])
    # the threshold is chosen again: a resample's F1 is not the full set's threshold applied to it
    assert any(items.metric("f1", r) != pytest.approx(direct["f1"]) for r in rows)
    # one class only: no F1 to choose a threshold for
    negatives = np.flatnonzero(pairs.labels == 0)
    assert math.isnan(items.metric("f1", negatives)) and math.isnan(items.metric("accuracy", negatives))


def test_pairs_with_equal_scores_are_predicted_alike_and_predicting_none_positive_counts():
    """A positive tied with negatives cannot be predicted alone (F1 0.5, not 1), and the best accuracy
    here is predicting every pair negative (3/4)."""
    sims, labels = np.array([0.9, 0.9, 0.9, 0.2]), np.array([1, 0, 0, 0])
    items = PairPredictions(sims, labels)
    expected = brute_force(sims, labels)
    assert expected == {"f1": 0.5, "precision": 1 / 3, "recall": 1.0, "accuracy": 0.75}
    for key, value in expected.items():
        assert items.metric(key) == pytest.approx(value, abs=1e-15)
        assert items.metric(key, np.array([[0, 1, 2, 3], [3, 2, 1, 0]])) == pytest.approx([value, value], abs=1e-15)
    assert best_threshold_scores(sims, labels)["f1"] == 0.5 and best_threshold_scores(sims, labels)["accuracy"] == 0.75


# --------------------------------------------------------------------------- every kind


def items_of_every_kind():
    return {
        "pairs": score(hash_embed, {"s": sts_pairs()}, tasks={"s": STS_TOY})["s"].items,
        "queries": score(hash_embed, {"q": corpus_retrieval()}, tasks={"q": TREC_TOY})["q"].items,
        "classification": score(hash_embed, {"c": classification_pairs()}, tasks={"c": CLASSIFICATION_TOY})["c"].items,
    }


def test_items_are_saved_as_plain_arrays_and_read_back(tmp_path):
    for kind, items in items_of_every_kind().items():
        assert items.kind == kind
        path = tmp_path / f"{kind}.npz"
        np.savez(path, **items.arrays())
        with np.load(path, allow_pickle=False) as saved:
            back = items_from_arrays(saved)
        assert type(back) is type(items) and len(back) == len(items)
        for name, array in items.arrays().items():
            np.testing.assert_array_equal(back.arrays()[name], array)
        rows = resamples(len(items), 4, seed=7)
        for key in items.keys:
            assert back.metric(key) == items.metric(key)
            np.testing.assert_array_equal(back.metric(key, rows), items.metric(key, rows))
    pairs = items_of_every_kind()["pairs"]
    with pytest.raises(ConfigError, match="expected arrays of classification items, got pairs"):
        PairPredictions.from_arrays(pairs.arrays())
    with pytest.raises(ConfigError, match="kind 'ranks'"):
        items_from_arrays({"kind": np.array("ranks")})


def test_rows_and_keys_are_checked():
    items = items_of_every_kind()["queries"]
    with pytest.raises(ConfigError, match="unknown metric 'ndcg@10' of queries items; valid: map, mrr"):
        items.metric("ndcg@10")
    for bad in (np.array([0.5, 1.0]), np.zeros((2, 2, 2), dtype=int), np.array([], dtype=int)):
        with pytest.raises(ConfigError, match="integer array of item indices"):
            items.metric("map", bad)
    with pytest.raises(ConfigError, match=r"item indices in 0\.\.8"):
        items.metric("map", np.array([0, 9]))
    with pytest.raises(ConfigError, match="has no metric 'MRR'"):
        score(hash_embed, {"c": classification_pairs()}, tasks={"c": CLASSIFICATION_TOY})["c"].value("MRR")


def test_large_resamples_are_scored_in_chunks_with_the_same_values(monkeypatch):
    items = items_of_every_kind()
    rows = {kind: resamples(len(i), 13, seed=8) for kind, i in items.items()}
    whole = {kind: {key: i.metric(key, rows[kind]) for key in i.keys} for kind, i in items.items()}
    monkeypatch.setattr(items_module, "_CHUNK_ITEMS", 100)  # a few resamples per chunk
    for kind, i in items.items():
        for key in i.keys:
            np.testing.assert_array_equal(i.metric(key, rows[kind]), whole[kind][key])


def test_every_sample_task_reports_what_its_items_give():
    records = {}
    for name in TASKS:
        try:
            records[name] = load_task(name, samples_root())
        except DataMissingError:
            continue
    scored = score(hash_embed, records)
    kinds = {"sts": PairSimilarities, "retrieval": QueryMetrics, "classification": PairPredictions}
    for name, s in scored.items():
        assert isinstance(s.items, kinds[s.task.evaluator]) and s.task is TASKS[name]
        for m in s.task.metrics:
            assert s.value(m.label) == pytest.approx(s.values[m.label], rel=1e-12, abs=1e-12), (name, m.label)
    assert len(scored["COUGH"].items) == len(records["COUGH"].qrels)
    assert len(scored["STS12"].items) == len(records["STS12"]) and len(scored["MRPC"].items) == len(records["MRPC"])


# --------------------------------------------------------------------------- the dev evaluator


@pytest.fixture(scope="module")
def model():
    return tiny_model(0)


def fp32(model):
    return lambda texts: encode(model, texts, precision="fp32", cache=False, show_progress=False)


def test_the_sts_dev_evaluator_is_the_pooled_spearman_and_pearson(model):
    dev = load("stsbenchmark", "dev", samples_root())
    result = evaluate_sts(dev, fp32(model))
    metrics = dev_evaluator("STSb", dev, precision="fp32")(model)
    assert metrics == {"spearman": result["spearman"]["all"], "pearson": result["pearson"]["all"]}
    chinese = load("cnsd_stsb", "dev", samples_root())
    assert dev_evaluator("Chinese STS-B", chinese, precision="fp32")(model) == {
        "spearman": evaluate_sts(chinese, fp32(model))["spearman"]["all"],
        "pearson": evaluate_sts(chinese, fp32(model))["pearson"]["all"]}


def test_the_dev_evaluator_scores_any_task_on_its_dev_data_by_the_evaluators_keys(model):
    """What the BSC notebook's own evaluator computed, keyed by the evaluator's names (metric_for_best)."""
    cqa = load("semeval2016_cqa_a", "dev", samples_root())
    semeval = evaluate_retrieval(cqa, fp32(model), protocol="semeval", relevance_level=1)["scores"]
    assert dev_evaluator("CQA-A", cqa, precision="fp32")(model) == {"map": semeval["map"], "mrr": semeval["mrr"]}
    mrpc = load("mrpc", "train", samples_root())
    f1 = evaluate_pair_classification(mrpc, fp32(model), positive_label="equivalent")
    assert dev_evaluator("MRPC", mrpc, precision="fp32")(model) == {"f1": f1["f1"]}  # a fraction: the evaluator's unit
    assert dev_evaluator("MRPC", mrpc, metric_keys=["accuracy", "f1"], precision="fp32")(model) == {
        "accuracy": f1["accuracy"], "f1": f1["f1"]}
    cough = load("cough", "faq_pairs", samples_root()).take([0, 5, 9])
    trec = evaluate_retrieval(cough, fp32(model), metrics=["acc@1", "acc@3", "acc@5", "map"])["scores"]
    assert dev_evaluator("COUGH", cough, precision="fp32")(model) == trec


def test_the_dev_evaluator_encodes_without_the_cache_and_checks_its_data_at_once(model, monkeypatch):
    calls = []

    def recording(model, texts, **options):
        calls.append(options)
        return encode(model, texts, **options)

    monkeypatch.setattr(scoring, "encode", recording)
    dev = load("stsbenchmark", "dev", samples_root())
    dev_evaluator("STSb", dev, precision="fp32", batch_size=8)(model)
    assert calls == [{"batch_size": 8, "precision": "fp32", "cache": False, "show_progress": False}]
    with pytest.raises(ConfigError, match="MRPC: the classification evaluator takes LabelledPairs, got ScoredPairs"):
        dev_evaluator("MRPC", dev)
    with pytest.raises(ConfigError, match="SemEval scorer computes"):
        dev_evaluator("CQA-A", load("semeval2016_cqa_a", "dev", samples_root()), metric_keys=["p@1"])
    with pytest.raises(ConfigError, match="list of metric keys"):
        dev_evaluator("STSb", dev, metric_keys="spearman")
    with pytest.raises(ConfigError, match="unknown evaluation task"):
        dev_evaluator("STS-dev", dev)
