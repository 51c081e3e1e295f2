"""Contrastive and classification losses: a functional core on embeddings plus a sentence-transformers-compatible module.

Each loss comes twice:

- a **function on embeddings** (the equation, a few tensor lines, tested against a loop-based
  reference): :func:`multiple_negatives_ranking_loss`, :func:`softmax_loss`;
- a **module** for training, a :class:`SentclLoss`: built from the SentenceTransformer ``model``
  plus the loss's options, called as ``loss(sentence_features, labels)`` exactly like a
  sentence-transformers loss, with ``get_config_dict()`` for the model card:
  :class:`MultipleNegativesRankingLoss`, :class:`SoftmaxLoss`.

The contract a trainer relies on (columns, labels, batch extras, ``compute_loss_from_embeddings``,
a loss's own parameter groups and state) is written once, in :mod:`sentcl.losses.base`.
"""

from sentcl.losses.base import SIMILARITIES, SentclLoss, similarity_matrix
from sentcl.losses.bsc import (
    BatchSoftmaxContrastiveLoss,
    ComboLoss,
    TripletLoss,
    batch_softmax_contrastive_loss,
    cosine_mse_loss,
    triplet_loss,
)
from sentcl.losses.ifcl import HippocampusQueue, IFCLLoss, queue_infonce_loss, twin_loss, twin_margins
from sentcl.losses.mnrl import MultipleNegativesRankingLoss, multiple_negatives_ranking_loss
from sentcl.losses.rcl import EntropyLoss, RegulatorLoss, entropy_loss, regulator_loss
from sentcl.losses.softmax import (
    CONCATENATION_PARTS,
    SBERT_CONCATENATION,
    SoftmaxLoss,
    pair_features,
    softmax_loss,
)

__all__ = [
    "BatchSoftmaxContrastiveLoss",
    "ComboLoss",
    "TripletLoss",
    "batch_softmax_contrastive_loss",
    "cosine_mse_loss",
    "triplet_loss",
    "HippocampusQueue",
    "IFCLLoss",
    "queue_infonce_loss",
    "twin_loss",
    "twin_margins",
    "EntropyLoss",
    "RegulatorLoss",
    "entropy_loss",
    "regulator_loss",
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
