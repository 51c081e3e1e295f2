"""SBERT's softmax loss (Reimers & Gurevych 2019) against a loop reference and sentence-transformers' SoftmaxLoss."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer.losses import SoftmaxLoss as STSoftmaxLoss
from torch import nn

from sentcl.errors import ConfigError
from sentcl.losses import SoftmaxLoss, pair_features, softmax_loss


def softmax_reference(u, v, labels, weight, bias, concatenation):
    """Mean over pairs of −log softmax(W_t [parts of u, v, |u−v|, u*v] + b)[label], with Python loops."""
    n, dim = u.shape
    num_labels = weight.shape[0]
    total = 0.0
    for i in range(n):
        z = []
        for part in concatenation:
            for c in range(dim):
                z.append(
                    {"u": u[i, c], "v": v[i, c], "|u-v|": torch.abs(u[i, c] - v[i, c]), "u*v": u[i, c] * v[i, c]}[part]
                )
        logits = []
        for k in range(num_labels):
            o_k = bias[k] if bias is not None else 0.0
            for m in range(len(z)):
                o_k = o_k + weight[k, m] * z[m]
            logits.append(o_k)
        normaliser = sum(torch.exp(o) for o in logits)
        total = total - torch.log(torch.exp(logits[int(labels[i])]) / normaliser)
    return total / n


def make_inputs(n=5, dim=4, num_labels=3, parts=3, seed=0, bias=True):
    g = torch.Generator().manual_seed(seed)
    u = torch.randn(n, dim, generator=g, dtype=torch.float64, requires_grad=True)
    v = torch.randn(n, dim, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(num_labels, parts * dim, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(num_labels, generator=g, dtype=torch.float64, requires_grad=True) if bias else None
    labels = torch.randint(0, num_labels, (n,), generator=g)
    return u, v, labels, weight, b


CONCATENATIONS = [
    ("u", "v", "|u-v|"),  # SBERT's choice
    ("u", "v", "|u-v|", "u*v"),
    ("|u-v|", "u*v"),
    ("u*v", "v"),
]


@pytest.mark.parametrize("concatenation", CONCATENATIONS)
@pytest.mark.parametrize("bias", [True, False])
def test_value_and_gradients_match_loop_reference(concatenation, bias):
    u, v, labels, weight, b = make_inputs(parts=len(concatenation), seed=len(concatenation), bias=bias)
    leaves = [u, v, weight] + ([b] if bias else [])
    ours = softmax_loss(u, v, labels, weight, b, concatenation=concatenation)
    ref = softmax_reference(u, v, labels, weight, b, concatenation)
    torch.testing.assert_close(ours, ref, rtol=1e-10, atol=1e-12)
    for got, want in zip(torch.autograd.grad(ours, leaves), torch.autograd.grad(ref, leaves), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-8, atol=1e-12)


def test_reference_comparison_would_catch_wrong_sign_order_part_and_axis():
    u, v, labels, weight, b = (t.detach() if t is not None else None for t in make_inputs(seed=7))
    loss = softmax_loss(u, v, labels, weight, b)
    logits = F.linear(torch.cat([u, v, (u - v).abs()], 1), weight, b)
    wrong = {
        "sign": -loss,
        "u and v swapped": softmax_loss(v, u, labels, weight, b),
        "u − v instead of |u − v|": F.cross_entropy(F.linear(torch.cat([u, v, u - v], 1), weight, b), labels),
        "softmax over the batch (axis 0)": -torch.log_softmax(logits, dim=0)[torch.arange(5), labels].mean(),
        "sum over pairs": 5 * loss,
    }
    torch.testing.assert_close(loss, softmax_reference(u, v, labels, weight, b, ("u", "v", "|u-v|")))
    for name, value in wrong.items():
        assert abs(float(value) - float(loss)) > 1e-2, name


class EmbeddingColumns(nn.Module):
    """A stand-in encoder: each column's feature dict already carries its embeddings."""

    device = torch.device("cpu")

    def forward(self, features):
        return {"sentence_embedding": features["sentence_embedding"]}


@pytest.mark.parametrize(
    ("concatenation", "st_flags"),
    [
        (("u", "v", "|u-v|"), {}),
        (("u", "v", "|u-v|", "u*v"), {"concatenation_sent_multiplication": True}),
        (("|u-v|", "u*v"), {"concatenation_sent_rep": False, "concatenation_sent_multiplication": True}),
        (("u", "v"), {"concatenation_sent_difference": False}),
    ],
)
def test_module_matches_sentence_transformers(concatenation, st_flags):
    """Same embeddings and classifier weights through both modules' forward: same loss and gradients."""
    torch.manual_seed(0)
    model = EmbeddingColumns()
    theirs = STSoftmaxLoss(model, embedding_dimension=6, num_labels=3, **st_flags).double()
    ours = SoftmaxLoss(model, num_labels=3, concatenation=concatenation, embedding_dimension=6).double()
    ours.classifier.load_state_dict(theirs.classifier.state_dict())
    g = torch.Generator().manual_seed(1)
    u, v = (torch.randn(7, 6, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(2))
    labels = torch.tensor([0, 1, 2, 2, 1, 0, 1])
    results = []
    for loss in (ours, theirs):
        value = loss([{"sentence_embedding": u}, {"sentence_embedding": v}], labels)
        leaves = [u, v, loss.classifier.weight, loss.classifier.bias]
        results.append((value.detach(), torch.autograd.grad(value, leaves)))
    (ours_value, ours_grads), (theirs_value, theirs_grads) = results
    torch.testing.assert_close(ours_value, theirs_value, rtol=1e-12, atol=1e-14)
    for got, want in zip(ours_grads, theirs_grads, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-14)


def test_pair_features_follow_the_given_order():
    u, v = torch.tensor([[1.0, -2.0]]), torch.tensor([[3.0, 5.0]])
    assert pair_features(u, v).tolist() == [[1.0, -2.0, 3.0, 5.0, 2.0, 7.0]]
    assert pair_features(u, v, ("u*v", "u")).tolist() == [[3.0, -10.0, 1.0, -2.0]]


def test_module_classifier_is_trainable_and_sized_from_the_model():
    class WithDimension(EmbeddingColumns):
        def get_embedding_dimension(self):
            return 6

    loss = SoftmaxLoss(WithDimension(), num_labels=3)
    assert loss.classifier.in_features == 18 and loss.classifier.out_features == 3  # W_t ∈ R^{3n×k}
    assert {id(p) for p in loss.classifier.parameters()} <= {id(p) for p in loss.parameters()}
    assert loss.get_config_dict() == {"num_labels": 3, "concatenation": ["u", "v", "|u-v|"], "embedding_dimension": 6}
    with pytest.raises(ConfigError, match="embedding_dimension"):
        SoftmaxLoss(EmbeddingColumns(), num_labels=3)


def test_the_classifier_gets_its_own_rate_only_when_asked_and_trains_at_it(tmp_path):
    """SBERT trains the classifier at the run's rate: no group of its own, and the loss's configuration (a run's
    key) as before; with ``classifier_lr`` its weight and bias are in groups of their own at that rate (the bias
    without weight decay), and the trainer's optimizer steps them at it while the encoder keeps the run's rate."""
    from sentcl.data import TrainingData
    from sentcl.models import tiny_model
    from sentcl.training import Trainer, TrainingConfig

    assert SoftmaxLoss(EmbeddingColumns(), num_labels=3, embedding_dimension=4).parameter_groups() == []
    loss = SoftmaxLoss(EmbeddingColumns(), num_labels=3, embedding_dimension=4, classifier_lr=5e-3)
    groups = loss.parameter_groups()
    assert [g["params"] for g in groups] == [[loss.classifier.weight], [loss.classifier.bias]]
    assert [g["lr"] for g in groups] == [5e-3, 5e-3] and "weight_decay" not in groups[0] and groups[1]["weight_decay"] == 0.0
    assert loss.get_config_dict()["classifier_lr"] == 5e-3
    data = TrainingData(columns={"a": ["a cat", "a dog", "the sun", "two men"] * 4, "b": ["cats", "dogs", "sun", "men"] * 4},
                        labels=[0, 1, 2, 0] * 4, name="toy")
    config = TrainingConfig(batch_size=4, learning_rate=1e-4, scheduler="constant", log_steps=1, max_steps=1,
                            checkpoint_minutes=None)
    trainer = Trainer(tiny_model(0), lambda m: SoftmaxLoss(m, num_labels=3, classifier_lr=5e-3), data, config,
                      show_progress=False)
    trainer.train(tmp_path)
    rates = sorted({g["lr"] for g in trainer.optimizer.param_groups})
    assert rates == [1e-4, 5e-3]
    with pytest.raises(ConfigError, match="classifier_lr"):
        SoftmaxLoss(EmbeddingColumns(), num_labels=3, embedding_dimension=4, classifier_lr=0.0)


@pytest.mark.parametrize(
    "kwargs",
    [{"num_labels": 1}, {"num_labels": 3.0}, {"concatenation": ()}, {"concatenation": ("u", "u")}, {"concatenation": ("u-v",)}],
)
def test_bad_options_are_config_errors(kwargs):
    with pytest.raises(ConfigError):
        SoftmaxLoss(EmbeddingColumns(), **{"num_labels": 3, "embedding_dimension": 4, **kwargs})


def test_bad_labels_and_columns_are_config_errors():
    loss = SoftmaxLoss(EmbeddingColumns(), num_labels=3, embedding_dimension=4)
    u, v = torch.randn(5, 4), torch.randn(5, 4)
    features = [{"sentence_embedding": u}, {"sentence_embedding": v}]
    with pytest.raises(ConfigError, match="needs a class label"):
        loss(features, None)
    with pytest.raises(ConfigError, match=r"in \[0, 3\)"):
        loss(features, torch.tensor([0, 1, 2, 3, 0]))
    with pytest.raises(ConfigError, match="integer class indices"):
        loss(features, torch.zeros(5))
    with pytest.raises(ConfigError, match="sentence A, sentence B"):
        loss([*features, {"sentence_embedding": u}], torch.zeros(5, dtype=torch.long))
