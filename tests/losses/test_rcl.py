"""RCL's losses (Tan et al. 2022): Eq. 2 and Eq. 3 against loop-based references, their reductions
to Eq. 1, sentence-transformers' MNRL where the definitions coincide, and the trainer modules."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STMultipleNegativesRankingLoss

from sentcl.data.records import TrainingData
from sentcl.embeddings.store import write_store
from sentcl.errors import ConfigError
from sentcl.losses import EntropyLoss, RegulatorLoss, entropy_loss, multiple_negatives_ranking_loss, regulator_loss
from sentcl.losses.rcl import regulator_terms
from sentcl.models import tiny_model
from sentcl.training import SequentialBatchSampler, Trainer, TrainingConfig


def cos(a, b):
    dot = sum(a[k] * b[k] for k in range(len(a)))
    return dot / (torch.sqrt(sum(x * x for x in a)) * torch.sqrt(sum(x * x for x in b)))


def softmax_row(query, candidates, scale):
    exps = [torch.exp(scale * cos(query, c)) for c in candidates]
    total = sum(exps)
    return [e / total for e in exps]


def entropy_reference(queries, indexes, negatives=(), phi=0.0, scale=1.0):
    """Eq. 2 with loops: −log s_ii − φ Σ_{j≠i} s_ij log s_ij, mean over i."""
    m = len(queries)
    candidates = [indexes[j] for j in range(m)] + [neg[j] for neg in negatives for j in range(m)]
    total = 0.0
    for i in range(m):
        s = softmax_row(queries[i], candidates, scale)
        total = total - torch.log(s[i]) - phi * sum(s[j] * torch.log(s[j]) for j in range(len(candidates)) if j != i)
    return total / m


def regulator_reference(queries, indexes, aug_q, aug_i, negatives=(), scale=1.0, regulator_scale=None):
    """Eq. 3 with loops: Eq. 1 (at ``scale``) plus, per entropy model n, −log softmax of q_i over Au_q^n and of
    ind_i over Au_ind^n (at ``regulator_scale``, default ``scale``)."""
    regulator_scale = scale if regulator_scale is None else regulator_scale
    total = entropy_reference(queries, indexes, negatives, 0.0, scale) * len(queries)
    for trainable, augmented in ((queries, aug_q), (indexes, aug_i)):
        for targets in augmented:
            for i in range(len(trainable)):
                s = softmax_row(trainable[i], [targets[k] for k in range(len(targets))], regulator_scale)
                total = total - torch.log(s[i])
    return total / len(queries)


def batch(m=5, d=6, columns=2, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(m, d, generator=g, dtype=torch.float64).requires_grad_() for _ in range(columns)]


def grads(value, cols):
    return [g.detach() for g in torch.autograd.grad(value, cols)]


@pytest.mark.parametrize("phi", [0.0, 0.03, -0.05, 1.0])
@pytest.mark.parametrize(("negatives", "scale"), [(0, 1.0), (1, 1.0), (1, 20.0), (2, 5.0)])
def test_entropy_loss_matches_the_loop_reference_values_and_gradients(phi, negatives, scale):
    cols = batch(columns=2 + negatives, seed=negatives)
    ours = entropy_loss(cols[0], cols[1], cols[2:], phi=phi, scale=scale)
    ref = entropy_reference(cols[0], cols[1], cols[2:], phi=phi, scale=scale)
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)
    for got, want in zip(grads(ours, cols), grads(ref, cols), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-12)


class EmbeddingColumns(torch.nn.Module):
    """A stand-in encoder: each column's feature dict already carries its embeddings."""

    device = torch.device("cpu")

    def forward(self, features):
        return {"sentence_embedding": features["sentence_embedding"]}


@pytest.mark.parametrize("negatives", [0, 1])
def test_phi_zero_is_eq1_and_equals_sentence_transformers_mnrl(negatives):
    """Eq. 2 with φ = 0 is Eq. 1: sentence-transformers' MNRL (cosine, scale 20), values and gradients."""
    cols = batch(columns=2 + negatives, seed=4)
    model = EmbeddingColumns()
    features = [{"sentence_embedding": c} for c in cols]
    ours = EntropyLoss(model, phi=0.0, scale=20.0)(features, None)
    theirs = STMultipleNegativesRankingLoss(model, scale=20.0)(features, None)
    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-14)
    for got, want in zip(grads(ours, cols), grads(theirs, cols), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-14)


def test_the_entropy_term_has_the_sign_the_text_describes():
    """φ > 0 lowers the entropy of s_{i,j≠i} when minimised (the text: "enhance the certainty")."""
    q, i = (c.detach() for c in batch(seed=7))
    base = entropy_loss(q, i, phi=0.0, scale=1.0)
    log_s = torch.log_softmax(F.normalize(q, dim=1) @ F.normalize(i, dim=1).T, dim=1)
    off = ~torch.eye(len(q), dtype=torch.bool)
    h = -(log_s.exp() * log_s * off).sum(1).mean()
    assert h > 0
    torch.testing.assert_close(entropy_loss(q, i, phi=0.5, scale=1.0), base + 0.5 * h)
    wrong = {
        "opposite sign": base - 0.5 * h,
        "entropy including j = i": base + 0.5 * -(log_s.exp() * log_s).sum(1).mean(),
        "softmax over queries (axis 0)": -torch.log_softmax(F.normalize(q, dim=1) @ F.normalize(i, dim=1).T, 0).diagonal().mean() + 0.5 * h,
        "scale 20": entropy_loss(q, i, phi=0.5, scale=20.0),
    }
    for name, value in wrong.items():
        assert not torch.isclose(value, entropy_loss(q, i, phi=0.5, scale=1.0), atol=1e-4), name


@pytest.mark.parametrize(("n_models", "negatives", "scale", "regulator_scale"),
                         [(0, 0, 1.0, None), (1, 0, 1.0, None), (2, 1, 20.0, None), (4, 0, 3.0, None), (2, 1, 20.0, 1.0),
                          (3, 0, 1.0, 5.0)])
def test_regulator_loss_matches_the_loop_reference(n_models, negatives, scale, regulator_scale):
    cols = batch(columns=2 + negatives, seed=n_models)
    g = torch.Generator().manual_seed(100 + n_models)
    aug_q = [torch.randn(5, 6, generator=g, dtype=torch.float64) for _ in range(n_models)]
    aug_i = [torch.randn(5, 6, generator=g, dtype=torch.float64) for _ in range(n_models)]
    ours = regulator_loss(cols[0], cols[1], aug_q, aug_i, scale=scale, regulator_scale=regulator_scale,
                          hard_negatives=cols[2:])
    ref = regulator_reference(cols[0], cols[1], aug_q, aug_i, cols[2:], scale=scale, regulator_scale=regulator_scale)
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)
    for got, want in zip(grads(ours, cols), grads(ref, cols), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-12)


def test_no_regulators_is_eq1_and_augmented_embeddings_get_no_gradient():
    q, i = batch(seed=9)
    torch.testing.assert_close(regulator_loss(q, i, [], [], scale=20.0), multiple_negatives_ranking_loss(q, i, scale=20.0))
    aug = torch.randn(5, 6, dtype=torch.float64, requires_grad=True)
    regulator_loss(q, i, [aug], [aug * 2], scale=1.0).backward()
    assert aug.grad is None
    assert q.grad is not None and i.grad is not None


def test_the_regulators_have_their_own_scale():
    """Eq. 1's scale and the regulators' are separate: changing one leaves the other term as it was. Against
    targets next to the trainable embeddings (cosine ~ 1, the others ~ 0) scale 20 saturates the regulators
    (a term near 0: nothing to learn), scale 1 leaves them a pull of about log M."""
    q, i = (c.detach() for c in batch(m=8, seed=13))
    near_q, near_i = q + 0.01 * torch.randn_like(q), i + 0.01 * torch.randn_like(i)
    eq1_20, reg_20 = regulator_terms(q, i, [near_q], [near_i], scale=20.0)
    eq1_same, reg_1 = regulator_terms(q, i, [near_q], [near_i], scale=20.0, regulator_scale=1.0)
    eq1_1, reg_1_too = regulator_terms(q, i, [near_q], [near_i], scale=1.0)
    torch.testing.assert_close(eq1_same, eq1_20)
    torch.testing.assert_close(reg_1, reg_1_too)
    assert not torch.isclose(eq1_1, eq1_20)
    assert reg_20 < 0.1 < 1.0 < reg_1 < 2 * math.log(8)


def test_regulator_reference_would_catch_swapped_or_transposed_regulators():
    q, i = (c.detach() for c in batch(seed=11))
    g = torch.Generator().manual_seed(5)
    aq, ai = torch.randn(5, 6, generator=g, dtype=torch.float64), torch.randn(5, 6, generator=g, dtype=torch.float64)
    right = regulator_loss(q, i, [aq], [ai], scale=1.0)
    target = torch.arange(5)
    wrong = {
        "query against augmented indexes": regulator_loss(q, i, [ai], [aq], scale=1.0),
        "transposed regulator": multiple_negatives_ranking_loss(q, i, scale=1.0)
        + F.cross_entropy((F.normalize(aq, dim=1) @ F.normalize(q, dim=1).T) * 1.0, target)
        + F.cross_entropy(F.normalize(i, dim=1) @ F.normalize(ai, dim=1).T, target) + 1.0,
        "regulators halved (mean over 2N)": multiple_negatives_ranking_loss(q, i, scale=1.0)
        + (right - multiple_negatives_ranking_loss(q, i, scale=1.0)) / 2,
    }
    for name, value in wrong.items():
        assert not torch.isclose(value, right, atol=1e-4), name


def test_bad_arguments_are_errors():
    q, i = (c.detach() for c in batch())
    with pytest.raises(ConfigError, match="one augmented query and one augmented index"):
        regulator_loss(q, i, [q], [], scale=1.0)
    with pytest.raises(ConfigError, match="scale"):
        entropy_loss(q, i, phi=0.1, scale=0.0)
    with pytest.raises(ConfigError, match="phi"):
        entropy_loss(q, i, phi=math.nan, scale=1.0)


@pytest.mark.slow
def test_regulator_module_looks_augmented_embeddings_up_by_example_id(tmp_path):
    """The trainer passes ids; the module reads the stored rows of exactly those ids (here in a
    shuffled order with non-contiguous ids) and computes Eq. 3 with them."""
    model = tiny_model(seed=0)
    texts_q = [f"query number {k}" for k in range(8)]
    texts_i = [f"index text {k}" for k in range(8)]
    ids = np.array([70, 10, 30, 50, 20, 60, 40, 0])
    rng = np.random.default_rng(0)
    fixed = {t: rng.normal(size=model.get_embedding_dimension()) for t in texts_q + texts_i}
    store = write_store(tmp_path / "s", lambda ts: np.stack([fixed[t] for t in ts]), ids,
                        {"query": texts_q, "index": texts_i}, show_progress=False)
    loss = RegulatorLoss(model, [store], scale=20.0)
    rows = [3, 0, 6]
    q = torch.randn(3, model.get_embedding_dimension(), dtype=torch.float32)
    i = torch.randn(3, model.get_embedding_dimension(), dtype=torch.float32)
    got = loss.compute_loss_from_embeddings([q, i], None, ids=torch.as_tensor(ids[rows]))
    aq = torch.tensor(np.stack([fixed[texts_q[r]] for r in rows]), dtype=torch.float16).float()
    ai = torch.tensor(np.stack([fixed[texts_i[r]] for r in rows]), dtype=torch.float16).float()
    torch.testing.assert_close(got, regulator_loss(q, i, [aq], [ai], scale=20.0))
    # and through the trainer: the module gets the ids of its rows and trains
    data = TrainingData({"query": texts_q, "index": texts_i}, ids=ids)
    config = TrainingConfig(batch_size=4, max_steps=2, seed=0, log_steps=1)
    result = Trainer(model, loss, data, config, sampler=SequentialBatchSampler(), show_progress=False).train(tmp_path / "run")
    assert result.global_step == 2 and all(math.isfinite(e["loss"]) for e in result.losses)


def test_entropy_module_is_eq2_on_the_columns():
    model = tiny_model(seed=0)
    q, i, n = (c.detach().float() for c in batch(d=model.get_embedding_dimension(), columns=3))
    loss = EntropyLoss(model, phi=0.02, scale=20.0)
    value = loss.compute_loss_from_embeddings([q, i, n])
    torch.testing.assert_close(value, entropy_loss(q, i, [n], phi=0.02, scale=20.0))
    assert loss.get_config_dict() == {"phi": 0.02, "scale": 20.0}
    # its two terms, for the health record: Eq. 1 and phi * H, adding up to the loss
    assert set(loss.last_terms) == {"Eq. 1", "phi * entropy"}
    assert loss.last_terms["Eq. 1"] == pytest.approx(float(entropy_loss(q, i, [n], phi=0.0, scale=20.0)), rel=1e-6)
    assert sum(loss.last_terms.values()) == pytest.approx(float(value), rel=1e-6)
    with pytest.raises(ConfigError, match="takes no labels"):
        loss.compute_loss_from_embeddings([q, i], torch.zeros(5))
