"""Callbacks: code the trainer runs at fixed points, with state that survives a resume.

A :class:`Callback` sees the trainer (``trainer.model``, ``trainer.state`` with
``global_step``/``epoch``, ``trainer.output_dir``, ``trainer.encode(texts)``) at the start of
training, after every optimizer step, after every evaluation and at the end. Whatever it
returns from :meth:`Callback.state_dict` is saved in every checkpoint under its ``name`` and
handed back to :meth:`Callback.load_state_dict` on resume, so a history it records is the same
whether or not the run was interrupted. With several processes every process runs its
callbacks; checkpoints hold the first process's state (``trainer.procs.is_main``), which every
process gets back on resume.

Two callbacks: :class:`GeometryCallback` (alignment, uniformity and anisotropy during training) and
:class:`LossEarlyStopping` (stop once the training loss no longer falls).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from sentcl.data.records import ScoredPairs
from sentcl.errors import ConfigError, check_positive_int
from sentcl.io import atomic_write_json

if TYPE_CHECKING:
    from sentcl.training.trainer import Trainer

MEASURES = ("alignment", "uniformity", "anisotropy", "top_variance_share")
"""What :class:`GeometryCallback` records at each point (see :func:`sentcl.evaluation.geometry.evaluate_geometry`)."""


class Callback:
    """Base class: every hook does nothing; ``name`` keys the callback's state in checkpoints."""

    name: str = "callback"
    reads_step_loss: bool = False
    """True for a callback whose :meth:`on_step_end` reads the step's training loss (``trainer.state.loss_since_log``):
    the trainer then reads each step's loss from the device before calling it; otherwise only where it logs,
    evaluates or checkpoints, and the running means lag behind in between (no host-device sync a step)."""

    def on_train_begin(self, trainer: Trainer) -> None:
        """After the trainer started afresh or restored a checkpoint, before the first step."""

    def on_step_end(self, trainer: Trainer) -> None:
        """After each optimizer step (``trainer.state.global_step`` counts it)."""

    def on_evaluate(self, trainer: Trainer, metrics: dict[str, Any]) -> None:
        """After each evaluation, with its entry (step, epoch, metrics, train_loss)."""

    def on_train_end(self, trainer: Trainer) -> None:
        """After the run's model was saved."""

    def state_dict(self) -> dict[str, Any]:
        """State to checkpoint: tensors, arrays and JSON data."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore what :meth:`state_dict` returned."""


class GeometryCallback(Callback):
    """Alignment, uniformity (Wang & Isola 2020) and anisotropy of the model every ``every_steps`` steps.

    Measured as SimCSE measured them during training (Gao et al. 2021, Fig. 2), with
    :func:`sentcl.evaluation.geometry.evaluate_geometry`: on L2-normalised embeddings,
    alignment over the pairs of ``pairs`` (e.g. STS-B dev) scored above ``positive_threshold``,
    uniformity and anisotropy over all their distinct sentences. Measured before the first step
    and after every ``every_steps`` optimizer steps; the history (step, alignment, uniformity,
    anisotropy, top-dimension variance share, and the seconds the measurement took, so that a
    run's cost can leave it out) is kept in :attr:`history`, in checkpoints, and in
    ``<output_dir>/<name>.json`` at the end.
    """

    def __init__(
        self, pairs: ScoredPairs, every_steps: int, positive_threshold: float = 4.0, name: str = "geometry"
    ) -> None:
        if not isinstance(pairs, ScoredPairs):
            raise ConfigError(f"GeometryCallback needs ScoredPairs (e.g. STS-B dev), got {type(pairs).__name__}")
        if not (pairs.scores > positive_threshold).any():
            raise ConfigError(f"{pairs.name}/{pairs.split}: no pair scores above {positive_threshold} (no positive pairs)")
        check_positive_int("every_steps", every_steps)
        self.pairs = pairs
        self.every_steps = every_steps
        self.positive_threshold = positive_threshold
        self.name = name
        self.history: list[dict[str, float]] = []

    def measure(self, trainer: Trainer) -> dict[str, float]:
        """Alignment, uniformity, anisotropy and top-dimension variance share of the current model (fp32 embeddings)."""
        from sentcl.evaluation.geometry import evaluate_geometry

        geometry = evaluate_geometry(
            self.pairs, lambda texts: trainer.encode(texts, precision="fp32"), self.positive_threshold
        )
        return {key: geometry[key] for key in MEASURES}

    def _record(self, trainer: Trainer) -> None:
        if trainer.procs.is_main:  # checkpoints hold the first process's history
            started = time.perf_counter()
            measured = self.measure(trainer)
            seconds = round(time.perf_counter() - started, 3)
            self.history.append({"step": trainer.state.global_step, **measured, "seconds": seconds})

    def on_train_begin(self, trainer: Trainer) -> None:
        if trainer.state.global_step == 0 and not self.history:
            self._record(trainer)

    def on_step_end(self, trainer: Trainer) -> None:
        if trainer.state.global_step % self.every_steps == 0:
            self._record(trainer)

    def on_train_end(self, trainer: Trainer) -> None:
        if trainer.procs.is_main:
            atomic_write_json(trainer.output_dir / f"{self.name}.json", self.history)

    def state_dict(self) -> dict[str, Any]:
        return {"history": [dict(h) for h in self.history]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.history = [dict(h) for h in state["history"]]


class LossEarlyStopping(Callback):
    """Stop training when the mean training loss of a window of ``window`` optimizer steps has not fallen
    below its lowest for ``patience`` windows.

    Patience is counted in windows, as Hugging Face's ``EarlyStoppingCallback`` counts it in evaluations
    (each a window of ``eval_steps`` steps; 500 by default, its ``logging_steps``): every ``window`` steps
    the mean loss of those steps is compared with the lowest window so far, and training stops once
    ``patience`` windows in a row have passed without a new lowest, so no earlier than step
    ``window × (patience + 1)`` (:meth:`earliest_stop`). ``window = 1`` compares the losses of single
    batches, whose noise ends a converged run within a few steps. The model is the one where training
    stopped (Keras' ``EarlyStopping`` by default), not the best window's.

    A run whose warm-up is not over by the earliest stop would be judged on losses taken at a fraction
    of its learning rate: :meth:`on_train_begin` refuses it with a :class:`~sentcl.errors.ConfigError`.

    The trainer adds each step's loss to ``state.loss_since_log`` (emptied when it logs) before it calls
    :meth:`on_step_end`; the step's loss is what that running sum grew by. The state (lowest mean,
    windows since, the window in progress) is checkpointed, so a resumed run stops where an
    uninterrupted one would; :attr:`history` holds every window's mean and the lowest so far.
    """

    name = "loss-early-stopping"
    reads_step_loss = True

    def __init__(self, patience: int = 3, window: int = 1) -> None:
        self.patience = check_positive_int("patience", patience)
        self.window = check_positive_int("window", window)
        self.best: float | None = None
        self.since_best = 0
        self.window_losses: list[float] = []
        self.seen = (0.0, 0)  # (total, count) of state.loss_since_log after the previous step
        self.history: list[dict[str, float]] = []

    def earliest_stop(self) -> int:
        """The first optimizer step after which this callback can stop a run."""
        return self.window * (self.patience + 1)

    def on_train_begin(self, trainer: Trainer) -> None:
        cfg, total = trainer.config, trainer.state.total_steps
        warmup = 0 if cfg.scheduler == "constant" else cfg.schedule(total).warmup_steps
        if warmup >= self.earliest_stop() < total:
            raise ConfigError(
                f"{trainer.name or 'this run'}: early stopping after {self.patience} windows of {self.window} steps "
                f"could stop it at step {self.earliest_stop()}, inside its warm-up of {warmup} of {total} steps, "
                "before its learning rate has risen: lengthen the window or shorten the warm-up"
            )

    def on_step_end(self, trainer: Trainer) -> None:
        running = trainer.state.loss_since_log
        total, count = self.seen if running.count > self.seen[1] else (0.0, 0)
        self.seen = (running.total, running.count)
        self.window_losses.append((running.total - total) / (running.count - count))
        if len(self.window_losses) < self.window:
            return
        mean, self.window_losses = sum(self.window_losses) / self.window, []
        if self.best is None or mean < self.best:
            self.best, self.since_best = mean, 0
        else:
            self.since_best += 1
        self.history.append({"step": trainer.state.global_step, "loss": mean, "lowest": self.best})
        if self.since_best >= self.patience:
            trainer.state.stopped_early = True

    def state_dict(self) -> dict:
        return {"best": self.best, "since_best": self.since_best, "window_losses": list(self.window_losses),
                "seen": list(self.seen), "history": [dict(h) for h in self.history]}

    def load_state_dict(self, state: dict) -> None:
        self.best, self.since_best = state["best"], state["since_best"]
        self.window_losses, self.seen = list(state["window_losses"]), tuple(state["seen"])
        self.history = [dict(h) for h in state["history"]]


__all__ = ["MEASURES", "Callback", "GeometryCallback", "LossEarlyStopping"]
