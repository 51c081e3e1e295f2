"""BERT-whitening (Su et al. 2021, Algorithm 1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentcl.errors import ConfigError
from sentcl.whitening import fit_whitening, fit_whitening_on_texts, whiten, whitened


def anisotropic(n=400, d=6, seed=0):
    """Embeddings with a non-zero mean and known principal directions: variances 16, 9, 4, 1, 0.25, 0.0625."""
    rng = np.random.default_rng(seed)
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    scales = 2.0 ** np.arange(2, 2 - d, -1)
    z = rng.standard_normal((n, d))
    z = (z - z.mean(0)) @ np.linalg.inv(np.linalg.cholesky(np.cov(z.T, bias=True))).T  # exactly white sample
    return 3.0 + (z * scales) @ rotation.T, rotation, scales**2


def test_whitened_fit_data_has_zero_mean_and_identity_covariance():
    x, _, _ = anisotropic()
    y = whiten(x, fit_whitening(x))
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=1e-10)
    np.testing.assert_allclose(y.T @ y / len(y), np.eye(6), atol=1e-10)  # 1/N, as the paper's Σ
    # cosines before whitening are dominated by the shared mean; after, they are not
    def cos(a):
        return (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (a / np.linalg.norm(a, axis=1, keepdims=True)).T
    assert cos(x).mean() > 0.5 and abs(cos(y).mean()) < 0.05


def test_k_keeps_the_top_k_variance_directions():
    x, rotation, variances = anisotropic()
    full = fit_whitening(x)
    top2 = fit_whitening(x, k=2)
    np.testing.assert_allclose(top2.variances, variances[:2], rtol=1e-10)
    np.testing.assert_allclose(full.variances, variances, rtol=1e-10)
    # W_k spans the two largest-variance directions (up to sign)
    np.testing.assert_allclose(np.abs(rotation[:, :2].T @ top2.kernel * np.sqrt(top2.variances)), np.eye(2), atol=1e-8)
    y2 = whiten(x, top2)
    assert y2.shape == (400, 2) and top2.k == 2
    np.testing.assert_allclose(y2, whiten(x, full)[:, :2], atol=1e-10)  # the first k columns of the full transform


def test_matches_the_authors_recipe_up_to_sign_and_the_n_minus_1_factor():
    """Su et al.'s code: np.cov (1/(N−1)), u, s = svd(cov), W = u / sqrt(s), y = (x − μ) W."""
    x, _, _ = anisotropic(n=50, d=5, seed=3)
    u, s, _ = np.linalg.svd(np.cov(x.T))
    reference = (x - x.mean(0)) @ (u / np.sqrt(s))[:, :3]
    ours = whiten(x, fit_whitening(x, k=3))
    np.testing.assert_allclose(np.abs(ours), np.abs(reference) * np.sqrt(50 / 49), rtol=1e-8, atol=1e-10)


def test_fit_is_deterministic_and_takes_any_array():
    x, _, _ = anisotropic()
    a, b = fit_whitening(x, k=3), fit_whitening(x.copy(), k=3)
    assert np.array_equal(a.kernel, b.kernel) and np.array_equal(a.mu, b.mu)
    # each direction's largest-magnitude entry is positive, so the sign does not depend on the LAPACK build
    u = a.kernel * np.sqrt(a.variances)
    assert np.all(u[np.argmax(np.abs(u), axis=0), np.arange(3)] > 0)
    from_tensor = fit_whitening(torch.from_numpy(x.astype(np.float32)), k=3)
    np.testing.assert_allclose(from_tensor.kernel, a.kernel, rtol=1e-3, atol=1e-4)
    assert whiten(x.astype(np.float16), a).dtype == np.float32
    assert whiten(x, a).dtype == np.float64


def test_errors():
    x, _, _ = anisotropic(n=10, d=6)
    with pytest.raises(ConfigError, match="k must be"):
        fit_whitening(x, k=7)
    with pytest.raises(ConfigError, match="k must be"):
        fit_whitening(x, k=0)
    with pytest.raises(ConfigError, match="at least 2"):
        fit_whitening(x[:1])
    with pytest.raises(ConfigError, match="fewer than k = 6"):
        fit_whitening(x[:4])  # 4 points span at most 3 directions
    assert fit_whitening(x[:4], k=3).k == 3
    with pytest.raises(ConfigError, match="dimension 5"):
        whiten(x[:, :5], fit_whitening(x))
    with pytest.raises(ConfigError, match=r"\(N, d\) array"):
        fit_whitening(x[0])


def correlated(n, d=5, seed=0):
    rng = np.random.default_rng(seed)
    return 10.0 + rng.standard_normal((n, d)) @ rng.standard_normal((d, d))

def test_weighted_whitening_equals_whitening_the_repeated_rows():
    x = correlated(40)
    counts = np.random.default_rng(1).integers(1, 5, size=40)
    weighted = fit_whitening(x, weights=counts)
    repeated = fit_whitening(np.repeat(x, counts, axis=0))
    np.testing.assert_allclose(weighted.mu, repeated.mu, rtol=1e-12)
    np.testing.assert_allclose(weighted.kernel, repeated.kernel, rtol=1e-8, atol=1e-10)
    # chunked accumulation gives the same fit as one pass; an independent reference: numpy's weighted cov
    chunked = fit_whitening(x, weights=counts, chunk_rows=7)
    np.testing.assert_allclose(chunked.kernel, weighted.kernel, rtol=1e-8, atol=1e-10)
    y = whiten(np.repeat(x, counts, axis=0), weighted)
    np.testing.assert_allclose(y.mean(0), 0, atol=1e-9)
    np.testing.assert_allclose(np.cov(y.T, bias=True), np.eye(5), atol=1e-9)
    reference = np.cov(x.T, fweights=counts, bias=True)
    np.testing.assert_allclose(np.linalg.inv(weighted.kernel @ weighted.kernel.T), reference, rtol=1e-8, atol=1e-8)  # W Wᵀ = Σ⁻¹
    with pytest.raises(ConfigError, match="weights must be 40"):
        fit_whitening(x, weights=counts[:5])
    with pytest.raises(ConfigError, match="weights must be"):
        fit_whitening(x, weights=-counts)

def test_whitening_on_texts_counts_repeats_and_embeds_each_distinct_text_once():
    vocabulary = [f"sentence {i}" for i in range(30)]
    table = dict(zip(vocabulary, correlated(30, seed=2), strict=True))
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return np.stack([table[t] for t in texts])

    texts = [vocabulary[i] for i in np.random.default_rng(3).integers(0, 30, size=200)]
    fitted = fit_whitening_on_texts(embed, texts, chunk_texts=8)
    expected = fit_whitening(np.stack([table[t] for t in texts]))
    np.testing.assert_allclose(fitted.kernel, expected.kernel, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(fitted.mu, expected.mu, rtol=1e-12)
    seen = [t for chunk in calls for t in chunk]
    assert sorted(seen) == sorted(set(texts)) and max(len(c) for c in calls) <= 8
    np.testing.assert_allclose(whitened(embed, fitted)(texts[:3]), whiten(embed(texts[:3]), fitted))
    with pytest.raises(ConfigError, match="non-empty"):
        fit_whitening_on_texts(embed, [])
