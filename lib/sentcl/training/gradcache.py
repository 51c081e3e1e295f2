"""Gradient caching (Gao et al. 2021, "Scaling Deep Contrastive Learning Batch Size under Memory
Limited Setup", GradCache): a contrastive batch of any size in the memory of a few rows.

A contrastive loss couples every row of the batch (each anchor is scored against every
candidate), so the batch cannot simply be split into accumulated micro-batches without
losing negatives. GradCache splits the *encoder* work instead:

1. embed the batch in chunks of ``chunk`` rows **without** building the graph, remembering each
   chunk's random state (:func:`embed_without_graph`);
2. compute the loss on the full batch's embeddings (leaf tensors) and back-propagate it to
   them: the gradient of the loss with respect to every embedding (the cache);
3. embed each chunk again, **with** the graph, under the remembered random state (same dropout
   masks), and back-propagate the cached embedding gradients through it
   (:func:`backward_through_chunks`).

The parameters end with the gradient of the full-batch loss, while only one chunk's
activations are alive at a time. sentence-transformers' Cached* losses do the same inside each
loss; here the trainer does it around any loss's ``compute_loss_from_embeddings``.
"""

from __future__ import annotations

from typing import Any

import torch
from sentence_transformers.base.losses.gradcache import RandContext
from torch import Tensor, nn


def chunk_features(features: dict[str, Any], chunk: int) -> list[dict[str, Any]]:
    """``features`` (one tokenised column) cut into slices of ``chunk`` rows.

    Tensors whose first axis is the batch are sliced; sequence-shaped ones lose the trailing
    positions that are padding for every row of the slice (so a chunk of short texts is
    embedded at its own width); other entries are shared.
    """
    mask = features.get("attention_mask")
    n = mask.shape[0] if isinstance(mask, Tensor) else next(
        v.shape[0] for v in features.values() if isinstance(v, Tensor) and v.ndim > 0
    )
    chunks = []
    for begin in range(0, n, chunk):
        end = min(begin + chunk, n)
        width = columns = None
        if isinstance(mask, Tensor) and mask.ndim == 2:
            columns = mask.shape[1]
            used = mask[begin:end].any(dim=0).nonzero()
            width = int(used.max()) + 1 if used.numel() else columns
        part = {}
        for key, value in features.items():
            if isinstance(value, Tensor) and value.ndim > 0 and value.shape[0] == n:
                value = value[begin:end]
                if width is not None and value.ndim == 2 and value.shape[1] == columns:
                    value = value[:, :width]
            part[key] = value
        chunks.append(part)
    return chunks


def embed_without_graph(model: nn.Module, chunks: list[dict[str, Any]]) -> tuple[Tensor, list[RandContext]]:
    """Step 1: the embeddings of all chunks (no graph) and each chunk's random state before its forward."""
    states, parts = [], []
    with torch.no_grad():
        for part in chunks:
            states.append(RandContext(*[v for v in part.values() if isinstance(v, Tensor)]))
            parts.append(model(part)["sentence_embedding"])
    return torch.cat(parts, dim=0), states


def backward_through_chunks(
    model: nn.Module, chunks: list[dict[str, Any]], states: list[RandContext], grad: Tensor
) -> None:
    """Step 3: re-embed each chunk with its graph, under its recorded random state, and
    back-propagate the cached gradient of its rows (``grad``, one row per text, as in step 1)."""
    offset = 0
    for part, state in zip(chunks, states, strict=True):
        with state:
            embeddings = model(part)["sentence_embedding"]
        rows = embeddings.shape[0]
        embeddings.backward(grad[offset : offset + rows].to(embeddings.dtype))
        offset += rows


__all__ = ["backward_through_chunks", "chunk_features", "embed_without_graph"]
