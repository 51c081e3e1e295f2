"""Alignment, uniformity and anisotropy against direct loop formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sentcl.data.records import ScoredPairs
from sentcl.errors import ConfigError
from sentcl.evaluation import geometry
from sentcl.evaluation.geometry import alignment, anisotropy, anisotropy_terms, evaluate_geometry, uniformity


def _unit(v):
    norm = math.sqrt(sum(a * a for a in v))
    return [a / norm for a in v]


def _loop_alignment(x, y, alpha):
    total = 0.0
    for a, b in zip(x, y, strict=True):
        a, b = _unit(a), _unit(b)
        total += math.sqrt(sum((p - q) ** 2 for p, q in zip(a, b, strict=True))) ** alpha
    return total / len(x)


def _loop_uniformity(x, t):
    units = [_unit(v) for v in x]
    values = []
    for i in range(len(units)):
        for j in range(i + 1, len(units)):
            values.append(math.exp(-t * sum((p - q) ** 2 for p, q in zip(units[i], units[j], strict=True))))
    return math.log(sum(values) / len(values))


def _loop_mean_cosine(x, pairs):
    return sum(float(np.dot(_unit(x[i]), _unit(x[j]))) for i, j in pairs) / len(pairs)


@pytest.mark.parametrize("alpha", [1.0, 2.0, 3.0])
def test_alignment_matches_loop_on_unnormalised_input(alpha):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 5)) * 7, rng.normal(size=(40, 5)) + 3  # far from unit length
    assert alignment(x, y, alpha) == pytest.approx(_loop_alignment(x.tolist(), y.tolist(), alpha))
    # scaling the rows changes nothing: inputs are normalised inside
    assert alignment(3 * x, 0.1 * y, alpha) == pytest.approx(alignment(x, y, alpha))
    assert alignment(x, x, alpha) == pytest.approx(0.0, abs=1e-12)
    assert alignment(x, -x, 2.0) == pytest.approx(4.0)  # antipodal unit vectors are 2 apart


@pytest.mark.parametrize("t", [0.5, 2.0, 5.0])
def test_uniformity_matches_loop_and_is_blockwise_exact(t, monkeypatch):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(37, 4)) * 5
    expected = _loop_uniformity(x.tolist(), t)
    assert uniformity(x, t) == pytest.approx(expected, rel=1e-10)
    monkeypatch.setattr(geometry, "_BLOCK", 5)  # several blocks, the last one short
    assert uniformity(x, t) == pytest.approx(expected, rel=1e-10)
    assert uniformity(np.tile(x[:1], (10, 1)), t) == pytest.approx(0.0, abs=1e-12)  # all equal: log 1


def test_anisotropy_exact_and_sampled():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(25, 6)) + 1.5  # a shared direction: positive mean cosine
    all_pairs = [(i, j) for i in range(25) for j in range(25) if i != j]
    assert anisotropy(x, n_pairs=None) == pytest.approx(_loop_mean_cosine(x.tolist(), all_pairs))
    # sampled: the same draws as the documented procedure, seeded and reproducible
    draw = np.random.default_rng(11)
    i = draw.integers(0, 25, size=500)
    j = (i + draw.integers(1, 25, size=500)) % 25
    assert np.all(i != j)
    assert anisotropy(x, n_pairs=500, seed=11) == pytest.approx(_loop_mean_cosine(x.tolist(), list(zip(i, j, strict=True))))
    assert anisotropy(x, n_pairs=500, seed=11) == anisotropy(x, n_pairs=500, seed=11)
    assert anisotropy(x, n_pairs=200_000, seed=3) == pytest.approx(anisotropy(x, n_pairs=None), abs=0.01)


def test_evaluate_geometry_uses_positive_pairs_and_distinct_sentences():
    rng = np.random.default_rng(3)
    texts = [f"t{i}" for i in range(20)]
    table = {t: rng.normal(size=4) for t in texts}
    s1 = [texts[i] for i in rng.integers(0, 20, 50)]
    s2 = [texts[i] for i in rng.integers(0, 20, 50)]
    scores = rng.random(50) * 5
    pairs = ScoredPairs(name="stsb", split="test", sentences1=s1, sentences2=s2, scores=scores, subsets=["x"] * 50)
    calls = []

    def embed(batch):
        calls.append(list(batch))
        return np.stack([table[t] for t in batch])

    out = evaluate_geometry(pairs, embed, anisotropy_pairs=None)
    pos = scores > 4.0
    assert len(calls) == 1 and len(calls[0]) == len(set(s1 + s2)) == out["n_sentences"]
    assert out["n_positive_pairs"] == pos.sum()
    e1 = np.stack([table[t] for t, p in zip(s1, pos, strict=True) if p])
    e2 = np.stack([table[t] for t, p in zip(s2, pos, strict=True) if p])
    assert out["alignment"] == pytest.approx(_loop_alignment(e1.tolist(), e2.tolist(), 2.0))
    distinct = np.stack([table[t] for t in dict.fromkeys(s1 + s2)])
    assert out["uniformity"] == pytest.approx(_loop_uniformity(distinct.tolist(), 2.0))
    assert out["anisotropy"] == pytest.approx(anisotropy(distinct, n_pairs=None))


def test_bad_input():
    x = np.ones((3, 2))
    with pytest.raises(ConfigError, match="y has 2 rows, expected 3"):
        alignment(x, np.ones((2, 2)))
    with pytest.raises(ConfigError, match="at least two embeddings"):
        uniformity(x[:1])
    with pytest.raises(ConfigError, match="NaN or infinite"):
        anisotropy(np.array([[np.nan, 1.0], [1.0, 2.0]]))


def test_dimension_profile_is_the_sorted_mean_magnitude_of_unit_rows():
    from sentcl.evaluation.geometry import dimension_profile

    x = np.array([[3.0, 0.0, 4.0], [0.0, -2.0, 0.0]])
    # unit rows: [0.6, 0, 0.8], [0, -1, 0]; mean |x_d| = [0.3, 0.5, 0.4]
    np.testing.assert_allclose(dimension_profile(x, top=None), [0.5, 0.4, 0.3])
    np.testing.assert_allclose(dimension_profile(x, top=2), [0.5, 0.4])
    rng = np.random.default_rng(0)
    isotropic = rng.normal(size=(2000, 32))
    spiky = isotropic + np.eye(32)[0] * 20  # one dimension dominates every embedding
    assert dimension_profile(spiky, 1)[0] > 0.9 > 0.3 > dimension_profile(isotropic, 1)[0]


def _loop_top_variance_share(x, k):
    units = [_unit(v) for v in x]
    n, d = len(units), len(units[0])
    means = [sum(u[c] for u in units) / n for c in range(d)]
    variances = [sum((u[c] - means[c]) ** 2 for u in units) / n for c in range(d)]
    return sum(sorted(variances, reverse=True)[:k]) / sum(variances)


@pytest.mark.parametrize("k", [1, 3, 6])
def test_top_variance_share_matches_loop_and_bounds(k):
    from sentcl.evaluation.geometry import top_variance_share

    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 6)) * [5, 1, 1, 2, 1, 1] + 2
    assert top_variance_share(x, k) == pytest.approx(_loop_top_variance_share(x.tolist(), k))
    assert top_variance_share(7 * x, k) == pytest.approx(top_variance_share(x, k))  # rows normalised first
    isotropic = rng.normal(size=(20_000, 32))
    assert top_variance_share(isotropic, 4) == pytest.approx(4 / 32, abs=0.01)
    rogue = isotropic * np.r_[25.0, np.ones(31)]  # one dimension carries most of the variance
    assert top_variance_share(rogue, 1) > 0.7 > 10 * top_variance_share(isotropic, 1)
    assert top_variance_share(x, 6) == pytest.approx(1.0)
    for bad in (0, 7, 2.5, True):
        with pytest.raises(ConfigError, match="k must be an integer"):
            top_variance_share(x, bad)


@pytest.mark.slow
def test_geometry_of_a_real_encoder_is_in_the_literature_range(shared_data):
    """all-MiniLM-L6-v2 on STS-B test (SimCSE's protocol): alignment and uniformity where published
    sentence encoders lie (Gao et al. 2021, Fig. 2 and Table G.1: alignment about 0.1-0.5, uniformity
    about -1.5 to -4 at t = 2), and the bounds of the unit sphere hold."""
    from sentcl.data import load
    from sentcl.embeddings import embedder
    from sentcl.models import MINILM, load_encoder

    pairs = load("stsbenchmark", "test", data_dir=shared_data)
    pairs = pairs.take(np.random.default_rng(0).choice(len(pairs), 400, replace=False))
    out = evaluate_geometry(pairs, embedder(load_encoder(MINILM, device="cpu"), show_progress=False, cache=False))
    assert 0.05 < out["alignment"] < 1.0
    assert -4.0 < out["uniformity"] < -1.0
    assert 0.0 < out["anisotropy"] < 0.5
    assert 10 / 384 < out["top_variance_share"] < 1.0


def _ranks(values):
    """Average ranks, 1-based, by a loop (ties share the mean of their positions)."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    k = 0
    while k < len(order):
        j = k
        while j + 1 < len(order) and values[order[j + 1]] == values[order[k]]:
            j += 1
        for m in range(k, j + 1):
            ranks[order[m]] = (k + j) / 2 + 1
        k = j + 1
    return ranks


def test_rank_correlations_are_spearman_across_models():
    """Pearson's correlation of the average ranks, by hand; n; a constant measure has no rho; too few models is an error."""
    rng = np.random.default_rng(3)
    models = [{"alignment": float(a), "uniformity": float(u), "anisotropy": 0.1, "score": float(s)}
              for a, u, s in zip(rng.normal(size=9).round(1), rng.normal(size=9), rng.normal(size=9), strict=True)]
    found = {c["measure"]: c for c in geometry.rank_correlations(models, "score", ("alignment", "uniformity", "anisotropy"))}
    for measure in ("alignment", "uniformity"):
        x, y = _ranks([m[measure] for m in models]), _ranks([m["score"] for m in models])
        expected = np.corrcoef(x, y)[0, 1]
        assert found[measure]["rho"] == pytest.approx(expected) and found[measure]["n"] == 9
        assert 0.0 <= found[measure]["p"] <= 1.0
    assert math.isnan(found["anisotropy"]["rho"])
    ordered = [{"alignment": float(k), "score": float(-k)} for k in range(5)]  # lower alignment, higher score
    assert geometry.rank_correlations(ordered, "score", ("alignment",))[0]["rho"] == pytest.approx(-1.0)
    with pytest.raises(ConfigError, match="at least 3 models"):
        geometry.rank_correlations(ordered[:2], "score")


def test_anisotropy_terms_average_to_the_exact_value_and_resample_with_its_variance():
    """The terms' mean is the exact anisotropy; the variance of a resampled mean of them matches the spread of the
    exact anisotropy over fresh samples of sentences (Hoeffding's projection), where the rows' own mean cosines
    (the terms without the factor 2) would give a quarter of it."""
    rng = np.random.default_rng(5)
    direction = np.ones(6) / math.sqrt(6)

    def sample(n):
        return rng.normal(size=(n, 6)) + 0.8 * direction * rng.gamma(2.0, 1.0, size=(n, 1))

    x = sample(30)
    assert anisotropy_terms(x).mean() == pytest.approx(anisotropy(x, n_pairs=None), abs=1e-12)
    n = 200
    spread = np.var([anisotropy(sample(n), n_pairs=None) for _ in range(300)])
    drawn = sample(n)
    terms = anisotropy_terms(drawn)
    own = (terms + terms.mean()) / 2  # a_i: each row's mean cosine to the others
    assert 0.6 < (terms.var() / n) / spread < 1.6
    assert (own.var() / n) / spread < 0.5  # the plain row means: too narrow an interval
    with pytest.raises(ConfigError):
        anisotropy_terms(x[:1])
