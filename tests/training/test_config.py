"""The training configuration's arithmetic: validation, the learning-rate schedule, and which optimizer
steps log, evaluate, checkpoint, improve on the best and stop early."""

from __future__ import annotations

import math

import pytest

from sentcl.errors import ConfigError
from sentcl.training import TrainingConfig, WarmupSchedule


def test_validation_names_what_was_expected():
    with pytest.raises(ConfigError, match="not both"):
        TrainingConfig(eval_fraction=0.1, eval_steps=5)
    with pytest.raises(ConfigError, match="needs an evaluation schedule"):
        TrainingConfig(metric_for_best="spearman")
    with pytest.raises(ConfigError, match="unknown training option"):
        TrainingConfig.from_dict({"lr": 1})
    with pytest.raises(ConfigError, match="log_steps must be a positive integer"):
        TrainingConfig(log_steps=0)


def test_eval_points():
    assert sorted(TrainingConfig(eval_fraction=0.1).eval_points(100)) == list(range(10, 101, 10))
    assert sorted(TrainingConfig(eval_fraction=0.3).eval_points(7)) == [3, 5, 7]
    assert sorted(TrainingConfig(eval_fraction=1.0).eval_points(5)) == [5]
    assert sorted(TrainingConfig(eval_fraction=0.5).eval_points(15)) == [8, 15]
    assert TrainingConfig().eval_points(10) == frozenset()


def test_steps_of_a_run():
    cfg = TrainingConfig(epochs=3, gradient_accumulation_steps=4)
    assert cfg.optimizer_steps(15) == 4  # 4 + 4 + 4 + 3 batches
    assert [cfg.optimizer_steps(done) for done in (1, 4, 5, 15)] == [1, 1, 2, 4]  # the current step in the epoch
    assert cfg.total_steps(4) == 12
    assert TrainingConfig(epochs=3, max_steps=5).total_steps(4) == 5
    assert TrainingConfig(epochs=1, max_steps=50).total_steps(4) == 4


def test_linear_warmup_then_linear_decay():
    schedule = WarmupSchedule("linear", 2, 10)
    assert [schedule(s) for s in range(11)] == [0.0, 0.5, 1.0, 7 / 8, 6 / 8, 5 / 8, 4 / 8, 3 / 8, 2 / 8, 1 / 8, 0.0]
    assert schedule(12) == 0.0  # never negative
    assert [WarmupSchedule("constant_with_warmup", 2, 10)(s) for s in (0, 1, 2, 9)] == [0.0, 0.5, 1.0, 1.0]
    assert [WarmupSchedule("constant", 2, 10)(s) for s in (0, 1, 9)] == [1.0, 1.0, 1.0]
    assert WarmupSchedule("linear", 0, 4)(0) == 1.0  # no warm-up


def test_the_config_builds_its_schedule_with_the_warmup_rounded_up():
    schedule = TrainingConfig(warmup_ratio=0.1, scheduler="linear").schedule(15)
    assert (schedule.kind, schedule.warmup_steps, schedule.total_steps) == ("linear", 2, 15)  # ceil(1.5)
    assert vars(schedule) == {"kind": "linear", "warmup_steps": 2, "total_steps": 15}  # the scheduler saves these
    assert TrainingConfig(warmup_ratio=0.0).schedule(15).warmup_steps == 0


def test_due_to_log_every_log_steps_and_at_the_last_step():
    cfg = TrainingConfig(log_steps=4)
    assert [s for s in range(1, 15) if cfg.due_to_log(s, last=False)] == [4, 8, 12]
    assert cfg.due_to_log(14, last=True) and cfg.due_to_log(1, last=True)


def test_due_to_evaluate_at_the_fractions_of_each_epoch():
    cfg = TrainingConfig(eval_fraction=0.5)
    # two epochs of 15 steps: the k-th step of the epoch counts, not the global step
    due = [s for s in range(1, 31) if cfg.due_to_evaluate(s, (s - 1) % 15 + 1, 15, last=False, evaluator=True)]
    assert due == [8, 15, 23, 30]
    assert cfg.due_to_evaluate(30, 15, 15, last=True, evaluator=False)


def test_due_to_evaluate_every_eval_steps():
    cfg = TrainingConfig(eval_steps=4)
    due = [s for s in range(1, 11) if cfg.due_to_evaluate(s, s, 10, last=False, evaluator=True)]
    assert due == [4, 8]


def test_due_to_evaluate_at_the_last_step_only_when_the_run_evaluates():
    assert TrainingConfig(eval_steps=4).due_to_evaluate(10, 10, 10, last=True, evaluator=False)  # the training loss
    assert TrainingConfig().due_to_evaluate(10, 10, 10, last=True, evaluator=True)  # an evaluator without a schedule
    assert not TrainingConfig().due_to_evaluate(10, 10, 10, last=True, evaluator=False)  # nothing to evaluate
    assert not TrainingConfig().due_to_evaluate(9, 9, 10, last=False, evaluator=True)  # no schedule: only at the end


def test_due_to_checkpoint_by_steps_by_minutes_and_at_the_end_never_at_evaluations():
    assert [s for s in range(1, 10) if TrainingConfig(checkpoint_steps=3).due_to_checkpoint(s, done=False)] == [3, 6, 9]
    plain = TrainingConfig()
    assert plain.checkpoint_minutes == 10.0  # the default: a killed run (a Colab session that ends) loses at most 10 minutes
    assert not any(plain.due_to_checkpoint(s, done=False) for s in range(1, 50))  # no clock read: none
    assert not plain.due_to_checkpoint(5, done=False, minutes_since=9.99)
    assert plain.due_to_checkpoint(5, done=False, minutes_since=10.0)
    assert plain.due_to_checkpoint(5, done=True)
    assert not TrainingConfig(checkpoint_minutes=None).due_to_checkpoint(5, done=False, minutes_since=1e9)
    with pytest.raises(ConfigError, match="checkpoint_minutes"):
        TrainingConfig(checkpoint_minutes=0)


def test_model_selection_and_early_stopping():
    higher = TrainingConfig(eval_steps=1, metric_for_best="spearman", early_stopping_patience=3)
    assert higher.improves(0.5, None) and higher.improves(0.6, 0.5)
    assert not higher.improves(0.5, 0.5) and not higher.improves(0.4, 0.5) and not higher.improves(math.nan, None)
    lower = TrainingConfig(eval_steps=1, metric_for_best="train_loss", greater_is_better=False)
    assert lower.improves(0.4, 0.5) and not lower.improves(0.6, 0.5)
    assert [s for s in range(5, 10) if higher.due_to_stop(s, best_step=4)] == [7, 8, 9]
    assert higher.due_to_stop(3, best_step=None) and not higher.due_to_stop(2, best_step=None)
    assert not lower.due_to_stop(100, best_step=1)  # no patience: never stops early
