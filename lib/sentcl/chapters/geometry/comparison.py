"""Four contrastive methods under one budget: one trainer, one base model, the same pairs, steps and seeds.

:func:`train_method` trains one of :data:`METHODS` from ``load_base()`` on the pairs ``(query,
index)`` of a :class:`~sentcl.data.records.TrainingData` with one :class:`TrainingConfig` (the
same batch size, learning rate, schedule, number of steps and seed for every method):

- **MNRL** -- the in-batch softmax of scaled cosines (Eq. 1 of Tan et al. 2022; the MNRL of
  Taneja et al. 2023), batches without duplicate texts.
- **BSC** -- the symmetric batch-softmax contrastive loss with L2 normalisation (Chernyavskiy et al.
  2022, Eqs. 1-4) and example-based shuffling (their Algorithm 1: groups of nearest neighbours
  under the current model, re-encoded every epoch).
- **RCL** -- Algorithm 1 of Tan et al. (2022): entropy models (Eq. 2, one per φ, early stopping
  after ``patience`` windows of ``window`` steps, their own warm-up), their augmented-embedding stores,
  then the final model with Eq. 3's regulators (at ``regulator_scale``). The entropy
  models are trained once, with ``settings.entropy_seed``, and shared by every seed of the final
  model; each seed's cost still counts them in full (what one RCL model costs).
- **IFCL** -- identical and fraternal twins (Xiao et al. 2023): the queue InfoNCE with the
  hippocampus queue and the Twin loss. IFCL is unsupervised, so it trains on the pairs' *queries*
  (distinct texts) and never sees the pairs' second sentences: the same data, less the labels.

**Cost.** Every training run, entropy model and store is an artifact-cache stage whose manifest
records the seconds its build took (:func:`stage_seconds`); a method's cost for one model is the
sum over the stages it needs, less the seconds a :class:`~sentcl.training.callbacks.GeometryCallback`
spent measuring inside them. A stage loaded from the cache keeps the build time of the run that
built it, so a warm rerun reports the cold run's costs; a stage resumed after an interruption
counts only the part after the resume.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from sentence_transformers import SentenceTransformer

from sentcl.data.augmentation import fusion_twins
from sentcl.data.records import TrainingData
from sentcl.errors import ConfigError, check_choice
from sentcl.io import read_json
from sentcl.losses import BatchSoftmaxContrastiveLoss, IFCLLoss, MultipleNegativesRankingLoss
from sentcl.training.callbacks import Callback
from sentcl.training.config import TrainingConfig
from sentcl.training.entropy_models import (
    STORE_STAGE,
    Augmentation,
    LoadModel,
    Train,
    augment,
    train_entropy_model,
    train_final_model,
)
from sentcl.training.samplers import NoDuplicatesBatchSampler
from sentcl.training.shuffling import ExampleBasedShuffler
from sentcl.training.trainer import Trainer, TrainingResult

METHODS = ("MNRL", "BSC", "RCL", "IFCL")
MACHINERY = {
    "MNRL": "none (the baseline)",
    "BSC": "example-based shuffling: the training set re-encoded and grouped by neighbours every epoch",
    "RCL": "entropy models (one training run per φ) and their augmented-embedding stores",
    "IFCL": "fraternal twins (a third encoded column), the hippocampus queue and the Twin loss",
}
"""What each method adds to plain MNRL, and what its cost ratio pays for."""


@dataclass(frozen=True)
class MethodSettings:
    """Each method's own hyperparameters; the defaults are the papers' (section cited)."""

    scale: float = 20.0
    """MNRL and RCL's Eq. 1 (and Eq. 2): the cosine's scale (sentence-transformers' default; RCL prints none)."""
    regulator_scale: float = 1.0
    """RCL's regulators: the cosine's scale, as Eq. 3 prints it (the RCL chapter's reading)."""
    bsc_temperature: float = 0.1
    """BSC τ, §5.2: "0.1 otherwise"."""
    group_size: int = 8
    """BSC example-based shuffling group size, §5.2: "8 otherwise"."""
    neighbours: int = 500
    """BSC candidates per example (n), §5.2."""
    phis: tuple[float, ...] = (0.01, 0.02, 0.03, 0.04)
    """RCL entropy models, Appendix A.1."""
    entropy_steps: int | None = None
    """RCL entropy models' step budget (None: the config's); they stop early anyway."""
    entropy_seed: int = 0
    entropy_warmup_ratio: float = 0.1
    """RCL entropy models' warm-up (the budget's 10 %; the RCL chapter's reading)."""
    patience: int = 3
    """RCL early stopping: "if the loss doesn't decrease within 3 steps" (Appendix A.1), 3 windows..."""
    window: int = 500
    """... of this many steps each (Hugging Face's evaluation interval; the RCL chapter's reading)."""
    ifcl_temperature: float = 0.05
    """IFCL τ (SimCSE's 0.05; the slides give none)."""
    queue_batches: int = 3
    forgetting_decay: float = 0.9
    twin_weight: float = 1.0
    repetition_rate: float = 0.32
    """IFCL fraternal twins by word repetition (ESimCSE's rate)."""


@dataclass
class MethodRun:
    """One trained model of one method: the model, its final run, and what it cost."""

    method: str
    seed: int
    model: SentenceTransformer
    result: TrainingResult
    stages: dict[str, float] = field(default_factory=dict)
    """Seconds per stage this model needed (build time less geometry measuring)."""
    upstream: list[TrainingResult] = field(default_factory=list)
    """The other training runs the model rests on (RCL's entropy models), for their health."""

    @property
    def runs(self) -> list[TrainingResult]:
        """Every training run this model rests on: its own first."""
        return [self.result, *self.upstream]

    @property
    def cost_s(self) -> float:
        return sum(self.stages.values())


def stage_seconds(folder: str | Path) -> float:
    """The seconds an artifact-cache stage's build took (its manifest), less the seconds a geometry
    callback spent measuring in it (``geometry.json``'s ``seconds``)."""
    folder = Path(folder)
    manifest = folder / "artifact.json"
    if not manifest.is_file():
        raise ConfigError(f"{folder} is not a finished artifact-cache stage (no artifact.json): its cost is unknown")
    seconds = float(read_json(manifest, "an artifact-cache manifest")["build_time_s"])
    history = folder / "geometry.json"
    if history.is_file():
        seconds -= sum(float(h.get("seconds", 0.0)) for h in read_json(history, "a geometry trajectory"))
    return max(seconds, 0.0)


def train_method(
    method: str,
    load_base: LoadModel,
    pairs: TrainingData,
    config: TrainingConfig,
    settings: MethodSettings = MethodSettings(),
    *,
    train: Train | None = None,
    callbacks: Sequence[Callback] = (),
    name: str | None = None,
    stage: str | None = None,
    entropy_stage: Callable[[float], str] | None = None,
    store_stage: Callable[[float], str] | None = None,
) -> MethodRun:
    """Train ``method`` from ``load_base()`` on ``pairs`` with ``config`` (cached, resumable, through
    ``train``: default :meth:`Trainer.train_cached`, a chapter passes its run-recording ``train``);
    ``callbacks`` go to the run of the final model. Returns the model and its cost per stage.

    ``stage``: the artifact stage name of the method's (final) run, and for RCL ``entropy_stage(phi)`` that of
    each entropy model (None: the cache's default ``"train"``); a ``train`` given with names takes each as
    ``stage=`` (:meth:`sentcl.book.notebook.chapter_run.ChapterRun.train`); for RCL ``store_stage(phi)`` that of each entropy
    model's augmented-embedding store (None: :data:`~sentcl.training.entropy_models.STORE_STAGE`; named only with
    ``entropy_stage``)."""
    check_choice("method", method, METHODS)
    if len(pairs.columns) != 2 or pairs.labels is not None:
        raise ConfigError(f"{pairs.name}: the methods train on unlabelled (query, index) pairs, got columns "
                          f"{pairs.column_names}{' and labels' if pairs.labels is not None else ''}")
    train = train or Trainer.train_cached
    name = name or f"{method} seed {config.seed}"
    stages: dict[str, float] = {}
    upstream: list[TrainingResult] = []
    if method == "RCL":
        augmented = rcl_augment(load_base, pairs, config, settings, train=None if train is Trainer.train_cached else train,
                                entropy_stage=entropy_stage, store_stage=store_stage)
        for phi in augmented.phis:
            stages[f"entropy model φ={phi:g}"] = stage_seconds(augmented.results[phi].output_dir)
            stages[f"store φ={phi:g}"] = stage_seconds(augmented.stores[phi].path)
        upstream = [augmented.results[phi] for phi in augmented.phis]
        model, result = train_final_model(load_base, pairs, augmented.stores_for(augmented.phis), config,
                                          scale=settings.scale, regulator_scale=settings.regulator_scale,
                                          sampler=NoDuplicatesBatchSampler(), train=_under(train, stage),
                                          callbacks=callbacks, name=name)
    else:
        model = load_base()
        data, loss, sampler = _setup(method, pairs, config, settings)
        result = _under(train, stage)(Trainer(model, loss, data, config, sampler=sampler, callbacks=callbacks, name=name))
    stages["training"] = stage_seconds(result.output_dir)
    return MethodRun(method, config.seed, model, result, stages, upstream)


def rcl_entropy_config(config: TrainingConfig, settings: MethodSettings = MethodSettings()) -> TrainingConfig:
    """The configuration of RCL's entropy models (Eq. 2) beside a final model trained with ``config``: the same
    budget but ``settings``' entropy seed, warm-up and step budget (``entropy_steps``; None: the config's), no
    evaluations (early stopping on the training loss ends them)."""
    return replace(config, seed=settings.entropy_seed, warmup_ratio=settings.entropy_warmup_ratio,
                   max_steps=settings.entropy_steps or config.max_steps, eval_steps=None, eval_fraction=None,
                   metric_for_best=None)


def rcl_augment(
    load_base: LoadModel, pairs: TrainingData, config: TrainingConfig, settings: MethodSettings = MethodSettings(),
    *, phis: Sequence[float] | None = None, train: Train | None = None,
    entropy_stage: Callable[[float], str] | None = None, store_stage: Callable[[float], str] | None = None,
) -> Augmentation:
    """Algorithm 1, lines 2-5 as :func:`train_method` runs them for RCL: per φ of ``phis`` (None: ``settings.phis``)
    the entropy model (Eq. 2, :func:`rcl_entropy_config`, early-stopped) and its augmented-embedding store, each
    cached (under ``entropy_stage(phi)`` and ``store_stage(phi)``, as :func:`train_method` names them): what is
    built is loaded. ``train``: the entropy models' (None: :meth:`Trainer.train_cached`)."""
    return augment(load_base, pairs, settings.phis if phis is None else phis, rcl_entropy_config(config, settings),
                   scale=settings.scale, patience=settings.patience, window=settings.window,
                   sampler=NoDuplicatesBatchSampler, train=train, show_progress=False,
                   stages=_augment_stages(entropy_stage, store_stage))


def rcl_entropy_model(
    load_base: LoadModel, pairs: TrainingData, phi: float, config: TrainingConfig,
    settings: MethodSettings = MethodSettings(), *, train: Train | None = None, stage: str | None = None,
) -> tuple[SentenceTransformer, TrainingResult]:
    """RCL's entropy model at ``phi`` alone (Eq. 2; its store not built), as :func:`rcl_augment` trains it, under the
    artifact stage ``stage`` (None: the cache's default)."""
    return train_entropy_model(load_base, pairs, phi, rcl_entropy_config(config, settings), scale=settings.scale,
                               patience=settings.patience, window=settings.window, sampler=NoDuplicatesBatchSampler(),
                               train=train, stage=stage)


def _under(train: Callable[..., TrainingResult], stage: str | None) -> Train:
    """``train`` building its run under the artifact stage ``stage`` (None: ``train`` itself)."""
    if stage is None:
        return train
    if train is Trainer.train_cached:
        return lambda trainer: trainer.train_cached(stage_name=stage)
    return lambda trainer: train(trainer, stage=stage)


def _augment_stages(entropy_stage: Callable[[float], str] | None,
                    store_stage: Callable[[float], str] | None) -> Callable[[float], tuple[str, str]] | None:
    """:func:`~sentcl.training.entropy_models.augment`'s ``stages``: per φ the entropy model's stage
    ``entropy_stage(phi)`` and its store's ``store_stage(phi)`` (None: the store's default stage); None where no
    entropy model is named (the cache's default stages)."""
    if entropy_stage is None:
        if store_stage is not None:
            raise ConfigError("RCL's stores are named beside their entropy models: pass entropy_stage with store_stage")
        return None
    return lambda phi: (entropy_stage(phi), store_stage(phi) if store_stage else STORE_STAGE)


def _setup(method: str, pairs: TrainingData, config: TrainingConfig, settings: MethodSettings) -> tuple:
    """(training data, loss factory, sampler) of a method trained by one run."""
    if method == "MNRL":
        return pairs, (lambda m: MultipleNegativesRankingLoss(m, scale=settings.scale)), NoDuplicatesBatchSampler()
    if method == "BSC":
        return (pairs, lambda m: BatchSoftmaxContrastiveLoss(m, settings.bsc_temperature),
                ExampleBasedShuffler(settings.group_size, settings.neighbours))
    queries = list(dict.fromkeys(next(iter(pairs.columns.values()))))
    twins = fusion_twins(queries, repetition_rate=settings.repetition_rate, seed=config.seed,
                         name=f"{pairs.name} queries, twins")
    loss = lambda m: IFCLLoss(m, temperature=settings.ifcl_temperature, queue_batches=settings.queue_batches,  # noqa: E731
                              forgetting_decay=settings.forgetting_decay, twin_weight=settings.twin_weight)
    return twins, loss, None  # distinct texts: random batches, as the IFCL chapter


def cost_ratios(runs: Sequence[MethodRun], baseline: str = "MNRL") -> dict[str, float]:
    """Each method's mean cost per model over its seeds, as a ratio to ``baseline``'s mean cost."""
    by_method: dict[str, list[float]] = {}
    for r in runs:
        by_method.setdefault(r.method, []).append(r.cost_s)
    if baseline not in by_method:
        raise ConfigError(f"no {baseline} run to compare the costs with; methods run: {sorted(by_method)}")
    base = sum(by_method[baseline]) / len(by_method[baseline])
    if base <= 0:
        raise ConfigError(f"{baseline}'s recorded cost is {base} s: no ratio can be taken")
    return {m: (sum(c) / len(c)) / base for m, c in by_method.items()}


__all__ = ["MACHINERY", "METHODS", "MethodRun", "MethodSettings", "cost_ratios", "rcl_augment", "rcl_entropy_config",
           "rcl_entropy_model", "stage_seconds", "train_method"]
