r"""IFCL: identical and fraternal twins, the Twin loss and the hippocampus queue (Xiao, Li & Chen 2023).

Only the slides are public; their three equations are implemented here as printed, and every
choice they leave open is an argument (the chapter lists each under "Assumptions").

A batch holds N sentences :math:`x_i` and their two twins (:mod:`sentcl.data.augmentation`): the
**identical twin** :math:`x_i^+` (the same text; it differs only by the encoder's dropout noise)
and the **fraternal twin** :math:`x_i^-` (a word-repeated copy, also encoded with dropout). Their
embeddings are :math:`h_i, h_i^+, h_i^-`.

**InfoNCE with the hippocampus queue** (slides, "InfoNCE Loss with positive and negative
instances"), for the identical twins :math:`\{h_i, h_i^+\}` or the fraternal twins
:math:`\{h_i, h_i^-\}`, with :math:`\{H_m\}_{m=1}^{k N}` the stored embeddings of the last k
batches and :math:`p_m` the forgetting coefficient of the batch row m came from:

.. math::

    \ell_i^I = -\log \frac{e^{sim(h_i, h_i^+)/\tau}}
                          {\sum_{j=1}^N e^{sim(h_i, h_j^+)/\tau} + \varphi}, \qquad
    \varphi = \sum_{m=1}^{kN} p_m\, e^{sim(h_i, H_m)/\tau}                         \qquad (I)

**Twin loss** (slides, "Twins Loss for fine-grained semantic understanding"), no temperature:

.. math::

    \ell_i^T = \left| e^{sim(h_i, h_i^+)} - e^{sim(h_i, h_i^-)} - M_i \right|, \qquad
    M_i = e^{sim(emb_i, emb_i^+)} - e^{sim(emb_i, emb_i^-)}                          \qquad (T)

sim is the cosine similarity. :math:`M_i` is computed without gradient ("each M depends on the
previous step"): ``emb`` is read here as the *static* embedding of each text under the
parameters the previous optimizer step left (the attention-masked mean of the encoder's input
word embeddings; ``margin_embeddings="static"``), i.e. the twins' innate, lexical margin; or, with
``margin_embeddings="encoder"``, the whole encoder in evaluation mode (no dropout), a costlier
reading. (Taking ``emb`` to be ``h`` itself, detached, would make :math:`\ell^T` identically 0.)

**The objective** of :class:`IFCLLoss`:
:math:`\frac{1}{N}\sum_i \big(\ell_i^I(h, h^+) + \ell_i^I(h, h^-) + \lambda\,\ell_i^T\big)`; then
the batch's :math:`h^+` enter the queue. :math:`\lambda = 0` is "IFCL w/o TL"; without the
fraternal column and with ``queue_batches=0`` it is unsupervised SimCSE (sentence-transformers'
MultipleNegativesRankingLoss on (x, x) pairs with scale :math:`1/\tau`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentcl.errors import ConfigError, check_choice, check_number
from sentcl.losses.base import SentclLoss, check_columns, embed_columns, similarity_matrix

MarginEmbeddings = Literal["static", "encoder"]
MARGIN_EMBEDDINGS: tuple[str, ...] = ("static", "encoder")


def queue_infonce_loss(
    h: Tensor, h_positive: Tensor, queue: Tensor | None = None, weights: Tensor | None = None, *, temperature: float
) -> Tensor:
    r""":math:`\frac{1}{N}\sum_i \ell_i^I` of Eq. (I): in-batch positives plus the weighted queue φ.

    Args:
        h: :math:`h_i`, shape ``(N, d)``.
        h_positive: the twins :math:`h_i^+` (or :math:`h_i^-`), ``(N, d)``; row i is the positive of row i.
        queue: :math:`H_m`, the stored embeddings, ``(Q, d)`` (None or 0 rows: no queue, φ = 0).
        weights: :math:`p_m`, ``(Q,)``, non-negative: each stored row's forgetting coefficient.
        temperature: τ (> 0).
    """
    temperature = check_number("temperature", temperature, low=0.0, low_open=True)
    check_columns([h, h_positive], ["h", "h_positive"])
    logits = similarity_matrix(h, h_positive) / temperature  # (N, N): sim(h_i, h_j^+)/τ
    if queue is not None and queue.shape[0]:
        if weights is None or weights.shape != (queue.shape[0],):
            raise ConfigError(f"expected one weight per queued row, shape ({queue.shape[0]},), got "
                              f"{None if weights is None else tuple(weights.shape)}")
        if bool((weights < 0).any()):
            raise ConfigError("the forgetting coefficients p_m must be non-negative")
        queue = queue.to(device=h.device, dtype=h.dtype)
        # p_m e^{s/τ} = e^{s/τ + log p_m}: φ joins the denominator's log-sum-exp (p_m = 0 drops the row)
        queued = similarity_matrix(h, queue) / temperature + weights.to(h.device, h.dtype).log()
        logits = torch.cat([logits, queued], dim=1)
    target = torch.arange(h.shape[0], device=h.device)
    return F.cross_entropy(logits, target)


def twin_loss(h: Tensor, h_identical: Tensor, h_fraternal: Tensor, margins: Tensor) -> Tensor:
    r""":math:`\frac{1}{N}\sum_i \ell_i^T` of Eq. (T); ``margins`` are the ``(N,)`` :math:`M_i`, without gradient."""
    check_columns([h, h_identical, h_fraternal], ["h", "h_identical", "h_fraternal"])
    if margins.shape != (h.shape[0],):
        raise ConfigError(f"expected one margin per row, shape ({h.shape[0]},), got {tuple(margins.shape)}")
    if margins.requires_grad:
        raise ConfigError("the margins M_i are computed without gradient (detach them)")
    gap = torch.exp(F.cosine_similarity(h, h_identical, dim=-1)) - torch.exp(F.cosine_similarity(h, h_fraternal, dim=-1))
    return (gap - margins.to(gap.dtype)).abs().mean()


@torch.no_grad()
def twin_margins(emb: Tensor, emb_identical: Tensor, emb_fraternal: Tensor) -> Tensor:
    r"""The :math:`M_i = e^{sim(emb_i, emb_i^+)} - e^{sim(emb_i, emb_i^-)}` of Eq. (T), without gradient."""
    check_columns([emb, emb_identical, emb_fraternal], ["emb", "emb_identical", "emb_fraternal"])
    return torch.exp(F.cosine_similarity(emb, emb_identical, dim=-1)) - torch.exp(F.cosine_similarity(emb, emb_fraternal, dim=-1))


class HippocampusQueue(nn.Module):
    r"""The hippocampus queue: the embeddings of the last ``batches`` (k) batches, without gradient.

    A batch of age a (1: the batch just before the current one, …, k: the oldest kept) has the
    forgetting coefficient :math:`p = \gamma^{a-1}` (``forgetting_decay`` γ ∈ (0, 1]: the most
    recent batch weighs most; γ = 1 weighs every batch alike, as ESimCSE's queue). Pushing a
    batch evicts the oldest once k are held, so the queue never holds more than k batches
    (memory ≤ k · N · d values). Its contents are the module's extra state, so they are saved in
    the trainer's checkpoints with the loss and restored on resume.
    """

    def __init__(self, batches: int, forgetting_decay: float = 1.0) -> None:
        super().__init__()
        if isinstance(batches, bool) or not isinstance(batches, int) or batches < 0:
            raise ConfigError(f"queue batches (k) must be a non-negative integer, got {batches!r}")
        self.batches = batches
        self.forgetting_decay = check_number("forgetting_decay", forgetting_decay, low=0.0, high=1.0, low_open=True)
        self._stored: deque[Tensor] = deque(maxlen=batches or 1)

    def coefficient(self, age: int) -> float:
        """:math:`p` of a batch of ``age`` (1 = the most recent stored batch)."""
        return self.forgetting_decay ** (age - 1)

    def push(self, embeddings: Tensor) -> None:
        """Store a batch's ``(N, d)`` embeddings (detached) as the newest; evicts the oldest beyond k."""
        if self.batches:
            self._stored.appendleft(embeddings.detach())

    def __len__(self) -> int:
        """The number of batches held."""
        return len(self._stored) if self.batches else 0

    def contents(self) -> tuple[Tensor, Tensor] | tuple[None, None]:
        """``(H, p)``: the stored rows, newest batch first, ``(Q, d)``, and each row's coefficient, ``(Q,)``."""
        if not len(self):
            return None, None
        rows = torch.cat(list(self._stored))
        weights = torch.cat([torch.full((len(b),), self.coefficient(a), dtype=torch.float32, device=b.device)
                             for a, b in enumerate(self._stored, start=1)])
        return rows, weights

    def nbytes(self) -> int:
        """Memory held by the stored embeddings, in bytes."""
        return sum(b.numel() * b.element_size() for b in self._stored)

    def clear(self) -> None:
        self._stored.clear()

    def get_extra_state(self) -> dict[str, Any]:
        return {"batches": [b.detach().cpu() for b in self._stored]}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        stored = state.get("batches") if isinstance(state, dict) else None
        if not isinstance(stored, list) or len(stored) > max(self.batches, 0) or not all(isinstance(b, Tensor) for b in stored):
            raise ConfigError(f"a hippocampus queue state holds a list of at most {self.batches} tensors, got {state!r:.200}")
        self._stored.clear()
        self._stored.extend(stored)

    def extra_repr(self) -> str:
        return f"batches={self.batches}, forgetting_decay={self.forgetting_decay}"


IFCL_CITATION = """@inproceedings{xiao2023identical,
    title = "Identical and Fraternal Twins: Fine-Grained Semantic Contrastive Learning of Sentence Representations",
    author = "Xiao, Qingfa and Li, Shuangyin and Chen, Lei",
    booktitle = "Proceedings of the 26th European Conference on Artificial Intelligence (ECAI 2023)",
    year = "2023",
}"""
"""The BibTeX of the paper the loss comes from (:attr:`SentclLoss.citation`)."""


class IFCLLoss(SentclLoss):
    r"""The IFCL objective (module docstring) as a loss module for the trainer.

    Columns: ``(text, identical twin, fraternal twin)`` (:func:`sentcl.data.augmentation.fusion_twins`)
    or, with the twins off, ``(text, identical twin)``; no labels, no batch extras.

    Args:
        model: the SentenceTransformer being trained.
        temperature: τ of Eq. (I).
        queue_batches: k, the batches the hippocampus queue holds (0: no queue).
        forgetting_decay: γ of the forgetting coefficients :math:`p = \gamma^{age-1}`.
        twin_weight: λ, the weight of the Twin loss (0: "IFCL w/o TL").
        margin_embeddings: what ``emb`` of :math:`M_i` is, ``"static"`` or ``"encoder"`` (module docstring).

    Inputs:

        +----------------------------------------+--------+
        | Texts                                  | Labels |
        +========================================+========+
        | (text, identical twin, fraternal twin) | none   |
        +----------------------------------------+--------+
        | (text, identical twin): twins off      | none   |
        +----------------------------------------+--------+
    """

    citation: ClassVar[str] = IFCL_CITATION

    def __init__(
        self,
        model: nn.Module,
        temperature: float = 0.05,
        queue_batches: int = 3,
        forgetting_decay: float = 0.9,
        twin_weight: float = 1.0,
        margin_embeddings: MarginEmbeddings = "static",
    ) -> None:
        super().__init__(model)
        self.temperature = check_number("temperature", temperature, low=0.0, low_open=True)
        self.twin_weight = check_number("twin_weight", twin_weight, low=0.0)
        self.margin_embeddings = check_choice("margin_embeddings", margin_embeddings, MARGIN_EMBEDDINGS)
        self.queue = HippocampusQueue(queue_batches, forgetting_decay)

    def forward(self, sentence_features: Iterable[dict[str, Any]], labels: Tensor | None = None, **batch_extras: Any) -> Tensor:
        if batch_extras:
            raise ConfigError(f"IFCLLoss takes no batch extras, got {sorted(batch_extras)}")
        sentence_features = list(sentence_features)
        margins = self.margins(sentence_features) if self.twin_weight and len(sentence_features) == 3 else None
        embeddings = embed_columns(self.model, sentence_features)
        return self.compute_loss_from_embeddings(embeddings, labels, margins=margins)

    @torch.no_grad()
    def margins(self, sentence_features: list[dict[str, Any]]) -> Tensor:
        """:math:`M_i` of the batch from its tokenised columns (text, identical, fraternal), without gradient."""
        if self.margin_embeddings == "encoder":
            training = [(m, m.training) for m in self.model.modules()]
            self.model.eval()
            try:
                emb = embed_columns(self.model, sentence_features)
            finally:
                for module, mode in training:
                    module.training = mode
        else:
            words = self.model[0].auto_model.get_input_embeddings()  # type: ignore[index]  # a SentenceTransformer's Transformer
            emb = []
            for features in sentence_features:
                mask = features["attention_mask"].unsqueeze(-1).to(words.weight.dtype)
                emb.append((words(features["input_ids"]) * mask).sum(1) / mask.sum(1).clamp(min=1.0))
        return twin_margins(*emb)

    def compute_loss_from_embeddings(
        self, embeddings: list[Tensor], labels: Tensor | None = None, margins: Tensor | None = None
    ) -> Tensor:
        if labels is not None:
            raise ConfigError("IFCLLoss takes no labels: every row is a sentence and its twins")
        if len(embeddings) not in (2, 3):
            raise ConfigError(f"IFCLLoss expects (text, identical[, fraternal]) columns, got {len(embeddings)}")
        if self.twin_weight and len(embeddings) == 2:
            raise ConfigError("the Twin loss needs the fraternal twins: give a third column or set twin_weight=0")
        h, h_identical, *fraternal = embeddings
        queue, weights = self.queue.contents()
        terms = {"InfoNCE identical": queue_infonce_loss(h, h_identical, queue, weights, temperature=self.temperature)}
        if fraternal:
            terms["InfoNCE fraternal"] = queue_infonce_loss(h, fraternal[0], queue, weights, temperature=self.temperature)
        if self.twin_weight:
            if margins is None:
                raise ConfigError("the Twin loss needs the margins M_i, computed from the batch's tokens in "
                                  "IFCLLoss.forward: train without gradient caching or several processes")
            terms["Twin"] = self.twin_weight * twin_loss(h, h_identical, fraternal[0], margins)
        if self.training:
            self.queue.push(h_identical)
        if len(terms) > 1:
            self.note_terms(**terms)
        return sum(terms.values())  # type: ignore[return-value]

    def get_config_dict(self) -> dict[str, Any]:
        return {
            "temperature": self.temperature,
            "queue_batches": self.queue.batches,
            "forgetting_decay": self.queue.forgetting_decay,
            "twin_weight": self.twin_weight,
            "margin_embeddings": self.margin_embeddings,
        }


__all__ = [
    "MARGIN_EMBEDDINGS",
    "HippocampusQueue",
    "IFCLLoss",
    "queue_infonce_loss",
    "twin_loss",
    "twin_margins",
]
