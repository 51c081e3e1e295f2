"""Entropy-model augmentation, Algorithm 1 of Tan, Rolland & Tian (2022), as cached, resumable stages.

::

    1  for φ in φ_1, φ_2, …:   fine-tune an entropy model from the start model with Eq. 2
    4                          encode every query and index of the training set with it
                               (its augmented embeddings, an fp16 store)
    7  fine-tune the final model from the base model with Eq. 3 (2 regulators per entropy model)

**Stages.** Every entropy model is a :class:`~sentcl.training.Trainer` run in the artifact cache
(its key: the data, the configuration, φ and scale, the start model's weights), every store an
artifact-cache stage keyed by the entropy model's weights and the data, the final model a trainer
run whose key holds the stores' fingerprints. So rerunning after an interruption reuses finished
entropy models and stores and resumes the unfinished one from its last checkpoint, and changing
one φ retrains that entropy model, rewrites its store and retrains the final model, nothing else.

**Early stopping** (Appendix A.1: "if the loss doesn't decrease within 3 steps"): a
:class:`~sentcl.training.callbacks.LossEarlyStopping` callback, patience counted in windows of
``window`` optimizer steps (the mean training loss of each window against the lowest so far); it
refuses a window so short that it could stop the run inside its warm-up. The entropy model is the
model where training stopped. The chapter's "Assumptions and deviations" says which window the
paper profile reads "3 steps" as, and why.

**Stage names.** Each function takes the artifact stage name of what it builds (``stage``; :func:`augment` a
function of φ giving the entropy model's and its store's, ``stages``), so that a chapter builds each under the
name its plan of runs gives it (:mod:`sentcl.book.estimates.plan`); without one, a training run is the cache's default
stage (``train``) and a store :data:`STORE_STAGE`.

**Any store as regulators.** :func:`augmented_store` encodes the training set with any model: the
entropy models' stores are Algorithm 1's regulators, the untouched base model's a control (its
regulators pull the model back towards where it started, with no entropy model involved).

**The FAQ variant** (Appendix A.1, FAQ datasets): the entropy models start from an *initial*
model fine-tuned with Eq. 1 and selected by dev MAP, the final model from the base model; pass
``start=`` the initial model's loader (:func:`train_initial_model` trains it;
:mod:`sentcl.training.cross_validation` runs Table 2's folds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sentence_transformers import SentenceTransformer

from sentcl.artifacts import ArtifactCache, Stage
from sentcl.data.records import TrainingData
from sentcl.embeddings import embedder
from sentcl.embeddings.store import EmbeddingStore, write_store
from sentcl.errors import ConfigError
from sentcl.losses.rcl import EntropyLoss, RegulatorLoss
from sentcl.models import fingerprint, load_encoder
from sentcl.precision import resolve_precision
from sentcl.training.callbacks import Callback, LossEarlyStopping
from sentcl.training.config import TrainingConfig
from sentcl.training.samplers import BatchSampler
from sentcl.training.trainer import Evaluator, Trainer, TrainingResult

LoadModel = Callable[[], SentenceTransformer]
"""A fresh copy of a start model (the base model, or the FAQ variant's initial model)."""
Train = Callable[..., TrainingResult]
"""Runs a trainer in the cache: ``train(trainer)``, or ``train(trainer, stage=name)`` where the caller names the
run's artifact stage (default :meth:`Trainer.train_cached`; a chapter passes its run-recording
:meth:`~sentcl.book.notebook.chapter_run.ChapterRun.train`)."""
STORE_COLUMNS = ("query", "index")
"""The sentences the regulators of Eq. 3 cover: each tuple's query and index (not hard negatives)."""
STORE_STAGE = "augmented-embeddings"
"""The artifact stage of a store whose caller names none."""


def train_entropy_model(
    start: LoadModel, data: TrainingData, phi: float, config: TrainingConfig, *, scale: float,
    patience: int = 3, window: int = 1, sampler: BatchSampler | None = None, train: Train | None = None,
    name: str = "", stage: str | None = None,
) -> tuple[SentenceTransformer, TrainingResult]:
    """Algorithm 1, line 3: fine-tune ``start()`` with Eq. 2 at weight ``phi``, stopped by
    :class:`~sentcl.training.callbacks.LossEarlyStopping` (``patience`` windows of ``window`` steps) or
    at the end of ``config``'s run; cached (under the artifact stage ``stage``), resumable. ``name`` prefixes the
    run's name (``"entropy model phi=0.01"``; a fold's runs say which fold)."""
    model = start()
    trainer = Trainer(model, EntropyLoss(model, phi=phi, scale=scale), data, config, sampler=sampler,
                      callbacks=[LossEarlyStopping(patience, window)], name=f"{name}entropy model phi={phi:g}")
    return model, _train(train, trainer, stage)


def augmented_store(
    model: SentenceTransformer, data: TrainingData, *, cache: ArtifactCache, precision: str = "auto",
    batch_size: int = 64, chunk_rows: int = 16384, show_progress: bool = True, stage: str = STORE_STAGE,
) -> EmbeddingStore:
    """Algorithm 1, line 4: ``model``'s embeddings of every query and index of ``data`` (its first two
    columns), an fp16 store addressed by the data's example ids; cached under the artifact stage ``stage``,
    resumable. ``model`` is an entropy model (the regulators of Eq. 3), or any other, e.g. the untouched base (a
    control's regulators)."""
    if len(data.columns) < 2:
        raise ConfigError(f"{data.name}: RCL needs (query, index[, hard negative]) columns, got {data.column_names}")
    texts = dict(zip(STORE_COLUMNS, list(data.columns.values())[:2], strict=True))
    description = {"model": fingerprint(model), "precision": resolve_precision(precision, model.device), "dtype": "float16"}
    built = Stage(stage, {**description, "data": data.fingerprint(), "columns": list(STORE_COLUMNS)})
    encode = embedder(model, batch_size=batch_size, precision=precision, cache=False, show_progress=False)
    return cache.load_or_build(
        built,
        lambda work: write_store(work, encode, data.ids, texts, description=description, chunk_rows=chunk_rows,
                                 show_progress=show_progress),
        EmbeddingStore,
        resume=True,
    )


@dataclass
class Augmentation:
    """What the entropy-model stage produced: per φ, the entropy model, its run and its store."""

    phis: list[float]
    models: dict[float, SentenceTransformer]
    results: dict[float, TrainingResult]
    stores: dict[float, EmbeddingStore]

    def stores_for(self, phis: Sequence[float]) -> list[EmbeddingStore]:
        """The stores of ``phis`` (Table 4: the regulators of the first k entropy models)."""
        missing = [p for p in phis if p not in self.stores]
        if missing:
            raise ConfigError(f"no entropy model for phi {missing}; trained: {self.phis}")
        return [self.stores[p] for p in phis]


def augment(
    start: LoadModel, data: TrainingData, phis: Sequence[float], config: TrainingConfig, *, scale: float,
    patience: int = 3, window: int = 1, cache: ArtifactCache | None = None,
    sampler: Callable[[], BatchSampler] | None = None, train: Train | None = None, precision: str = "auto",
    show_progress: bool = True, name: str = "", stages: Callable[[float], tuple[str, str]] | None = None,
) -> Augmentation:
    """Algorithm 1, lines 2–5: an entropy model and its store per φ (in order; each cached, under the artifact
    stages ``stages(φ)``: the entropy model's and the store's); ``name`` prefixes the entropy models' run names."""
    phis = [float(p) for p in phis]
    if len(set(phis)) != len(phis):
        raise ConfigError(f"the phis must be distinct, got {phis}")
    cache = cache or ArtifactCache()
    out = Augmentation(phis, {}, {}, {})
    for phi in phis:
        entropy, store = stages(phi) if stages else (None, STORE_STAGE)
        model, result = train_entropy_model(start, data, phi, config, scale=scale, patience=patience, window=window,
                                            sampler=sampler() if sampler else None, train=train, name=name, stage=entropy)
        out.models[phi], out.results[phi] = model, result
        out.stores[phi] = augmented_store(model, data, cache=cache, precision=precision, show_progress=show_progress,
                                          stage=store)
    return out


def train_final_model(
    base: LoadModel, data: TrainingData, stores: Sequence[EmbeddingStore], config: TrainingConfig, *, scale: float,
    regulator_scale: float | None = None, sampler: BatchSampler | None = None, evaluator: Evaluator | None = None,
    train: Train | None = None, name: str = "RCL", callbacks: Sequence[Callback] = (), stage: str | None = None,
) -> tuple[SentenceTransformer, TrainingResult]:
    """Algorithm 1, line 7: fine-tune ``base()`` with Eq. 3 and the stores' regulators (cached under the artifact
    stage ``stage``, resumable); ``scale`` for the Eq. 1 term, ``regulator_scale`` for the regulators (None:
    ``scale``). No stores: Eq. 1."""
    model = base()
    trainer = Trainer(model, RegulatorLoss(model, stores, scale=scale, regulator_scale=regulator_scale), data, config,
                      sampler=sampler, evaluator=evaluator, callbacks=callbacks, name=name)
    return model, _train(train, trainer, stage)


def train_initial_model(
    base: LoadModel, data: TrainingData, config: TrainingConfig, *, scale: float, evaluator: Evaluator | None = None,
    sampler: BatchSampler | None = None, train: Train | None = None, name: str = "initial model", stage: str | None = None,
) -> tuple[LoadModel, TrainingResult]:
    """``base()`` fine-tuned with Eq. 1 (Eq. 2 at φ = 0) on ``data``'s (query, index[, negative]) columns, cached
    under the artifact stage ``stage``: the FAQ variant's initial model, the evaluation on ``evaluator`` with the best
    ``config.metric_for_best`` (dev MAP) kept; or, without an evaluator, the last step's (an NLI-trained base made
    from an MLM encoder: :func:`sentcl.chapters.rcl.nli_base`). Returns a loader of it."""
    if evaluator is not None and config.metric_for_best is None:
        raise ConfigError("the initial model is selected on a dev metric: set metric_for_best (e.g. 'map') and a schedule")
    model = base()
    trainer = Trainer(model, EntropyLoss(model, phi=0.0, scale=scale), data, config, sampler=sampler,
                      evaluator=evaluator, name=name)
    result = _train(train, trainer, stage)
    folder = Path(result.model_dir)
    return (lambda: load_encoder(folder)), result


def _train(train: Train | None, trainer: Trainer, stage: str | None) -> TrainingResult:
    """``trainer`` run by ``train`` (default :meth:`Trainer.train_cached`) under the artifact stage ``stage`` (None:
    ``train``'s own default, and ``train`` is called with the trainer alone)."""
    if train is None:
        return trainer.train_cached() if stage is None else trainer.train_cached(stage_name=stage)
    return train(trainer) if stage is None else train(trainer, stage=stage)


__all__ = [
    "STORE_COLUMNS",
    "STORE_STAGE",
    "Augmentation",
    "LoadModel",
    "Train",
    "augment",
    "augmented_store",
    "train_entropy_model",
    "train_final_model",
    "train_initial_model",
]
