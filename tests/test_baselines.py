"""BERT-whitening (Su et al. 2021, Algorithm 1)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentcl.baselines import fit_whitening, whiten
from sentcl.errors import ConfigError


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
    cos = lambda a: (a / np.linalg.norm(a, axis=1, keepdims=True)) @ (a / np.linalg.norm(a, axis=1, keepdims=True)).T
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
