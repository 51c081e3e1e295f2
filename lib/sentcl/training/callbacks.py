"""Callbacks: code the trainer runs at fixed points, with state that survives a resume.

A :class:`Callback` sees the trainer (``trainer.model``, ``trainer.state`` with
``global_step``/``epoch``, ``trainer.output_dir``, ``trainer.encode(texts)``) at the start of
training, after every optimizer step, after every evaluation and at the end. Whatever it
returns from :meth:`Callback.state_dict` is saved in every checkpoint under its ``name`` and
handed back to :meth:`Callback.load_state_dict` on resume, so a history it records is the same
whether or not the run was interrupted. With several processes every process runs its
callbacks; checkpoints hold the first process's state (``trainer.procs.is_main``), which every
process gets back on resume.
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


__all__ = ["MEASURES", "Callback", "GeometryCallback"]
