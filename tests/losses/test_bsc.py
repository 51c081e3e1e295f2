"""BSC loss (Chernyavskiy et al. 2022, Eqs. 1–6) against loop references and sentence-transformers."""

from __future__ import annotations

import math

import pytest
import torch
from sentence_transformers.sentence_transformer.losses import CosineSimilarityLoss as STCosineSimilarityLoss
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STMNRL
from sentence_transformers.sentence_transformer.losses import MultipleNegativesSymmetricRankingLoss as STMNSRL
from sentence_transformers.sentence_transformer.losses import TripletLoss as STTripletLoss
from torch import nn

from sentcl.errors import ConfigError
from sentcl.losses import (
    BatchSoftmaxContrastiveLoss,
    ComboLoss,
    TripletLoss,
    batch_softmax_contrastive_loss,
    cosine_mse_loss,
    triplet_loss,
)
from sentcl.losses.bsc import identical_anchor_groups


def normalized(vectors, normalization):
    """§3.5 with loops: L2 per vector, or each coordinate divided by its range over the vectors."""
    if normalization == "l2":
        return [v / torch.sqrt(sum(v[k] ** 2 for k in range(len(v)))) for v in vectors]
    if normalization == "coordinate":
        d = len(vectors[0])
        spread = [max(v[k] for v in vectors) - min(v[k] for v in vectors) for k in range(d)]
        return [torch.stack([v[k] / spread[k] for k in range(d)]) for v in vectors]
    return list(vectors)


def dot(a, b):
    return sum(a[k] * b[k] for k in range(len(a)))


def side_reference(anchors, candidates, positives, keep, tau):
    """One side of Eq. 1 with Eqs. 3–5, loops: −(1/m) Σ_i 1[y_i] (mean_{j∈P_i} s_ij − log Σ_c exp s_ic)."""
    m = len(anchors)
    total = 0.0
    for i in range(m):
        if not keep[i]:
            continue
        pos = sum(dot(anchors[i], candidates[j]) / tau for j in positives[i]) / len(positives[i])
        norm = torch.log(sum(torch.exp(dot(anchors[i], c) / tau) for c in candidates))
        total = total + pos - norm
    return -total / m


def bsc_reference(q, a, labels=None, *, tau, symmetric=True, normalization="l2", sides="sum", threshold=0.5,
                  negatives=(), groups=None):
    m = len(q)
    keep = [True] * m if labels is None else [float(y) > threshold for y in labels]
    groups = list(range(m)) if groups is None else list(groups)
    positives = [[j for j in range(m) if (j == i) or (groups[j] == groups[i] and keep[i] and keep[j])] for i in range(m)]
    qn = normalized(list(q), normalization)
    cand = normalized(list(a) + [n[j] for n in negatives for j in range(m)], normalization)
    first = side_reference(qn, cand, positives, keep, tau)
    if not symmetric:
        return first
    second = side_reference(cand[:m], qn, positives, keep, tau)
    return first + second if sides == "sum" else (first + second) / 2


def batch(n=6, d=5, extra=0, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=g, dtype=torch.float64).requires_grad_() for _ in range(2 + extra)]


def value_and_grads(fn, cols):
    loss = fn(cols)
    return loss.detach(), [g.detach() for g in torch.autograd.grad(loss, cols)]


def assert_same(fn, ref, cols):
    ours, ours_grads = value_and_grads(fn, cols)
    want, want_grads = value_and_grads(ref, cols)
    torch.testing.assert_close(ours, want, rtol=1e-9, atol=1e-12)
    for got, exp in zip(ours_grads, want_grads, strict=True):
        torch.testing.assert_close(got, exp, rtol=1e-8, atol=1e-10)
    return ours


CASES = [
    dict(tau=0.1),
    dict(tau=0.055, sides="mean"),
    dict(tau=0.2, symmetric=False),
    dict(tau=1.2, normalization="coordinate"),
    dict(tau=3.0, normalization="none"),
    dict(tau=0.1, labels=[1, 0, 1, 1, 0, 1]),
    dict(tau=0.07, labels=[0.9, 0.2, 0.65, 0.55, 1.0, 0.0], threshold=0.6),
    dict(tau=0.1, groups=[0, 0, 1, 2, 2, 2]),
    dict(tau=0.1, groups=[0, 0, 1, 2, 2, 2], labels=[1, 0, 1, 1, 1, 0]),
    dict(tau=0.1, extra=2),
    dict(tau=1.2, extra=1, normalization="coordinate", labels=[1, 1, 0, 1, 1, 1]),
]


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
def test_value_and_gradients_match_the_loop_reference(case):
    case = dict(case)
    extra, groups, labels = case.pop("extra", 0), case.pop("groups", None), case.pop("labels", None)
    cols = batch(extra=extra, seed=len(str(case)))
    y = None if labels is None else torch.tensor(labels, dtype=torch.float64)
    g = None if groups is None else torch.tensor(groups)
    ours = assert_same(
        lambda c: batch_softmax_contrastive_loss(
            c[0], c[1], y, temperature=case["tau"], symmetric=case.get("symmetric", True),
            normalization=case.get("normalization", "l2"), sides=case.get("sides", "sum"),
            threshold=case.get("threshold", 0.5), hard_negatives=c[2:], anchor_groups=g),
        lambda c: bsc_reference(c[0], c[1], y, negatives=c[2:], groups=groups, **case),
        cols,
    )
    assert ours > 0


def test_identical_anchors_give_back_eq_1():
    """Eqs. 3–4: with identical anchor embeddings, averaging over the group's positives changes nothing."""
    q, a = batch(seed=3)
    q = torch.cat([q[:1], q[:1], q[2:]])  # rows 0 and 1: the same anchor
    plain = batch_softmax_contrastive_loss(q, a, temperature=0.1)
    grouped = batch_softmax_contrastive_loss(q, a, temperature=0.1, anchor_groups=torch.tensor([0, 0, 1, 2, 3, 4]))
    torch.testing.assert_close(plain, grouped)
    # but an answer of the group does count as a positive when the anchors differ
    q2, _ = batch(seed=4)
    assert not torch.isclose(batch_softmax_contrastive_loss(q2, a, temperature=0.1),
                             batch_softmax_contrastive_loss(q2, a, temperature=0.1, anchor_groups=torch.tensor([0, 0, 1, 2, 3, 4])))


def test_matches_sentence_transformers_where_the_definitions_coincide():
    """Symmetric, averaged sides, L2, τ = 1/scale: MultipleNegativesSymmetricRankingLoss; one side: MNRL."""
    q, a, n = [c.detach().float() for c in batch(extra=1, seed=5)]
    for st_class, symmetric, negatives in ((STMNSRL, True, [n]), (STMNRL, False, [n])):
        st = st_class(nn.Identity(), scale=20.0)
        want = st.compute_loss_from_embeddings([q, a, *negatives], None)
        got = batch_softmax_contrastive_loss(q, a, temperature=0.05, symmetric=symmetric, sides="mean", hard_negatives=negatives)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_sum_of_sides_is_twice_the_mean():
    q, a = batch(seed=6)
    s = batch_softmax_contrastive_loss(q, a, temperature=0.1, sides="sum")
    m = batch_softmax_contrastive_loss(q, a, temperature=0.1, sides="mean")
    torch.testing.assert_close(s, 2 * m)


def test_wrong_variants_would_be_caught():
    """A sign flip, the softmax over the wrong axis, a labelled negative counted as a positive, a
    threshold ignored, a missing normalisation or temperature: each changes the value."""
    q, a = [c.detach() for c in batch(seed=7)]
    y = torch.tensor([0.9, 0.2, 0.65, 0.55, 1.0, 0.0], dtype=torch.float64)
    right = bsc_reference(q, a, y, tau=0.1, symmetric=False, threshold=0.6)
    ours = batch_softmax_contrastive_loss(q, a, y, temperature=0.1, symmetric=False, threshold=0.6)
    torch.testing.assert_close(ours, right)
    wrong = {
        "sign": -right,
        "axis (columns for rows)": bsc_reference(a, q, y, tau=0.1, symmetric=False, threshold=0.6),
        "labelled negative as positive": bsc_reference(q, a, None, tau=0.1, symmetric=False),
        "threshold ignored (0.5)": bsc_reference(q, a, y, tau=0.1, symmetric=False, threshold=0.5),
        "no normalisation": bsc_reference(q, a, y, tau=0.1, symmetric=False, normalization="none", threshold=0.6),
        "temperature as a scale": bsc_reference(q, a, y, tau=10.0, symmetric=False, threshold=0.6),
        "mean over positives only": right * 6 / 3,
    }
    for name, value in wrong.items():
        assert not torch.isclose(ours, torch.as_tensor(value), rtol=1e-4), name


def test_labelled_negative_stays_a_candidate():
    """Eq. 5: masking row 1 removes its terms, but its answer still competes in row 0's softmax."""
    q, a = [c.detach() for c in batch(seed=8)]
    y = torch.tensor([1.0, 0, 1, 1, 1, 1])
    full = batch_softmax_contrastive_loss(q, a, y, temperature=0.1, symmetric=False)
    keep = [0, 2, 3, 4, 5]
    dropped = batch_softmax_contrastive_loss(q[keep], a[keep], temperature=0.1, symmetric=False) * 5 / 6
    assert full > dropped  # the extra candidate raises the normalisers of the other rows


def test_coordinate_normalisation_divides_each_dimension_by_its_range():
    from sentcl.losses.bsc import normalize_embeddings

    x = torch.tensor([[1.0, 10.0], [3.0, 30.0], [2.0, 20.0]])
    torch.testing.assert_close(normalize_embeddings(x, "coordinate"), torch.tensor([[0.5, 0.5], [1.5, 1.5], [1.0, 1.0]]))


def test_mse_and_triplet_match_sentence_transformers():
    q, a, n = [c.detach().float() for c in batch(extra=1, seed=9)]
    y = torch.tensor([1.0, 0.0, 0.3, 0.8, 1.0, 0.5])
    st_mse = STCosineSimilarityLoss(nn.Identity())
    want = st_mse.loss_fct(st_mse.cos_score_transformation(torch.cosine_similarity(q, a)), y)
    torch.testing.assert_close(cosine_mse_loss(q, a, y), want)
    loop = sum((torch.dot(q[i], a[i]) / (q[i].norm() * a[i].norm()) - y[i]) ** 2 for i in range(6)) / 6
    torch.testing.assert_close(cosine_mse_loss(q, a, y), loop)
    st_triplet = STTripletLoss(nn.Identity(), triplet_margin=0.5)
    want = st_triplet.compute_loss_from_embeddings([q, a, n], None)
    torch.testing.assert_close(triplet_loss(q, a, n, margin=0.5), want)
    loop = sum(max((q[i] - a[i]).norm() - (q[i] - n[i]).norm() + 0.5, torch.tensor(0.0)) for i in range(6)) / 6
    torch.testing.assert_close(triplet_loss(q, a, n, margin=0.5), loop, rtol=1e-5, atol=1e-5)


class Encoder(nn.Module):
    """A stand-in model: embeds rows of features by a linear map of their 'x'."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 3)

    def forward(self, features):
        return {"sentence_embedding": self.linear(features["x"])}


def features(x, ids):
    return {"x": x, "input_ids": ids, "attention_mask": torch.ones_like(ids)}


def test_modules_compute_the_functions_and_eq_6():
    torch.manual_seed(0)
    model = Encoder()
    xq, xa = torch.randn(4, 4), torch.randn(4, 4)
    ids = torch.tensor([[1, 2], [1, 2], [3, 4], [5, 6]])  # rows 0 and 1: the same query
    y = torch.tensor([1.0, 0.0, 0.7, 1.0])
    q, a = model.linear(xq), model.linear(xa)
    groups = identical_anchor_groups(features(xq, ids))
    assert groups[0] == groups[1] and len(set(groups.tolist())) == 3
    bsc = BatchSoftmaxContrastiveLoss(model, temperature=0.1, threshold=0.6)
    want_bsc = batch_softmax_contrastive_loss(q, a, y, temperature=0.1, threshold=0.6, anchor_groups=groups)
    torch.testing.assert_close(bsc([features(xq, ids), features(xa, ids)], y), want_bsc)
    combo = ComboLoss(model, temperature=0.1, mu=0.1, threshold=0.6)
    want = 0.1 * want_bsc + 0.9 * cosine_mse_loss(q, a, y)
    torch.testing.assert_close(combo([features(xq, ids), features(xa, ids)], y), want)
    mse = ComboLoss(model, mu=0.0)
    torch.testing.assert_close(mse([features(xq, ids), features(xa, ids)], y), cosine_mse_loss(q, a, y))
    triplet = TripletLoss(model, margin=0.5)
    torch.testing.assert_close(triplet([features(xq, ids), features(xa, ids), features(xa.flip(0), ids)]),
                               triplet_loss(q, a, model.linear(xa.flip(0)), margin=0.5))
    with pytest.raises(ConfigError):
        ComboLoss(model, mu=0.5)([features(xq, ids), features(xa, ids)], None)


def test_trainable_temperature_has_its_own_group_and_learns():
    model = Encoder()
    fixed = BatchSoftmaxContrastiveLoss(model, temperature=0.1)
    assert fixed.parameter_groups() == [] and not fixed.inverse_temperature.requires_grad
    loss = BatchSoftmaxContrastiveLoss(model, temperature=0.1, trainable_temperature=True, temperature_lr=0.01)
    [group] = loss.parameter_groups()
    assert group["params"] == [loss.inverse_temperature] and group["weight_decay"] == 0.0 and group["lr"] == 0.01
    assert math.isclose(loss.temperature, 0.1, rel_tol=1e-6)
    q, a = torch.randn(5, 3), torch.randn(5, 3)
    value = loss.compute_loss_from_embeddings([q, a])
    (grad,) = torch.autograd.grad(value, [loss.inverse_temperature])
    assert grad.abs() > 0


def test_bad_options_are_refused():
    q, a = batch(seed=1)
    with pytest.raises(ConfigError):
        batch_softmax_contrastive_loss(q, a, temperature=0.1, normalization="max")
    with pytest.raises(ConfigError):
        batch_softmax_contrastive_loss(q, a, temperature=0.0)
    with pytest.raises(ConfigError):
        batch_softmax_contrastive_loss(q, a[:3], temperature=0.1)
    with pytest.raises(ConfigError):
        ComboLoss(Encoder(), mu=1.5)
