"""The training configuration: every hyperparameter of a run, validated, JSON-able, hashable; and what
follows from it alone: the steps of a run, the learning-rate schedule (:class:`WarmupSchedule`) and
after which optimizer steps the trainer logs, evaluates, checkpoints or stops early (the ``due_to_*``
methods), so that the loop reads as a list of named decisions and each can be tested on its own."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

from sentcl.errors import ConfigError, check_choice, check_number, check_positive_int
from sentcl.precision import PRECISIONS

OPTIMIZERS = ("adamw", "adam")
SCHEDULERS = ("linear", "constant_with_warmup", "constant")
TRAINING_PRECISIONS = PRECISIONS
OPT_IN = ("compile", "unpadded", "tf32")
"""Options off by default that move the numerics slightly for speed: in a run's key only when on (so that the
keys of runs made before they existed stay the same)."""


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
        ``optimizer`` ``"adamw"`` (decoupled weight decay) or ``"adam"``, with Kingma & Ba's bias
        correction unless ``adam_bias_correction`` is False (BERT's original optimizer:
        :class:`sentcl.training.optim.UncorrectedAdam`); ``weight_decay``
        applies to weight matrices, not to biases and LayerNorm weights; ``scheduler``
        ``"linear"`` (linear warm-up over ``warmup_ratio`` of the steps, then linear decay to 0,
        sentence-transformers' WarmupLinear), ``"constant_with_warmup"`` or ``"constant"``;
        ``max_grad_norm`` clips the global gradient norm (None: no clipping).

    Precision
        ``"fp32"``, ``"bf16"`` (autocast), ``"fp16"`` (autocast with a gradient scaler) or ``"auto"``
        (fp32 on a CPU, bf16 or fp16 on a GPU: :func:`sentcl.precision.resolve_precision`); the trainer
        resolves it on its device, and the resolved precision is part of the run's key.

    Opt-in speed (off by default: each moves the numerics slightly)
        ``compile`` compiles the encoder with ``torch.compile`` (:func:`sentcl.models.compile_encoder`);
        ``unpadded`` runs it padding-free, on the batch's real tokens only (:func:`sentcl.models.unpad_encoder`);
        ``tf32`` lets fp32 runs on a GPU multiply in TF32 (:func:`sentcl.precision.tf32`). Part of the
        run's key when on. They hold while the run trains: the trained model leaves the trainer padded and
        eager (:func:`sentcl.models.restore_encoder`), as the same weights loaded from the cache are.

    Evaluation, model selection, early stopping
        Evaluate every ``eval_fraction`` of an epoch (0.1: at 10 %, 20 %, … 100 %) or every
        ``eval_steps`` optimizer steps (not both), and at the end of training. With
        ``metric_for_best`` (a key of the evaluator's metrics, or ``"train_loss"``, the mean
        training loss since the previous evaluation) the best evaluation's weights are kept and
        become the run's model; ``early_stopping_patience`` stops training once that many
        optimizer steps have passed since the last improvement.

    Checkpoints
        Written on their own cadence, not at evaluations or epoch ends: once ``checkpoint_minutes``
        of training (wall time, 10 by default: a killed run, a Colab session that ends, loses at
        most that much) have passed since the last one (or the start), every ``checkpoint_steps``
        optimizer steps when given, and at the end of training; the newest ``keep_checkpoints``
        are kept while training runs. The clock is read where the loss is (every ``log_steps``
        steps), so a checkpoint is due at most ``log_steps`` steps late. A bert-base checkpoint
        (weights and Adam moments) is about 1.3 GB: one per evaluation cost hours over a chapter.
        The best evaluation's weights are kept apart (weights only), whenever it improves.
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
    adam_bias_correction: bool = True
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
    checkpoint_minutes: float | None = 10.0
    keep_checkpoints: int = 1
    log_steps: int = 10
    compile: bool = False
    unpadded: bool = False
    tf32: bool = False

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "gradient_accumulation_steps", "keep_checkpoints", "log_steps"):
            check_positive_int(name, getattr(self, name))
        for name in ("max_steps", "gradient_cache_chunk", "eval_steps", "checkpoint_steps", "early_stopping_patience"):
            check_positive_int(name, getattr(self, name), optional=True)
        for name in OPT_IN:
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool):
            raise ConfigError(f"seed must be an integer, got {self.seed!r}")
        for name in ("learning_rate", "adam_epsilon"):
            check_number(name, getattr(self, name), low=0.0, low_open=True)
        check_number("weight_decay", self.weight_decay, low=0.0)
        if self.checkpoint_minutes is not None:
            check_number("checkpoint_minutes", self.checkpoint_minutes, low=0.0, low_open=True)
        check_number("warmup_ratio", self.warmup_ratio, low=0.0, high=1.0)
        if self.max_grad_norm is not None:
            check_number("max_grad_norm", self.max_grad_norm, low=0.0, low_open=True)
        betas = tuple(self.adam_betas)
        if len(betas) != 2 or not all(isinstance(b, (int, float)) and 0.0 <= b < 1.0 for b in betas):
            raise ConfigError(f"adam_betas must be two numbers in [0, 1), got {self.adam_betas!r}")
        object.__setattr__(self, "adam_betas", tuple(float(b) for b in betas))
        check_choice("optimizer", self.optimizer, OPTIMIZERS)
        check_choice("scheduler", self.scheduler, SCHEDULERS)
        check_choice("precision", self.precision, TRAINING_PRECISIONS)
        if self.eval_fraction is not None:
            check_number("eval_fraction", self.eval_fraction, low=0.0, high=1.0, low_open=True)
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

    def optimizer_steps(self, batches: int) -> int:
        """Optimizer steps over ``batches`` batches (the last step may accumulate fewer): an epoch's
        steps, or with the batches done so far the 1-based number of the current step in its epoch."""
        return math.ceil(batches / self.gradient_accumulation_steps)

    def total_steps(self, steps_per_epoch: int) -> int:
        """Optimizer steps of the whole run: ``epochs`` epochs, cut short by ``max_steps``."""
        total = self.epochs * steps_per_epoch
        return total if self.max_steps is None else min(total, self.max_steps)

    def schedule(self, total_steps: int) -> WarmupSchedule:
        """The learning-rate factor of a run of ``total_steps`` optimizer steps (warm-up rounded up)."""
        return WarmupSchedule(self.scheduler, math.ceil(total_steps * self.warmup_ratio), total_steps)

    def due_to_log(self, step: int, *, last: bool) -> bool:
        """Whether the training loss is logged after optimizer step ``step``: every ``log_steps`` and at
        the ``last`` step of the run (so that no step's loss goes unreported)."""
        return step % self.log_steps == 0 or last

    def due_to_evaluate(
        self, step: int, step_in_epoch: int, steps_per_epoch: int, *, last: bool, evaluator: bool
    ) -> bool:
        """Whether to evaluate after optimizer step ``step``, the ``step_in_epoch``-th (1-based) of an
        epoch of ``steps_per_epoch``: at the :meth:`eval_points`, every ``eval_steps``, and at the
        ``last`` step of the run when the run evaluates at all (it has an ``evaluator``, or a
        schedule, which monitors the training loss without one)."""
        if step_in_epoch in self.eval_points(steps_per_epoch):
            return True
        if self.eval_steps is not None and step % self.eval_steps == 0:
            return True
        return last and (evaluator or self.eval_fraction is not None or self.eval_steps is not None)

    def improves(self, value: float, best: float | None) -> bool:
        """Whether ``value`` of ``metric_for_best`` beats ``best``, the best so far (None: there is
        none yet), in the direction ``greater_is_better`` says; NaN never does."""
        if math.isnan(value):
            return False
        return best is None or (value > best if self.greater_is_better else value < best)

    def due_to_stop(self, step: int, best_step: int | None) -> bool:
        """Whether early stopping ends training after optimizer step ``step``: ``early_stopping_patience``
        steps have passed since the best evaluation, at ``best_step`` (None: none yet, counted from 0)."""
        patience = self.early_stopping_patience
        return patience is not None and step - (best_step or 0) >= patience

    def due_to_checkpoint(self, step: int, *, done: bool, minutes_since: float | None = None) -> bool:
        """Whether to write a checkpoint after optimizer step ``step``: at the end of training (``done``),
        every ``checkpoint_steps``, and once ``minutes_since`` (minutes of training since the last
        checkpoint, where the caller read the clock; None: not read at this step) reach
        ``checkpoint_minutes`` (see Checkpoints above). Evaluations and epoch ends write none."""
        if done or (self.checkpoint_steps is not None and step % self.checkpoint_steps == 0):
            return True
        return minutes_since is not None and self.checkpoint_minutes is not None and minutes_since >= self.checkpoint_minutes


class WarmupSchedule:
    """Learning-rate factor at optimizer step ``s`` (``LambdaLR`` calls it with s = 0, 1, …).

    ``linear`` (sentence-transformers' WarmupLinear): ``s / warmup`` during the warm-up, then
    ``(total - s) / (total - warmup)`` down to 0 at the last step; ``constant_with_warmup``:
    the warm-up then 1; ``constant``: 1. A plain object (not a closure) so that the scheduler's
    state, which holds its attributes, goes into checkpoints as JSON.
    """

    def __init__(self, kind: str, warmup_steps: int, total_steps: int) -> None:
        self.kind, self.warmup_steps, self.total_steps = kind, int(warmup_steps), int(total_steps)

    def __call__(self, step: int) -> float:
        if self.kind == "constant":
            return 1.0
        if step < self.warmup_steps:
            return step / max(1, self.warmup_steps)
        if self.kind == "constant_with_warmup":
            return 1.0
        return max(0.0, (self.total_steps - step) / max(1, self.total_steps - self.warmup_steps))
