"""Retrieval and re-ranking metrics with trec_eval semantics, and ranking by cosine similarity.

A *run* maps each query id to ``{doc_id: score}``; *qrels* map each query id to
``{doc_id: relevance}`` (integers, graded where the dataset grades). The metrics follow
trec_eval (and so pytrec_eval and the TREC literature):

- **Order.** Documents are ranked by score, highest first; ties are broken by document id in
  *descending* string order (trec_eval sorts by ``(sim, docno)`` both descending). The rank
  column of a run file plays no part.
- **Relevance.** For the binary metrics a document is relevant when its relevance is at least
  ``relevance_level`` (trec_eval's ``-l``, default 1, i.e. rel > 0 for integer grades);
  unjudged documents are not relevant. nDCG uses the graded relevance as gain (linear
  gain, negative grades count as 0) whatever ``relevance_level`` is, and its ideal ranking
  is built from every judged document.
- **Which queries count.** Queries that are in both the run and the qrels. A run query with no
  qrels is ignored and a qrels query absent from the run is not scored (trec_eval without
  ``-c``); both are counted in the result. A query whose judgements hold no relevant
  document scores 0 on every metric and *does* count in the mean.

Metrics (``k`` is a positive integer; scores are in [0, 1]):

=============  =============================================================================
``acc@k``      HasPositive@k / Acc@k / trec_eval ``success_k``: 1 if a relevant document is in the top k
``p@k``        precision at k: relevant in the top k, divided by k (trec_eval ``P_k``)
``r@k``        recall at k: relevant in the top k over all relevant judged (``recall_k``)
``map``        average precision over the whole ranking: sum of precision at each relevant
               document's rank, divided by the number of relevant judged (``map``)
``map@k``      the same with the ranking cut at k, still divided by all relevant (``map_cut_k``)
``mrr``        reciprocal rank of the first relevant document (``recip_rank``)
``mrr@k``      the same, 0 when it is below rank k (ranx ``mrr@k``; trec_eval on the cut run)
``ndcg@k``     nDCG at k, discount 1/log2(rank + 1) (``ndcg_cut_k``); ``ndcg``: whole ranking
=============  =============================================================================

**The SemEval-2016/2017 Task 3 (CQA) official scorer** (``MAP_scripts/ev.py``) differs, and
:func:`semeval_scores` reproduces it:

- it ranks each question's candidates with a *stable* sort by score, so ties keep the order
  of the gold file (the original thread or search-engine order), not docno order;
- it cuts every ranking at 10 and divides a question's sum of precisions by the number of
  relevant candidates found in the top 10 (trec_eval divides by all relevant judged);
- questions with no relevant candidate score 0 and count in the mean (its
  ``--ignore_noanswer`` flag, off in the official runs, would drop them); MRR is cut at 10.

For the SemEval CQA test sets, where every question has 10 judged candidates, the two
protocols give the same MAP and MRR except on ties. With the gold files' own ranks as the
run, :func:`semeval_scores` gives the task's published IR baselines (2016 subtask A: MAP
59.53, MRR 67.83; subtask B: 74.75, 83.79), which the tests check.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..data.records import RetrievalSet
from ..errors import ConfigError, check_choice
from .encode_once import as_matrix, embed_unique, l2_normalise, pairwise_cosine, unique_texts

if TYPE_CHECKING:  # the encoder's module imports torch and sentence-transformers: not for a type
    from ..embeddings import Embed

Run = dict[str, dict[str, float]]
Qrels = Mapping[str, Mapping[str, int]]

DEFAULT_METRICS = ("map", "mrr", "ndcg@10", "p@1", "acc@1", "acc@3", "acc@5", "acc@10")
PROTOCOLS = ("trec", "semeval")

_METRIC = re.compile(r"^(acc|p|r|map|mrr|ndcg)(?:@([1-9][0-9]*))?$")
_NEEDS_K = ("acc", "p", "r")


def parse_metric(name: str) -> tuple[str, int | None]:
    """``"nDCG@10"`` -> ``("ndcg", 10)``; ``"map"`` -> ``("map", None)``."""
    m = _METRIC.match(name.strip().lower())
    if not m or (m.group(1) in _NEEDS_K and m.group(2) is None):
        raise ConfigError(
            f"unknown retrieval metric {name!r}; use acc@k, p@k, r@k, map, map@k, mrr, mrr@k, ndcg, ndcg@k"
        )
    return m.group(1), int(m.group(2)) if m.group(2) else None


def metric_name(name: str) -> str:
    """The canonical spelling of a metric name (``"nDCG@10"`` -> ``"ndcg@10"``), used as result key."""
    kind, k = parse_metric(name)
    return kind if k is None else f"{kind}@{k}"


def _ranks_of(doc_ids: Sequence[str], run_q: Mapping[str, float]) -> dict[str, int]:
    """1-based trec_eval rank (score desc, then doc id desc) of each of ``doc_ids`` in ``run_q``.

    Computed by counting, without sorting the run: a document's rank is one plus the number of
    documents with a higher score, plus those with the same score and a larger id.
    """
    wanted = [d for d in doc_ids if d in run_q]
    if not wanted:
        return {}
    scores = np.fromiter(run_q.values(), dtype=np.float64, count=len(run_q))
    if np.isnan(scores).any():
        raise ConfigError("run contains NaN scores")
    ids = None
    ranks = {}
    for d in wanted:
        s = run_q[d]
        rank = 1 + int(np.count_nonzero(scores > s))
        tied = scores == s
        if np.count_nonzero(tied) > 1:
            if ids is None:
                ids = np.array(list(run_q.keys()))
            rank += int(np.count_nonzero(ids[tied] > d))
        ranks[d] = rank
    return ranks


def query_scores(
    run_q: Mapping[str, float],
    qrels_q: Mapping[str, int],
    metrics: Sequence[str],
    relevance_level: int = 1,
) -> dict[str, float]:
    """The metrics of one query (trec_eval semantics, see the module docstring)."""
    if relevance_level < 1:
        raise ConfigError(f"relevance_level must be >= 1, got {relevance_level}")
    parsed = [parse_metric(m) for m in metrics]
    gains = {d: r for d, r in qrels_q.items() if r > 0}
    ranks = _ranks_of(list(gains), run_q)
    num_rel = sum(1 for r in qrels_q.values() if r >= relevance_level)
    rel_ranks = np.sort([ranks[d] for d, r in gains.items() if r >= relevance_level and d in ranks])
    # precision at the rank of the i-th relevant document retrieved: i / rank_i
    precisions = np.arange(1, len(rel_ranks) + 1) / rel_ranks if len(rel_ranks) else np.zeros(0)
    ideal = np.sort(np.fromiter(gains.values(), dtype=np.float64, count=len(gains)))[::-1]
    ideal_discounts = 1.0 / np.log2(np.arange(2, len(ideal) + 2))

    out = {}
    for name, (kind, k) in zip(metrics, parsed, strict=True):  # keyed by the names as given
        cut = math.inf if k is None else k
        within = rel_ranks <= cut
        if kind == "acc":
            value = float(within.any())
        elif kind == "p":
            value = np.count_nonzero(within) / cut  # p@k: cut is k
        elif kind == "r":
            value = np.count_nonzero(within) / num_rel if num_rel else 0.0
        elif kind == "map":
            value = float(precisions[within].sum()) / num_rel if num_rel else 0.0
        elif kind == "mrr":
            value = 1.0 / rel_ranks[0] if len(rel_ranks) and rel_ranks[0] <= cut else 0.0
        else:  # ndcg
            dcg = sum(g / math.log2(ranks[d] + 1) for d, g in gains.items() if d in ranks and ranks[d] <= cut)
            n_ideal = len(ideal) if k is None else min(k, len(ideal))
            idcg = float(ideal[:n_ideal] @ ideal_discounts[:n_ideal])
            value = dcg / idcg if idcg > 0 else 0.0
        out[name] = float(value)
    return out


def evaluate_run(
    qrels: Qrels,
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = DEFAULT_METRICS,
    relevance_level: int = 1,
    per_query: bool = False,
) -> dict:
    """Mean of each metric over the queries in both ``run`` and ``qrels`` (trec_eval semantics).

    Returns ``{"scores": {metric: mean}, "n_queries", "queries_without_relevant",
    "run_queries_without_qrels", "qrels_queries_not_in_run"}`` and, with ``per_query``,
    ``"per_query": {qid: {metric: value}}``.
    """
    metrics = list(dict.fromkeys(metric_name(m) for m in metrics))
    scored = [q for q in run if q in qrels]
    if not scored:
        raise ConfigError("no query of the run has relevance judgements: nothing to evaluate")
    per = {q: query_scores(run[q], qrels[q], metrics, relevance_level) for q in scored}
    result = {
        "scores": {m: float(np.mean([per[q][m] for q in scored])) for m in metrics},
        "n_queries": len(scored),
        "queries_without_relevant": sum(
            1 for q in scored if not any(r >= relevance_level for r in qrels[q].values())
        ),
        "run_queries_without_qrels": sum(1 for q in run if q not in qrels),
        "qrels_queries_not_in_run": sum(1 for q in qrels if q not in run),
    }
    if per_query:
        result["per_query"] = per
    return result


def semeval_scores(
    qrels: Qrels,
    run: Mapping[str, Mapping[str, float]],
    candidates: Mapping[str, Sequence[str]],
    cutoff: int = 10,
    relevance_level: int = 1,
    per_query: bool = False,
) -> dict:
    """MAP and MRR as the SemEval-2016/2017 Task 3 official scorer computes them.

    For each question of ``candidates`` (in the gold file's order), its candidates are sorted by
    run score with a stable sort (ties keep the candidate order), cut at ``cutoff``; average
    precision is the mean of the precisions at the relevant candidates in the cut list (0 when
    there is none) and the reciprocal rank is that of the first relevant one in it. Every
    question counts in the mean. Scores are in [0, 1] (the scorer prints MRR ×100). With
    ``per_query``, ``"per_query": {qid: {"map": AP, "mrr": RR}}`` too, in ``candidates``' order:
    their means are the scores.
    """
    if cutoff < 1:
        raise ConfigError(f"cutoff must be >= 1, got {cutoff}")
    if not candidates:
        raise ConfigError("no question has candidates: nothing to evaluate")
    aps, rrs = [], []
    no_relevant = 0
    for q, cands in candidates.items():
        if q not in run:
            raise ConfigError(f"query {q!r} has candidates but no scores in the run")
        missing = [c for c in cands if c not in run[q]]
        if missing:
            raise ConfigError(f"query {q!r}: candidates {missing[:3]} have no score in the run")
        judged = qrels.get(q, {})
        order = sorted(range(len(cands)), key=lambda i: -run[q][cands[i]])[:cutoff]
        relevant = np.array([judged.get(cands[i], 0) >= relevance_level for i in order], dtype=bool)
        positions = np.flatnonzero(relevant) + 1
        no_relevant += not any(judged.get(c, 0) >= relevance_level for c in cands)
        aps.append(float(np.mean(np.arange(1, len(positions) + 1) / positions)) if len(positions) else 0.0)
        rrs.append(1.0 / positions[0] if len(positions) else 0.0)
    result = {
        "scores": {"map": float(np.mean(aps)), "mrr": float(np.mean(rrs))},
        "n_queries": len(aps),
        "queries_without_relevant": no_relevant,
    }
    if per_query:
        result["per_query"] = {q: {"map": ap, "mrr": rr} for q, ap, rr in zip(candidates, aps, rrs, strict=True)}
    return result


def _trec_order(scores: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Indices that sort (score desc, id desc): trec_eval's order."""
    return np.lexsort((ids, scores))[::-1]


def rank_corpus(
    query_embeddings: np.ndarray,
    query_ids: Sequence[str],
    corpus_embeddings: np.ndarray,
    corpus_ids: Sequence[str],
    corpus_index: np.ndarray | None = None,
    depth: int | None = None,
    query_chunk: int | None = None,
) -> Run:
    """Rank the whole corpus for every query by cosine similarity (exact, faiss ``IndexFlatIP``).

    ``corpus_index[i]`` is the row of ``corpus_embeddings`` that holds document
    ``corpus_ids[i]`` (default: row ``i``); documents with the same text can share a row, and
    then get exactly the same score, so their order is settled by trec_eval's tie rule.
    Returns the ``depth`` best documents per query (all of them when ``depth`` is None) as a
    run ``{qid: {doc_id: cosine}}``. Ties at the depth cut-off are resolved exactly: when the
    cut falls inside a group of equal scores the query is searched again in full.
    """
    import faiss  # imported here: it takes a second, and the command line should start fast

    q = l2_normalise(as_matrix(query_embeddings, "query_embeddings", rows=len(query_ids))).astype(np.float32)
    c = l2_normalise(as_matrix(corpus_embeddings, "corpus_embeddings")).astype(np.float32)
    if q.shape[1] != c.shape[1]:
        raise ConfigError(f"query and corpus embedding sizes differ: {q.shape[1]} and {c.shape[1]}")
    index_of_doc = np.arange(len(corpus_ids)) if corpus_index is None else np.asarray(corpus_index, dtype=np.intp)
    if len(index_of_doc) != len(corpus_ids) or (len(index_of_doc) and index_of_doc.max() >= len(c)):
        raise ConfigError("corpus_index must give a row of corpus_embeddings for every corpus id")
    if depth is not None and depth < 1:
        raise ConfigError(f"depth must be >= 1 or None, got {depth}")
    if not len(corpus_ids):
        raise ConfigError("the corpus is empty")
    # Index only the rows some document uses; members[j] lists the documents of indexed row j.
    rows, inverse = np.unique(index_of_doc, return_inverse=True)
    doc_ids = np.array(list(corpus_ids), dtype=str)
    by_row = np.argsort(inverse, kind="stable")
    members = np.split(doc_ids[by_row], np.cumsum(np.bincount(inverse, minlength=len(rows)))[:-1])
    index = faiss.IndexFlatIP(c.shape[1])
    index.add(np.ascontiguousarray(c[rows]))
    n_rows = len(rows)
    # one row more than the depth: every row scoring above the last one returned is then known
    k = n_rows if depth is None else min(depth + 1, n_rows)
    chunk = query_chunk or max(1, 4_000_000 // max(k, 1))

    run: Run = {}
    for start in range(0, len(q), chunk):
        sims, hits = index.search(q[start : start + chunk], k)
        for i, (s, h) in enumerate(zip(sims, hits, strict=True)):
            if depth is not None and k < n_rows:
                above = np.count_nonzero(s > s[-1])  # these rows are complete: no row outside beats them
                docs_above = sum(len(members[j]) for j in h[:above])
                if docs_above < depth:  # the cut falls in a group of equal scores: search in full
                    s, h = index.search(q[start + i : start + i + 1], n_rows)
                    s, h = s[0], h[0]
            ids = np.concatenate([members[j] for j in h])
            scores = np.repeat(s, [len(members[j]) for j in h])
            order = _trec_order(scores, ids)[:depth]
            run[query_ids[start + i]] = dict(zip(ids[order].tolist(), scores[order].astype(np.float64).tolist(), strict=True))
    return run


def rank_candidates(
    query_vectors: Mapping[str, np.ndarray],
    doc_vectors: Mapping[str, np.ndarray],
    candidates: Mapping[str, Sequence[str]],
) -> Run:
    """Score each query's candidate list by cosine similarity (re-ranking, e.g. SemEval CQA)."""
    run: Run = {}
    for q, cands in candidates.items():
        if q not in query_vectors:
            raise ConfigError(f"candidates name query {q!r}, which has no embedding")
        missing = [d for d in cands if d not in doc_vectors]
        if missing:
            raise ConfigError(f"query {q!r}: candidates {missing[:3]} are not in the corpus")
        if not cands:
            run[q] = {}
            continue
        docs = np.stack([doc_vectors[d] for d in cands])
        sims = pairwise_cosine(np.broadcast_to(query_vectors[q], docs.shape), docs)
        run[q] = dict(zip(cands, sims.tolist(), strict=True))
    return run


def evaluate_retrieval(
    data: RetrievalSet,
    embed: Embed | None = None,
    *,
    query_embeddings: np.ndarray | None = None,
    corpus_embeddings: np.ndarray | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    relevance_level: int = 1,
    depth: int | None = None,
    protocol: str = "trec",
    per_query: bool = False,
) -> dict:
    """Evaluate an encoder on a :class:`~sentcl.data.records.RetrievalSet` by cosine similarity.

    Give either ``embed`` (each distinct query and document text is encoded once) or
    ``query_embeddings`` / ``corpus_embeddings`` with rows in the order of ``data.queries``
    and ``data.corpus``. Documents with the same text are given the same vector (the first
    one's), so they tie exactly and trec_eval's tie rule orders them.

    When ``data.candidates`` is set each query re-ranks its own candidate list (SemEval CQA);
    otherwise it ranks the whole corpus (FAQ retrieval, PFCC-S/CLEF, ANTIQUE), keeping the
    ``depth`` best documents (``None``: the full ranking, so MAP is exact).
    ``protocol="semeval"`` (candidate lists only) scores MAP and MRR as the SemEval Task 3
    official scorer does (see :func:`semeval_scores`); ``"trec"`` uses trec_eval semantics.
    ``per_query`` adds ``"per_query": {qid: {metric: value}}`` for the queries the means are
    over, in the run's order (the record's queries, or its candidate lists'): each metric's mean
    over them is its score.
    """
    check_choice("protocol", protocol, PROTOCOLS)
    if protocol == "semeval" and data.candidates is None:
        raise ConfigError(f"{data.name}: protocol 'semeval' needs per-query candidate lists")
    if (embed is None) == (query_embeddings is None and corpus_embeddings is None) or (
        embed is None and (query_embeddings is None or corpus_embeddings is None)
    ):
        raise ConfigError("pass either embed, or both query_embeddings and corpus_embeddings")
    query_ids, doc_ids = list(data.queries), list(data.corpus)
    doc_texts = [data.corpus[d] for d in doc_ids]
    if embed is not None:
        vectors, index = embed_unique(embed, [data.queries[q] for q in query_ids] + doc_texts)
        q_vecs, doc_rows, doc_matrix = vectors[index[: len(query_ids)]], index[len(query_ids) :], vectors
    else:
        assert query_embeddings is not None and corpus_embeddings is not None  # checked above
        q_vecs = as_matrix(query_embeddings, "query_embeddings", rows=len(query_ids))
        doc_matrix = as_matrix(corpus_embeddings, "corpus_embeddings", rows=len(doc_ids))
        text_of_doc = unique_texts(doc_texts)[1]
        first_doc_of_text = np.unique(text_of_doc, return_index=True)[1]
        doc_rows = first_doc_of_text[text_of_doc]  # the row of the first document with the same text

    if data.candidates is not None:
        run = rank_candidates(
            dict(zip(query_ids, q_vecs, strict=True)),
            {d: doc_matrix[r] for d, r in zip(doc_ids, doc_rows, strict=True)},
            data.candidates,
        )
    else:
        run = rank_corpus(q_vecs, query_ids, doc_matrix, doc_ids, corpus_index=doc_rows, depth=depth)

    if protocol == "semeval":
        assert data.candidates is not None  # checked above
        result = semeval_scores(data.qrels, run, data.candidates, relevance_level=relevance_level, per_query=per_query)
    else:
        result = evaluate_run(data.qrels, run, metrics, relevance_level=relevance_level, per_query=per_query)
    return {
        "dataset": data.name,
        "split": data.split,
        "sample": data.sample,
        "mode": "candidates" if data.candidates is not None else "corpus",
        "protocol": protocol,
        "relevance_level": relevance_level,
        "depth": depth if data.candidates is None else None,
        **result,
    }
