"""Opt-in speed that moves the numerics slightly (TrainingConfig.compile, .tf32): off by default and out of the
run's key then; on the CPU, a compiled encoder trains within a stated tolerance of the eager one."""

from __future__ import annotations

import pytest
import torch

from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.errors import ConfigError
from sentcl.losses.bsc import BatchSoftmaxContrastiveLoss
from sentcl.models import tiny_model
from sentcl.precision import tf32
from sentcl.training import Trainer, TrainingConfig

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py
COMPILE_RTOL = 1e-4
"""How far a compiled encoder's training losses may be from the eager one's, relative, over 6 steps (CPU, fp32)."""


@pytest.fixture(scope="module")
def pairs():
    return TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False).take(range(48))


def run(tmp_path, pairs, **options):
    config = TrainingConfig(batch_size=8, learning_rate=1e-3, log_steps=1, max_steps=6, **options)
    trainer = Trainer(tiny_model(0), lambda m: BatchSoftmaxContrastiveLoss(m, 0.1), pairs, config, show_progress=False)
    result = trainer.train(tmp_path / str(sorted(options.items())))
    return trainer, [entry["loss"] for entry in result.losses]


def test_off_by_default_and_out_of_the_runs_key_until_turned_on(pairs):
    plain = Trainer(tiny_model(0), BatchSoftmaxContrastiveLoss, pairs, TrainingConfig(), show_progress=False)
    assert not ({"compile", "tf32"} & set(plain.describe()["config"]))  # the keys of earlier runs stay the same
    for option in ("compile", "tf32"):
        on = Trainer(tiny_model(0), BatchSoftmaxContrastiveLoss, pairs, TrainingConfig(**{option: True}), show_progress=False)
        assert on.describe()["config"][option] is True and on.stage().key != plain.stage().key
        with pytest.raises(ConfigError, match=option):
            TrainingConfig(**{option: 1})


@pytest.mark.slow
def test_a_compiled_encoder_trains_within_tolerance_of_the_eager_one(tmp_path, pairs):
    eager, eager_losses = run(tmp_path, pairs)
    compiled, compiled_losses = run(tmp_path, pairs, compile=True)
    transformer = compiled.model[0].auto_model
    assert transformer._compiled_call_impl is not None  # it ran compiled
    assert list(compiled.model.state_dict()) == list(eager.model.state_dict())  # the same names: checkpoints load
    assert eager_losses != [] and compiled_losses == pytest.approx(eager_losses, rel=COMPILE_RTOL)
    for name, weight in eager.model.state_dict().items():
        torch.testing.assert_close(compiled.model.state_dict()[name], weight, rtol=1e-3, atol=1e-4)


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
