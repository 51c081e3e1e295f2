"""Multiple-negatives ranking loss (Taneja et al. 2023, Eq. 1) against a loop reference and sentence-transformers."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STMultipleNegativesRankingLoss
from sentence_transformers.util import cos_sim, dot_score
from torch import nn

from sentcl.errors import ConfigError
from sentcl.losses import MultipleNegativesRankingLoss, multiple_negatives_ranking_loss


def sigma(a, b, similarity):
    dot = sum(a[k] * b[k] for k in range(len(a)))
    if similarity == "dot":
        return dot
    norm_a = torch.sqrt(sum(a[k] * a[k] for k in range(len(a))))
    norm_b = torch.sqrt(sum(b[k] * b[k] for k in range(len(b))))
    return dot / (norm_a * norm_b)


def mnrl_reference(anchors, positives, hard_negatives=(), scale=20.0, similarity="cos"):
    """−J of Eq. 1 with Python loops: for each anchor i, −log softmax over every positive y_j and every n_j."""
    n = len(anchors)
    candidates = [positives[j] for j in range(n)] + [neg[j] for neg in hard_negatives for j in range(n)]
    total = 0.0
    for i in range(n):
        numerator = torch.exp(scale * sigma(anchors[i], positives[i], similarity))
        denominator = sum(torch.exp(scale * sigma(anchors[i], c, similarity)) for c in candidates)
        total = total + torch.log(numerator / denominator)
    return -total / n


def make_batch(n=5, d=6, m=0, seed=0, std=1.0):
    g = torch.Generator().manual_seed(seed)
    cols = [std * torch.randn(n, d, generator=g, dtype=torch.float64) for _ in range(2 + m)]
    return [c.requires_grad_() for c in cols]


def value_and_grads(loss_fn, cols):
    loss = loss_fn(cols)
    return loss.detach(), [g.detach() for g in torch.autograd.grad(loss, cols)]


@pytest.mark.parametrize("m", [0, 1, 2])
@pytest.mark.parametrize(("similarity", "scale", "std"), [("cos", 20.0, 1.0), ("cos", 1.0, 1.0), ("dot", 20.0, 0.3), ("dot", 1.0, 1.0)])
def test_value_and_gradients_match_loop_reference(m, similarity, scale, std):
    cols = make_batch(m=m, seed=m, std=std)
    ours, ours_grads = value_and_grads(
        lambda c: multiple_negatives_ranking_loss(c[0], c[1], c[2:], scale=scale, similarity=similarity), cols
    )
    ref, ref_grads = value_and_grads(lambda c: mnrl_reference(c[0], c[1], c[2:], scale, similarity), cols)
    assert ours > 0
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)
    for got, want in zip(ours_grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-12)


def test_reference_comparison_would_catch_wrong_sign_scale_axis_and_candidates():
    """On an asymmetric batch, every plausible mistake gives a value far from the loss."""
    anchors, positives, negatives = (c.detach() for c in make_batch(n=4, m=1, seed=3))
    loss = multiple_negatives_ranking_loss(anchors, positives, [negatives])
    scores = 20.0 * F.normalize(anchors, dim=-1) @ F.normalize(torch.cat([positives, negatives]), dim=-1).T
    target = torch.arange(4)
    wrong = {
        "sign (J as printed)": -loss,
        "scale 1": multiple_negatives_ranking_loss(anchors, positives, [negatives], scale=1.0),
        "dot instead of cos": multiple_negatives_ranking_loss(anchors, positives, [negatives], similarity="dot"),
        "transposed similarity matrix": F.cross_entropy(scores[:, :4].T, target),
        "positives as anchors": multiple_negatives_ranking_loss(positives, anchors, [negatives]),
        "softmax over anchors (axis 0)": -torch.log_softmax(scores, dim=0).diagonal().mean(),
        "own hard negative only": torch.stack(
            [torch.logsumexp(torch.cat([scores[i, :4], scores[i, 4 + i : 5 + i]]), 0) - scores[i, i] for i in range(4)]
        ).mean(),
        "hard negatives ignored": F.cross_entropy(scores[:, :4], target),
        "sum over anchors": 4 * loss,
    }
    torch.testing.assert_close(loss, mnrl_reference(anchors, positives, [negatives]), rtol=1e-10, atol=0)
    for name, value in wrong.items():
        assert abs(float(value) - float(loss)) > 1e-2, name


def test_batch_of_one_is_zero():
    anchors, positives = make_batch(n=1)
    loss = multiple_negatives_ranking_loss(anchors, positives)
    assert loss.item() == 0.0  # −log 1
    for grad in torch.autograd.grad(loss, [anchors, positives]):
        assert torch.count_nonzero(grad) == 0


def test_duplicate_positives_cap_the_positive_probability_at_one_half():
    """Two pairs sharing a positive text: each is the other's in-batch negative, as the equation says."""
    e = torch.eye(3, dtype=torch.float64)
    anchors = torch.stack([e[0], e[0], e[1]])
    positives = torch.stack([e[0], e[0], e[1]])  # y_1 == y_2 (and x_1 == x_2): duplicate texts
    loss = multiple_negatives_ranking_loss(anchors, positives, scale=20.0)
    # anchor 1 and 2: exp(20) / (2 exp(20) + 1); anchor 3: exp(20) / (exp(20) + 2)
    expected = -(2 * math.log(math.exp(20) / (2 * math.exp(20) + 1)) + math.log(math.exp(20) / (math.exp(20) + 2))) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-12)
    assert loss.item() >= 2 * math.log(2) / 3  # cannot go below, however well the encoder aligns the pairs
    torch.testing.assert_close(loss, mnrl_reference(anchors, positives), rtol=1e-12, atol=0)
    distinct = multiple_negatives_ranking_loss(e, e, scale=20.0)  # the same batch without duplicates
    assert distinct.item() < 1e-7


def test_hard_negatives_are_extra_candidates_for_every_anchor():
    anchors, positives, negatives = (c.detach() for c in make_batch(n=4, m=1, seed=5))
    without = multiple_negatives_ranking_loss(anchors, positives)
    with_negatives = multiple_negatives_ranking_loss(anchors, positives, [negatives])
    assert with_negatives > without  # more candidates in every denominator
    # a hard negative identical to its pair's positive counts against every anchor whose positive differs
    copies = multiple_negatives_ranking_loss(anchors, positives, [positives.clone()])
    torch.testing.assert_close(copies, mnrl_reference(anchors, positives, [positives]), rtol=1e-10, atol=0)


class EmbeddingColumns(nn.Module):
    """A stand-in encoder: each column's feature dict already carries its embeddings."""

    device = torch.device("cpu")

    def forward(self, features):
        return {"sentence_embedding": features["sentence_embedding"]}


def as_features(cols):
    return [{"sentence_embedding": c} for c in cols]


@pytest.mark.parametrize("m", [0, 1, 3])
@pytest.mark.parametrize(("similarity", "st_similarity", "scale"), [("cos", cos_sim, 20.0), ("dot", dot_score, 1.0)])
def test_module_matches_sentence_transformers(m, similarity, st_similarity, scale):
    """Same embeddings through both modules' forward (sentence-transformers' default directions/partition)."""
    cols = make_batch(n=6, d=8, m=m, seed=10 + m, std=0.5)
    model = EmbeddingColumns()
    ours = MultipleNegativesRankingLoss(model, scale=scale, similarity=similarity)
    theirs = STMultipleNegativesRankingLoss(model, scale=scale, similarity_fct=st_similarity)
    ours_value, ours_grads = value_and_grads(lambda c: ours(as_features(c), None), cols)
    theirs_value, theirs_grads = value_and_grads(lambda c: theirs(as_features(c), None), cols)
    torch.testing.assert_close(ours_value, theirs_value, rtol=1e-12, atol=1e-14)
    for got, want in zip(ours_grads, theirs_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-14)


def test_module_config_and_defaults():
    loss = MultipleNegativesRankingLoss(EmbeddingColumns())
    assert loss.get_config_dict() == {"scale": 20.0, "similarity": "cos"}
    assert loss.batch_extras == ()


@pytest.mark.parametrize("kwargs", [{"scale": 0}, {"scale": -1.0}, {"scale": True}, {"similarity": "l2"}])
def test_bad_options_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        MultipleNegativesRankingLoss(EmbeddingColumns(), **kwargs)
    with pytest.raises(ConfigError):
        multiple_negatives_ranking_loss(*make_batch(), **kwargs)


def test_module_refuses_labels_and_single_columns():
    loss = MultipleNegativesRankingLoss(EmbeddingColumns())
    cols = make_batch()
    with pytest.raises(ConfigError, match="takes no labels"):
        loss(as_features(cols), torch.zeros(5, dtype=torch.long))
    with pytest.raises(ConfigError, match="anchor, positive"):
        loss(as_features(cols[:1]), None)
    with pytest.raises(ConfigError, match="batch extras"):
        loss(as_features(cols), None, ids=torch.arange(5))


def test_mismatched_columns_are_config_errors():
    anchors, positives = make_batch(n=5)
    with pytest.raises(ConfigError, match="positives"):
        multiple_negatives_ranking_loss(anchors, positives[:4])
    with pytest.raises(ConfigError, match=r"hard_negatives\[0\]"):
        multiple_negatives_ranking_loss(anchors, positives, [positives[:, :3]])
