"""Opt-in speed that moves the numerics slightly (TrainingConfig.compile, .unpadded, .tf32): off by default and out
of the run's key then; on the CPU, a compiled and an unpadded encoder train within a stated tolerance of the eager,
padded one, and leave the trainer padded and eager, as the same weights loaded from the cache run (issue 45)."""

from __future__ import annotations

import pytest
import torch

from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.embeddings import cache_file
from sentcl.errors import ConfigError
from sentcl.evaluation.information import dropout_embeddings
from sentcl.losses.bsc import BatchSoftmaxContrastiveLoss
from sentcl.models import restore_encoder, set_drophead, speed_options, tiny_model, unpad_encoder
from sentcl.precision import tf32
from sentcl.training import Trainer, TrainingConfig

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py
COMPILE_RTOL = 1e-4
"""How far a compiled encoder's training losses may be from the eager one's, relative, over 6 steps (CPU, fp32)."""
UNPADDED_RTOL = 1e-5
"""How far an unpadded encoder's training losses may be from the padded one's, relative, over 6 steps (CPU, fp32,
dropout 0: with dropout the masks are drawn over other shapes, and the two runs differ as two seeds do)."""


@pytest.fixture(scope="module")
def pairs():
    return TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False).take(range(48))


def without_dropout(model):
    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def run(tmp_path, pairs, dropout=True, seen=None, **options):
    """Train 6 steps; ``seen`` (a list) gets, per forward pass of the embeddings, its rows (a packed batch is one
    row) and the speed options then in force on the model."""
    config = TrainingConfig(batch_size=8, learning_rate=1e-3, log_steps=1, max_steps=6, **options)
    model = tiny_model(0) if dropout else without_dropout(tiny_model(0))
    if seen is not None:
        model[0].auto_model.embeddings.register_forward_hook(
            lambda _m, _args, out: seen.append((out.shape[0], tuple(speed_options(model)))))
    trainer = Trainer(model, lambda m: BatchSoftmaxContrastiveLoss(m, 0.1), pairs, config, show_progress=False)
    result = trainer.train(tmp_path / str(sorted(options.items())))
    return trainer, [entry["loss"] for entry in result.losses]


def test_off_by_default_and_out_of_the_runs_key_until_turned_on(pairs):
    plain = Trainer(tiny_model(0), BatchSoftmaxContrastiveLoss, pairs, TrainingConfig(), show_progress=False)
    assert not ({"compile", "unpadded", "tf32"} & set(plain.describe()["config"]))  # the keys of earlier runs stay
    for option in ("compile", "unpadded", "tf32"):
        on = Trainer(tiny_model(0), BatchSoftmaxContrastiveLoss, pairs, TrainingConfig(**{option: True}), show_progress=False)
        assert on.describe()["config"][option] is True and on.stage().key != plain.stage().key
        with pytest.raises(ConfigError, match=option):
            TrainingConfig(**{option: 1})


@pytest.mark.slow
def test_a_compiled_encoder_trains_within_tolerance_of_the_eager_one(tmp_path, pairs):
    eager, eager_losses = run(tmp_path, pairs)
    seen: list[tuple[int, tuple[str, ...]]] = []
    compiled, compiled_losses = run(tmp_path, pairs, seen=seen, compile=True)
    assert seen and all(options == ("compile",) for _, options in seen)  # it trained compiled
    assert speed_options(compiled.model) == []  # and left the trainer eager
    assert list(compiled.model.state_dict()) == list(eager.model.state_dict())  # the same names: checkpoints load
    assert eager_losses != [] and compiled_losses == pytest.approx(eager_losses, rel=COMPILE_RTOL)
    for name, weight in eager.model.state_dict().items():
        torch.testing.assert_close(compiled.model.state_dict()[name], weight, rtol=1e-3, atol=1e-4)


def test_an_unpadded_encoder_trains_within_tolerance_of_the_padded_one(tmp_path, pairs):
    padded, padded_losses = run(tmp_path, pairs, dropout=False)
    seen: list[tuple[int, tuple[str, ...]]] = []
    unpadded, unpadded_losses = run(tmp_path, pairs, dropout=False, seen=seen, unpadded=True)
    assert seen and set(seen) == {(1, ("unpadded",))}  # it ran packed: every batch one row
    assert speed_options(unpadded.model) == [] and "forward" not in vars(unpadded.model[0].auto_model)  # and left padded
    assert padded_losses != [] and unpadded_losses == pytest.approx(padded_losses, rel=UNPADDED_RTOL)
    for name, weight in padded.model.state_dict().items():
        torch.testing.assert_close(unpadded.model.state_dict()[name], weight, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("pooling", ["mean", "cls", "first_last_avg"])
def test_unpadded_token_states_equal_the_padded_ones_at_the_real_tokens(pooling):
    """Packing changes which tokens are computed, not what a real token gets: the token states (zeros at the
    padding), BERT's pooler and the layer states a pooling reads, and the gradients, within float32 round-off.
    The batch mixes lengths (1 to 40 tokens), so a packing that let sequences see each other, shifted positions
    or misplaced a token would move them by far more."""
    texts = ["a man is playing a guitar on the street while people watch " * 3, "hi",
             "the cat sat on the mat", "two dogs run in the park"]
    padded, packed = (without_dropout(tiny_model(0, pooling=pooling)) for _ in range(2))
    assert unpad_encoder(packed) == ["0.auto_model"] and unpad_encoder(packed) == ["0.auto_model"]  # once, idempotent
    features = padded.tokenize(texts)
    lengths = features["attention_mask"].sum(1)
    assert lengths.min() < lengths.max() == features["attention_mask"].shape[1]  # padding to pack away
    padded.train(), packed.train()
    ours, theirs = padded(dict(features)), packed(dict(features))
    mask = features["attention_mask"][..., None]
    if "token_embeddings" in ours:  # the cls pooling reads the pooler's output instead
        torch.testing.assert_close(theirs["token_embeddings"], ours["token_embeddings"] * mask, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(theirs["sentence_embedding"], ours["sentence_embedding"], rtol=1e-5, atol=1e-6)
    (ours["sentence_embedding"] ** 2).sum().backward()
    (theirs["sentence_embedding"] ** 2).sum().backward()
    for (name, a), b in zip(padded.named_parameters(), packed.parameters(), strict=True):
        if a.grad is not None:
            torch.testing.assert_close(b.grad, a.grad, rtol=1e-4, atol=1e-6, msg=name)
    assert packed[0].auto_model.config._attn_implementation == padded[0].auto_model.config._attn_implementation


def test_a_restored_encoder_draws_the_padded_ones_dropout_and_the_cache_keys_a_packed_one_apart():
    """Packed, dropout falls on other shapes than padded (another draw from the same seed), so the embedding cache
    keys a packed model's embeddings apart from the same weights'; :func:`restore_encoder` makes it padded again, bit
    for bit, under the plain key."""
    texts = ["a man is playing a guitar on the street while people watch", "hi", "the cat sat on the mat",
             "two dogs run in the park"]
    plain, packed = tiny_model(0), tiny_model(0)
    unpad_encoder(packed)
    assert speed_options(packed) == ["unpadded"] and speed_options(plain) == []
    assert cache_file(packed, texts, "fp32", False) != cache_file(plain, texts, "fp32", False)
    expected = dropout_embeddings(plain, texts, seed=1, cache=False)
    assert not (dropout_embeddings(packed, texts, seed=1, cache=False) == expected).all()
    assert restore_encoder(packed) == ["0.auto_model"] and restore_encoder(packed) == []  # once
    assert speed_options(packed) == [] and "forward" not in vars(packed[0].auto_model)
    assert (dropout_embeddings(packed, texts, seed=1, cache=False) == expected).all()
    assert cache_file(packed, texts, "fp32", False) == cache_file(plain, texts, "fp32", False)
    with pytest.raises(ConfigError, match="tf32"):
        restore_encoder(packed, ("tf32",))


def test_unpadded_drophead_drops_the_heads_a_padded_batch_drops():
    """DropHead draws a head mask per sequence (``sentcl.models.set_drophead``). A packed batch is one row, so the
    hook unpacks it first: with the same seed, a packed encoder drops the same heads of the same sequences as a
    padded one (all other dropout off), and its embeddings equal the padded ones. Drawn per row of the packed batch,
    one mask would hit every sequence alike (and the embeddings would differ)."""
    texts = ["a man is playing a guitar on the street while people watch " * 3, "hi", "the cat sat on the mat",
             "two dogs run in the park", "a woman slices an onion", "nobody is here"]
    padded, packed = (set_drophead(without_dropout(tiny_model(0)), 0.5) for _ in range(2))
    unpad_encoder(packed)
    padded.train(), packed.train()
    features = padded.tokenize(texts)
    outputs = []
    for model in (padded, packed):
        torch.manual_seed(7)
        outputs.append(model(dict(features))["sentence_embedding"])
    torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-5, atol=1e-6)
    torch.manual_seed(8)
    assert not torch.allclose(packed(dict(features))["sentence_embedding"], outputs[0])  # heads were dropped


def test_unpadded_refuses_what_it_cannot_pack():
    model = tiny_model(0)
    model[0].auto_model.config.model_type = "deberta-v2"
    with pytest.raises(ConfigError, match="deberta-v2"):
        unpad_encoder(model)
    model = tiny_model(0)
    model[0].tokenizer.padding_side = "left"
    with pytest.raises(ConfigError, match="right padding"):
        unpad_encoder(model)


def test_tf32_is_switched_on_only_for_fp32_on_a_gpu_and_restored(tmp_path, pairs):
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with tf32(True, "fp32", "cuda") as on:
            assert on and torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        assert not torch.backends.cuda.matmul.allow_tf32 and not torch.backends.cudnn.allow_tf32
        for precision, device in (("bf16", "cuda"), ("fp32", "cpu")):
            with tf32(True, precision, device) as on:
                assert not on and not torch.backends.cuda.matmul.allow_tf32
        _, plain = run(tmp_path, pairs)
        _, with_tf32 = run(tmp_path, pairs, tf32=True)
        assert with_tf32 == plain  # no effect on a CPU
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = before
