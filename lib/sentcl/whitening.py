r"""BERT-whitening, a post-processing step on sentence embeddings (Su et al. 2021, "Whitening
Sentence Representations for Better Semantics and Faster Retrieval", Algorithm 1 "Whitening-k").

SimCSE whitened first-last averaged embeddings (its Appendix C), the pooling
:func:`sentcl.models.pooled_encoder` puts on any encoder.

Given sentence embeddings :math:`\{x_i\}_{i=1}^N` (rows), whitening maps them to
zero mean and identity covariance:

.. math::

    \mu = \frac{1}{N}\sum_{i=1}^N x_i, \qquad
    \Sigma = \frac{1}{N}\sum_{i=1}^N (x_i - \mu)^\top (x_i - \mu) = U \Lambda U^\top \;\text{(SVD)}, \qquad
    W = U \Lambda^{-1/2}, \qquad \tilde{x}_i = (x_i - \mu)\, W.

Keeping only the first k columns of W (the directions of the k largest variances) reduces the
dimension to k ("Whitening-k"). The covariance uses 1/N as the paper's equation; the authors'
code uses ``np.cov`` (1/(N − 1)), which scales every whitened vector by the same factor
:math:`\sqrt{(N-1)/N}` and so changes no cosine similarity. The sign of each column of U is fixed
(its largest-magnitude entry made positive) so that a fit is the same on every LAPACK build.

**Which sentences the kernel is fitted on** is the method's one choice. Su et al. offer the
"target" variant (the evaluation set's own sentences) and the "NLI" variant (every sentence of
SNLI train/dev/test and MultiNLI train, repeats included, ``eng/eval.py``); SimCSE reports the
NLI variant in its main table (its Table C.1 shows "target" is worse in the "all" setting), and
those are the BERT-whitening rows the MNRL-SBERT paper cites. :func:`fit_whitening_on_texts`
fits on any list of sentences, repeats counted, embedding each distinct sentence once and
accumulating the moments chunk by chunk (the NLI set has ~1.9 M sentence occurrences).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .embeddings import Embed
from .errors import ConfigError


@dataclass(frozen=True)
class Whitening:
    """A fitted whitening transform, :math:`\\tilde{x} = (x - \\mu) W`."""

    mu: np.ndarray
    """μ, the mean embedding, shape ``(d,)``."""
    kernel: np.ndarray
    """W = U Λ^{-1/2} (first k columns), shape ``(d, k)``."""
    variances: np.ndarray
    """The kept eigenvalues of Σ (the variances along W's directions), descending, shape ``(k,)``."""

    @property
    def k(self) -> int:
        """The output dimension."""
        return self.kernel.shape[1]


def _as_matrix(embeddings: ArrayLike, what: str) -> np.ndarray:
    x = np.asarray(embeddings)
    if x.ndim != 2 or not np.issubdtype(x.dtype, np.number):
        raise ConfigError(f"{what} must be a numeric (N, d) array, got shape {x.shape} and dtype {x.dtype}")
    return x


class _Moments:
    """Weighted first and second moments of embeddings, accumulated chunk by chunk in float64.

    Sums are taken around a shift (the first chunk's weighted mean), so that the covariance of
    embeddings with a large common mean (anisotropic BERT embeddings) keeps its precision.
    """

    def __init__(self) -> None:
        self.weight = 0.0
        self.count = 0
        self.shift: np.ndarray | None = None
        self.sum: np.ndarray | None = None
        self.outer: np.ndarray | None = None

    def add(self, x: np.ndarray, weights: np.ndarray | None = None) -> None:
        x = x.astype(np.float64)
        w = np.ones(len(x)) if weights is None else np.asarray(weights, dtype=np.float64)
        if self.shift is None:
            self.shift = (w @ x) / w.sum()
            self.sum = np.zeros(x.shape[1])
            self.outer = np.zeros((x.shape[1], x.shape[1]))
        elif x.shape[1] != self.shift.shape[0]:
            raise ConfigError(f"embeddings of dimension {x.shape[1]} after embeddings of dimension {self.shift.shape[0]}")
        centred = x - self.shift
        self.sum += w @ centred
        self.outer += (centred * w[:, None]).T @ centred
        self.weight += float(w.sum())
        self.count += len(x)

    def whitening(self, k: int | None, rtol: float) -> Whitening:
        if self.count < 2:
            raise ConfigError(f"whitening needs at least 2 embeddings to estimate a covariance, got {self.count}")
        assert self.shift is not None and self.sum is not None and self.outer is not None  # set by the first add()
        d = self.shift.shape[0]
        k = d if k is None else k
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= d:
            raise ConfigError(f"k must be an integer in [1, {d}] (the embedding dimension), got {k!r}")
        offset = self.sum / self.weight  # μ − shift
        mu = self.shift + offset
        covariance = self.outer / self.weight - np.outer(offset, offset)
        u, variances, _ = np.linalg.svd(covariance)
        rank = int(np.sum(variances > rtol * variances[0])) if variances[0] > 0 else 0
        if rank < k:
            raise ConfigError(
                f"the covariance of the {self.count} embeddings has {rank} non-negligible variances, fewer than "
                f"k = {k}: fit on more (and more varied) embeddings or choose k ≤ {rank}"
            )
        u, variances = u[:, :k], variances[:k]
        signs = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(k)])
        kernel = (u * signs) / np.sqrt(variances)
        return Whitening(mu=mu, kernel=kernel, variances=variances)


def fit_whitening(
    embeddings: ArrayLike,
    k: int | None = None,
    rtol: float = 1e-10,
    weights: ArrayLike | None = None,
    chunk_rows: int = 65536,
) -> Whitening:
    """Fit BERT-whitening (Su et al. 2021, Algorithm 1) on ``embeddings`` (N, d): μ and W = U Λ^{-1/2}.

    Args:
        embeddings: the sentence embeddings to fit on, any array (numpy, memory-mapped, CPU tensor).
        k: keep the first k columns of W (the k largest-variance directions); None keeps all d.
        rtol: a direction whose variance is below ``rtol`` times the largest counts as absent.
        weights: one non-negative weight per row (e.g. how often a distinct sentence occurs in the
            fit set); μ and Σ are then weighted means. None: every row counts once.
        chunk_rows: rows converted to float64 at a time (memory stays O(chunk_rows · d + d²)).

    Raises:
        ConfigError: k is not in [1, d], or Σ has fewer than k non-negligible variances (e.g. fewer
            than d + 1 embeddings): those directions cannot be scaled to unit variance.
    """
    x = _as_matrix(embeddings, "embeddings")
    w = None
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (len(x),) or not np.all(np.isfinite(w)) or np.any(w < 0) or not w.sum() > 0:
            raise ConfigError(f"weights must be {len(x)} finite non-negative numbers, not all zero (got shape {w.shape})")
    moments = _Moments()
    for start in range(0, len(x), chunk_rows):
        moments.add(x[start : start + chunk_rows], None if w is None else w[start : start + chunk_rows])
    return moments.whitening(k, rtol)


def fit_whitening_on_texts(
    embed: Embed, texts: Sequence[str], k: int | None = None, rtol: float = 1e-10, chunk_texts: int = 100_000
) -> Whitening:
    """Fit whitening on the embeddings of ``texts``, each occurrence counted (as Su et al.'s NLI fit).

    Each distinct text is embedded once (``embed`` is called on chunks of ``chunk_texts`` distinct
    texts, so the whole set never has to be in memory) and weighted by its number of occurrences:
    the same μ and Σ as embedding every occurrence.
    """
    if isinstance(texts, str) or not len(texts):
        raise ConfigError("fit_whitening_on_texts needs a non-empty sequence of texts")
    counted = Counter(texts)
    distinct = list(counted)
    moments = _Moments()
    for start in range(0, len(distinct), chunk_texts):
        chunk = distinct[start : start + chunk_texts]
        vectors = _as_matrix(embed(chunk), "the embeddings of the fit texts")
        if len(vectors) != len(chunk):
            raise ConfigError(f"embed returned {len(vectors)} rows for {len(chunk)} texts")
        moments.add(vectors, np.array([counted[t] for t in chunk], dtype=np.float64))
    return moments.whitening(k, rtol)


def whiten(embeddings: ArrayLike, whitening: Whitening) -> np.ndarray:
    """Apply a fitted whitening: :math:`\\tilde{x} = (x - \\mu) W`, shape ``(N, k)``.

    Computed in float64; returned as float64 for float64 input, float32 otherwise.
    """
    x = _as_matrix(embeddings, "embeddings")
    if x.shape[1] != whitening.mu.shape[0]:
        raise ConfigError(
            f"embeddings have dimension {x.shape[1]}, the whitening was fitted on dimension {whitening.mu.shape[0]}"
        )
    out_dtype = np.result_type(x.dtype, np.float32)
    return ((x.astype(np.float64) - whitening.mu) @ whitening.kernel).astype(out_dtype)


def whitened(embed: Embed, whitening: Whitening) -> Embed:
    """An embedder whose output is whitened: ``texts -> whiten(embed(texts), whitening)``."""

    def embed_whitened(texts: Sequence[str]) -> np.ndarray:
        return whiten(embed(texts), whitening)

    return embed_whitened
