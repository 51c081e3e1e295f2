r"""Batch-softmax contrastive (BSC) loss and its baselines, Chernyavskiy et al. (2022), Eqs. 1–6.

A batch holds m pairs :math:`(q_i, a_i)` with labels :math:`y_i`. With :math:`S = QA^T / \tau`
(after the normalisation of §3.5) the loss is

.. math::

    \mathcal{L}_0 = -\frac{1}{m}\sum_{i=1}^m \mathbb{1}[y_i > t]
        \Big(\frac{1}{|P_i|}\sum_{j \in P_i} S_{ij} - \log\sum_{j=1}^{m'} \exp S_{ij}\Big)     \qquad (2, 3, 5)

and :math:`\mathcal{L}_1` the same on :math:`S^T` (answers against queries, Eq. 4);
:math:`\mathcal{L}_{BSC} = \mathcal{L}_0 + \mathcal{L}_1` (Eq. 1).

**Sides.** Eq. 1 as printed *sums* the two sides (``sides="sum"``); the authors' code
(aschern/BSC-loss) *averages* them (``sides="mean"``, which is sentence-transformers'
MultipleNegativesSymmetricRankingLoss with L2 normalisation and scale 1/τ). With a fixed τ the
two differ by a factor 2 on the loss and its gradient; in the combo loss (Eq. 6) the factor moves
the balance μ sets. ``symmetric=False`` keeps only :math:`\mathcal{L}_0` (SimCSE's / MNRL's form).

**Positives** :math:`P_i` (Eqs. 3–4). By default :math:`P_i = \{i\}`, the diagonal. When several
rows share the same anchor (``anchor_groups``: equal ids for rows with identical :math:`q`),
every :math:`(q_i, a_j)` with :math:`i, j` in the group is a positive pair and, after Khosla et
al. (2020), the log-probabilities of all of them are averaged outside the logarithm; with
identical anchor embeddings this gives back Eq. 1 exactly (Eqs. 3–4 show the sums coincide).

**Labelled negatives** (Eq. 5). A row with :math:`y_i \le t` adds no term on its side (neither
its positive term nor its normaliser) but stays a candidate for every other row; the mean is
still over all m rows, as Eq. 5 divides by m. Graded labels are binarised at ``threshold``
:math:`t` (§3.4: :math:`\mathbb{1}[y_i > t]`); the authors' code ignores its threshold argument
and uses 0.5 — here the argument is used.

**Hard negatives** are extra candidates on the answer side: row i of the row-wise softmax runs
over the m answers and the m·k hard negatives (:math:`m' = m(1 + k)`); the column-wise side
contrasts each answer with the m queries only.

**Normalisation** (§3.5): ``"l2"`` (each vector to unit length: :math:`q^T a` is the cosine),
``"coordinate"`` (each dimension divided by its range, max − min, over the batch, per side —
queries, and answers with their hard negatives — without centring, as the authors' code;
"normalizing by the zero dimension" in §6) or ``"none"``.

**Temperature**: fixed, or trainable (:class:`BatchSoftmaxContrastiveLoss` with
``trainable_temperature=True``: a scalar 1/τ with its own learning rate and no weight decay).

Baselines on the same batches: the MSE of the cosine against the target (§3.4,
:func:`cosine_mse_loss`), the combo :math:`\mu\mathcal{L}_{BSC} + (1-\mu)\mathcal{L}_{MSE}`
(Eq. 6, :class:`ComboLoss`) and SBERT's triplet loss with a margin (:func:`triplet_loss`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from sentcl.errors import ConfigError, check_choice, check_number
from sentcl.losses.base import SentclLoss, check_columns
from sentcl.losses.softmax import SBERT_CITATION

NORMALIZATIONS: tuple[str, ...] = ("l2", "coordinate", "none")
SIDES: tuple[str, ...] = ("sum", "mean")
TRIPLET_DISTANCES: tuple[str, ...] = ("euclidean", "cosine")


def normalize_embeddings(x: Tensor, normalization: str) -> Tensor:
    """§3.5: ``"l2"`` rows to unit length; ``"coordinate"`` each column divided by its range over the rows."""
    check_choice("normalization", normalization, NORMALIZATIONS)
    if normalization == "l2":
        return F.normalize(x, p=2, dim=-1)
    if normalization == "coordinate":
        spread = x.max(dim=0).values - x.min(dim=0).values
        return x / spread.clamp_min(torch.finfo(x.dtype).eps)
    return x


def binarize_labels(labels: Tensor | None, m: int, threshold: float, device: torch.device) -> Tensor:
    """:math:`\\mathbb{1}[y_i > t]` as floats (§3.4); all ones without labels."""
    if labels is None:
        return torch.ones(m, device=device)
    labels = torch.as_tensor(labels, device=device)
    if labels.shape != (m,):
        raise ConfigError(f"expected one label per row, shape ({m},), got {tuple(labels.shape)}")
    return (labels.float() > threshold).float()


def batch_softmax_contrastive_loss(
    queries: Tensor,
    answers: Tensor,
    labels: Tensor | None = None,
    *,
    temperature: float | Tensor,
    symmetric: bool = True,
    normalization: str = "l2",
    sides: str = "sum",
    threshold: float = 0.5,
    hard_negatives: Sequence[Tensor] = (),
    anchor_groups: Tensor | None = None,
) -> Tensor:
    r"""The BSC loss of a batch (Eqs. 1–5), from the embeddings of its two columns.

    Args:
        queries, answers: ``(m, d)``; row i of each is pair i.
        labels: per-row labels (1/0, or graded scores), binarised as ``label > threshold``; None:
            every row is a positive pair.
        temperature: τ (a float, or a scalar tensor when trainable).
        symmetric: add the column-wise side :math:`\mathcal{L}_1`.
        normalization: ``"l2"``, ``"coordinate"`` or ``"none"`` (§3.5).
        sides: ``"sum"`` (Eq. 1 as printed) or ``"mean"`` (the authors' code) of the two sides.
        threshold: the binarisation threshold t of §3.4.
        hard_negatives: zero or more ``(m, d)`` tensors, extra candidates for every query.
        anchor_groups: ``(m,)`` integers, equal for rows with identical anchors (Eqs. 3–4).
    """
    check_choice("sides", sides, SIDES)
    columns = [queries, answers, *hard_negatives]
    check_columns(columns, ["queries", "answers"] + [f"hard_negatives[{k}]" for k in range(len(hard_negatives))])
    if not isinstance(temperature, Tensor):
        check_number("temperature", temperature, low=0.0, low_open=True)
    m = queries.shape[0]
    q = normalize_embeddings(queries, normalization)
    candidates = normalize_embeddings(torch.cat(columns[1:], dim=0), normalization)
    scores = q @ candidates.transpose(0, 1) / temperature  # (m, m(1 + k)); column j < m is answer j
    keep = binarize_labels(labels, m, threshold, queries.device)
    same = torch.eye(m, device=queries.device, dtype=torch.bool)
    if anchor_groups is not None:
        groups = torch.as_tensor(anchor_groups, device=queries.device)
        if groups.shape != (m,):
            raise ConfigError(f"anchor_groups: expected shape ({m},), got {tuple(groups.shape)}")
        same = groups[:, None] == groups[None, :]
    positive = same & (keep[:, None] > 0) & (keep[None, :] > 0) | torch.eye(m, device=queries.device, dtype=torch.bool)
    weights = positive.to(scores.dtype) / positive.sum(dim=1, keepdim=True)  # 1/|P_i| on P_i

    def side(s: Tensor) -> Tensor:  # −(1/m) Σ_i 1[y_i > t] (mean_{j∈P_i} s_ij − logsumexp_j s_ij)
        log_prob = (weights * s[:, :m]).sum(dim=1) - torch.logsumexp(s, dim=1)
        return -(keep.to(s.dtype) * log_prob).sum() / m

    loss = side(scores)
    if symmetric:
        second = side(scores[:, :m].transpose(0, 1))  # P is symmetric: the same positives, answers as anchors
        loss = loss + second if sides == "sum" else (loss + second) / 2
    return loss


def cosine_mse_loss(queries: Tensor, answers: Tensor, targets: Tensor) -> Tensor:
    r""":math:`\mathcal{L}_{MSE} = \frac{1}{m}\sum_i (\cos(q_i, a_i) - y_i)^2` (§3.4; SBERT's CosineSimilarityLoss)."""
    check_columns([queries, answers], ["queries", "answers"])
    targets = torch.as_tensor(targets, device=queries.device, dtype=queries.dtype)
    return F.mse_loss(F.cosine_similarity(queries, answers, dim=-1), targets)


def triplet_loss(anchors: Tensor, positives: Tensor, negatives: Tensor, *, margin: float, distance: str = "euclidean") -> Tensor:
    r"""SBERT's triplet objective, :math:`\frac{1}{m}\sum_i \max(d(a_i, p_i) - d(a_i, n_i) + \epsilon, 0)`
    (Reimers & Gurevych 2019, §3), with ``distance`` ``"euclidean"`` (SBERT's) or ``"cosine"`` (1 − cos)."""
    check_columns([anchors, positives, negatives], ["anchors", "positives", "negatives"])
    check_number("margin", margin, low=0.0)
    if check_choice("distance", distance, TRIPLET_DISTANCES) == "euclidean":
        d_pos, d_neg = F.pairwise_distance(anchors, positives, p=2), F.pairwise_distance(anchors, negatives, p=2)
    else:
        d_pos = 1 - F.cosine_similarity(anchors, positives, dim=-1)
        d_neg = 1 - F.cosine_similarity(anchors, negatives, dim=-1)
    return F.relu(d_pos - d_neg + margin).mean()


def identical_anchor_groups(features: dict[str, Tensor]) -> Tensor:
    """Group ids of the rows of a tokenised column: rows with the same token ids share one (Eqs. 3–4), the
    index of the first such row. Compared pairwise on the device (m² · tokens comparisons), not with
    ``torch.unique``, whose data-dependent output makes the host wait for the device."""
    ids = features["input_ids"]
    if "attention_mask" in features:
        ids = ids * features["attention_mask"]
    same = (ids[:, None, :] == ids[None, :, :]).all(dim=-1)
    return same.to(torch.int32).argmax(dim=1)  # the first maximum: the first identical row


BSC_CITATION = """@inproceedings{chernyavskiy2022batch,
    title = "Batch-Softmax Contrastive Loss for Pairwise Sentence Scoring Tasks",
    author = "Chernyavskiy, Anton and Ilvovsky, Dmitry and Kalinin, Pavel and Nakov, Preslav",
    booktitle = "Proceedings of the 2022 Conference of the North American Chapter of the Association for Computational Linguistics: Human Language Technologies (NAACL)",
    year = "2022",
}"""
"""The BibTeX of the paper the loss comes from (:attr:`SentclLoss.citation`)."""


class BatchSoftmaxContrastiveLoss(SentclLoss):
    """BSC (Eqs. 1–5) as a trainer loss: columns (query, answer[, hard negative…]), labels optional.

    Args:
        model: the SentenceTransformer being trained.
        temperature: τ (its starting value when trainable).
        symmetric, normalization, sides, threshold: as :func:`batch_softmax_contrastive_loss`.
        identical_anchors: find rows with identical query texts in each batch (equal token ids, in
            :meth:`forward`) and treat their pairs as positives (Eqs. 3–4); off, the diagonal alone
            is positive. A trainer that embeds the columns itself (gradient caching, several
            processes) calls :meth:`compute_loss_from_embeddings`, which sees no texts: the diagonal.
        trainable_temperature: learn 1/τ, in its own optimizer group (``temperature_lr``, no weight decay).
        temperature_lr: the learning rate of 1/τ.

    Inputs:

        +----------------------------------------------+-------------------------------------------------+
        | Texts                                        | Labels                                          |
        +==============================================+=================================================+
        | (query, answer) pairs                        | none (the diagonal and identical queries are    |
        |                                              | positive), or a label binarised at threshold   |
        +----------------------------------------------+-------------------------------------------------+
        | (query, answer, negative_1, ..., negative_m) | none                                            |
        +----------------------------------------------+-------------------------------------------------+
    """

    citation: ClassVar[str] = BSC_CITATION

    def __init__(
        self,
        model: nn.Module,
        temperature: float = 0.1,
        *,
        symmetric: bool = True,
        normalization: str = "l2",
        sides: str = "sum",
        threshold: float = 0.5,
        identical_anchors: bool = True,
        trainable_temperature: bool = False,
        temperature_lr: float = 1e-3,
    ) -> None:
        super().__init__(model)
        check_number("temperature", temperature, low=0.0, low_open=True)
        self.options: dict[str, Any] = {
            "temperature": float(temperature), "symmetric": bool(symmetric),
            "normalization": check_choice("normalization", normalization, NORMALIZATIONS),
            "sides": check_choice("sides", sides, SIDES), "threshold": float(threshold),
            "identical_anchors": bool(identical_anchors), "trainable_temperature": bool(trainable_temperature),
            "temperature_lr": float(check_number("temperature_lr", temperature_lr, low=0.0, low_open=True)),
        }
        self.inverse_temperature = nn.Parameter(
            torch.tensor(1.0 / temperature), requires_grad=bool(trainable_temperature)
        )
        self._groups: Tensor | None = None

    @property
    def temperature(self) -> float:
        """The current τ."""
        return float(1.0 / self.inverse_temperature.detach())

    def parameter_groups(self) -> list[dict[str, Any]]:
        if not self.options["trainable_temperature"]:
            return []
        return [{"params": [self.inverse_temperature], "lr": self.options["temperature_lr"], "weight_decay": 0.0}]

    def forward(self, sentence_features: Iterable[dict[str, Any]], labels: Tensor | None = None, **batch_extras: Any) -> Tensor:
        features = list(sentence_features)
        self._groups = identical_anchor_groups(features[0]) if self.options["identical_anchors"] and features else None
        try:
            return super().forward(features, labels, **batch_extras)
        finally:
            self._groups = None

    def bsc(self, embeddings: list[Tensor], labels: Tensor | None) -> Tensor:
        if len(embeddings) < 2:
            raise ConfigError(f"{type(self).__name__} expects (query, answer[, negative...]) columns, got {len(embeddings)}")
        queries, answers, *negatives = embeddings
        o = self.options
        return batch_softmax_contrastive_loss(
            queries, answers, labels, temperature=1.0 / self.inverse_temperature, symmetric=o["symmetric"],
            normalization=o["normalization"], sides=o["sides"], threshold=o["threshold"],
            hard_negatives=negatives, anchor_groups=self._groups,
        )

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        return self.bsc(embeddings, labels)

    def get_config_dict(self) -> dict[str, Any]:
        return dict(self.options)


class ComboLoss(BatchSoftmaxContrastiveLoss):
    r"""Eq. 6: :math:`\mu\,\mathcal{L}_{BSC}(\mathbb{1}[y > t]) + (1 - \mu)\,\mathcal{L}_{MSE}(\cos, y)` on the same batch.

    ``mu = 1`` is BSC alone, ``mu = 0`` the MSE baseline (labels are the target similarities:
    1/0 for binary tasks, scores scaled to [0, 1] for graded ones). Other options: as
    :class:`BatchSoftmaxContrastiveLoss`.

    Inputs:

        +-----------------------+-------------------------------------+
        | Texts                 | Labels                              |
        +=======================+=====================================+
        | (query, answer) pairs | target similarity in [0, 1] (float) |
        +-----------------------+-------------------------------------+
    """

    citation: ClassVar[str] = BSC_CITATION

    def __init__(self, model: nn.Module, temperature: float = 0.1, *, mu: float = 0.5, **options: Any) -> None:
        super().__init__(model, temperature, **options)
        self.options["mu"] = float(check_number("mu", mu, low=0.0, high=1.0))

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        if labels is None:
            raise ConfigError("ComboLoss needs labels: the MSE term's target similarity per row")
        mu = self.options["mu"]
        mse = cosine_mse_loss(embeddings[0], embeddings[1], labels)
        if mu == 0.0:
            return mse
        terms = {"mu BSC": mu * self.bsc(embeddings, labels), "(1-mu) MSE": (1 - mu) * mse}
        self.note_terms(**terms)
        return terms["mu BSC"] + terms["(1-mu) MSE"]


class TripletLoss(SentclLoss):
    """SBERT's triplet loss (:func:`triplet_loss`) as a trainer loss: columns (anchor, positive, negative), no labels.

    Inputs:

        +---------------------------------------+--------+
        | Texts                                 | Labels |
        +=======================================+========+
        | (anchor, positive, negative) triplets | none   |
        +---------------------------------------+--------+
    """

    citation: ClassVar[str] = SBERT_CITATION

    def __init__(self, model: nn.Module, margin: float = 0.5, distance: str = "euclidean") -> None:
        super().__init__(model)
        self.margin = float(check_number("margin", margin, low=0.0))
        self.distance = check_choice("distance", distance, TRIPLET_DISTANCES)

    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        if labels is not None or len(embeddings) != 3:
            raise ConfigError("TripletLoss takes (anchor, positive, negative) columns and no labels")
        return triplet_loss(*embeddings, margin=self.margin, distance=self.distance)

    def get_config_dict(self) -> dict[str, Any]:
        return {"margin": self.margin, "distance": self.distance}


__all__ = [
    "NORMALIZATIONS",
    "BatchSoftmaxContrastiveLoss",
    "ComboLoss",
    "TripletLoss",
    "batch_softmax_contrastive_loss",
    "binarize_labels",
    "cosine_mse_loss",
    "identical_anchor_groups",
    "normalize_embeddings",
    "triplet_loss",
]
