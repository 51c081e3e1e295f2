r"""Multiple-negatives ranking loss (MNRL), Eq. 1 of Taneja et al. (2023).

A batch holds N positive pairs :math:`(x_i, y_i)`; each anchor :math:`x_i` is scored against
every positive of the batch, the other :math:`y_j` (:math:`j \ne i`) serving as in-batch
negatives. The paper writes the batch objective as

.. math::

    J_{MNRL}(\theta) = \frac{1}{N} \sum_{i=1}^{N}
        \log \frac{\exp \sigma(f_\theta(x_i), f_\theta(y_i))}
                  {\sum_{j=1}^{N} \exp \sigma(f_\theta(x_i), f_\theta(y_j))}        \qquad (1)

**Sign.** Eq. 1 is printed without a minus sign: as printed it is a mean log-probability
(≤ 0), to be maximised. The paper's text says training "minimizes the negative log-likelihood
for softmax normalized scores", so the loss minimised here is :math:`-J_{MNRL}`, which is ≥ 0 and
is 0 only when every positive takes all the probability (a single pair without hard negatives gives exactly
:math:`-\log 1 = 0`).

**Scale.** :math:`\sigma` is the similarity multiplied by ``scale`` (an inverse temperature
:math:`1/\tau`). The paper does not print a scale; it trains with sentence-transformers'
MultipleNegativesRankingLoss, whose defaults are cosine similarity and scale 20 (τ = 0.05),
the defaults here.

**Hard negatives.** With (anchor, positive, negative₁, …, negative_m) rows, every hard negative
of the batch is an extra candidate for every anchor: "the loss will use all :math:`y_j`
(:math:`j \ne i`) and all :math:`n_j` as negatives for the pair :math:`(x_i, y_i)`" (§III.B.1).
The denominator then runs over the N positives and the N·m negatives.

**Duplicates.** A text that occurs twice among a batch's positives is a negative of the
anchor it is the positive of: with :math:`y_j = y_i` the probability of the positive is at most
1/2 and the anchor's term at least log 2, whatever the encoder. The equation says so, and this
loss computes exactly that; it is the no-duplicates batch sampler that keeps such batches out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentcl.errors import ConfigError
from sentcl.losses.base import SentclLoss, Similarity, check_columns, check_scale, check_similarity, similarity_matrix


def multiple_negatives_ranking_loss(
    anchors: Tensor,
    positives: Tensor,
    hard_negatives: Sequence[Tensor] = (),
    *,
    scale: float = 20.0,
    similarity: Similarity = "cos",
) -> Tensor:
    r"""The MNRL of a batch, :math:`-J_{MNRL}` of Eq. 1 (Taneja et al. 2023), from embeddings.

    Args:
        anchors: :math:`f_\theta(x_i)`, shape ``(N, d)``.
        positives: :math:`f_\theta(y_i)`, shape ``(N, d)``; row i is the positive of anchor i.
        hard_negatives: zero or more ``(N, d)`` tensors; row i of each is a hard negative of
            pair i, and every one of them is a candidate for every anchor.
        scale: inverse temperature multiplying the similarity (sentence-transformers' default 20).
        similarity: ``"cos"`` or ``"dot"``.

    Returns:
        The scalar :math:`-\frac{1}{N}\sum_i \log \frac{\exp(s\,\sigma(x_i, y_i))}
        {\sum_{c} \exp(s\,\sigma(x_i, c))}`, c over the N positives then the N·m hard negatives.
    """
    scale = check_scale(scale)
    check_similarity(similarity)
    columns = [anchors, positives, *hard_negatives]
    check_columns(columns, ["anchors", "positives"] + [f"hard_negatives[{k}]" for k in range(len(hard_negatives))])
    candidates = torch.cat(columns[1:], dim=0)  # (N·(1 + m), d): positives first, so y_i is column i
    scores = scale * similarity_matrix(anchors, candidates, similarity)  # row i: anchor i against every candidate
    positive_index = torch.arange(anchors.shape[0], device=anchors.device)
    return F.cross_entropy(scores, positive_index)  # mean over anchors of logsumexp_c s_ic − s_ii


MNRL_CITATION = """@misc{taneja2023efficient,
    title = "Efficient Deep Pre-trained Sentence Embedding Model for Similarity Search",
    author = "Taneja, Khushboo and Vashishtha, Jyoti and Ratnoo, Saroj",
    year = "2023",
    note = "Published 11 September 2023; the copy in ../shared/papers does not print its venue",
}"""
"""The BibTeX of the paper the loss comes from (:attr:`SentclLoss.citation`)."""


class MultipleNegativesRankingLoss(SentclLoss):
    r"""MNRL (Eq. 1, Taneja et al. 2023) as a sentence-transformers loss module.

    Columns: (anchor, positive) or (anchor, positive, negative₁, …, negative_m); no labels
    (every row is a positive pair). See :mod:`sentcl.losses.mnrl` for the reading of the
    equation (sign, scale, hard negatives, duplicates) and :func:`multiple_negatives_ranking_loss`
    for the math.

    Args:
        model: the SentenceTransformer being trained.
        scale: inverse temperature 1/τ multiplying the similarity (default 20, as sentence-transformers).
        similarity: ``"cos"`` (default) or ``"dot"``.

    Inputs:

        +-------------------------------------------------+--------+
        | Texts                                           | Labels |
        +=================================================+========+
        | (anchor, positive) pairs                        | none   |
        +-------------------------------------------------+--------+
        | (anchor, positive, negative_1, ..., negative_m) | none   |
        +-------------------------------------------------+--------+
    """

    citation: ClassVar[str] = MNRL_CITATION

    def __init__(self, model: nn.Module, scale: float = 20.0, similarity: Similarity = "cos") -> None:
        super().__init__(model)
        self.scale = check_scale(scale)
        self.similarity = check_similarity(similarity)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        if labels is not None:
            raise ConfigError(
                "MultipleNegativesRankingLoss takes no labels: every (anchor, positive) row is a positive pair. "
                "Keep only the positive pairs (e.g. NLI entailment) and drop the label column."
            )
        if len(embeddings) < 2:
            raise ConfigError(
                f"MultipleNegativesRankingLoss expects (anchor, positive[, negative...]) columns, got {len(embeddings)}"
            )
        anchors, positives, *hard_negatives = embeddings
        self.chance_level = math.log(anchors.shape[0] * (1 + len(hard_negatives)))  # uniform over the candidates
        return multiple_negatives_ranking_loss(
            anchors, positives, hard_negatives, scale=self.scale, similarity=self.similarity
        )

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "similarity": self.similarity}
