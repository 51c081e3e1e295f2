"""What every evaluator shares: encoding each distinct text once, and cosine similarity.

An evaluator takes either precomputed embeddings (``np.ndarray``, one row per text) or an
``embed`` callable, ``Sequence[str] -> np.ndarray`` of shape ``(len(texts), dim)`` (e.g.
:func:`sentcl.embeddings.embedder`, which caches). With a callable, the evaluator collects
its texts, removes duplicates and calls ``embed`` once on the distinct texts, so a sentence
that occurs in many pairs (STS16, SICK) is encoded once and always gets the same vector;
:func:`embed_groups` does the same across the sets of several tasks.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ConfigError

if TYPE_CHECKING:  # the encoder's module imports torch and sentence-transformers: not for a type
    from ..embeddings import Embed

# Vectors shorter than this are treated as zero vectors (cosine 0), as torch's F.normalize does.
_EPS = 1e-12


def unique_texts(texts: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """The distinct texts in order of first appearance, and each text's index into them.

    ``distinct[index[i]] == texts[i]`` for every ``i``.
    """
    position: dict[str, int] = {}
    index = np.empty(len(texts), dtype=np.intp)
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ConfigError(f"text {i} is a {type(text).__name__}, expected str")
        index[i] = position.setdefault(text, len(position))
    return list(position), index


def embed_unique(embed: Embed, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Call ``embed`` once on the distinct ``texts``.

    Returns ``(vectors, index)``: ``vectors[index[i]]`` is the embedding of ``texts[i]``.
    """
    distinct, index = unique_texts(texts)
    vectors = np.asarray(embed(distinct))
    if vectors.ndim != 2 or vectors.shape[0] != len(distinct):
        raise ConfigError(
            f"embed returned an array of shape {vectors.shape} for {len(distinct)} texts; "
            f"expected ({len(distinct)}, dim)"
        )
    return vectors, index


def embed_groups(embed: Embed, groups: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """Embed several lists of texts with **one** call of ``embed`` on their distinct texts.

    Returns one matrix per group, row ``i`` of ``result[g]`` being the embedding of
    ``groups[g][i]``: a text shared by groups (a sentence in two STS years, a question asked
    in two tasks) is encoded once and gets the same vector everywhere.
    """
    vectors, index = embed_unique(embed, [text for group in groups for text in group])
    bounds = np.cumsum([0, *(len(group) for group in groups)])
    return [vectors[index[start:stop]] for start, stop in itertools.pairwise(bounds)]


def as_matrix(x: np.ndarray, name: str, rows: int | None = None) -> np.ndarray:
    """``x`` as a 2-D float64 array with finite values (and ``rows`` rows when given)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ConfigError(f"{name} must be a 2-D array (n, dim), got shape {x.shape}")
    if rows is not None and x.shape[0] != rows:
        raise ConfigError(f"{name} has {x.shape[0]} rows, expected {rows}")
    if not np.isfinite(x).all():
        raise ConfigError(f"{name} contains NaN or infinite values")
    return x


def l2_normalise(x: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm (float64); a zero row stays zero."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.maximum(norms, _EPS)


def pairwise_cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of row ``i`` of ``a`` with row ``i`` of ``b`` (float64).

    Computed as ``1 - ||a_i/|a_i| - b_i/|b_i| ||^2 / 2`` (as scikit-learn's
    ``paired_cosine_distances``, which MTEB uses), so a sentence paired with itself gets
    exactly 1 and such pairs tie, instead of being ordered by rounding noise in ``a_i . a_i``;
    a pair with a zero vector gets 0.
    """
    a = as_matrix(a, "embeddings1")
    b = as_matrix(b, "embeddings2", rows=a.shape[0])
    if a.shape[1] != b.shape[1]:
        raise ConfigError(f"embedding sizes differ: {a.shape[1]} and {b.shape[1]}")
    an, bn = l2_normalise(a), l2_normalise(b)
    diff = an - bn
    cos = 1.0 - 0.5 * np.einsum("ij,ij->i", diff, diff)
    nonzero = (np.linalg.norm(a, axis=1) >= _EPS) & (np.linalg.norm(b, axis=1) >= _EPS)
    return np.where(nonzero, cos, 0.0)


def pair_embeddings(
    sentences1: Sequence[str],
    sentences2: Sequence[str],
    embed: Embed | None,
    embeddings1: np.ndarray | None,
    embeddings2: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The two sides' embeddings of a pair dataset: given, or from ``embed`` (distinct texts once)."""
    given = embeddings1 is not None or embeddings2 is not None
    if given == (embed is not None) or (given and (embeddings1 is None or embeddings2 is None)):
        raise ConfigError("pass either embed, or both embeddings1 and embeddings2")
    n = len(sentences1)
    if embed is None:
        assert embeddings1 is not None and embeddings2 is not None  # checked above
        return as_matrix(embeddings1, "embeddings1", rows=n), as_matrix(embeddings2, "embeddings2", rows=n)
    vectors, index = embed_unique(embed, [*sentences1, *sentences2])
    return vectors[index[:n]], vectors[index[n:]]
