"""The training loop every chapter uses.

:class:`Trainer` trains a :class:`~sentence_transformers.SentenceTransformer` on
:class:`TrainingData` with any sentcl (or sentence-transformers) loss and any
:class:`~sentcl.training.samplers.BatchSampler`, configured by a :class:`TrainingConfig`:
seeded, evaluated on a schedule, checkpointed in safetensors, resumable after a kill, on one
process or several, in fp32/bf16/fp16, with gradient accumulation and gradient caching.
The artifact cache (:mod:`sentcl.artifacts`) keeps finished runs; :meth:`Trainer.train_cached`
trains inside it.

Why our own loop and not sentence-transformers' trainer
-------------------------------------------------------
sentence-transformers' ``SentenceTransformerTrainer`` is the Hugging Face ``Trainer`` with a
data collator and losses. It fits plain fine-tuning, but the chapters need things it does not
do, or does only through overrides of its internals:

- **Fixed batch contents per epoch, re-planned from the current model.** BSC's example-based
  shuffling groups kNN neighbours of the model's *current* embeddings into batches every epoch
  (Chernyavskiy et al. 2022, Algorithm 1). The HF Trainer builds its dataloader once and only
  tells the sampler the epoch number; here a sampler plans each epoch's batches with an
  ``encode`` function of the current model (:mod:`sentcl.training.samplers`).
- **Exact resume.** HF resumes by skipping the first batches of a re-created dataloader, which
  is exact only if the sampler re-creates the same order; the state of a loss (IFCL's queue of
  past embeddings) and of a sampler is not saved at all. Here a checkpoint holds the current
  epoch's batches, the sampler's and the loss's state, every process's random generators and
  the trainer's counters, so a killed run ends with bit-identical weights and scores on CPU.
- **Per-row ids to the loss.** The RCL regulators look up stored embeddings by row id; HF's
  collator tokenises every non-label column as text. Here a loss names the extras it needs
  (``batch_extras = ("ids",)``) and gets them.
- **Gradient caching and gathering for any loss.** sentence-transformers caches gradients
  and gathers across devices inside specific losses (``Cached*``, ``gather_across_devices``);
  here the trainer does both around any loss's ``compute_loss_from_embeddings``
  (:mod:`sentcl.training.gradcache`, :mod:`sentcl.training.distributed`), so BSC, RCL and IFCL
  losses get them without their own variants.
- **No extra dependency.** The HF-based trainer needs the ``datasets`` package for its data.

What it reuses from sentence-transformers: the model, its tokenisation (``model.preprocess``,
as its data collator calls it), the merged column forward of its losses (``embed_columns``)
and GradCache's random-state replay (``RandContext``). The loop itself is short and a step
does the same work as the HF trainer's (tokenise, forward, loss, backward, clip, AdamW,
scheduler): ``benchmarks/trainer_step_time.py`` measures both on the same batches.

Modules: :mod:`~sentcl.training.config` (:class:`TrainingConfig`, :class:`WarmupSchedule`, and
when a step logs, evaluates, checkpoints), :mod:`~sentcl.training.samplers`,
:mod:`~sentcl.training.callbacks` (:class:`Callback`, :class:`GeometryCallback`,
:class:`LossEarlyStopping`),
:mod:`~sentcl.training.trainer` (:class:`Trainer`, :class:`TrainingResult`),
:mod:`~sentcl.training.checkpoint` (:class:`TrainerState`, checkpoint files and a run's output
folder, random state, :func:`seed_everything`), :mod:`~sentcl.training.gradcache`,
:mod:`~sentcl.training.distributed`; :mod:`~sentcl.training.seeds` (one configuration trained with
several seeds: every seed scored, or the best on dev). A chapter's own recipes (the BSC paper's table rows, the
geometry chapter's four methods under one budget) live in its package under :mod:`sentcl.chapters`.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from sentcl.training.callbacks import Callback, GeometryCallback, LossEarlyStopping
from sentcl.training.checkpoint import TrainerState, checkpoints, latest_checkpoint, seed_everything
from sentcl.training.config import TrainingConfig, WarmupSchedule
from sentcl.training.samplers import (
    BatchSampler,
    NoDuplicatesBatchSampler,
    RandomBatchSampler,
    SequentialBatchSampler,
)

if TYPE_CHECKING:
    from sentcl.training.trainer import BATCH_EXTRAS, Trainer, TrainingResult

_TRAINER = ("BATCH_EXTRAS", "Trainer", "TrainingResult")
"""Loaded from :mod:`sentcl.training.trainer` when first used: it imports sentence-transformers (seconds), which what
reads a package's light modules (a run's health, its configuration: ``sentcl reproduce``, the book's pages) need not."""


def __getattr__(name: str) -> Any:
    if name in _TRAINER:
        return getattr(import_module("sentcl.training.trainer"), name)
    raise AttributeError(f"module 'sentcl.training' has no attribute {name!r}")

__all__ = [
    "BATCH_EXTRAS",
    "BatchSampler",
    "Callback",
    "GeometryCallback",
    "LossEarlyStopping",
    "NoDuplicatesBatchSampler",
    "RandomBatchSampler",
    "SequentialBatchSampler",
    "Trainer",
    "TrainerState",
    "TrainingConfig",
    "TrainingResult",
    "WarmupSchedule",
    "checkpoints",
    "latest_checkpoint",
    "seed_everything",
]
