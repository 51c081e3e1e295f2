"""The training configuration: every hyperparameter of a run, validated, JSON-able, hashable."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from sentcl.errors import ConfigError

OPTIMIZERS = ("adamw", "adam")
SCHEDULERS = ("linear", "constant_with_warmup", "constant")
PRECISIONS = ("fp32", "bf16", "fp16")


@dataclass(frozen=True)
class TrainingConfig:
    """Hyperparameters of one training run.

    Batches and steps
        ``batch_size`` is the contrastive batch: the rows one loss computation sees, so the
        in-batch negatives of MNRL-style losses. It stays the same with gradient caching
        (``gradient_cache_chunk`` rows are embedded at a time) and with several processes
        (each embeds its share, the loss sees the whole batch). ``gradient_accumulation_steps``
        batches make one optimizer step (each with its own negatives). ``epochs`` passes over
        the data, cut short by ``max_steps`` optimizer steps when given.

    Optimisation
        ``optimizer`` ``"adamw"`` (decoupled weight decay) or ``"adam"``; ``weight_decay``
        applies to weight matrices, not to biases and LayerNorm weights; ``scheduler``
        ``"linear"`` (linear warm-up over ``warmup_ratio`` of the steps, then linear decay to 0,
        sentence-transformers' WarmupLinear), ``"constant_with_warmup"`` or ``"constant"``;
        ``max_grad_norm`` clips the global gradient norm (None: no clipping).

    Precision
        ``"fp32"``, ``"bf16"`` (autocast) or ``"fp16"`` (autocast with a gradient scaler).

    Evaluation, model selection, early stopping
        Evaluate every ``eval_fraction`` of an epoch (0.1: at 10 %, 20 %, … 100 %) or every
        ``eval_steps`` optimizer steps (not both), and at the end of training. With
        ``metric_for_best`` (a key of the evaluator's metrics, or ``"train_loss"``, the mean
        training loss since the previous evaluation) the best evaluation's weights are kept and
        become the run's model; ``early_stopping_patience`` stops training once that many
        optimizer steps have passed since the last improvement.

    Checkpoints
        Written at every evaluation, at the end of every epoch and every ``checkpoint_steps``
        optimizer steps; the newest ``keep_checkpoints`` are kept while training runs.
    """

    epochs: int = 1
    batch_size: int = 32
    max_steps: int | None = None
    gradient_accumulation_steps: int = 1
    gradient_cache_chunk: int | None = None
    learning_rate: float = 2e-5
    optimizer: str = "adamw"
    weight_decay: float = 0.0
    adam_betas: tuple[float, float] = (0.9, 0.999)
    adam_epsilon: float = 1e-8
    scheduler: str = "linear"
    warmup_ratio: float = 0.1
    max_grad_norm: float | None = 1.0
    precision: str = "fp32"
    seed: int = 0
    eval_fraction: float | None = None
    eval_steps: int | None = None
    metric_for_best: str | None = None
    greater_is_better: bool = True
    early_stopping_patience: int | None = None
    checkpoint_steps: int | None = None
    keep_checkpoints: int = 1
    log_steps: int = 10

    def __post_init__(self) -> None:
        _positive_int(self, "epochs", "batch_size", "gradient_accumulation_steps", "keep_checkpoints", "log_steps")
        _positive_int(
            self,
            "max_steps",
            "gradient_cache_chunk",
            "eval_steps",
            "checkpoint_steps",
            "early_stopping_patience",
            optional=True,
        )
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ConfigError(f"seed must be an integer, got {self.seed!r}")
        for name in ("learning_rate", "adam_epsilon"):
            _number(self, name, low=0.0, low_open=True)
        _number(self, "weight_decay", low=0.0)
        _number(self, "warmup_ratio", low=0.0, high=1.0)
        if self.max_grad_norm is not None:
            _number(self, "max_grad_norm", low=0.0, low_open=True)
        betas = tuple(self.adam_betas)
        if len(betas) != 2 or not all(isinstance(b, (int, float)) and 0.0 <= b < 1.0 for b in betas):
            raise ConfigError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas!r}")
        object.__setattr__(self, "adam_betas", tuple(float(b) for b in betas))
        _choice(self, "optimizer", OPTIMIZERS)
        _choice(self, "scheduler", SCHEDULERS)
        _choice(self, "precision", PRECISIONS)
        if self.eval_fraction is not None:
            _number(self, "eval_fraction", low=0.0, high=1.0, low_open=True)
        if self.eval_fraction is not None and self.eval_steps is not None:
            raise ConfigError("give eval_fraction (a fraction of an epoch) or eval_steps (optimizer steps), not both")
        if self.metric_for_best is not None and not isinstance(self.metric_for_best, str):
            raise ConfigError(f"metric_for_best must be a metric name, got {self.metric_for_best!r}")
        if self.early_stopping_patience is not None and self.metric_for_best is None:
            raise ConfigError("early_stopping_patience needs metric_for_best (the metric whose improvement it waits for)")
        if self.metric_for_best is not None and self.eval_fraction is None and self.eval_steps is None:
            raise ConfigError("metric_for_best needs an evaluation schedule: set eval_fraction or eval_steps")
        if self.gradient_cache_chunk is not None and self.gradient_cache_chunk >= self.batch_size:
            raise ConfigError(
                f"gradient_cache_chunk ({self.gradient_cache_chunk}) must be smaller than batch_size "
                f"({self.batch_size}); leave it unset to embed the whole batch at once"
            )

    def to_dict(self) -> dict[str, Any]:
        """The configuration as JSON data (what run records, checkpoints and cache keys hold)."""
        out = asdict(self)
        out["adam_betas"] = list(self.adam_betas)
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TrainingConfig:
        """A configuration from :meth:`to_dict`'s output; unknown keys are an error naming the valid ones."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(raw) - set(names))
        if unknown:
            raise ConfigError(f"unknown training option(s) {unknown}; valid: {', '.join(names)}")
        return cls(**raw)

    def eval_points(self, steps_per_epoch: int) -> frozenset[int]:
        """The optimizer steps within an epoch (1-based) after which ``eval_fraction`` evaluates."""
        if self.eval_fraction is None:
            return frozenset()
        count = math.ceil(round(1.0 / self.eval_fraction, 9))
        return frozenset(
            min(steps_per_epoch, math.ceil(round(k * self.eval_fraction * steps_per_epoch, 9)))
            for k in range(1, count + 1)
        )


def _positive_int(cfg: TrainingConfig, *names: str, optional: bool = False) -> None:
    for name in names:
        value = getattr(cfg, name)
        if value is None and optional:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{name} must be a positive integer{' or None' if optional else ''}, got {value!r}")


def _number(
    cfg: TrainingConfig, name: str, low: float | None = None, high: float | None = None, low_open: bool = False
) -> None:
    value = getattr(cfg, name)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        bounds = f"{'(' if low_open else '['}{low}, {high if high is not None else 'inf'}{']' if high is not None else ')'}"
        raise ConfigError(f"{name} must be a number in {bounds}, got {value!r}")


def _choice(cfg: TrainingConfig, name: str, choices: tuple[str, ...]) -> None:
    if getattr(cfg, name) not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, got {getattr(cfg, name)!r}")
