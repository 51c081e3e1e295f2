"""The variants of Chernyavskiy et al. (2022): each row of their Tables 1–5 as a loss, a batch order and
the training rows it trains on.

§5.1: "by *BSC* we will denote using optimal settings in the tables, and variants like *BSC - random
shuffle* would mean that instead of these optimal settings, we applied random shuffling." A
:class:`Variant` says what a row changes:

- ``loss``: ``"bsc"`` (Eqs. 1–5), ``"mse"`` (the MSE of the cosine, §3.4: the combo with μ = 0),
  ``"combo"`` (Eq. 6, the task's μ) or ``"triplet"`` (SBERT's triplet loss);
- ``batches``: ``"example"`` (example-based shuffling, Algorithm 1, the paper's optimal setting),
  ``"clusters"`` (fast shuffling by k-means clusters, §3.2), ``"random"`` or ``"none"`` (the data's
  own order, "w/o shuffle") -- :func:`batch_sampler`;
- ``rows``: the training rows (:func:`sentcl.data.judged_pairs.training_rows`): ``"pairs"`` (every
  labelled pair), ``"positives"`` (the positives only: "BSC - positives"), ``"pointwise"`` (every
  labelled pair, with sampled negatives where the data have none: PFCC-S's MSE) or ``"triplets"``;
- ``options``: loss options that replace the task's (Table 3's normalisations);
- ``starts_from``: the row whose trained model it fine-tunes (Table 5's "Fine-tuning ... with ...").

:class:`LossSettings` holds a task's loss hyperparameters (§5.2: τ, normalisation, μ, margin);
:func:`loss_factory` builds a variant's loss from them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from torch import nn

from sentcl.data.judged_pairs import ROWS
from sentcl.errors import check_choice
from sentcl.losses import BatchSoftmaxContrastiveLoss, ComboLoss, TripletLoss
from sentcl.training.samplers import BatchSampler, RandomBatchSampler, SequentialBatchSampler
from sentcl.training.shuffling import ClusterShuffler, ExampleBasedShuffler

LOSSES = ("bsc", "mse", "combo", "triplet")
BATCHES = ("example", "clusters", "random", "none")


@dataclass(frozen=True)
class Variant:
    """One row of the paper's tables as a training recipe (module doc)."""

    loss: str
    batches: str
    rows: str = "pairs"
    options: Mapping[str, Any] = field(default_factory=dict)
    starts_from: str | None = None

    def __post_init__(self) -> None:
        check_choice("loss", self.loss, LOSSES)
        check_choice("batches", self.batches, BATCHES)
        check_choice("rows", self.rows, ROWS)
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))


VARIANTS: Mapping[str, Variant] = MappingProxyType({
    "BSC": Variant("bsc", "example"),
    "BSC - positives": Variant("bsc", "example", "positives"),
    "BSC - random shuffle": Variant("bsc", "random"),
    "BSC - clusters shuffle": Variant("bsc", "clusters"),
    "BSC - w/o shuffle": Variant("bsc", "none"),
    "BSC - 1-dim norm": Variant("bsc", "example", options={"normalization": "l2"}),
    "BSC - no norm": Variant("bsc", "example", options={"normalization": "none"}),
    "MSE": Variant("mse", "random", "pointwise"),
    "Combo BSC + MSE": Variant("combo", "example"),
    "Triplet loss": Variant("triplet", "random", "triplets"),
    "Fine-tuning MSE with BSC": Variant("bsc", "example", starts_from="MSE"),  # BSC, starting from the MSE model
    "Fine-tuning BSC with MSE": Variant("mse", "random", "pointwise", starts_from="BSC"),  # MSE, from the BSC model
})
"""Every row of Tables 1–5 the paper trains, by its name in the tables."""

SHUFFLE_ABLATION = ("BSC", "BSC - clusters shuffle", "BSC - random shuffle", "BSC - w/o shuffle")
"""The rows of the shuffle ablation (Table 2): the same loss and rows, batches built four ways."""


@dataclass(frozen=True)
class LossSettings:
    """A task's loss hyperparameters (§5.2; defaults: "for all other tasks")."""

    temperature: float = 0.1
    normalization: str = "l2"
    symmetric: bool = True
    sides: str = "sum"
    threshold: float = 0.5
    identical_anchors: bool = True
    mu: float = 0.9
    triplet_margin: float = 0.5
    triplet_distance: str = "euclidean"

    def bsc(self) -> dict[str, Any]:
        """The options of :class:`~sentcl.losses.BatchSoftmaxContrastiveLoss` (and of the combo's BSC term)."""
        return {"temperature": self.temperature, "symmetric": self.symmetric, "normalization": self.normalization,
                "sides": self.sides, "threshold": self.threshold, "identical_anchors": self.identical_anchors}


def loss_factory(variant: Variant, settings: LossSettings) -> Callable[[nn.Module], nn.Module]:
    """``model -> loss`` for ``variant`` with a task's ``settings`` (the trainer calls it under the run's seed):
    BSC (Eqs. 1–5), the combo (Eq. 6, μ = ``settings.mu``), the MSE (the combo with μ = 0, so that it
    keeps the BSC options it is compared with) or SBERT's triplet loss."""
    if variant.loss == "triplet":
        return lambda m: TripletLoss(m, margin=settings.triplet_margin, distance=settings.triplet_distance)
    options = settings.bsc() | dict(variant.options)
    if variant.loss == "bsc":
        return lambda m: BatchSoftmaxContrastiveLoss(m, **options)
    mu = settings.mu if variant.loss == "combo" else 0.0
    return lambda m: ComboLoss(m, mu=mu, **options)


def batch_sampler(
    batches: str,
    *,
    group_size: int = 8,
    neighbours: int = 500,
    clusters: int = 300,
    column: int = 0,
    start_epoch: int = 0,
    index: str = "auto",
) -> BatchSampler:
    """The sampler of a variant's ``batches``: example-based shuffling (Algorithm 1: groups of
    ``group_size`` among ``neighbours`` nearest neighbours of ``column``), fast shuffling by ``clusters``
    k-means clusters (§3.2), a random permutation, or the data's own order."""
    check_choice("batches", batches, BATCHES)
    if batches == "example":
        return ExampleBasedShuffler(group_size, neighbours, column=column, start_epoch=start_epoch, index=index)
    if batches == "clusters":
        return ClusterShuffler(group_size, clusters, column=column, start_epoch=start_epoch)
    return RandomBatchSampler() if batches == "random" else SequentialBatchSampler()


def training_order(rows: Iterable[str], variants: Mapping[str, Variant] = VARIANTS) -> list[str]:
    """``rows`` in the order they train: the rows that fine-tune another row's model last (that model
    must exist first), the order kept otherwise."""
    return sorted(rows, key=lambda r: r in variants and variants[r].starts_from is not None)


def started_from(rows: Iterable[str], variants: Mapping[str, Variant] = VARIANTS) -> set[str]:
    """The rows whose trained models a row of ``rows`` starts from (their models must be kept)."""
    return {v.starts_from for r in rows if (v := variants.get(r)) is not None and v.starts_from is not None}


__all__ = [
    "BATCHES",
    "LOSSES",
    "SHUFFLE_ABLATION",
    "VARIANTS",
    "LossSettings",
    "Variant",
    "batch_sampler",
    "loss_factory",
    "started_from",
    "training_order",
]
