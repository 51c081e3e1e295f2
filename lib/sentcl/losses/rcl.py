r"""Regularized Contrastive Learning (RCL), Tan, Rolland & Tian (2022): Eqs. 1–3.

A batch holds M tuples :math:`\langle query_i, index_i\rangle` (NLI: premise, entailed
hypothesis), optionally with a hard negative each (the contradiction). With
:math:`s_{ij} = \mathrm{softmax}_j(\text{scale}\cdot\cos(q_i, c_j))` over the candidates
:math:`c` (the M indexes, then the hard negatives):

**Eq. 1** (the contrastive objective) :math:`-\log s_{ii}`.

**Eq. 2** (an *entropy model*'s objective)

.. math::

    J_i = -\log s_{ii} \;-\; \phi \sum_{j \ne i} s_{ij} \log s_{ij}            \qquad (2)

The paper writes "- φ Σ s log s" and explains that with φ > 0 minimising Eq. 2 *minimises the
entropy* ("enhance the certainty"); −Σ s log s is the entropy H, so read literally the printed
term is +φ·H — minimised for φ > 0 — which is what we compute: ``ce + φ · H_{j≠i}`` with
:math:`H_{j\ne i} = -\sum_{j\ne i} s_{ij}\log s_{ij}`. φ may be negative (Algorithm 1 runs
φ = −value … +value). The sum runs over the candidates other than the positive ("where
i ≠ j"), hard negatives included; the softmax is the one of the cross-entropy term.

**Eq. 3** (the final model's objective, with N entropy models)

.. math::

    J_i = -\log s_{ii} - \sum_{n=1}^{N} \log
      \frac{e^{\cos(q_i, Au^n_{q_i})}}{\sum_k e^{\cos(q_i, Au^n_{q_k})}}
      - \sum_{n=1}^{N} \log \frac{e^{\cos(ind_i, Au^n_{ind_i})}}{\sum_k e^{\cos(ind_i, Au^n_{ind_k})}}   \qquad (3)

two *regulators* per entropy model: the query :math:`q_i` against the batch's augmented query
embeddings :math:`Au^n_{q}` of model n, the index against the augmented index embeddings. The
augmented embeddings are fixed targets (precomputed, no gradient). Eq. 3 prints
:math:`ind_j` in its first numerator; the text ("the first term is the cross-entropy of
Eq. 1") settles it as :math:`ind_i`. All terms are means over the batch (as Eq. 1's
cross-entropy in sentence-transformers' MNRL).

**Scales.** The paper prints :math:`\exp(\cos)` with no temperature (scale 1) in every term. Its
base model, an SRoBERTa from sentence-transformers trained with MNRL, was trained with scale 20,
which sentence-transformers' losses default to. ``scale`` multiplies the cosines of Eq. 1 (and of
Eq. 2's softmax); ``regulator_scale`` those of the regulators, a separate parameter (default: the
same as ``scale``): against their own augmented embeddings (cosine near 1) and the batch's others
(near 0.2) the regulators' softmax is saturated at scale 20 (a term of about 0.005, no gradient to
speak of) and a uniformity-like pull at scale 1. The chapter's "Assumptions and deviations" says
which values the paper profile takes and why.

**Terms.** :class:`EntropyLoss` notes its two terms ("Eq. 1" and "phi * entropy") and
:class:`RegulatorLoss` its two ("Eq. 1" and "regulators") for the trainer's log and the run's
health record.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentcl.errors import ConfigError, check_number
from sentcl.losses.base import SentclLoss, check_columns, check_scale, similarity_matrix


def _scores(queries: Tensor, indexes: Tensor, hard_negatives: Sequence[Tensor], scale: float) -> Tensor:
    check_columns(
        [queries, indexes, *hard_negatives],
        ["queries", "indexes"] + [f"hard_negatives[{k}]" for k in range(len(hard_negatives))],
    )
    candidates = torch.cat([indexes, *hard_negatives], dim=0)  # indexes first: index i is column i
    return scale * similarity_matrix(queries, candidates, "cos")


def entropy_loss(
    queries: Tensor, indexes: Tensor, hard_negatives: Sequence[Tensor] = (), *, phi: float, scale: float
) -> Tensor:
    r"""Eq. 2 of Tan et al. (2022), mean over the batch: :math:`-\log s_{ii} + \phi\,H_{j \ne i}`.

    Args:
        queries: :math:`q_i`, shape ``(M, d)``.
        indexes: :math:`ind_i`, shape ``(M, d)``; row i is the positive of query i.
        hard_negatives: zero or more ``(M, d)`` tensors, extra candidates for every query.
        phi: the weight φ of the entropy term (any sign; 0 gives Eq. 1).
        scale: multiplies the cosine inside exp (the paper: 1; sentence-transformers: 20).
    """
    cross_entropy, entropy = entropy_terms(queries, indexes, hard_negatives, phi=phi, scale=scale)
    return cross_entropy if entropy is None else cross_entropy + entropy


def entropy_terms(
    queries: Tensor, indexes: Tensor, hard_negatives: Sequence[Tensor] = (), *, phi: float, scale: float
) -> tuple[Tensor, Tensor | None]:
    """The two parts of Eq. 2 (:func:`entropy_loss`, same arguments), which add up to it: its Eq. 1 term
    (the cross-entropy) and φ·H over j ≠ i (None for φ = 0)."""
    scale = check_scale(scale)
    phi = check_number("phi", phi)
    scores = _scores(queries, indexes, hard_negatives, scale)
    positives = torch.arange(len(queries), device=queries.device)
    log_s = F.log_softmax(scores, dim=1)
    cross_entropy = -log_s[positives, positives].mean()
    if phi == 0.0:
        return cross_entropy, None
    others = torch.ones_like(log_s, dtype=torch.bool)
    others[positives, positives] = False
    entropy = -(log_s.exp() * log_s * others).sum(dim=1).mean()  # H over j ≠ i
    return cross_entropy, phi * entropy


def regulator_loss(
    queries: Tensor,
    indexes: Tensor,
    augmented_queries: Sequence[Tensor],
    augmented_indexes: Sequence[Tensor],
    *,
    scale: float,
    regulator_scale: float | None = None,
    hard_negatives: Sequence[Tensor] = (),
) -> Tensor:
    r"""Eq. 3 of Tan et al. (2022), mean over the batch: Eq. 1 plus 2N contrastive regulators.

    Args:
        queries, indexes: the trainable embeddings :math:`q_i`, :math:`ind_i`, shape ``(M, d)``.
        augmented_queries: N tensors ``(M, d)``, :math:`Au^n_{q_i}` of entropy model n (detached).
        augmented_indexes: N tensors ``(M, d)``, :math:`Au^n_{ind_i}`.
        scale: multiplies the cosine inside the exps of the Eq. 1 term.
        regulator_scale: multiplies the cosine inside the regulators' exps (None: ``scale``).
        hard_negatives: extra candidates of the Eq. 1 term only (the NLI contradictions).
    """
    eq1, regulators = regulator_terms(queries, indexes, augmented_queries, augmented_indexes, scale=scale,
                                      regulator_scale=regulator_scale, hard_negatives=hard_negatives)
    return eq1 + regulators


def regulator_terms(
    queries: Tensor,
    indexes: Tensor,
    augmented_queries: Sequence[Tensor],
    augmented_indexes: Sequence[Tensor],
    *,
    scale: float,
    regulator_scale: float | None = None,
    hard_negatives: Sequence[Tensor] = (),
) -> tuple[Tensor, Tensor]:
    """The two parts of Eq. 3 (:func:`regulator_loss`, same arguments): its Eq. 1 term and the sum of its
    2N contrastive regulators (0 without entropy models)."""
    scale = check_scale(scale)
    regulator_scale = scale if regulator_scale is None else check_scale(regulator_scale)
    if len(augmented_queries) != len(augmented_indexes):
        raise ConfigError(
            f"one augmented query and one augmented index set per entropy model: got "
            f"{len(augmented_queries)} and {len(augmented_indexes)}"
        )
    eq1 = entropy_loss(queries, indexes, hard_negatives, phi=0.0, scale=scale)
    regulators = eq1.new_zeros(())
    n = len(augmented_queries)
    if n == 0:
        return eq1, regulators
    m = len(queries)
    positives = torch.arange(m, device=queries.device).repeat(n)
    for trainable, augmented in ((queries, augmented_queries), (indexes, augmented_indexes)):
        check_columns([trainable, *augmented], ["trainable embeddings"] + [f"augmented set {k}" for k in range(n)])
        targets = F.normalize(torch.stack([t.detach() for t in augmented]).to(trainable.dtype), p=2, dim=-1)
        # all N regulators at once: scores[n, i, k] = regulator_scale * cos(trainable_i, Au^n_k)
        scores = regulator_scale * torch.einsum("id,nkd->nik", F.normalize(trainable, p=2, dim=-1), targets)
        regulators = regulators + n * F.cross_entropy(scores.reshape(n * m, m), positives)  # the sum over n of each mean over i
    return eq1, regulators


RCL_CITATION = """@inproceedings{tan2022regularized,
    title = "Regularized Contrastive Learning of Semantic Search",
    author = "Tan, Mingxi and Rolland, Alexis and Tian, Andong",
    booktitle = "Natural Language Processing and Chinese Computing (NLPCC 2022)",
    year = "2022",
}"""
"""The BibTeX of the paper the loss comes from (:attr:`SentclLoss.citation`)."""


class EntropyLoss(SentclLoss):
    """Eq. 2 (:func:`entropy_loss`) as a trainer loss: columns (query, index[, hard negative…]).

    Inputs:

        +---------------------------------------------+--------+
        | Texts                                       | Labels |
        +=============================================+========+
        | (query, index) pairs                        | none   |
        +---------------------------------------------+--------+
        | (query, index, negative_1, ..., negative_m) | none   |
        +---------------------------------------------+--------+
    """

    citation: ClassVar[str] = RCL_CITATION

    def __init__(self, model: nn.Module, phi: float, scale: float = 20.0) -> None:
        super().__init__(model)
        self.phi = check_number("phi", phi)
        self.scale = check_scale(scale)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        _no_labels(type(self).__name__, labels, embeddings)
        queries, indexes, *negatives = embeddings
        eq1, entropy = entropy_terms(queries, indexes, negatives, phi=self.phi, scale=self.scale)
        if entropy is None:  # φ = 0: Eq. 1 alone (the FAQ variant's initial model), one term
            return eq1
        self.note_terms(**{"Eq. 1": eq1, "phi * entropy": entropy})
        return eq1 + entropy

    def get_config_dict(self) -> dict[str, Any]:
        return {"phi": self.phi, "scale": self.scale}


class RegulatorLoss(SentclLoss):
    """Eq. 3 (:func:`regulator_loss`) as a trainer loss; the augmented embeddings come from stores.

    Args:
        model: the SentenceTransformer being trained.
        stores: one :class:`~sentcl.embeddings.store.EmbeddingStore` per entropy model, each with
            the columns ``query`` and ``index`` (the augmented embeddings of every training row),
            looked up by the batch's example ids (``batch_extras = ("ids",)``).
        scale: multiplies the cosine inside the exps of the Eq. 1 term.
        regulator_scale: multiplies the cosine inside the regulators' exps (None: ``scale``).

    Inputs:

        +--------------------------------------------------+--------+
        | Texts                                            | Labels |
        +==================================================+========+
        | (query, index) pairs, with batch extra ids       | none   |
        +--------------------------------------------------+--------+
        | (query, index, negative_1, ..., negative_m), ids | none   |
        +--------------------------------------------------+--------+
    """

    citation: ClassVar[str] = RCL_CITATION

    batch_extras = ("ids",)

    def __init__(self, model: nn.Module, stores: Sequence[Any], scale: float = 20.0,
                 regulator_scale: float | None = None) -> None:
        super().__init__(model)
        self.stores = list(stores)
        self.scale = check_scale(scale)
        self.regulator_scale = self.scale if regulator_scale is None else check_scale(regulator_scale)
        for store in self.stores:
            missing = {"query", "index"} - set(store.columns)
            if missing:
                raise ConfigError(f"the store {store.path} lacks the column(s) {sorted(missing)}")

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None, *, ids: Tensor) -> Tensor:  # type: ignore[override]  # + its batch extra, which forward passes
        _no_labels(type(self).__name__, labels, embeddings)
        queries, indexes, *negatives = embeddings
        n = len(self.stores)
        augmented: list[Tensor] = []
        if n:  # one lookup per store, one host-to-device copy for all 2N sets
            example_ids = np.asarray(ids.detach().cpu().numpy(), dtype=np.int64)
            rows = [store.rows_of(example_ids) for store in self.stores]
            stacked = np.stack([s.array(c)[r] for c in ("query", "index") for s, r in zip(self.stores, rows, strict=True)])
            augmented = list(torch.from_numpy(stacked).to(device=queries.device, dtype=torch.float32))
        eq1, regulators = regulator_terms(
            queries, indexes, augmented[:n], augmented[n:], scale=self.scale, regulator_scale=self.regulator_scale,
            hard_negatives=negatives,
        )
        self.note_terms(**{"Eq. 1": eq1, "regulators": regulators})
        return eq1 + regulators

    def get_config_dict(self) -> dict[str, Any]:
        return {"scale": self.scale, "regulator_scale": self.regulator_scale, "stores": [s.fingerprint for s in self.stores]}


def _no_labels(name: str, labels: Tensor | None, embeddings: list[Tensor]) -> None:
    if labels is not None:
        raise ConfigError(f"{name} takes no labels: every (query, index) row is a positive tuple")
    if len(embeddings) < 2:
        raise ConfigError(f"{name} expects (query, index[, hard negative...]) columns, got {len(embeddings)}")


__all__ = ["EntropyLoss", "RegulatorLoss", "entropy_loss", "entropy_terms", "regulator_loss", "regulator_terms"]
