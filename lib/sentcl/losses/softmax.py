r"""SBERT's softmax (classification) loss (Reimers & Gurevych 2019, §3, "Classification Objective Function").

The two sentences of a pair are embedded separately, u and v (dimension n), their
concatenation with the element-wise difference goes through a trainable linear classifier,
and the loss is the cross-entropy with the gold label:

.. math::

    o = \mathrm{softmax}\big(W_t \, [u; v; |u - v|]\big), \qquad W_t \in \mathbb{R}^{3n \times k},

k the number of labels (3 for NLI: entailment, neutral, contradiction). The loss of a batch is
the mean over pairs of :math:`-\log o_{\text{label}}`. SBERT's ablation (its Table 6) also tried
other concatenations, among them the element-wise product :math:`u * v`; ``concatenation``
chooses the parts and their order. As in SBERT's code (sentence-transformers' ``SoftmaxLoss``,
an ``nn.Linear``), the classifier has a bias; the paper's formula leaves it out. ``weight`` below
is stored as PyTorch stores a linear layer, ``(k, m·n)``, i.e. :math:`W_t^\top`.

The classifier only serves training: it is not part of the sentence encoder and is not saved with it.
It starts from random weights; SBERT trains it at the encoder's rate (2e-5) over ~36,000 steps. A short
run at that rate leaves it near chance (ln k) and the encoder moving on its random gradients: ``classifier_lr``
gives it its own rate (an assumption of a miniature, not the paper's; off by default).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentcl.errors import ConfigError, check_number
from sentcl.losses.base import SentclLoss, check_columns

_PARTS = {
    "u": lambda u, v: u,
    "v": lambda u, v: v,
    "|u-v|": lambda u, v: torch.abs(u - v),
    "u*v": lambda u, v: u * v,
}
CONCATENATION_PARTS: tuple[str, ...] = tuple(_PARTS)
SBERT_CONCATENATION: tuple[str, ...] = ("u", "v", "|u-v|")


def check_concatenation(concatenation: Sequence[str]) -> tuple[str, ...]:
    """``concatenation`` as a tuple: a non-empty sequence of distinct :data:`CONCATENATION_PARTS`."""
    parts = tuple(concatenation) if not isinstance(concatenation, str) else (concatenation,)
    if not parts or len(set(parts)) != len(parts) or not set(parts) <= set(CONCATENATION_PARTS):
        raise ConfigError(
            f"concatenation must be a non-empty sequence of distinct parts from {CONCATENATION_PARTS}, "
            f"got {concatenation!r}"
        )
    return parts


def pair_features(u: Tensor, v: Tensor, concatenation: Sequence[str] = SBERT_CONCATENATION) -> Tensor:
    """The classifier's input: the chosen parts of (u, v, |u − v|, u * v), concatenated in the order given."""
    return torch.cat([_PARTS[name](u, v) for name in check_concatenation(concatenation)], dim=-1)


def softmax_loss(
    u: Tensor,
    v: Tensor,
    labels: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    *,
    concatenation: Sequence[str] = SBERT_CONCATENATION,
) -> Tensor:
    r"""SBERT's classification objective, :math:`\mathrm{CE}(\mathrm{softmax}(W_t [u; v; |u-v|] + b), \text{label})`.

    Args:
        u, v: the two sentences' embeddings, shape ``(N, n)`` each.
        labels: class indices, shape ``(N,)``, integers in ``[0, k)``.
        weight: the classifier, shape ``(k, m·n)`` (:math:`W_t^\top`; m = len(concatenation)).
        bias: shape ``(k,)``, or None for the paper's formula without bias.
        concatenation: which parts of (u, v, |u − v|, u * v) the classifier sees, in order.

    Returns:
        The mean over the N pairs of :math:`-\log o_{\text{label}}`.
    """
    check_columns([u, v], ["u", "v"])
    num_labels = weight.shape[0]
    if labels.ndim != 1 or labels.shape[0] != u.shape[0] or labels.dtype.is_floating_point:
        raise ConfigError(
            f"labels must be {u.shape[0]} integer class indices (shape ({u.shape[0]},)), "
            f"got dtype {labels.dtype} and shape {tuple(labels.shape)}"
        )
    if labels.numel() and not (0 <= int(labels.min()) and int(labels.max()) < num_labels):
        raise ConfigError(
            f"labels must lie in [0, {num_labels}) (num_labels = {num_labels}), "
            f"found values from {int(labels.min())} to {int(labels.max())}"
        )
    features = pair_features(u, v, concatenation)
    logits = F.linear(features.to(weight.dtype), weight, bias)
    return F.cross_entropy(logits, labels)


SBERT_CITATION = """@inproceedings{reimers2019sentencebert,
    title = "Sentence-{BERT}: Sentence Embeddings using {S}iamese {BERT}-Networks",
    author = "Reimers, Nils and Gurevych, Iryna",
    booktitle = "Proceedings of the 2019 Conference on Empirical Methods in Natural Language Processing and the 9th International Joint Conference on Natural Language Processing (EMNLP-IJCNLP)",
    year = "2019",
    pages = "3982--3992",
    doi = "10.18653/v1/D19-1410",
}"""
"""The BibTeX of the paper the loss comes from (:attr:`SentclLoss.citation`)."""


class SoftmaxLoss(SentclLoss):
    r"""SBERT's softmax loss (Reimers & Gurevych 2019) as a sentence-transformers loss module.

    Columns: (sentence A, sentence B) with an integer class label per pair. The trainable
    classifier :math:`W_t` (an ``nn.Linear`` with bias, as in SBERT's code) is a parameter of this
    module, so a trainer that optimises the loss module's parameters trains it too.

    Args:
        model: the SentenceTransformer being trained.
        num_labels: k, the number of classes (3 for NLI).
        concatenation: parts of (u, v, |u − v|, u * v) fed to the classifier, in order
            (default SBERT's ``("u", "v", "|u-v|")``).
        embedding_dimension: n; read from ``model.get_embedding_dimension()`` when not given.
        classifier_lr: the classifier's own learning rate (its optimizer group, under the run's schedule);
            None: the run's rate, as SBERT.

    Inputs:

        +--------------------------------+-------------+
        | Texts                          | Labels      |
        +================================+=============+
        | (sentence A, sentence B) pairs | class (int) |
        +--------------------------------+-------------+
    """

    citation: ClassVar[str] = SBERT_CITATION

    def __init__(
        self,
        model: nn.Module,
        num_labels: int,
        concatenation: Sequence[str] = SBERT_CONCATENATION,
        embedding_dimension: int | None = None,
        classifier_lr: float | None = None,
    ) -> None:
        super().__init__(model)
        if classifier_lr is not None:
            check_number("classifier_lr", classifier_lr, low=0.0, low_open=True)
        self.classifier_lr = None if classifier_lr is None else float(classifier_lr)
        if isinstance(num_labels, bool) or not isinstance(num_labels, int) or num_labels < 2:
            raise ConfigError(f"num_labels must be an integer ≥ 2, got {num_labels!r}")
        if embedding_dimension is None:
            get_dimension = getattr(model, "get_embedding_dimension", None)
            embedding_dimension = get_dimension() if get_dimension is not None else None
            if embedding_dimension is None:
                raise ConfigError("the model does not report its embedding dimension: pass embedding_dimension")
        self.num_labels = num_labels
        self.chance_level = math.log(num_labels)  # uniform over the k classes
        self.concatenation = check_concatenation(concatenation)
        self.embedding_dimension = int(embedding_dimension)
        self.classifier = nn.Linear(
            len(self.concatenation) * self.embedding_dimension, num_labels, device=getattr(model, "device", None)
        )

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        if len(embeddings) != 2:
            raise ConfigError(f"SoftmaxLoss expects (sentence A, sentence B) columns, got {len(embeddings)}")
        if labels is None:
            raise ConfigError("SoftmaxLoss needs a class label for every pair (a 'label' column)")
        u, v = embeddings
        return softmax_loss(
            u, v, labels, self.classifier.weight, self.classifier.bias, concatenation=self.concatenation
        )

    def parameter_groups(self) -> list[dict[str, Any]]:
        """The classifier in its own optimizer groups at ``classifier_lr`` (none when it trains at the run's rate):
        its weight under the run's weight decay, its bias under none, as the trainer groups the encoder's."""
        if self.classifier_lr is None:
            return []
        return [{"params": [self.classifier.weight], "lr": self.classifier_lr},
                {"params": [self.classifier.bias], "lr": self.classifier_lr, "weight_decay": 0.0}]

    def get_config_dict(self) -> dict[str, Any]:
        config = {
            "num_labels": self.num_labels,
            "concatenation": list(self.concatenation),
            "embedding_dimension": self.embedding_dimension,
        }
        return config | ({} if self.classifier_lr is None else {"classifier_lr": self.classifier_lr})
