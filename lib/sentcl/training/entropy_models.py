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

**Early stopping** (Appendix A.1: "if the loss doesn't decrease within 3 steps"):
:class:`LossEarlyStopping`, a trainer callback: every ``window`` optimizer steps the mean
training loss of those steps is compared with the lowest so far, and training stops once
``patience`` such windows have passed without a new lowest. ``window = 1, patience = 3`` reads
"3 steps" literally (the loss of single batches); a larger window smooths the batch-to-batch
noise. The entropy model is the model where training stopped (as Keras' ``EarlyStopping`` by
default; the paper does not say it restored earlier weights). A callback rather than the
trainer's evaluation-based stopping, which would checkpoint the whole training state after
every step.

**The FAQ variant** (Appendix A.1, FAQ datasets): the entropy models start from an *initial*
model fine-tuned with Eq. 1 and selected by dev MAP, the final model from the base model; pass
``start=`` the initial model's loader (:func:`train_initial_model` trains it).

**Table 2's protocol** (§4.2: Acc@1/3/5 and MAP "with 5-fold method"): :func:`faq_cross_validation`
runs the FAQ variant once per fold of :func:`sentcl.data.folds.grouped_query_folds` (the fold's
training pairs; its dev queries select the initial, baseline and final models by MAP; its test
queries rank the whole FAQ bank) and keeps each row's scores per fold; a row's value is the mean
over the folds, its spread their standard deviation. The rows: the untouched base, Eq. 1
fine-tuning (the initial model itself), each regularisation baseline (Eq. 1 with a switch such as
attention dropout or DropHead, selected the same way) and RCL.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from sentence_transformers import SentenceTransformer

from sentcl.artifacts import ArtifactCache, Stage
from sentcl.data.folds import Fold, fold_pairs
from sentcl.data.records import RetrievalSet, TrainingData
from sentcl.embeddings import embedder
from sentcl.embeddings.store import EmbeddingStore, write_store
from sentcl.errors import ConfigError, check_positive_int
from sentcl.evaluation.significance import seed_mean_std
from sentcl.losses.rcl import EntropyLoss, RegulatorLoss
from sentcl.models import fingerprint, load_encoder
from sentcl.precision import resolve_precision
from sentcl.training.callbacks import Callback
from sentcl.training.config import TrainingConfig
from sentcl.training.samplers import BatchSampler
from sentcl.training.trainer import Evaluator, Trainer, TrainingResult

Switch = Callable[[SentenceTransformer], SentenceTransformer]
"""A regularisation switch on a fresh base model (``lambda m: set_attention_dropout(m, 0.1)``)."""

LoadModel = Callable[[], SentenceTransformer]
"""A fresh copy of a start model (the base model, or the FAQ variant's initial model)."""
Train = Callable[[Trainer], TrainingResult]
"""Runs a trainer in the cache (default :meth:`Trainer.train_cached`; a chapter passes its run-recording ``train``)."""
STORE_COLUMNS = ("query", "index")
"""The sentences the regulators of Eq. 3 cover: each tuple's query and index (not hard negatives)."""


class LossEarlyStopping(Callback):
    """Stop training when the mean loss of ``window`` steps has not fallen below its lowest for ``patience`` windows.

    The trainer adds each step's loss to ``state.loss_since_log`` (emptied when it logs) before it
    calls :meth:`on_step_end`; the step's loss is what that running sum grew by. The state (lowest
    mean, windows since, the window in progress) is checkpointed, so a resumed run stops where an
    uninterrupted one would.
    """

    name = "loss-early-stopping"

    def __init__(self, patience: int = 3, window: int = 1) -> None:
        self.patience = check_positive_int("patience", patience)
        self.window = check_positive_int("window", window)
        self.best: float | None = None
        self.since_best = 0
        self.window_losses: list[float] = []
        self.seen = (0.0, 0)  # (total, count) of state.loss_since_log after the previous step
        self.history: list[dict[str, float]] = []

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


def train_entropy_model(
    start: LoadModel, data: TrainingData, phi: float, config: TrainingConfig, *, scale: float,
    patience: int = 3, window: int = 1, sampler: BatchSampler | None = None, train: Train | None = None,
    name: str = "",
) -> tuple[SentenceTransformer, TrainingResult]:
    """Algorithm 1, line 3: fine-tune ``start()`` with Eq. 2 at weight ``phi``, stopped by
    :class:`LossEarlyStopping` (``patience``, ``window``) or at the end of ``config``'s run; cached, resumable.
    ``name`` prefixes the run's name (``"entropy model phi=0.01"``; a fold's runs say which fold)."""
    model = start()
    trainer = Trainer(model, EntropyLoss(model, phi=phi, scale=scale), data, config, sampler=sampler,
                      callbacks=[LossEarlyStopping(patience, window)], name=f"{name}entropy model phi={phi:g}")
    result = (train or _train_cached)(trainer)
    return model, result


def augmented_store(
    model: SentenceTransformer, data: TrainingData, *, cache: ArtifactCache, precision: str = "auto",
    batch_size: int = 64, chunk_rows: int = 16384, show_progress: bool = True,
) -> EmbeddingStore:
    """Algorithm 1, line 4: the entropy model's embeddings of every query and index of ``data``
    (its first two columns), an fp16 store addressed by the data's example ids; cached, resumable."""
    if len(data.columns) < 2:
        raise ConfigError(f"{data.name}: RCL needs (query, index[, hard negative]) columns, got {data.column_names}")
    texts = dict(zip(STORE_COLUMNS, list(data.columns.values())[:2], strict=True))
    description = {"model": fingerprint(model), "precision": resolve_precision(precision, model.device), "dtype": "float16"}
    stage = Stage("augmented-embeddings", {**description, "data": data.fingerprint(), "columns": list(STORE_COLUMNS)})
    encode = embedder(model, batch_size=batch_size, precision=precision, cache=False, show_progress=False)
    return cache.load_or_build(
        stage,
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
    show_progress: bool = True, name: str = "",
) -> Augmentation:
    """Algorithm 1, lines 2–5: an entropy model and its store per φ (in order; each cached); ``name``
    prefixes the entropy models' run names."""
    phis = [float(p) for p in phis]
    if len(set(phis)) != len(phis):
        raise ConfigError(f"the phis must be distinct, got {phis}")
    cache = cache or ArtifactCache()
    out = Augmentation(phis, {}, {}, {})
    for phi in phis:
        model, result = train_entropy_model(start, data, phi, config, scale=scale, patience=patience, window=window,
                                            sampler=sampler() if sampler else None, train=train, name=name)
        out.models[phi], out.results[phi] = model, result
        out.stores[phi] = augmented_store(model, data, cache=cache, precision=precision, show_progress=show_progress)
    return out


def train_final_model(
    base: LoadModel, data: TrainingData, stores: Sequence[EmbeddingStore], config: TrainingConfig, *, scale: float,
    sampler: BatchSampler | None = None, evaluator: Evaluator | None = None, train: Train | None = None, name: str = "RCL",
    callbacks: Sequence[Callback] = (),
) -> tuple[SentenceTransformer, TrainingResult]:
    """Algorithm 1, line 7: fine-tune ``base()`` with Eq. 3 and the stores' regulators (cached, resumable)."""
    model = base()
    trainer = Trainer(model, RegulatorLoss(model, stores, scale=scale), data, config, sampler=sampler,
                      evaluator=evaluator, callbacks=callbacks, name=name)
    return model, (train or _train_cached)(trainer)


def train_initial_model(
    base: LoadModel, data: TrainingData, config: TrainingConfig, *, scale: float, evaluator: Evaluator,
    sampler: BatchSampler | None = None, train: Train | None = None, name: str = "initial model",
) -> tuple[LoadModel, TrainingResult]:
    """The FAQ variant's initial model: ``base()`` fine-tuned with Eq. 1 (Eq. 2 at φ = 0), the
    evaluation with the best ``config.metric_for_best`` (dev MAP) kept. Returns a loader of it."""
    if config.metric_for_best is None:
        raise ConfigError("the initial model is selected on a dev metric: set metric_for_best (e.g. 'map') and a schedule")
    model = base()
    trainer = Trainer(model, EntropyLoss(model, phi=0.0, scale=scale), data, config, sampler=sampler,
                      evaluator=evaluator, name=name)
    result = (train or _train_cached)(trainer)
    folder = Path(result.model_dir)
    return (lambda: load_encoder(folder)), result


BASE, EQ1, RCL = "base", "Eq. 1", "RCL"
"""The rows :func:`faq_cross_validation` always computes (besides its baselines)."""


@dataclass
class FaqCrossValidation:
    """Table 2 for one FAQ set: per row, one ``{metric: value}`` per fold (the task's labels and units:
    Acc@1, Acc@3, Acc@5, MAP in percent)."""

    task: str
    folds: list[Fold]
    seeds: list[int]
    per_fold: dict[str, list[dict[str, float]]] = field(default_factory=dict)

    def summary(self, row: str) -> tuple[dict[str, float], dict[str, float] | None]:
        """The row's mean over the folds per metric, and their standard deviation (ddof 1; None with one
        fold): :func:`~sentcl.evaluation.significance.seed_mean_std` over the folds."""
        return seed_mean_std(self.per_fold[row])

    def to_json(self) -> dict:
        return {
            "task": self.task,
            "folds": [{"index": f.index, "seed": seed, "train": len(f.train), "dev": len(f.dev), "test": len(f.test)}
                      for f, seed in zip(self.folds, self.seeds, strict=True)],
            "per_fold": self.per_fold,
            "mean": {row: self.summary(row)[0] for row in self.per_fold},
            "std": {row: self.summary(row)[1] for row in self.per_fold},
        }


def faq_cross_validation(
    base: LoadModel, record: RetrievalSet, folds: Sequence[Fold], phis: Sequence[float], config: TrainingConfig,
    entropy_config: TrainingConfig, *, task: str, scale: float, baselines: Mapping[str, Switch] | None = None,
    patience: int = 3, window: int = 1, sampler: Callable[[], BatchSampler] | None = None, train: Train | None = None,
    cache: ArtifactCache | None = None, precision: str = "auto", seeds: Sequence[int] | None = None,
) -> FaqCrossValidation:
    """Table 2's protocol on one FAQ set (``record``, the evaluation ``task``'s ``faq_pairs`` view; see
    the module's docstring): per fold, the rows :data:`BASE` (the untouched ``base()``), :data:`EQ1`
    (the initial model: Eq. 1 from the base, the dev-MAP-best evaluation of ``config`` kept), one row
    per ``baselines`` switch (Eq. 1 from the switched base, selected the same way) and :data:`RCL` (an
    entropy model per φ of ``phis`` from the initial model with ``entropy_config``, then the final
    model from the base with their regulators and ``config``, selected by dev MAP), each scored on the
    fold's test queries against the whole bank. Each fold is one run of the table (the paper's "5 random
    runs" read as the 5 folds): its models train with its own seed, ``seeds[i]`` for fold i (default
    ``config.seed`` + the fold's index), in both configurations. Every training run is cached
    (``train``: a chapter's run-recording trainer), so a rerun only evaluates."""
    from sentcl.evaluation.scoring import dev_evaluator, evaluate_tasks
    from sentcl.evaluation.tasks import task as find_task

    spec = find_task(task)
    if spec.relevance_level is None:
        raise ConfigError(f"{spec.name} is not a retrieval task; FAQ cross-validation ranks the FAQ's answers")
    if (record.name, record.split) != (spec.dataset, spec.split):
        raise ConfigError(f"{spec.name} is computed on {spec.dataset}/{spec.split}, got {record.name}/{record.split}")
    if config.metric_for_best != "map":
        raise ConfigError("the FAQ models are selected by dev MAP (Appendix A.1): set metric_for_best='map' and a schedule")
    if not folds:
        raise ConfigError("no folds given (grouped_query_folds makes them)")
    clash = sorted(set(baselines or {}) & {BASE, EQ1, RCL})
    if clash:
        raise ConfigError(f"baseline rows {clash} are named like the rows {BASE!r}, {EQ1!r}, {RCL!r}: rename them")
    seeds = [config.seed + f.index for f in folds] if seeds is None else [int(s) for s in seeds]
    if len(seeds) != len(folds):
        raise ConfigError(f"one training seed per fold: {len(folds)} folds, {len(seeds)} seeds")
    undeveloped = [f.index for f in folds if not f.dev]
    if undeveloped:
        raise ConfigError(f"folds {undeveloped}: no dev queries to select models on (give grouped_query_folds a dev_fraction)")
    out = FaqCrossValidation(spec.name, list(folds), seeds)
    for fold, seed in zip(folds, seeds, strict=True):
        selection, entropy = replace(config, seed=seed), replace(entropy_config, seed=seed)
        where = f"{spec.name} fold {fold.index + 1}/{fold.k}"
        pairs = fold_pairs(record, fold.train, relevance_level=spec.relevance_level, name=f"{where} training pairs")
        # dev MAP, a fraction (Appendix A.1: the model "who has the highest MAP value on the development dataset")
        dev = dev_evaluator(spec, record.take(fold.rows(record, "dev")), metric_keys=["map"], precision=precision)
        test = record.take(fold.rows(record, "test"))

        def score(row: str, model: SentenceTransformer) -> None:
            values = evaluate_tasks(embedder(model, precision=precision, show_progress=False), {spec.name: test})  # noqa: B023 - called in this fold's iteration only
            out.per_fold.setdefault(row, []).append(values[spec.name])

        def selected(start: LoadModel, name: str) -> LoadModel:
            return train_initial_model(start, pairs, selection, scale=scale, evaluator=dev, train=train,  # noqa: B023 - called in this fold's iteration only
                                       sampler=sampler() if sampler else None, name=f"{where} {name}")[0]  # noqa: B023 - called in this fold's iteration only

        score(BASE, base())
        initial = selected(base, "initial model (Eq. 1)")
        score(EQ1, initial())
        for row, switch in (baselines or {}).items():
            score(row, selected(lambda switch=switch: switch(base()), row)())  # type: ignore[misc]  # mypy cannot type a lambda's default
        augmented = augment(initial, pairs, phis, entropy, scale=scale, patience=patience, window=window,
                            cache=cache, sampler=sampler, train=train, precision=precision, show_progress=False,
                            name=f"{where} ")
        model, _ = train_final_model(base, pairs, augmented.stores_for(augmented.phis), selection, scale=scale,
                                     sampler=sampler() if sampler else None, evaluator=dev, train=train,
                                     name=f"{where} RCL")
        score(RCL, model)
    return out


def _train_cached(trainer: Trainer) -> TrainingResult:
    return trainer.train_cached()


__all__ = [
    "BASE",
    "EQ1",
    "RCL",
    "STORE_COLUMNS",
    "Augmentation",
    "FaqCrossValidation",
    "augment",
    "augmented_store",
    "faq_cross_validation",
    "LossEarlyStopping",
    "train_entropy_model",
    "train_final_model",
    "train_initial_model",
]
