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
  ranks 100 + 2^k (k = 0, 1, …) of a similarity ranking; :func:`log_rank_negative_pairs` ranks a
  database of documents by an encoder's cosine and returns the (anchor, negative) pairs.
- :func:`training_pairs` — any training record as labelled pairs (judged pairs, scaled scores, or
  binary labels of a classification record); :func:`first_questions` — whole questions, in order.
- :func:`training_rows` — the rows a variant of the paper's tables trains on
  (:mod:`sentcl.chapters.bsc.variants`): every pair, the positives, pointwise rows (with sampled
  negatives, oversampled positives, where the data have no negatives: PFCC-S's MSE) or triplets.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from sentcl.data.records import LabelledPairs, RetrievalSet, ScoredPairs, TrainingData
from sentcl.errors import ConfigError, check_choice

LABELS = ("binary", "scaled")
ROWS = ("pairs", "positives", "pointwise", "triplets")
"""The training rows of a variant (:func:`training_rows`)."""
Embed = Callable[[Sequence[str]], np.ndarray]


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


def log_rank_negative_pairs(data: TrainingData, documents: Sequence[str], embed: Embed, *, start: int = 100) -> list[tuple[str, str]]:
    """PFCC-S's negatives (§4): "we encoded all sentences using SBERT ..., selected the first element in
    each positive pair as an anchor and ... sorted all other examples by their similarity to this anchor
    ... we selected negatives starting from 101 on, logarithmically: on positions 100 + 2^k". For each
    row of ``data`` (anchor, positive), the distinct ``documents`` (the verified-claims database) ranked
    by the cosine of their ``embed`` embeddings to the anchor's, the row's own positive left out;
    returns (anchor, negative) pairs, row by row."""
    first, second = (data.columns[c] for c in data.column_names[:2])
    texts = list(dict.fromkeys(documents))
    position = {text: j for j, text in enumerate(texts)}
    missing = [d for d in second if d not in position]
    if missing:
        raise ConfigError(f"{data.name}: {len(missing)} positives are not in the documents ranked, e.g. {missing[0][:80]!r}")
    anchors, candidates = _unit(embed(first)), _unit(embed(texts))
    picked = log_rank_negatives(anchors @ candidates.T, start=start, exclude=[[position[d]] for d in second])
    return [(anchor, texts[j]) for anchor, ids in zip(first, picked, strict=True) for j in ids]


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def labelled_pairs(record: LabelledPairs, positive_label: str, *, name: str | None = None) -> TrainingData:
    """(sentence1, sentence2) rows of a classification record labelled 1.0 for ``positive_label``
    (MRPC's paraphrases, QQP's duplicates), else 0.0."""
    if positive_label not in record.label_names:
        raise ConfigError(f"{record.name}/{record.split}: no label {positive_label!r}; labels are {list(record.label_names)}")
    positive = record.label_names.index(positive_label)
    return TrainingData(columns={"sentence1": record.sentences1, "sentence2": record.sentences2},
                        labels=(record.labels == positive).astype(np.float32), name=name or f"{record.name}/{record.split}")


def training_pairs(record: RetrievalSet | ScoredPairs | LabelledPairs, *, grades: str = "binary",
                   positive_label: str | None = None) -> TrainingData:
    """A training record as labelled pairs in the file's order (§4): a retrieval set's judged pairs
    (:func:`judged_pairs`, ``grades`` ``"binary"`` at relevance 1 or ``"scaled"`` to [0, 1]: Antique),
    graded pairs scaled to [0, 1] (:func:`scaled_scores`: STSb) or a classification record's pairs,
    1 for ``positive_label`` (:func:`labelled_pairs`: MRPC, QQP)."""
    if isinstance(record, RetrievalSet):
        return judged_pairs(record, relevance_level=1, labels=grades)
    if isinstance(record, ScoredPairs):
        return scaled_scores(record)
    if isinstance(record, LabelledPairs):
        if positive_label is None:
            raise ConfigError(f"{record.name}/{record.split}: classification pairs need positive_label (the label scored 1)")
        return labelled_pairs(record, positive_label)
    raise ConfigError(f"training_pairs takes a RetrievalSet, ScoredPairs or LabelledPairs, got {type(record).__name__}")


def first_questions(record: RetrievalSet, pairs: int) -> RetrievalSet:
    """The first whole questions of ``record``, in its order, whose judged pairs number at most ``pairs``
    (at least one question): a training budget that keeps every question's comments together, as the
    data's own order ("w/o shuffle") has them."""
    total, keep = 0, 0
    for qid in record.queries:
        total += len(record.qrels.get(qid, {}))
        if total > pairs and keep:
            break
        keep += 1
    return record.take(range(keep))


def training_rows(
    data: TrainingData,
    rows: str,
    *,
    threshold: float = 0.5,
    negatives: Callable[[TrainingData], list[tuple[str, str]]] | None = None,
) -> TrainingData:
    """The rows a variant trains on (:data:`ROWS`), from labelled pairs ``data`` (label > ``threshold``:
    a positive):

    - ``"pairs"``: ``data`` itself (BSC uses the labelled negatives as candidates, Eq. 5);
    - ``"positives"``: its positives only ("BSC - positives", Table 1);
    - ``"pointwise"``: every labelled pair (the MSE); with ``negatives`` (data without labelled
      negatives: PFCC-S), ``data`` repeated ``len(negatives) // positives`` times ("we oversampled the
      positive pairs to correct the balance", §4) followed by the sampled negatives labelled 0;
    - ``"triplets"``: (anchor, positive, negative) rows, every positive with every labelled negative of
      its anchor (:func:`anchor_triplets`); with ``negatives``, each sampled negative with its anchor's
      positive.

    ``negatives`` is ``data -> [(anchor, negative), ...]`` (e.g. :func:`log_rank_negative_pairs` bound to
    a database and an encoder), called only when the rows need it."""
    check_choice("rows", rows, ROWS)
    if data.labels is None:
        raise ConfigError(f"{data.name}: training_rows needs labelled pairs")
    positive = np.flatnonzero(data.labels > threshold)
    if rows == "positives":
        return data.take(positive, name=f"{data.name} positives")
    if rows == "pairs" or (rows == "pointwise" and negatives is None):
        return data
    if rows == "triplets" and negatives is None:
        return anchor_triplets(data, threshold=threshold)
    assert negatives is not None
    sampled = negatives(data)
    first, second = data.column_names[:2]
    if rows == "triplets":
        by_anchor = dict(zip(data.columns[first], data.columns[second], strict=True))
        columns = {"anchor": [a for a, _ in sampled], "positive": [by_anchor[a] for a, _ in sampled],
                   "negative": [n for _, n in sampled]}
        return TrainingData(columns=columns, name=f"{data.name} log-rank triplets")
    if not len(positive):
        raise ConfigError(f"{data.name}: no positive rows (label > {threshold}) to balance the sampled negatives with")
    repeat = max(1, len(sampled) // len(positive))
    columns = {first: data.columns[first] * repeat + [a for a, _ in sampled],
               second: data.columns[second] * repeat + [n for _, n in sampled]}
    labels = np.r_[np.tile(data.labels, repeat), np.zeros(len(sampled), np.float32)]
    return TrainingData(columns=columns, labels=labels, name=f"{data.name} + log-rank negatives")


__all__ = [
    "LABELS",
    "ROWS",
    "anchor_triplets",
    "first_questions",
    "judged_pairs",
    "labelled_pairs",
    "log_rank_negative_pairs",
    "log_rank_negatives",
    "scaled_scores",
    "training_pairs",
    "training_rows",
]
