"""Retrieval metrics against trec_eval (pytrec_eval) and sentence-transformers.

pytrec_eval is trec_eval itself, so it settles ties (score desc, then docno desc), graded
gains, relevance levels and queries without relevant documents. sentence-transformers'
InformationRetrievalEvaluator breaks ties by ascending id, so it is compared on a tie-free
ranking. (ranx agrees with trec_eval on tie-free runs too, but numba compiles it for ~100 s
on a cold 2-core machine, so it is not part of the suite.)
"""

from __future__ import annotations

import types
from pathlib import Path

import numpy as np
import pytest
import pytrec_eval
import torch

from sentcl.data.records import RetrievalSet
from sentcl.errors import ConfigError
from sentcl.evaluation.retrieval import (
    evaluate_retrieval,
    evaluate_run,
    metric_name,
    parse_metric,
    query_scores,
    rank_candidates,
    rank_corpus,
    semeval_scores,
)

TREC = {
    "map": "map",
    "map@5": "map_cut_5",
    "mrr": "recip_rank",
    "p@1": "P_1",
    "p@3": "P_3",
    "p@10": "P_10",
    "r@5": "recall_5",
    "r@10": "recall_10",
    "ndcg@1": "ndcg_cut_1",
    "ndcg@3": "ndcg_cut_3",
    "ndcg@10": "ndcg_cut_10",
    # trec_eval's full `ndcg` can hang in pytrec_eval-terrier after negative grades; with runs of
    # fewer than 1000 documents ndcg_cut_1000 is the same number (full ndcg is checked separately)
    "ndcg": "ndcg_cut_1000",
    "acc@1": "success_1",
    "acc@5": "success_5",
    "acc@10": "success_10",
}


def random_case(seed: int, n_levels: int = 4, max_docs: int = 30):
    """Random qrels (grades -1..3, some queries with no relevant document) and a run whose
    scores take few distinct values, so that ties are everywhere."""
    rng = np.random.default_rng(seed)
    nd = int(rng.integers(1, max_docs))
    docs = [f"d{i}" for i in range(nd)]

    def pick(n):
        return [docs[i] for i in rng.permutation(nd)[:n]]

    qrels, run = {}, {}
    for q in range(int(rng.integers(1, 6))):
        qrels[f"q{q}"] = {d: int(rng.integers(-1, 4)) for d in pick(int(rng.integers(1, nd + 1)))}
        run[f"q{q}"] = {d: float(rng.integers(0, n_levels)) / n_levels for d in pick(int(rng.integers(1, nd + 1)))}
    return qrels, run, int(rng.integers(1, 3))


def test_parse_metric():
    assert parse_metric("nDCG@10") == ("ndcg", 10)
    assert parse_metric("map") == ("map", None)
    assert metric_name(" MRR@5") == "mrr@5"
    for bad in ("p", "acc", "r", "map@0", "hits@3", "ndcg@-1"):
        with pytest.raises(ConfigError, match="unknown retrieval metric"):
            parse_metric(bad)
    out = evaluate_run({"q": {"d": 1}}, {"q": {"d": 0.3}}, ["nDCG@10", "ndcg@10", "Acc@1"])
    assert out["scores"] == {"ndcg@10": 1.0, "acc@1": 1.0}
    with pytest.raises(ValueError, match="nothing to evaluate"):
        evaluate_run({"q": {"d": 1}}, {"other": {"d": 0.3}})


@pytest.mark.parametrize("seed_block", range(4))
def test_query_scores_match_trec_eval_on_random_runs_with_ties(seed_block):
    tie_rule_mattered = 0
    for seed in range(seed_block * 200, (seed_block + 1) * 200):
        qrels, run, level = random_case(seed)
        reference = pytrec_eval.RelevanceEvaluator(qrels, set(TREC.values()), relevance_level=level).evaluate(run)
        for q in run:
            ours = query_scores(run[q], qrels[q], list(TREC), relevance_level=level)
            for metric, trec_name in TREC.items():
                assert ours[metric] == pytest.approx(reference[q][trec_name], abs=1e-12), (seed, q, metric)
            # the same run with the ids' order reversed: only the tie rule can change the scores
            flipped = {f"~{99 - int(d[1:]):02d}": s for d, s in run[q].items()}
            flipped_qrels = {f"~{99 - int(d[1:]):02d}": r for d, r in qrels[q].items()}
            if query_scores(flipped, flipped_qrels, list(TREC), level) != ours:
                tie_rule_mattered += 1
    assert tie_rule_mattered > 20  # the random runs do exercise tie-breaking


def test_full_ndcg_matches_trec_eval_on_non_negative_grades():
    for seed in range(200):
        qrels, run, level = random_case(seed)
        qrels = {q: {d: max(r, 0) for d, r in judged.items()} for q, judged in qrels.items()}
        reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}, relevance_level=level).evaluate(run)
        for q in run:
            assert query_scores(run[q], qrels[q], ["ndcg"], level)["ndcg"] == pytest.approx(reference[q]["ndcg"], abs=1e-12)


def test_tie_rule_is_score_then_docno_descending():
    qrels = {"q": {"d1": 1}}
    run = {"q": {"d1": 0.5, "d2": 0.5, "d10": 0.5, "d0": 0.9}}
    # trec order: d0 (0.9), then the ties by docno descending: d2, d10, d1
    assert query_scores(run["q"], qrels["q"], ["mrr"])["mrr"] == pytest.approx(1 / 4)
    assert pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(run)["q"]["recip_rank"] == pytest.approx(1 / 4)


def test_mrr_at_k_is_trec_eval_on_the_cut_run():
    for seed in range(300):
        qrels, run, level = random_case(seed)
        for q in run:
            order = sorted(run[q].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            for k in (1, 3, 10):
                cut = {q: dict(order[:k])}
                ref = pytrec_eval.RelevanceEvaluator({q: qrels[q]}, {"recip_rank"}, relevance_level=level).evaluate(cut)
                assert query_scores(run[q], qrels[q], [f"mrr@{k}"], level)[f"mrr@{k}"] == pytest.approx(ref[q]["recip_rank"])


def test_evaluate_run_counts_queries_like_trec_eval():
    qrels = {"q1": {"d1": 1, "d2": 0}, "q2": {"d1": 0}, "q3": {"d5": 1}}
    run = {"q1": {"d1": 0.9, "d2": 0.1}, "q2": {"d1": 0.3}, "q4": {"d1": 1.0}}
    out = evaluate_run(qrels, run, ["map", "acc@1"])
    # q1 (AP 1) and q2 (no relevant document: 0, counted); q4 has no qrels, q3 no run
    assert out["scores"] == {"map": 0.5, "acc@1": 0.5}
    assert (out["n_queries"], out["queries_without_relevant"]) == (2, 1)
    assert (out["run_queries_without_qrels"], out["qrels_queries_not_in_run"]) == (1, 1)
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"map"}).evaluate(run)
    assert sorted(ref) == ["q1", "q2"] and np.mean([v["map"] for v in ref.values()]) == 0.5


class _TableModel:
    """A stand-in for SentenceTransformer that returns precomputed embeddings."""

    similarity_fn_name = "cosine"

    def __init__(self, table):
        self.table = table
        self.model_card_data = types.SimpleNamespace(set_evaluation_metrics=lambda *a, **k: None)

    def encode(self, sentences, convert_to_tensor=False, **kwargs):
        if isinstance(sentences, str):
            sentences = [sentences]
        array = np.stack([self.table[s] for s in sentences]).astype(np.float32)
        return torch.from_numpy(array) if convert_to_tensor else array

    encode_query = encode_document = encode


def _random_retrieval_set(seed: int, n_queries=12, n_docs=60, dim=8, graded=False):
    rng = np.random.default_rng(seed)
    queries = {f"q{i}": f"query {seed} {i}" for i in range(n_queries)}
    corpus = {f"doc{i:03d}": f"document {seed} {i}" for i in range(n_docs)}
    qrels = {
        q: {f"doc{j:03d}": int(rng.integers(1, 4)) if graded else 1 for j in rng.permutation(n_docs)[: rng.integers(1, 4)]}
        for q in queries
    }
    table = {t: rng.normal(size=dim) for t in [*queries.values(), *corpus.values()]}
    return RetrievalSet(name="random", split="test", queries=queries, corpus=corpus, qrels=qrels), table


def test_corpus_retrieval_matches_sentence_transformers_information_retrieval_evaluator():
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator
    from sentence_transformers.util import cos_sim

    data, table = _random_retrieval_set(3)
    ks = [1, 3, 5, 10]
    st = InformationRetrievalEvaluator(
        data.queries, data.corpus, {q: set(r) for q, r in data.qrels.items()},
        mrr_at_k=ks, ndcg_at_k=ks, accuracy_at_k=ks, precision_recall_at_k=ks, map_at_k=[100],
        score_functions={"cosine": cos_sim}, write_csv=False,
    ).compute_all_metrics(_TableModel(table))["cosine"]
    embed = lambda texts: np.stack([table[t] for t in texts])  # noqa: E731
    metrics = [f"{m}@{k}" for m in ("acc", "p", "r", "mrr", "ndcg") for k in ks] + ["map@100"]
    ours = evaluate_retrieval(data, embed, metrics=metrics)["scores"]
    names = {"acc": "accuracy@k", "p": "precision@k", "r": "recall@k", "mrr": "mrr@k", "ndcg": "ndcg@k"}
    for metric in metrics[:-1]:
        kind, k = parse_metric(metric)
        assert ours[metric] == pytest.approx(st[names[kind]][k], abs=1e-6), metric
    # MAP@100 coincides because every query has at most 3 relevant documents (ST divides by min(k, R))
    assert ours["map@100"] == pytest.approx(st["map@k"][100], abs=1e-6)


def _brute_force_run(q, c, qids, cids, depth=None):
    """Rank by float64 cosine with Python's sort on (score, id) descending: trec order."""
    qn = q / np.linalg.norm(q, axis=1, keepdims=True)
    cn = c / np.linalg.norm(c, axis=1, keepdims=True)
    run = {}
    for i, qid in enumerate(qids):
        ranked = sorted(zip(cids, (cn @ qn[i]).tolist(), strict=True), key=lambda kv: (kv[1], kv[0]), reverse=True)
        run[qid] = [d for d, _ in ranked[:depth]]
    return run


def test_rank_corpus_orders_like_trec_eval_and_keeps_shared_texts_tied():
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(7, 5))
    # 40 documents over 7 distinct vectors: many exact ties, ids chosen so that id order matters
    doc_row = rng.integers(0, 7, size=40)
    cids = [f"c{rng.integers(0, 10**6):06d}" for _ in range(40)]
    qids = [f"q{i}" for i in range(6)]
    q = rng.normal(size=(6, 5))
    expected = _brute_force_run(q, rows[doc_row], qids, cids)
    for depth in (None, 1, 3, 7, 12, 40, 100):
        run = rank_corpus(q, qids, rows, cids, corpus_index=doc_row, depth=depth)
        for qid in qids:
            ranked = sorted(run[qid].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            assert [d for d, _ in ranked] == expected[qid][:depth], (qid, depth)
            # documents sharing a vector get exactly the same score
            scores = {doc_row[cids.index(d)]: s for d, s in run[qid].items()}
            assert all(run[qid][d] == scores[doc_row[cids.index(d)]] for d in run[qid])


def test_rank_corpus_depth_cut_inside_a_group_of_equal_scores():
    rng = np.random.default_rng(2)
    rows = np.repeat(rng.normal(size=(4, 5)), 3, axis=0)  # 12 rows in 4 groups of 3 identical vectors
    cids = [f"c{i:02d}" for i in rng.permutation(12)]
    q = rng.normal(size=(3, 5))
    expected = _brute_force_run(q, rows, ["a", "b", "c"], cids)
    for depth in range(1, 13):  # most cuts fall inside a group, where faiss returns an arbitrary subset
        run = rank_corpus(q, ["a", "b", "c"], rows, cids, depth=depth)
        for qid in run:
            ranked = sorted(run[qid].items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
            assert [d for d, _ in ranked] == expected[qid][:depth], (qid, depth)


def test_rank_candidates_scores_only_the_candidates():
    rng = np.random.default_rng(1)
    qv = {"a": rng.normal(size=4)}
    dv = {d: rng.normal(size=4) for d in ("x", "y", "z")}
    run = rank_candidates(qv, dv, {"a": ["y", "x"]})
    assert set(run["a"]) == {"x", "y"}
    cos = dv["x"] @ qv["a"] / np.linalg.norm(dv["x"]) / np.linalg.norm(qv["a"])
    assert run["a"]["x"] == pytest.approx(cos)
    with pytest.raises(ValueError, match="not in the corpus"):
        rank_candidates(qv, dv, {"a": ["w"]})


def _semeval_reference(gold_lines, run, th=10):
    """A line-by-line transcription of the official scorer's reading, sorting, map() and mrr()."""
    by_q = {}
    for qid, aid, label in gold_lines:
        by_q.setdefault(qid, []).append((label, run[qid][aid]))
    maps, mrrs = [], []
    for cands in by_q.values():
        ranked = [label for label, _ in sorted(cands, key=lambda x: x[1], reverse=True)]
        precisions, correct, rr = [], 0, 0.0
        for i in range(min(th, len(ranked))):
            if ranked[i] == "true":
                correct += 1
                precisions.append(correct / (i + 1))
                rr = rr or 1.0 / (i + 1)
        maps.append(sum(precisions) / len(precisions) if precisions else 0.0)
        mrrs.append(rr)
    return sum(maps) / len(by_q), sum(mrrs) / len(by_q)


def test_semeval_scores_match_the_official_scorer_logic_including_ties():
    for seed in range(100):
        rng = np.random.default_rng(seed)
        gold, candidates, qrels, run = [], {}, {}, {}
        for q in range(int(rng.integers(1, 8))):
            n = int(rng.integers(1, 15))
            cands = [f"Q{q}_C{j}" for j in rng.permutation(n)]
            candidates[f"Q{q}"] = cands
            qrels[f"Q{q}"] = {c: int(rng.random() < 0.4) for c in cands}
            run[f"Q{q}"] = {c: float(rng.integers(0, 3)) for c in cands}  # many ties
            gold += [(f"Q{q}", c, "true" if qrels[f"Q{q}"][c] else "false") for c in cands]
        ours = semeval_scores(qrels, run, candidates)["scores"]
        ref_map, ref_mrr = _semeval_reference(gold, run)
        assert ours["map"] == pytest.approx(ref_map) and ours["mrr"] == pytest.approx(ref_mrr), seed


def _read_relevancy(path: Path):
    gold = [line.rstrip("\n").split("\t") for line in path.read_text(encoding="utf-8").splitlines()]
    candidates, qrels, run = {}, {}, {}
    for qid, aid, _rank, score, label in gold:
        candidates.setdefault(qid, []).append(aid)
        qrels.setdefault(qid, {})[aid] = int(label == "true")
        run.setdefault(qid, {})[aid] = float(score)
    return candidates, qrels, run


@pytest.mark.realdata
@pytest.mark.parametrize(
    ("subtask", "expected"),
    # Nakov et al. 2016 (SemEval-2016 Task 3), IR baselines on the test set: (MAP, MRR) x100
    [("A", (59.53, 67.83)), ("B", (74.75, 83.79))],
)
def test_semeval_scores_reproduce_the_published_ir_baselines(shared_data, subtask, expected):
    folder = shared_data / "semeval2016_task3_cqa_ql" / "test"
    name = {"A": "SemEval2016-Task3-CQA-QL-test-subtaskA.xml.subtaskA.relevancy",
            "B": "SemEval2016-Task3-CQA-QL-test.xml.subtaskB.relevancy"}[subtask]
    candidates, qrels, run = _read_relevancy(folder / name)
    out = semeval_scores(qrels, run, candidates)
    assert round(100 * out["scores"]["map"], 2) == expected[0]
    assert round(100 * out["scores"]["mrr"], 2) == expected[1]
    # trec_eval agrees here (10 judged candidates per question, no ties in the IR scores)
    trec = evaluate_run(qrels, run, ["map", "mrr@10"])["scores"]
    assert trec["map"] == pytest.approx(out["scores"]["map"]) and trec["mrr@10"] == pytest.approx(out["scores"]["mrr"])


def test_evaluate_retrieval_encodes_each_distinct_text_once_and_accepts_embeddings():
    data, table = _random_retrieval_set(5, n_queries=4, n_docs=10)
    dup = dict(data.corpus)
    dup["doc999"] = data.corpus["doc003"]  # same text as doc003: must tie with it exactly
    data = RetrievalSet(name="r", split="test", queries=data.queries, corpus=dup, qrels=data.qrels)
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.stack([table[t] for t in texts])

    via_embed = evaluate_retrieval(data, embed, metrics=["map", "ndcg@3"], per_query=True)
    assert len(calls) == 1 and len(calls[0]) == len(set(calls[0])) == 14
    q = np.stack([table[t] for t in data.queries.values()])
    c = np.stack([table[t] for t in data.corpus.values()])
    via_arrays = evaluate_retrieval(data, query_embeddings=q, corpus_embeddings=c, metrics=["map", "ndcg@3"], per_query=True)
    assert via_embed["scores"] == pytest.approx(via_arrays["scores"])
    assert via_embed["mode"] == "corpus" and via_embed["n_queries"] == 4
    with pytest.raises(ValueError, match="either embed"):
        evaluate_retrieval(data, embed, query_embeddings=q)


def test_evaluate_retrieval_candidates_and_semeval_protocol():
    data, table = _random_retrieval_set(6, n_queries=5, n_docs=30)
    candidates = {q: [f"doc{j:03d}" for j in range(i * 6, i * 6 + 6)] for i, q in enumerate(data.queries)}
    qrels = {q: {d: int(j % 3 == 0) for j, d in enumerate(c)} for q, c in candidates.items()}
    data = RetrievalSet(name="cqa", split="test", queries=data.queries, corpus=data.corpus, qrels=qrels, candidates=candidates)
    embed = lambda texts: np.stack([table[t] for t in texts])  # noqa: E731
    trec = evaluate_retrieval(data, embed, metrics=["map", "mrr"])
    semeval = evaluate_retrieval(data, embed, protocol="semeval")
    assert trec["mode"] == "candidates" and semeval["protocol"] == "semeval"
    # 6 fully judged candidates per query, no ties: the two protocols agree
    assert semeval["scores"]["map"] == pytest.approx(trec["scores"]["map"])
    assert semeval["scores"]["mrr"] == pytest.approx(trec["scores"]["mrr"])
    plain = RetrievalSet(name="faq", split="test", queries=data.queries, corpus=data.corpus, qrels=qrels)
    with pytest.raises(ValueError, match="candidate lists"):
        evaluate_retrieval(plain, embed, protocol="semeval")
