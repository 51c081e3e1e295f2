"""The InfoNCE lower bound on mutual information (IFCL's Table 4): a loop reference and its ceiling ln K."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from sentcl.errors import ConfigError
from sentcl.evaluation.information import infonce_ceiling, infonce_mutual_information


def reference(a, b, k, tau):
    """ln K − mean over groups and rows of −log softmax, with loops."""
    return sum(reference_terms(a, b, k, tau)) / (len(a) // k * k)


def reference_terms(a, b, k, tau):
    """Each row's ln K + log softmax of its own pair, groups in order, with loops."""
    values = []
    for g in range(len(a) // k):
        A, B = a[g * k:(g + 1) * k], b[g * k:(g + 1) * k]
        A = A / np.linalg.norm(A, axis=1, keepdims=True)
        B = B / np.linalg.norm(B, axis=1, keepdims=True)
        for i in range(k):
            logits = [float(A[i] @ B[j]) / tau for j in range(k)]
            m = max(logits)
            values.append(math.log(k) + logits[i] - m - math.log(sum(math.exp(x - m) for x in logits)))
    return values


def test_matches_loop_reference_and_counts_rows():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(70, 8))
    b = a + 0.5 * rng.normal(size=(70, 8))
    got = infonce_mutual_information(a, b, candidates=16, temperature=0.1, seed=None)  # in the given order
    assert got.groups == 4 and got.rows_used == 64 and got.rows_given == 70
    assert got.value == pytest.approx(reference(a, b, 16, 0.1), abs=1e-4)
    assert got.ceiling == pytest.approx(math.log(16)) and got.headroom == pytest.approx(got.ceiling - got.value)
    order = np.random.default_rng(3).permutation(70)  # shuffled: the same pairs, regrouped
    shuffled = infonce_mutual_information(a, b, candidates=16, temperature=0.1, seed=3)
    assert shuffled.value == pytest.approx(reference(a[order], b[order], 16, 0.1), abs=1e-4)


def test_terms_are_each_pairs_term_in_grouped_order_and_average_to_the_estimate():
    """The per-pair terms a claim resamples: the loop's, in the order the pairs were grouped, the same order for two
    models given the same pairs and seed; a wrong sign or a missing ln K would not average to the estimate."""
    rng = np.random.default_rng(4)
    a = rng.normal(size=(50, 8))
    b = a + 0.7 * rng.normal(size=(50, 8))
    got = infonce_mutual_information(a, b, candidates=16, temperature=0.1, seed=None)
    assert got.terms.shape == (48,)
    assert got.terms == pytest.approx(np.array(reference_terms(a, b, 16, 0.1)), abs=1e-4)
    assert got.terms.mean() == pytest.approx(got.value, abs=1e-12)
    order = np.random.default_rng(3).permutation(50)
    shuffled = infonce_mutual_information(a, b, candidates=16, temperature=0.1, seed=3)
    assert shuffled.terms == pytest.approx(np.array(reference_terms(a[order], b[order], 16, 0.1)), abs=1e-4)


def test_pairs_are_shuffled_before_grouping_so_runs_of_similar_rows_do_not_share_a_group():
    """Rows in blocks of 16 near-duplicates (as neighbouring lines of a file can be): grouped in order, a
    group's candidates are all alike and the estimate is low; shuffled, it reflects the pairs."""
    rng = np.random.default_rng(2)
    centres = rng.normal(size=(16, 32))
    a = np.repeat(centres, 16, axis=0) + 0.05 * rng.normal(size=(256, 32))
    b = a + 0.05 * rng.normal(size=(256, 32))
    in_order = infonce_mutual_information(a, b, candidates=16, temperature=0.05, seed=None)
    shuffled = infonce_mutual_information(a, b, candidates=16, temperature=0.05)
    assert shuffled.value > in_order.value + 1.0


def test_bound_saturates_at_ln_k_and_is_near_zero_for_independent_pairs():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(1024, 64))
    for k in (4, 16, 64, 256):
        same = infonce_mutual_information(a, a, candidates=k, temperature=0.05)
        assert same.value <= infonce_ceiling(k) + 1e-6
        assert same.value == pytest.approx(math.log(k), abs=0.01)  # identical pairs: the bound is its ceiling
        assert same.at_ceiling
    independent = infonce_mutual_information(a, rng.normal(size=(1024, 64)), candidates=64, temperature=0.05)
    assert independent.value < 0.5 * math.log(64) and not independent.at_ceiling


def test_bad_input_is_a_config_error():
    with pytest.raises(ConfigError):
        infonce_ceiling(1)
    with pytest.raises(ConfigError, match="fill no group"):
        infonce_mutual_information(np.ones((3, 2)), np.ones((3, 2)), candidates=4)
    with pytest.raises(ConfigError):
        infonce_mutual_information(np.ones((8, 2)), np.ones((8, 3)), candidates=4)


def test_dropout_embeddings_are_seeded_noisy_and_leave_the_model_as_it_was():
    from sentcl.evaluation.information import dropout_embeddings
    from sentcl.models import tiny_model

    model = tiny_model(0)
    model.eval()
    texts = ["a cat sat", "dogs bark at night", "the sun"]
    one, again, other = (dropout_embeddings(model, texts, seed=s, batch_size=2, cache=False) for s in (1, 1, 2))
    assert one.shape == (3, model.get_embedding_dimension())
    np.testing.assert_array_equal(one, again)
    assert not np.allclose(one, other)  # dropout is on
    assert not model.training


@pytest.mark.slow
def test_dropout_embeddings_are_cached_under_their_draw(tmp_path, monkeypatch):
    """A second call runs no forward pass and returns the same array; another seed, dropout rate, batch
    size or model (its fingerprint) is another key; the cached draw is the one computed without cache."""
    from sentcl.embeddings import cache_file
    from sentcl.evaluation.information import dropout_embeddings
    from sentcl.models import tiny_model

    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path))
    model = tiny_model(0)
    calls = []
    model[0].register_forward_hook(lambda *args: calls.append(1))
    texts = ["a cat sat", "dogs bark at night", "the sun", "rain again"]

    first = dropout_embeddings(model, texts, seed=1, batch_size=2)
    assert len(calls) == 2 and len(list(tmp_path.glob("embeddings/*/*.npy"))) == 1
    again = dropout_embeddings(model, texts, seed=1, batch_size=2)
    assert len(calls) == 2  # a hit: no forward pass
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(first, dropout_embeddings(model, texts, seed=1, batch_size=2, cache=False))

    def computed(**changes):
        draw = {"seed": 1, "batch_size": 2, **changes}
        before = len(calls)
        dropout_embeddings(model, texts, **draw)
        return len(calls) > before

    assert computed(seed=2) and computed(batch_size=4)  # each a miss: forward passes
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.3
    assert computed()  # the same seed and batch size under another dropout rate
    assert not np.array_equal(first, dropout_embeddings(model, texts, seed=1, batch_size=2))
    with torch.no_grad():
        next(model.parameters()).add_(0.01)
    assert computed()  # another model (fingerprint)
    assert cache_file(model, texts, "fp32", False) != cache_file(model, texts, "fp32", False, dropout={"seed": 1})
