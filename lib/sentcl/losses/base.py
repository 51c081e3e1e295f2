"""What every sentcl loss module shares: the contract a trainer relies on, and the similarity σ.

The contract a trainer relies on
--------------------------------
``sentence_features``
    one tokenised feature dict per column (anchor, positive, negatives… or sentence A, B), as
    sentence-transformers' collator makes them; every column has the same batch size.
``labels``
    a tensor with one label per row, or None; a loss that needs labels raises
    :class:`~sentcl.errors.ConfigError` without them, and a loss that takes none (MNRL) raises
    when given some, so a label column never goes silently unused.
``batch extras``
    per-row values beyond texts and labels, passed as keyword arguments. A loss names those it
    needs in the class attribute ``batch_extras`` (a tuple of names, empty by default); the
    trainer passes exactly those, ``loss(features, labels, **{k: batch[k] for k in
    loss.batch_extras})``, and :meth:`SentclLoss.forward` raises if one is missing or unexpected.
    The one extra defined so far is ``ids``: a 1-D integer tensor with the index of each row in
    the training dataset (the same for all the row's columns), by which the RCL chapter looks up
    the stored augmented embeddings of the row's sentences. A dataset column holding ids must be
    kept out of the text columns (sentence-transformers' collator would tokenise it as text).
``compute_loss_from_embeddings(embeddings, labels, **batch_extras)``
    the loss from the list of column embeddings (one ``(batch, dim)`` tensor per column): what
    ``forward`` calls after embedding the columns, and what a trainer calls itself when it embeds
    the columns its own way (e.g. gradient caching: embed without gradients in chunks, compute the
    loss on the embeddings, then back-propagate chunk by chunk).
``term_tensors`` / ``last_terms`` (optional)
    a loss whose objective adds several terms (RCL's Eq. 1 and regulators, IFCL's InfoNCE and Twin
    losses, BSC's combo) notes each term's contribution to its last value with
    :meth:`SentclLoss.note_terms`: ``term_tensors`` holds them detached on the device (the trainer
    reads them with the loss, where it logs: no host-device sync a step), ``last_terms`` as floats
    ``{name: float}``; the trainer logs their means beside the loss, and the run's health record
    shows them (:mod:`sentcl.training.health`).
``chance_level`` (optional)
    the loss of a model that cannot tell the candidates or classes apart (uniform probabilities): ln k
    for a k-way softmax classifier (SBERT's softmax loss; balanced classes), ln of the candidates per
    anchor for in-batch InfoNCE (MNRL: of its last batch); None where the objective has none (a sum of
    terms, a regression). The run's health record flags a loss that ends there
    (:mod:`sentcl.training.health`).
``parameter_groups()`` and state (optional)
    a loss may give its own parameters their own optimizer options with ``parameter_groups()``
    (a list of ``{"params": [...], "lr": ..., ...}`` dicts, e.g. a trainable temperature with its
    own learning rate and no weight decay; its other parameters train with the model's options),
    and may keep state in buffers or ``get_extra_state`` (saved in checkpoints and restored).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, ClassVar, Literal, cast

import torch.nn.functional as F
from torch import Tensor, nn

from sentcl.errors import ConfigError, check_choice, check_number

Similarity = Literal["cos", "dot"]
SIMILARITIES: tuple[str, ...] = ("cos", "dot")


def embed_columns(model: Any, sentence_features: Iterable[dict[str, Any]]) -> list[Tensor]:
    """Each tokenised column's embeddings in one forward pass: sentence-transformers' merged column forward, imported
    when a loss first runs (sentence-transformers takes seconds to import; a loss's module is read by more than
    training: the chapters' tables of rows, ``sentcl reproduce``)."""
    from sentence_transformers.base.losses.merged_forward import embed_columns as merged_forward

    return merged_forward(model, sentence_features)


def similarity_matrix(a: Tensor, b: Tensor, similarity: Similarity = "cos") -> Tensor:
    """σ(a_i, b_j) for every row i of ``a`` and row j of ``b``: shape ``(len(a), len(b))``.

    ``"cos"`` is the cosine similarity (rows L2-normalised, then dot product), ``"dot"`` the
    plain dot product. This is the σ of Eq. 1 of Taneja et al. (2023).
    """
    if check_similarity(similarity) == "cos":
        a, b = F.normalize(a, p=2, dim=-1), F.normalize(b, p=2, dim=-1)
    return a @ b.transpose(0, 1)


class SentclLoss(nn.Module, ABC):
    """Base of the sentcl loss modules: a sentence-transformers loss that may take batch extras.

    A subclass implements :meth:`compute_loss_from_embeddings` (the math, on the embeddings of the
    batch's columns) and :meth:`get_config_dict`, and names in :attr:`batch_extras` the per-example
    values beyond texts and labels it needs (e.g. ``("ids",)``). :meth:`forward` embeds the columns
    with the model, checks that exactly the declared extras were passed, and hands everything on.

    ``loss(sentence_features, labels)`` is the call sentence-transformers' trainer makes, so a loss
    with no extras works there unchanged (the whole contract: the module docstring).
    """

    batch_extras: ClassVar[tuple[str, ...]] = ()
    """Names of the per-example values (beyond texts and labels) the loss needs in every batch."""

    citation: ClassVar[str] = ""
    """The BibTeX of the paper whose equation the loss computes, as sentence-transformers' losses carry it (their
    model cards cite it); each loss's docstring also has an ``Inputs`` table: its text columns and labels."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.term_tensors: dict[str, Tensor] = {}
        """Each term's contribution to the last loss computed, detached (empty for a one-term objective)."""
        self.chance_level: float | None = None
        """The loss at chance (module doc), or None where the objective has none."""

    @property
    def last_terms(self) -> dict[str, float]:
        """:attr:`term_tensors` as floats (reading them waits for the device)."""
        return {name: float(value) for name, value in self.term_tensors.items()}

    def note_terms(self, **terms: Tensor) -> None:
        """Keep each term's contribution to the loss being computed (detached, unread) in :attr:`term_tensors`;
        their sum is the loss."""
        self.term_tensors = {name: value.detach() for name, value in terms.items()}

    def forward(
        self, sentence_features: Iterable[dict[str, Any]], labels: Tensor | None = None, **batch_extras: Any
    ) -> Tensor:
        given, needed = set(batch_extras), set(self.batch_extras)
        if given != needed:
            raise ConfigError(
                f"{type(self).__name__} takes the batch extras {sorted(needed)}, got {sorted(given)}"
            )
        embeddings = embed_columns(self.model, sentence_features)
        return self.compute_loss_from_embeddings(embeddings, labels, **batch_extras)

    @abstractmethod
    def compute_loss_from_embeddings(self, embeddings: list[Tensor], labels: Tensor | None = None) -> Tensor:
        """The loss from the embeddings of the batch's columns (one ``(batch, dim)`` tensor each); a loss
        with :attr:`batch_extras` takes them as keyword arguments too (:meth:`forward` passes them)."""

    @abstractmethod
    def get_config_dict(self) -> dict[str, Any]:
        """The loss's options, as sentence-transformers writes them into the model card."""


def check_scale(scale: float) -> float:
    """``scale`` (the inverse temperature 1/τ) as a float; it must be positive."""
    return check_number("scale (inverse temperature)", scale, low=0.0, low_open=True)


def check_similarity(similarity: str) -> Similarity:
    """``similarity`` if it is one of :data:`SIMILARITIES` (``"cos"``, ``"dot"``)."""
    return cast(Similarity, check_choice("similarity", similarity, SIMILARITIES))


def check_columns(columns: list[Tensor], names: list[str]) -> None:
    """All columns are ``(batch, dim)`` tensors with the same batch size and dimension."""
    first = columns[0]
    for column, name in zip(columns, names, strict=True):
        if column.ndim != 2 or column.shape != first.shape:
            raise ConfigError(
                f"expected every column as a (batch, dim) tensor of shape {tuple(first.shape)} "
                f"(that of {names[0]}), found {name} of shape {tuple(column.shape)}"
            )


__all__ = [
    "SIMILARITIES",
    "SentclLoss",
    "Similarity",
    "check_columns",
    "check_scale",
    "check_similarity",
    "similarity_matrix",
]
