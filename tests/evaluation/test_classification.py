"""Best-threshold pair classification against sentence-transformers' BinaryClassificationEvaluator."""

from __future__ import annotations

import types

import numpy as np
import pytest

from sentcl.data.records import LabelledPairs
from sentcl.evaluation.classification import best_threshold_scores, evaluate_pair_classification, scores_at


def _reference():
    from sentence_transformers.sentence_transformer.evaluation import BinaryClassificationEvaluator

    return BinaryClassificationEvaluator


def _brute_force(scores, labels):
    """Try every distinct score as threshold (and one above the top): the best accuracy and F1."""
    best_acc, best_f1 = (labels == 0).mean(), 0.0
    for t in np.unique(scores):
        pred = scores >= t
        tp = np.sum(pred & (labels == 1))
        best_acc = max(best_acc, np.mean(pred == labels))
        if tp:
            p, r = tp / pred.sum(), tp / labels.sum()
            best_f1 = max(best_f1, 2 * p * r / (p + r))
    return best_acc, best_f1


@pytest.mark.parametrize("ties", [False, True])
def test_matches_sentence_transformers_and_brute_force(ties):
    ref = _reference()
    for seed in range(150):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(2, 60))
        labels = rng.integers(0, 2, n)
        labels[:2] = [0, 1]
        scores = rng.integers(0, 6, n) / 5 if ties else rng.random(n)
        scores = scores + 0.3 * labels * rng.random(n)  # informative but imperfect
        ours = best_threshold_scores(scores, labels)
        acc, acc_threshold = ref.find_best_acc_and_threshold(scores, labels, True)
        f1, precision, recall, f1_threshold = ref.find_best_f1_and_threshold(scores, labels, True)
        assert (ours["accuracy"], ours["accuracy_threshold"]) == (pytest.approx(acc), acc_threshold), seed
        assert ours["f1"] == pytest.approx(f1) and ours["f1_threshold"] == f1_threshold, seed
        assert (ours["precision"], ours["recall"]) == (pytest.approx(precision), pytest.approx(recall))
        assert (ours["accuracy"], ours["f1"]) == pytest.approx(_brute_force(scores, labels))
        # the reported thresholds reproduce the reported values
        assert scores_at(scores, labels, ours["accuracy_threshold"])["accuracy"] == pytest.approx(ours["accuracy"])
        assert scores_at(scores, labels, ours["f1_threshold"])["f1"] == pytest.approx(ours["f1"])


def test_direction_and_bad_labels():
    scores = np.array([0.9, 0.8, 0.2, 0.1])
    assert best_threshold_scores(scores, [1, 1, 0, 0])["accuracy"] == 1.0
    assert best_threshold_scores(scores, [0, 0, 1, 1])["accuracy"] == 0.5  # high score means positive
    with pytest.raises(ValueError, match="both classes"):
        best_threshold_scores(scores, [1, 1, 1, 1])
    with pytest.raises(ValueError, match="0 or 1"):
        best_threshold_scores(scores, [0, 1, 2, 1])


def test_pair_dataset_through_the_evaluator_with_the_same_embeddings():
    rng = np.random.default_rng(7)
    texts = [f"s{i}" for i in range(30)]
    table = {t: rng.normal(size=6) for t in texts}
    s1 = [texts[i] for i in rng.integers(0, 30, 80)]
    s2 = [texts[i] for i in rng.integers(0, 30, 80)]
    labels = rng.integers(0, 2, 80)
    pairs = LabelledPairs(name="mrpc", split="test", sentences1=s1, sentences2=s2, labels=labels,
                          label_names=("not_equivalent", "equivalent"))

    class Model:
        similarity_fn_name = "cosine"
        model_card_data = types.SimpleNamespace(set_evaluation_metrics=lambda *a, **k: None)

        def encode(self, sentences, **kwargs):
            return np.stack([table[s] for s in sentences])

    st = _reference()(s1, s2, labels.tolist(), similarity_fn_names=["cosine"], write_csv=False).compute_metrics(Model())["cosine"]
    ours = evaluate_pair_classification(pairs, lambda t: np.stack([table[s] for s in t]))
    assert ours["positive_label"] == "equivalent"
    for key in ("accuracy", "f1", "precision", "recall"):
        assert ours[key] == pytest.approx(st[key], abs=1e-6), key
    flipped = evaluate_pair_classification(pairs, lambda t: np.stack([table[s] for s in t]), positive_label="not_equivalent")
    assert flipped["positives"] == int((labels == 0).sum())
