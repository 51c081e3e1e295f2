"""Training rows from judged retrieval data and graded pairs (the BSC chapter's training sets).

Chernyavskiy et al. (2022, §4) train on pairs: (question, comment) for CQA-A, (question, related
question) for CQA-B, (query, answer) for Antique, (claim, verified claim) for PFCC-S, each with
its label, in the data's own order (grouped by question: the order "w/o shuffle" keeps).

- :func:`judged_pairs` — every judged (query, document) pair of a :class:`RetrievalSet` as
  (query, document) rows with a label: 1/0 at a relevance level, or the grade scaled to [0, 1]
  (Antique, §4: "we normalize the scores to the [0, 1] interval").
- :func:`scaled_scores` — graded pairs (STSb's 0–5) with the score scaled to [0, 1] (§4).
- :func:`anchor_triplets` — (anchor, positive, negative) rows for the triplet loss: for each
  anchor every pair of one of its positives and one of its labelled negatives (§4, CQA-A:
  "we group the pairs by the first element (anchor)").
- :func:`log_rank_negatives` — PFCC-S's sampled negatives (§4): for each anchor, the documents at
  ranks 100 + 2^k (k = 0, 1, …) of a similarity ranking.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sentcl.data.records import RetrievalSet, ScoredPairs, TrainingData
from sentcl.errors import ConfigError, check_choice

LABELS = ("binary", "scaled")


def judged_pairs(record: RetrievalSet, *, relevance_level: int = 1, labels: str = "binary", name: str | None = None) -> TrainingData:
    """One row per judged (query, document) pair, query by query in the record's order, documents in
    candidate order (or judgement order): columns ``query``, ``document``; float labels, ``"binary"``
    (1 when the grade reaches ``relevance_level``) or ``"scaled"`` (grade − lowest) / (highest − lowest)."""
    check_choice("labels", labels, LABELS)
    queries, documents, grades = [], [], []
    for qid, query in record.queries.items():
        judged = record.qrels.get(qid, {})
        order = record.candidates[qid] if record.candidates and qid in record.candidates else list(judged)
        for did in order:
            if did not in judged:
                continue
            if did not in record.corpus:
                raise ConfigError(f"{record.name}/{record.split}: judged document {did!r} of query {qid!r} is not in the corpus")
            queries.append(query)
            documents.append(record.corpus[did])
            grades.append(float(judged[did]))
    if not grades:
        raise ConfigError(f"{record.name}/{record.split}: no judged pairs")
    values = np.asarray(grades, dtype=np.float32)
    if labels == "binary":
        values = (values >= relevance_level).astype(np.float32)
    else:
        low, high = values.min(), values.max()
        values = (values - low) / (high - low) if high > low else np.ones_like(values)
    return TrainingData(columns={"query": queries, "document": documents}, labels=values,
                        name=name or f"{record.name}/{record.split} judged pairs")


def scaled_scores(record: ScoredPairs, *, high: float = 5.0, name: str | None = None) -> TrainingData:
    """(sentence1, sentence2) rows labelled score / ``high`` (STSb: 0–5 to [0, 1])."""
    return TrainingData(columns={"sentence1": record.sentences1, "sentence2": record.sentences2},
                        labels=np.asarray(record.scores, dtype=np.float32) / high,
                        name=name or f"{record.name}/{record.split} scores/{high:g}")


def anchor_triplets(data: TrainingData, *, threshold: float = 0.5, name: str | None = None) -> TrainingData:
    """For each anchor (first column), every (positive, negative) combination of its second-column
    texts with label > ``threshold`` and ≤ it; anchors in first-seen order. Anchors without both
    kinds give no rows."""
    if data.labels is None or len(data.column_names) != 2:
        raise ConfigError(f"{data.name}: anchor_triplets needs two text columns and labels")
    first, second = (data.columns[c] for c in data.column_names)
    by_anchor: dict[str, tuple[list[str], list[str]]] = {}
    for a, b, y in zip(first, second, data.labels.tolist(), strict=True):
        by_anchor.setdefault(a, ([], []))[0 if y > threshold else 1].append(b)
    rows = [(a, p, n) for a, (pos, neg) in by_anchor.items() for p in pos for n in neg]
    if not rows:
        raise ConfigError(f"{data.name}: no anchor has both a positive and a negative")
    anchors, positives, negatives = (list(c) for c in zip(*rows, strict=True))
    return TrainingData(columns={"anchor": anchors, "positive": positives, "negative": negatives},
                        name=name or f"{data.name} triplets")


def log_rank_negatives(similarities: np.ndarray, *, start: int = 100, exclude: Sequence[Sequence[int]] = ()) -> list[np.ndarray]:
    """PFCC-S's negatives (§4): for each row of ``similarities`` (anchors × documents), the documents
    at ranks ``start`` + 2^k (1-based ranks by decreasing similarity; k = 0, 1, … while within the
    documents), skipping the anchor's own positives (``exclude[i]``)."""
    similarities = np.asarray(similarities)
    if similarities.ndim != 2:
        raise ConfigError(f"similarities must be anchors x documents, got shape {similarities.shape}")
    out = []
    for i, row in enumerate(similarities):
        ranked = np.argsort(-row, kind="stable")
        if i < len(exclude) and len(exclude[i]):
            ranked = ranked[~np.isin(ranked, np.asarray(exclude[i]))]
        ranks = [start + 2**k for k in range(64) if start + 2**k <= len(ranked)]
        out.append(ranked[np.asarray(ranks, dtype=np.int64) - 1])
    return out


__all__ = ["LABELS", "anchor_triplets", "judged_pairs", "log_rank_negatives", "scaled_scores"]
