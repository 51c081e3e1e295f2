"""Pair classification (MRPC, QQP): best-threshold accuracy and F1 over cosine similarity.

A pair is predicted positive (paraphrase, duplicate) when the cosine similarity of its two
sentence embeddings is at least a threshold; the threshold is chosen on the evaluated set
itself, separately for accuracy and for F1 (Thakur et al. 2021 and sentence-transformers'
``BinaryClassificationEvaluator``; BSC Table 4 reports F1 for MRPC and QQP). The reported
threshold lies halfway between the last score predicted positive and the next lower score,
so ``cos >= threshold`` reproduces the best prediction exactly; pairs with equal scores are
always predicted alike. To apply a threshold chosen on a dev set, use :func:`scores_at`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..data.records import LabelledPairs
from ..embeddings import Embed
from ..errors import ConfigError
from .encode_once import pair_embeddings, pairwise_cosine


def _groups(scores: np.ndarray, labels: np.ndarray):
    """Scores sorted descending, and per group of equal scores the cumulative true positives,
    predicted positives and the threshold that predicts exactly the groups up to it positive."""
    order = np.argsort(-scores, kind="stable")
    s, y = scores[order], labels[order]
    last = np.flatnonzero(np.r_[s[1:] != s[:-1], True])  # index of the last row of every group
    tp = np.cumsum(y)[last]
    predicted = last + 1
    nxt = np.r_[s[last[1:]], s[last[-1]]]  # the next (lower) group's score; the last group: itself
    thresholds = (s[last] + nxt) / 2
    thresholds = np.where(thresholds == nxt, s[last], thresholds)  # a rounded midpoint must not reach the next group
    thresholds[-1] = s[last[-1]]
    return s, tp, predicted, thresholds


def best_threshold_scores(scores: ArrayLike, labels: ArrayLike) -> dict:
    """Best-threshold accuracy and F1 (with its precision and recall) of ``score >= threshold``.

    ``labels`` are 0/1 with at least one of each. Among thresholds giving the same best value
    the highest is kept. Returns ``{"accuracy", "accuracy_threshold", "f1", "precision",
    "recall", "f1_threshold", "n", "positives"}`` (fractions in [0, 1]).
    """
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels)
    if scores.ndim != 1 or scores.shape != labels.shape:
        raise ConfigError(f"scores {scores.shape} and labels {labels.shape} must be 1-D of equal length")
    if not np.isfinite(scores).all():
        raise ConfigError("scores contain NaN or infinite values")
    if not np.isin(labels, (0, 1)).all():
        raise ConfigError("labels must be 0 or 1")
    labels = labels.astype(np.int64)
    n, positives = len(labels), int(labels.sum())
    if positives == 0 or positives == n:
        raise ConfigError(f"labels need both classes; got {positives} positives out of {n}")
    s, tp, predicted, thresholds = _groups(scores, labels)
    negatives = n - positives

    # accuracy; candidate 0 predicts every pair negative (threshold just above the top score)
    correct = np.r_[negatives, tp + (negatives - (predicted - tp))]
    best_acc = int(np.argmax(correct))
    acc_threshold = float(np.nextafter(s[0], np.inf)) if best_acc == 0 else float(thresholds[best_acc - 1])

    precision = tp / predicted
    recall = tp / positives
    with np.errstate(invalid="ignore", divide="ignore"):
        f1 = np.where(tp > 0, 2 * precision * recall / (precision + recall), 0.0)
    best_f1 = int(np.argmax(f1))
    return {
        "accuracy": float(correct[best_acc] / n),
        "accuracy_threshold": acc_threshold,
        "f1": float(f1[best_f1]),
        "precision": float(precision[best_f1]),
        "recall": float(recall[best_f1]),
        "f1_threshold": float(thresholds[best_f1]),
        "n": n,
        "positives": positives,
    }


def scores_at(scores: ArrayLike, labels: ArrayLike, threshold: float) -> dict:
    """Accuracy, precision, recall and F1 of ``score >= threshold`` (e.g. one tuned on dev)."""
    scores = np.asarray(scores, dtype=np.float64)
    labels = np.asarray(labels).astype(bool)
    pred = scores >= threshold
    tp = int(np.count_nonzero(pred & labels))
    precision = tp / max(int(pred.sum()), 1)
    recall = tp / max(int(labels.sum()), 1)
    f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
    return {
        "accuracy": float(np.mean(pred == labels)),
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "threshold": float(threshold),
    }


def evaluate_pair_classification(
    pairs: LabelledPairs,
    embed: Embed | None = None,
    *,
    embeddings1: np.ndarray | None = None,
    embeddings2: np.ndarray | None = None,
    positive_label: str | None = None,
) -> dict:
    """Best-threshold accuracy and F1 of cosine similarity on a labelled pair dataset.

    ``positive_label`` names the positive class in ``pairs.label_names`` (default: the second
    of exactly two labels, e.g. MRPC's paraphrase). Give ``embed`` or the two embedding arrays.
    Returns :func:`best_threshold_scores`'s dict plus dataset, split, sample and the label.
    """
    names = list(pairs.label_names)
    if positive_label is None:
        if len(names) != 2:
            raise ConfigError(f"{pairs.name}: {len(names)} labels {names}; name the positive one (positive_label=)")
        positive_label = names[1]
    if positive_label not in names:
        raise ConfigError(f"{pairs.name}: no label {positive_label!r}; labels are {names}")
    e1, e2 = pair_embeddings(pairs.sentences1, pairs.sentences2, embed, embeddings1, embeddings2)
    labels = (pairs.labels == names.index(positive_label)).astype(np.int64)
    return {
        "dataset": pairs.name,
        "split": pairs.split,
        "sample": pairs.sample,
        "positive_label": positive_label,
        **best_threshold_scores(pairwise_cosine(e1, e2), labels),
    }
