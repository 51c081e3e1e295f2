"""Adam/AdamW without bias correction (sentcl.training.optim) against the update written out per element."""

from __future__ import annotations

import math

import pytest
import torch

from sentcl.training import TrainingConfig
from sentcl.training.optim import UncorrectedAdam


def reference(theta, grads, lr, betas, eps, decay, adamw):
    """The update of BERT's optimizer, one scalar at a time."""
    theta = [float(x) for x in theta]
    m = [0.0] * len(theta)
    v = [0.0] * len(theta)
    for g in grads:
        for i, gi in enumerate(g.tolist()):
            if adamw:
                theta[i] -= lr * decay * theta[i]
            else:
                gi += decay * theta[i]
            m[i] = betas[0] * m[i] + (1 - betas[0]) * gi
            v[i] = betas[1] * v[i] + (1 - betas[1]) * gi * gi
            theta[i] -= lr * m[i] / (math.sqrt(v[i]) + eps)
    return torch.tensor(theta, dtype=torch.float64)


@pytest.mark.parametrize("adamw", [True, False])
def test_uncorrected_adam_follows_its_update_rule(adamw):
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(5, generator=gen, dtype=torch.float64)
    grads = [torch.randn(5, generator=gen, dtype=torch.float64) for _ in range(6)]
    p = torch.nn.Parameter(start.clone())
    opt = UncorrectedAdam([p], lr=0.01, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1, adamw=adamw)
    for g in grads:
        p.grad = g.clone()
        opt.step()
    expected = reference(start, grads, 0.01, (0.9, 0.999), 1e-8, 0.1, adamw)
    torch.testing.assert_close(p.detach(), expected, rtol=1e-12, atol=1e-12)


def test_it_differs_from_adam_with_bias_correction_by_the_correction_factor():
    """The first step of Adam is lr·sign(g); without the correction it is lr·(1-β1)/√(1-β2) ≈ 3.16·lr."""
    g = torch.tensor([0.5, -2.0])
    p, q = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2))
    for param, opt in ((p, UncorrectedAdam([p], lr=1e-3, eps=0.0)), (q, torch.optim.AdamW([q], lr=1e-3, eps=0.0, weight_decay=0.0))):
        param.grad = g.clone()
        opt.step()
    torch.testing.assert_close(q.detach(), -1e-3 * g.sign())
    torch.testing.assert_close(p.detach(), -1e-3 * g.sign() * 0.1 / math.sqrt(0.001))


@pytest.mark.slow
def test_the_trainer_trains_with_it_when_the_configuration_turns_bias_correction_off(tmp_path):
    from sentcl.data import TrainingData
    from sentcl.data.registry import load, samples_root
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import tiny_model
    from sentcl.training import Trainer

    pairs = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False).take(range(16))
    runs = {}
    for correct in (True, False):
        config = TrainingConfig(batch_size=4, epochs=1, learning_rate=1e-3, log_steps=1, adam_bias_correction=correct)
        trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, config, show_progress=False)
        runs[correct] = [entry["loss"] for entry in trainer.train(tmp_path / str(correct)).losses]
        assert isinstance(trainer.optimizer, UncorrectedAdam) is (not correct)
    assert runs[True][0] == runs[False][0] and runs[True][1:] != runs[False][1:]  # same start, other steps


@pytest.mark.parametrize("adamw", [True, False])
def test_the_multi_tensor_update_equals_the_per_parameter_loop_bit_for_bit_after_20_steps(adamw):
    """foreach=True (the default) against foreach=False, the per-parameter loop the optimizer had before: the
    same weights and moments to the last bit after 20 steps, on parameters of several shapes and two dtypes
    with the schedule's changing learning rate and weight decay in one group and none in the other."""
    gen = torch.Generator().manual_seed(1)
    shapes = [(7, 5), (5,), (3, 4, 2), (1,), (11,)]
    start = [torch.randn(s, generator=gen, dtype=torch.float32 if i % 2 else torch.float64) for i, s in enumerate(shapes)]
    grads = [[torch.randn(s.shape, generator=gen, dtype=s.dtype) for s in start] for _ in range(20)]
    runs = []
    for foreach in (True, False):
        params = [torch.nn.Parameter(s.clone()) for s in start]
        groups = [{"params": params[:3], "weight_decay": 0.01}, {"params": params[3:], "weight_decay": 0.0}]
        opt = UncorrectedAdam(groups, lr=2e-5, eps=1e-6, adamw=adamw, foreach=foreach)
        schedule = torch.optim.lr_scheduler.LambdaLR(opt, TrainingConfig(warmup_ratio=0.1).schedule(20))
        for step_grads in grads:
            for p, g in zip(params, step_grads, strict=True):
                p.grad = g.clone()
            opt.step()
            schedule.step()
        runs.append((params, opt))
    (fast, fast_opt), (loop, loop_opt) = runs
    assert not any(torch.equal(p.detach(), s) for p, s in zip(fast, start, strict=True))  # it moved them
    for p, q in zip(fast, loop, strict=True):
        assert torch.equal(p.detach(), q.detach())
        for key in ("step", "exp_avg", "exp_avg_sq"):
            assert torch.equal(fast_opt.state[p][key], loop_opt.state[q][key])
