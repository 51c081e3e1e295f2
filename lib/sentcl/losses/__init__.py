"""Contrastive and classification losses: a functional core on embeddings plus a sentence-transformers-compatible module.

Each loss comes twice:

- a **function on embeddings** (the equation, a few tensor lines, tested against a loop-based
  reference): :func:`multiple_negatives_ranking_loss`, :func:`softmax_loss`;
- a **module** for training, a :class:`SentclLoss`: built from the SentenceTransformer ``model``
  plus the loss's options, called as ``loss(sentence_features, labels)`` exactly like a
  sentence-transformers loss, with ``get_config_dict()`` for the model card:
  :class:`MultipleNegativesRankingLoss`, :class:`SoftmaxLoss`.

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
"""

from sentcl.losses.base import SIMILARITIES, SentclLoss, similarity_matrix
from sentcl.losses.mnrl import MultipleNegativesRankingLoss, multiple_negatives_ranking_loss
from sentcl.losses.softmax import (
    CONCATENATION_PARTS,
    SBERT_CONCATENATION,
    SoftmaxLoss,
    pair_features,
    softmax_loss,
)

__all__ = [
    "CONCATENATION_PARTS",
    "SBERT_CONCATENATION",
    "SIMILARITIES",
    "MultipleNegativesRankingLoss",
    "SentclLoss",
    "SoftmaxLoss",
    "multiple_negatives_ranking_loss",
    "pair_features",
    "similarity_matrix",
    "softmax_loss",
]
