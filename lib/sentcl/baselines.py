r"""Baselines that need no training: BERT-whitening (Su et al. 2021, "Whitening Sentence
Representations for Better Semantics and Faster Retrieval", Algorithm 1 "Whitening-k").

Given sentence embeddings :math:`\{x_i\}_{i=1}^N` (rows), whitening maps them to zero mean and
identity covariance:

.. math::

    \mu = \frac{1}{N}\sum_{i=1}^N x_i, \qquad
    \Sigma = \frac{1}{N}\sum_{i=1}^N (x_i - \mu)^\top (x_i - \mu) = U \Lambda U^\top \;\text{(SVD)}, \qquad
    W = U \Lambda^{-1/2}, \qquad \tilde{x}_i = (x_i - \mu)\, W.

Keeping only the first k columns of W (the directions of the k largest variances) reduces the
dimension to k ("Whitening-k"). The covariance uses 1/N as the paper's equation; the authors'
code uses ``np.cov`` (1/(N − 1)), which scales every whitened vector by the same factor
:math:`\sqrt{(N-1)/N}` and so changes no cosine similarity. The sign of each column of U is fixed
(its largest-magnitude entry made positive) so that a fit is the same on every LAPACK build.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from sentcl.errors import ConfigError


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


def fit_whitening(embeddings: ArrayLike, k: int | None = None, rtol: float = 1e-10) -> Whitening:
    """Fit BERT-whitening (Su et al. 2021, Algorithm 1) on ``embeddings`` (N, d): μ and W = U Λ^{-1/2}.

    Args:
        embeddings: the sentence embeddings to fit on, any array (numpy, memory-mapped, CPU tensor).
        k: keep the first k columns of W (the k largest-variance directions); None keeps all d.
        rtol: a direction whose variance is below ``rtol`` times the largest counts as absent.

    Raises:
        ConfigError: k is not in [1, d], or Σ has fewer than k non-negligible variances (e.g. fewer
            than d + 1 embeddings): those directions cannot be scaled to unit variance.
    """
    x = _as_matrix(embeddings, "embeddings").astype(np.float64)
    n, d = x.shape
    if n < 2:
        raise ConfigError(f"whitening needs at least 2 embeddings to estimate a covariance, got {n}")
    k = d if k is None else k
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= d:
        raise ConfigError(f"k must be an integer in [1, {d}] (the embedding dimension), got {k!r}")
    mu = x.mean(axis=0)
    centred = x - mu
    covariance = centred.T @ centred / n
    u, variances, _ = np.linalg.svd(covariance)
    rank = int(np.sum(variances > rtol * variances[0])) if variances[0] > 0 else 0
    if rank < k:
        raise ConfigError(
            f"the covariance of the {n} embeddings has {rank} non-negligible variances, fewer than k = {k}: "
            f"fit on more (and more varied) embeddings or choose k ≤ {rank}"
        )
    u, variances = u[:, :k], variances[:k]
    signs = np.sign(u[np.argmax(np.abs(u), axis=0), np.arange(k)])
    kernel = (u * signs) / np.sqrt(variances)
    return Whitening(mu=mu, kernel=kernel, variances=variances)


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
