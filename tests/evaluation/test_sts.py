"""STS evaluation against scipy and sentence-transformers' EmbeddingSimilarityEvaluator."""

from __future__ import annotations

import types
import zlib

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentcl.data import samples_root
from sentcl.data.records import ScoredPairs
from sentcl.evaluation.encode_once import embed_unique, pairwise_cosine, unique_texts
from sentcl.evaluation.scoring import average, score
from sentcl.evaluation.sts import cosine_spearman, evaluate_sts
from sentcl.evaluation.tasks import STS_AVERAGE, load_task


def hash_embed(texts, dim=16):
    """Deterministic pseudo-embeddings: the same text always gets the same vector."""
    return np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=dim) for t in texts])


def _pairs(seed=0, n=90, self_pairs=True):
    rng = np.random.default_rng(seed)
    sentences = [f"sentence {i}" for i in range(40)]  # repeated across pairs, as in STS16/SICK
    first = rng.integers(0, 40, n)
    second = rng.integers(0, 40, n) if self_pairs else (first + rng.integers(1, 40, n)) % 40
    s1 = [sentences[i] for i in first]
    s2 = [sentences[i] for i in second]
    subsets = [["alpha", "beta", "gamma"][i] for i in rng.integers(0, 3, n)]
    return ScoredPairs(name="toy", split="test", sentences1=s1, sentences2=s2,
                       scores=rng.integers(0, 6, n).astype(float), subsets=subsets)


def test_cosine_spearman_is_scipy_spearman_of_cosines_times_100():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 8)), rng.normal(size=(50, 8)) * 3.0  # unnormalised on purpose
    gold = rng.random(50)
    cos = np.array([x @ y / np.linalg.norm(x) / np.linalg.norm(y) for x, y in zip(a, b, strict=True)])
    assert cosine_spearman(a, b, gold) == pytest.approx(100 * spearmanr(cos, gold).statistic, abs=1e-10)
    # a wrong sign or a transposed comparison would not give this
    assert cosine_spearman(a, -b, gold) == pytest.approx(-cosine_spearman(a, b, gold))


def test_all_mean_wmean_and_subsets_match_direct_computation():
    pairs = _pairs()
    e1, e2 = hash_embed(pairs.sentences1), hash_embed(pairs.sentences2)
    out = evaluate_sts(pairs, embeddings1=e1, embeddings2=e2)
    cos = np.einsum("ij,ij->i", e1, e2) / (np.linalg.norm(e1, axis=1) * np.linalg.norm(e2, axis=1))
    identical = np.array(pairs.sentences1) == np.array(pairs.sentences2)
    assert identical.sum() >= 2  # pairs of a sentence with itself: cosine 1, up to rounding here
    cos[identical] = 1.0
    per, sizes = [], []
    for name in ("alpha", "beta", "gamma"):
        rows = np.array(pairs.subsets) == name
        per.append(100 * spearmanr(cos[rows], pairs.scores[rows]).statistic)
        sizes.append(rows.sum())
        assert out["subsets"][name]["spearman"] == pytest.approx(per[-1])
        assert out["subsets"][name]["n"] == rows.sum()
    assert out["spearman"]["all"] == pytest.approx(100 * spearmanr(cos, pairs.scores).statistic)
    assert out["spearman"]["mean"] == pytest.approx(np.mean(per))
    assert out["spearman"]["wmean"] == pytest.approx(np.average(per, weights=sizes))
    assert out["n"] == len(pairs) and out["dataset"] == "toy"


def test_same_spearman_as_sentence_transformers_embedding_similarity_evaluator():
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    # no sentence paired with itself: sentence-transformers' float32 cosine orders such pairs by rounding noise
    pairs = _pairs(seed=1, n=200, self_pairs=False)
    texts = unique_texts(pairs.sentences1 + pairs.sentences2)[0]
    table = dict(zip(texts, hash_embed(texts), strict=True))

    class Model:
        similarity_fn_name = "cosine"
        model_card_data = types.SimpleNamespace(set_evaluation_metrics=lambda *a, **k: None)

        def encode(self, sentences, **kwargs):
            return np.stack([table[s] for s in sentences]).astype(np.float32)

    st = EmbeddingSimilarityEvaluator(pairs.sentences1, pairs.sentences2, pairs.scores.tolist(),
                                      similarity_fn_names=["cosine"], write_csv=False)(Model())
    ours = evaluate_sts(pairs, lambda texts: np.stack([table[t] for t in texts]).astype(np.float32))
    assert ours["spearman"]["all"] == pytest.approx(100 * st["spearman_cosine"], abs=1e-6)
    # sentence-transformers takes the cosine in float32, we in float64
    assert ours["pearson"]["all"] == pytest.approx(100 * st["pearson_cosine"], abs=1e-4)


def test_a_sentence_paired_with_itself_has_cosine_exactly_one():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(200, 32)) * rng.random((200, 1)) * 10
    cos = pairwise_cosine(x, x)
    assert np.all(cos == 1.0)  # so such pairs tie, as MTEB's cosine makes them
    assert pairwise_cosine(x[:1] * 0, x[:1])[0] == 0.0  # a zero vector: cosine 0
    y = rng.normal(size=(200, 32))
    direct = np.einsum("ij,ij->i", x, y) / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
    np.testing.assert_allclose(pairwise_cosine(x, y), direct, atol=1e-14)
    assert np.array_equal(pairwise_cosine(x, y), pairwise_cosine(y, x))


def test_embed_is_called_once_on_distinct_texts():
    pairs = _pairs()
    calls = []

    def embed(texts):
        calls.append(list(texts))
        return hash_embed(texts)

    out = evaluate_sts(pairs, embed)
    assert len(calls) == 1 and sorted(calls[0]) == sorted(set(pairs.sentences1 + pairs.sentences2))
    assert out["spearman"] == evaluate_sts(pairs, embeddings1=hash_embed(pairs.sentences1),
                                           embeddings2=hash_embed(pairs.sentences2))["spearman"]
    with pytest.raises(ValueError, match="either embed"):
        evaluate_sts(pairs, embed, embeddings1=hash_embed(pairs.sentences1))
    with pytest.raises(ValueError, match="shape"):
        embed_unique(lambda texts: np.zeros((1, 3)), ["a", "b"])


def test_seven_tasks_on_sample_data_encode_once_pooled_and_average():
    """The English STS tasks through the one scoring path: one call of the encoder for all of them,
    each task's Spearman the pooled one (SentEval's "all"), the Average their mean."""
    rng = np.random.default_rng(5)
    table = {}

    def embed(texts):
        embed.calls += 1
        return np.stack([table.setdefault(t, rng.standard_normal(8)) for t in texts])

    embed.calls = 0
    records = {name: load_task(name, samples_root()) for name in STS_AVERAGE}
    scored = score(embed, records)
    assert list(scored) == list(STS_AVERAGE)
    assert embed.calls == 1  # every distinct sentence of every task in one call
    for name, pairs in records.items():
        a, b = np.stack([table[s] for s in pairs.sentences1]), np.stack([table[s] for s in pairs.sentences2])
        cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
        assert scored[name].values["Spearman"] == pytest.approx(100 * spearmanr(cos, pairs.scores).statistic, abs=1e-9)
        assert scored[name].values["Spearman"] == scored[name].result["spearman"]["all"]
        assert scored[name].result["sample"]
    values = {name: s.values for name, s in scored.items()}
    assert average(values) == pytest.approx(np.mean([v["Spearman"] for v in values.values()]))
    # the other settings stay in the evaluator's result (sentcl evaluate sts --setting wmean reads them)
    sts16 = scored["STS16"].result["spearman"]
    assert sts16["wmean"] == pytest.approx(np.average([s["spearman"] for s in scored["STS16"].result["subsets"].values()],
                                                      weights=[s["n"] for s in scored["STS16"].result["subsets"].values()]))
    assert abs(sts16["wmean"] - sts16["all"]) > 1e-6


def scored(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return ScoredPairs(
        name="toy", split="test", sentences1=[f"a{i}" for i in range(n)], sentences2=[f"b{i % 25}" for i in range(n)],
        scores=rng.uniform(0, 5, n), subsets=["x" if i % 3 else "y" for i in range(n)],
    )


# --------------------------------------------------------------------------- sentcl.book.output.claims


def test_a_subset_with_one_pair_has_no_correlation_and_stays_out_of_the_means():
    pairs = scored(12, seed=3)
    pairs.subsets[5] = "single"
    out = evaluate_sts(pairs, hash_embed)
    assert out["subsets"]["single"]["n"] == 1 and np.isnan(out["subsets"]["single"]["spearman"])
    rest = [out["subsets"][name] for name in ("x", "y")]
    assert out["spearman"]["mean"] == pytest.approx(np.mean([s["spearman"] for s in rest]))
    assert out["spearman"]["wmean"] == pytest.approx(np.average([s["spearman"] for s in rest], weights=[s["n"] for s in rest]))
    pooled = cosine_spearman(hash_embed(pairs.sentences1), hash_embed(pairs.sentences2), pairs.scores)
    assert out["spearman"]["all"] == pytest.approx(pooled)  # the pooled correlation keeps every pair
    lonely = ScoredPairs(name="toy", split="test", sentences1=["a", "b"], sentences2=["c", "d"], scores=[1.0, 2.0],
                         subsets=["p", "q"])
    assert np.isnan(evaluate_sts(lonely, hash_embed)["spearman"]["mean"])

