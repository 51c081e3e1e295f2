"""Sentence embeddings with a disk cache, bf16 autocast on capable CPUs, and progress bars.

Every evaluator takes an embedder, any ``Callable[[Sequence[str]], np.ndarray]``;
:func:`embedder` makes one from a model, so that repeated evaluations of the same model on
the same texts read the cache instead of running the encoder again.

Cache: one ``.npy`` file (float32, rows in input order) per (model fingerprint, text
sequence, precision, normalisation, and for embeddings drawn with dropout on the draw's
settings) under ``cache_root()/embeddings/<fingerprint>/``, written atomically. The fingerprint (:func:`sentcl.models.fingerprint`) hashes the
weights, so a model changed in memory never reads another model's embeddings.

Precision (:mod:`sentcl.precision`): ``"auto"`` is fp32 on every CPU (the same numbers on every
machine) and bf16 or fp16 on a GPU; ``"bf16"``/``"fp16"`` run the forward pass under
``torch.autocast``. bf16 embeddings stay within cosine 1 - 1e-3 of the fp32 ones
(``tests/test_embeddings.py``); measured speed and cosine:
``benchmarks/results/encode_throughput_cpu.json``. Every call counts the texts it encoded (or read
from the cache) under the precision it used (:func:`sentcl.precision.note_use`).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError
from ..hashing import stable_hash, texts_hash
from ..io import atomic_path, report_damaged
from ..paths import cache_root
from ..precision import PRECISIONS, autocast, note_use, resolve_precision
from ..progress import in_kernel, progress_bar, to_terminal
from .store import EmbeddingStore as EmbeddingStore  # re-exported: the store beside the cache
from .store import write_store as write_store

if TYPE_CHECKING:  # sentence-transformers (and sentcl.models, which loads it) only where an encoder is used
    from sentence_transformers import SentenceTransformer

ENCODE_PRECISIONS = PRECISIONS
PROGRESS_MIN_TEXTS = 1000
"""With ``show_progress=None``, a progress bar appears from this many distinct texts on."""

Embed = Callable[[Sequence[str]], np.ndarray]
"""The one name for "texts -> embedding array": ``texts -> (len(texts), dim)`` float array, rows in
input order (an :func:`embedder`, a whitened one, a trainer's current model for re-encoding samplers)."""


def encode(
    model: SentenceTransformer | str | os.PathLike,
    texts: Sequence[str],
    batch_size: int = 64,
    normalize: bool = False,
    precision: str = "auto",
    cache: bool = True,
    show_progress: bool | None = None,
) -> np.ndarray:
    """Embed ``texts`` with ``model``: a float32 array of shape ``(len(texts), dim)``, rows in input order.

    Args:
        model: a SentenceTransformer, or a name/path for :func:`sentcl.models.load_encoder`.
        texts: the sentences (str). Duplicates are encoded once.
        batch_size: sentences per forward pass (sentence-transformers sorts them by length
            first, so that each batch pads little).
        normalize: L2-normalise each row (in fp32, after the forward pass).
        precision: ``"auto"``, ``"fp32"``, ``"bf16"`` or ``"fp16"`` (see module doc).
        cache: read and write the embedding cache; a hit runs no forward pass.
        show_progress: a progress bar over the texts (:func:`sentcl.progress.progress_bar`);
            ``None`` shows it from :data:`PROGRESS_MIN_TEXTS` distinct texts on. Under
            ``sentcl reproduce`` the bar goes to its terminal, not into the notebook, and
            every encoding of that many texts shows one there, even with ``False``; in any other
            Jupyter kernel (papermill, Colab) such an encoding shows a text bar in the cell (and
            papermill's ``--log-output``) that clears itself when done.
    """
    if isinstance(model, (str, os.PathLike)):
        from ..models import load_encoder

        model = load_encoder(model)
    texts = _checked_texts(texts)
    if not texts:
        return np.zeros((0, model.get_embedding_dimension() or 0), dtype=np.float32)
    chosen = resolve_precision(precision, model.device)
    path = cache_file(model, texts, chosen, normalize) if cache else None
    if path is not None and path.is_file():
        cached = _read(path, len(texts))
        if cached is not None:
            note_use("texts read from the embedding cache", chosen, model.device, len(texts))
            return cached

    distinct = list(dict.fromkeys(texts))
    show = len(distinct) >= PROGRESS_MIN_TEXTS if show_progress is None else bool(show_progress)
    if to_terminal() or in_kernel():  # sentcl reproduce's terminal, papermill's log, a Colab cell: a long encoding shows
        show = show or len(distinct) >= PROGRESS_MIN_TEXTS
    modes = [(module, module.training) for module in model.modules()]
    bar = progress_bar(total=len(distinct), desc="encoding", unit="text", leave=False, disable=not show)
    # one forward call per batch: the hook counts the texts done, so the batches stay sentence-transformers'
    def count(_module, _args, output) -> None:  # a hook returning a value would replace the output
        bar.update(_batch_rows(output))

    hook = model.register_forward_hook(count)
    try:
        with autocast(chosen, model.device):
            encoded = model.encode(distinct, batch_size=batch_size, show_progress_bar=False, convert_to_tensor=True)
    finally:  # sentence-transformers' encode leaves every module in eval mode: restore (mid-training calls)
        hook.remove()
        bar.close()
        for module, training in modes:
            module.training = training
    note_use("texts encoded", chosen, model.device, len(distinct))
    vectors = encoded.detach().float().cpu().numpy().reshape(len(distinct), -1)
    if normalize:
        vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    row = {text: i for i, text in enumerate(distinct)}
    out = np.ascontiguousarray(vectors[[row[t] for t in texts]], dtype=np.float32)
    if path is not None:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.save(fh, out)
    return out


def embedder(model: SentenceTransformer | str | os.PathLike, **kwargs) -> Embed:
    """``texts -> np.ndarray``: :func:`encode` with ``model`` and ``kwargs`` bound (a name is loaded once)."""
    if isinstance(model, (str, os.PathLike)):
        from ..models import load_encoder

        model = load_encoder(model)
    unknown = set(kwargs) - {"batch_size", "normalize", "precision", "cache", "show_progress"}
    if unknown:
        raise ConfigError(f"unknown encode option(s) {sorted(unknown)}; valid: batch_size, normalize, precision, cache, show_progress")
    return functools.partial(encode, model, **kwargs)


def cache_file(
    model: SentenceTransformer, texts: Sequence[str], precision: str, normalize: bool, *, dropout: dict | None = None
) -> Path:
    """The cache file of ``model``'s embeddings of ``texts`` (``precision`` already resolved).

    ``dropout``: for embeddings drawn with dropout on
    (:func:`sentcl.evaluation.information.dropout_embeddings`), what decides the draw (seed, rates,
    batch size, device), as JSON data; part of the key. Without it the key is that of :func:`encode`.
    A model that runs packed or compiled (:func:`sentcl.models.speed_options`; its sums, and its dropout masks, fall
    otherwise) keys its embeddings apart from the same weights run plainly.
    """
    from ..models import fingerprint, speed_options

    spec = {"texts": texts_hash(texts), "n": len(texts), "precision": precision, "normalize": bool(normalize)}
    if dropout is not None:
        spec["dropout"] = dropout
    options = speed_options(model)
    if options:  # a plain model's keys stay those it always had
        spec["speed_options"] = options
    return cache_root() / "embeddings" / fingerprint(model) / f"{stable_hash(spec)}.npy"


def _batch_rows(output) -> int:
    """The number of texts in one forward pass's output (a mapping with its sentence embeddings)."""
    try:
        return int(output["sentence_embedding"].shape[0])
    except (KeyError, TypeError, IndexError, AttributeError):
        return 0


def _checked_texts(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):
        raise ConfigError("encode() takes a sequence of texts, got a single str; wrap it in a list")
    texts = list(texts)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"texts[{i}] is a {type(text).__name__} ({text!r:.60}), expected a str")
    return texts


def _read(path: Path, n: int) -> np.ndarray | None:
    """A cached array, or None (said in one line) when the file is unreadable (truncated, corrupt)
    or not an ``(n, dim)`` float32 array: the caller encodes again and overwrites it."""
    try:
        array = np.load(path)
    except (OSError, ValueError, EOFError) as exc:
        report_damaged(path, f"unreadable embedding cache entry ({exc})", "encoding again")
        return None
    if array.ndim != 2 or array.shape[0] != n or array.dtype != np.float32:
        report_damaged(path, f"{array.dtype} array of shape {array.shape}, expected ({n}, dim) float32", "encoding again")
        return None
    return array

