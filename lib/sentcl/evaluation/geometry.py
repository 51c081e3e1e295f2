"""Geometry of an embedding space: alignment, uniformity (Wang & Isola 2020) and anisotropy.

Alignment and uniformity are defined on the unit hypersphere, so every function here
L2-normalises its input rows first: computing them on raw embeddings (a common mistake
reported by SimCSE users) gives numbers that depend on the vectors' lengths and cannot be
compared across models. A zero vector stays zero.

- ``alignment(x, y, alpha=2)`` = mean over positive pairs of ``||x_i - y_i||^alpha``
  (Wang & Isola 2020, §4.1, ``L_align``; lower is better).
- ``uniformity(x, t=2)`` = ``log`` of the mean over all pairs ``i < j`` of
  ``exp(-t ||x_i - x_j||^2)`` (§4.1, ``L_uniform``, summed over pairs as their code does with
  ``torch.pdist``; lower is more uniform).
- ``dimension_profile(x)`` = mean |x_d| per dimension, largest first (a few large dimensions:
  anisotropy, Ethayarajh 2019; Li et al. 2020).
- ``anisotropy(x)`` = mean cosine similarity of randomly paired *distinct* sentences
  (Ethayarajh 2019's baseline, at sentence level): near 0 for an isotropic space, near 1
  when every embedding points the same way.
- ``anisotropy_terms(x)`` = one term per row whose mean is the exact anisotropy over every pair of
  distinct rows, and whose resampled mean has that U-statistic's variance: the unit a claim about
  anisotropy resamples (RCL §3.4).
- ``top_variance_share(x, k)`` = the share of the total variance of the L2-normalised rows
  that lies in the ``k`` dimensions with the largest variance (``k/d`` for an isotropic
  space, near 1 when a few "rogue dimensions" dominate; Timkey and van Schijndel 2021).

SimCSE (Gao et al. 2021, Fig. 2) measures alignment on STS-B pairs scored above 4 and
uniformity on all STS-B sentences: :func:`evaluate_geometry` does that for a
:class:`~sentcl.data.records.ScoredPairs`. :func:`rank_correlations` asks whether a measure
orders models as a task score does (Spearman's rho across the models).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
from scipy.special import logsumexp
from scipy.stats import spearmanr

from ..data.records import ScoredPairs
from ..embeddings import Embed
from ..errors import ConfigError
from .encode_once import as_matrix, embed_unique, l2_normalise, unique_texts

_BLOCK = 2048  # rows per block in the all-pairs sum (a block x n float64 matrix in memory)


def alignment(x: np.ndarray, y: np.ndarray, alpha: float = 2.0) -> float:
    """Mean of ``||x_i - y_i||^alpha`` over the positive pairs ``(x_i, y_i)``, rows L2-normalised."""
    x = as_matrix(x, "x")
    y = as_matrix(y, "y", rows=x.shape[0])
    if len(x) == 0:
        raise ConfigError("alignment needs at least one positive pair")
    if alpha <= 0:
        raise ConfigError(f"alpha must be > 0, got {alpha}")
    distances = np.linalg.norm(l2_normalise(x) - l2_normalise(y), axis=1)
    return float(np.mean(distances**alpha))


def uniformity(x: np.ndarray, t: float = 2.0) -> float:
    """``log mean_{i<j} exp(-t ||x_i - x_j||^2)`` over all pairs of rows, L2-normalised.

    Exact over all ``n(n-1)/2`` pairs, in blocks of rows and in log space (no underflow).
    """
    x = l2_normalise(as_matrix(x, "x"))
    n = len(x)
    if n < 2:
        raise ConfigError("uniformity needs at least two embeddings")
    if t <= 0:
        raise ConfigError(f"t must be > 0, got {t}")
    norms = np.einsum("ij,ij->i", x, x)
    partial = []
    for start in range(0, n - 1, _BLOCK):
        block = x[start : start + _BLOCK]
        sq = norms[start : start + _BLOCK, None] + norms[None, :] - 2.0 * block @ x.T
        np.maximum(sq, 0.0, out=sq)
        rows = np.arange(start, start + len(block))[:, None]
        upper = np.arange(n)[None, :] > rows  # pairs i < j only
        partial.append(logsumexp(-t * sq[upper]))
    n_pairs = n * (n - 1) / 2
    return float(logsumexp(partial) - np.log(n_pairs))


def anisotropy(x: np.ndarray, n_pairs: int | None = 10_000, seed: int = 0) -> float:
    """Mean cosine similarity of random pairs of distinct rows (rows = distinct sentences).

    With ``n_pairs`` the pairs ``(i, j)``, ``i != j``, are drawn uniformly with
    ``np.random.default_rng(seed)``; with ``n_pairs=None`` the mean is taken exactly over all
    ordered pairs of distinct rows. Pass one row per distinct sentence (see
    :func:`evaluate_geometry`), or duplicates count as pairs of "different" sentences.
    """
    x = l2_normalise(as_matrix(x, "x"))
    n = len(x)
    if n < 2:
        raise ConfigError("anisotropy needs at least two embeddings")
    if n_pairs is None:
        total = x.sum(axis=0)
        return float((total @ total - np.einsum("ij,ij->", x, x)) / (n * (n - 1)))
    if n_pairs < 1:
        raise ConfigError(f"n_pairs must be >= 1 or None, got {n_pairs}")
    rng = np.random.default_rng(seed)
    i = rng.integers(0, n, size=n_pairs)
    j = (i + rng.integers(1, n, size=n_pairs)) % n  # uniform over the other n - 1 rows
    return float(np.mean(np.einsum("ij,ij->i", x[i], x[j])))


def anisotropy_terms(x: np.ndarray) -> np.ndarray:
    r"""Per-row terms of the exact anisotropy, for resampling the rows (sentences).

    The exact anisotropy over the ordered pairs of distinct unit rows is the U-statistic
    :math:`U = \frac{1}{n(n-1)}\sum_{i \ne j} \cos(x_i, x_j)` (:func:`anisotropy` with ``n_pairs=None``).
    Row i's mean cosine to the others, :math:`a_i = \frac{1}{n-1}\sum_{j \ne i} \cos(x_i, x_j)`, averages
    to U, but a mean of resampled :math:`a_i` has a quarter of U's variance: each pair enters two rows'
    terms. Hoeffding's projection, :math:`U - \theta \approx \frac{2}{n}\sum_i (h_1(x_i) - \theta)`, gives the
    terms :math:`t_i = 2a_i - U`: their mean is U, and the mean of a resample of them has U's variance to
    first order. Returns ``(n,)`` float64.
    """
    x = l2_normalise(as_matrix(x, "x")).astype(np.float64)
    n = len(x)
    if n < 2:
        raise ConfigError("anisotropy needs at least two embeddings")
    own = np.einsum("ij,ij->i", x, x)  # 1 for a unit row, 0 for a zero row
    a = (x @ x.sum(axis=0) - own) / (n - 1)
    return 2.0 * a - a.mean()


def dimension_profile(x: np.ndarray, top: int | None = 20) -> np.ndarray:
    """Mean absolute value of each dimension over the L2-normalised rows, largest first (the first ``top``).

    The "magnitude profile" behind the anisotropy argument Tan et al. (2022, §3.4) take from
    Ethayarajh (2019) and Li et al. (2020): an anisotropic space has a few dimensions with large
    values in every embedding, so the profile starts high and drops; a flatter profile is a more
    isotropic space. On unit rows the squared profile of all dimensions sums to at most 1, so
    profiles of models with different dimensions compare by their shape.
    """
    x = l2_normalise(as_matrix(x, "x"))
    if len(x) == 0:
        raise ConfigError("dimension_profile needs at least one embedding")
    profile = np.sort(np.abs(x).mean(axis=0))[::-1]
    return profile if top is None else profile[:top]


def top_variance_share(x: np.ndarray, k: int = 10) -> float:
    """Share of the total variance of the L2-normalised rows in the ``k`` dimensions of largest variance.

    ``sum of the k largest var_d / sum_d var_d``, with ``var_d`` the (population) variance of
    dimension ``d`` over the rows. A space whose variance is spread evenly over its ``d``
    dimensions gives ``k / d``; a few dominating dimensions push it towards 1. Coordinates, not
    principal components: the dimensions the magnitude profile (:func:`dimension_profile`) ranks.
    """
    x = l2_normalise(as_matrix(x, "x"))
    if len(x) < 2:
        raise ConfigError("top_variance_share needs at least two embeddings")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= x.shape[1]:
        raise ConfigError(f"k must be an integer in [1, {x.shape[1]}] (the embedding dimension), got {k!r}")
    variance = x.var(axis=0)
    total = variance.sum()
    if total == 0:
        raise ConfigError("top_variance_share: every embedding is the same vector (no variance)")
    return float(np.sort(variance)[::-1][:k].sum() / total)


def evaluate_geometry(
    pairs: ScoredPairs,
    embed: Embed,
    positive_threshold: float = 4.0,
    alpha: float = 2.0,
    t: float = 2.0,
    anisotropy_pairs: int | None = 10_000,
    seed: int = 0,
    top_dimensions: int = 10,
) -> dict:
    """SimCSE's alignment/uniformity protocol on a scored pair set (e.g. STS-B test), plus anisotropy.

    Alignment over the pairs with gold score ``> positive_threshold`` (SimCSE: STS-B pairs above
    4 of 5); uniformity, anisotropy, :func:`top_variance_share` (of ``top_dimensions``) and the
    largest value of :func:`dimension_profile` over every distinct sentence of the set. Each
    distinct sentence is encoded once.
    """
    texts = [*pairs.sentences1, *pairs.sentences2]
    vectors, index = embed_unique(embed, texts)
    n = len(pairs)
    positive = np.flatnonzero(pairs.scores > positive_threshold)
    if len(positive) == 0:
        raise ConfigError(f"{pairs.name}/{pairs.split}: no pair scores above {positive_threshold}")
    return {
        "dataset": pairs.name,
        "split": pairs.split,
        "sample": pairs.sample,
        "positive_threshold": positive_threshold,
        "n_positive_pairs": len(positive),
        "n_sentences": len(unique_texts(texts)[0]),
        "alignment": alignment(vectors[index[positive]], vectors[index[n + positive]], alpha=alpha),
        "uniformity": uniformity(vectors, t=t),
        "anisotropy": anisotropy(vectors, n_pairs=anisotropy_pairs, seed=seed),
        "top_variance_share": top_variance_share(vectors, k=min(top_dimensions, vectors.shape[1])),
        "largest_dimension": float(dimension_profile(vectors, top=1)[0]),
        "dimension": int(vectors.shape[1]),
        "alpha": alpha,
        "t": t,
        "top_dimensions": top_dimensions,
    }


GEOMETRY_MEASURES = ("alignment", "uniformity", "anisotropy", "top_variance_share")


def rank_correlations(models: Sequence[Mapping[str, float]], score: str,
                      measures: Sequence[str] = GEOMETRY_MEASURES) -> list[dict]:
    """Does a geometry measure order models as ``score`` (e.g. the STS average) does? For each of
    ``measures``, Spearman's rho across ``models`` (one mapping per model with the measures and the
    score) between the measure and the score, its n and scipy's two-sided p (which assumes the models
    are independent draws: seeds of a few methods from one encoder are not, so read p as a
    description). The measures are lower-is-better: a negative rho means the better-placed models
    score higher. NaN where a side is constant."""
    if len(models) < 3:
        raise ConfigError(f"a rank correlation across models needs at least 3 models, got {len(models)}")
    out = []
    scores = np.array([m[score] for m in models], dtype=np.float64)
    for measure in measures:
        values = np.array([m[measure] for m in models], dtype=np.float64)
        if np.ptp(values) == 0 or np.ptp(scores) == 0:
            rho, p = math.nan, math.nan
        else:
            result = spearmanr(values, scores)
            rho, p = float(result.statistic), float(result.pvalue)
        out.append({"measure": measure, "rho": rho, "p": p, "n": len(models)})
    return out
