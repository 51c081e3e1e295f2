"""k-fold cross-validation of FAQ retrieval with Algorithm 1's FAQ variant (Tan et al. 2022, §4.2, Table 2).

§4.2 evaluates the FAQ sets by "the accuracy of TOP1, TOP3, TOP5 and MAP [...] with 5-fold method";
Appendix A.1 gives the FAQ variant of Algorithm 1: an *initial* model fine-tuned from the base with
Eq. 1 and kept at its best dev MAP, entropy models fine-tuned from it with Eq. 2, and the final model
fine-tuned from the base with their regulators (Eq. 3), again kept at its best dev MAP.

:func:`faq_cross_validation` runs that variant once per fold of
:func:`sentcl.data.folds.grouped_query_folds` (the fold's training pairs; its dev queries select the
initial, baseline and final models by MAP; its test queries rank the whole FAQ bank) and keeps every
model's scores per fold. The models it scores, keyed by what they are: :data:`UNTOUCHED` (the base as
it is), :data:`INITIAL` (Eq. 1 fine-tuning: the initial model itself), one per regularisation
baseline (Eq. 1 from the base with a switch such as attention dropout or DropHead, selected the same
way; keyed by the caller's name) and :data:`FINAL` (Algorithm 1's final model). A chapter maps them
to its table's rows. A model's value is the mean over the folds, its spread their standard deviation.

Every run of a fold is an artifact-cache stage; a chapter names them (``stages``: :data:`FoldStages`) as its
plan of runs does (:mod:`sentcl.book.estimates.plan`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from sentence_transformers import SentenceTransformer

from sentcl.artifacts import ArtifactCache
from sentcl.data.folds import Fold, fold_pairs
from sentcl.data.records import RetrievalSet
from sentcl.embeddings import embedder
from sentcl.errors import ConfigError
from sentcl.evaluation.significance import seed_mean_std
from sentcl.training.config import TrainingConfig
from sentcl.training.entropy_models import (
    Augmentation,
    LoadModel,
    Train,
    augment,
    train_entropy_model,
    train_final_model,
    train_initial_model,
)
from sentcl.training.samplers import BatchSampler

Switch = Callable[[SentenceTransformer], SentenceTransformer]
"""A regularisation switch on a fresh base model (``lambda m: set_attention_dropout(m, 0.1)``)."""

UNTOUCHED, INITIAL, FINAL = "untouched base", "initial model (Eq. 1)", "final model (Eq. 3)"
"""The models :func:`faq_cross_validation` always scores (besides the caller's baselines)."""
ENTROPY_MODEL, STORE = "entropy model", "store"
"""The runs of a fold the final model rests on, one each per φ (named by :data:`FoldStages`)."""
FoldStages = Callable[..., str]
"""``stages(fold, model, phi=None)``: the artifact stage name of fold ``fold``'s (its index) run of ``model``:
:data:`INITIAL`, a baseline's key, :data:`ENTROPY_MODEL` or :data:`STORE` (with their ``phi``), or :data:`FINAL`."""


@dataclass
class FaqCrossValidation:
    """One FAQ set's cross-validation: per model, one ``{metric: value}`` per fold (the task's labels and
    units: Acc@1, Acc@3, Acc@5, MAP in percent)."""

    task: str
    folds: list[Fold]
    seeds: list[int]
    per_fold: dict[str, list[dict[str, float]]] = field(default_factory=dict)

    def summary(self, model: str) -> tuple[dict[str, float], dict[str, float] | None]:
        """The model's mean over the folds per metric, and their standard deviation (ddof 1; None with one
        fold): :func:`~sentcl.evaluation.significance.seed_mean_std` over the folds."""
        return seed_mean_std(self.per_fold[model])

    def to_json(self) -> dict:
        return {
            "task": self.task,
            "folds": [{"index": f.index, "seed": seed, "train": len(f.train), "dev": len(f.dev), "test": len(f.test)}
                      for f, seed in zip(self.folds, self.seeds, strict=True)],
            "per_fold": self.per_fold,
            "mean": {model: self.summary(model)[0] for model in self.per_fold},
            "std": {model: self.summary(model)[1] for model in self.per_fold},
        }


def faq_cross_validation(
    base: LoadModel, record: RetrievalSet, folds: Sequence[Fold], phis: Sequence[float], config: TrainingConfig,
    entropy_config: TrainingConfig, *, task: str, scale: float, regulator_scale: float | None = None,
    baselines: Mapping[str, Switch] | None = None, patience: int = 3, window: int = 1,
    sampler: Callable[[], BatchSampler] | None = None, train: Train | None = None, cache: ArtifactCache | None = None,
    precision: str = "auto", seeds: Sequence[int] | None = None, stages: FoldStages | None = None,
) -> FaqCrossValidation:
    """The FAQ variant of Algorithm 1 cross-validated on one FAQ set (``record``, the evaluation ``task``'s
    ``faq_pairs`` view; see the module's docstring): per fold, :data:`UNTOUCHED` (``base()``),
    :data:`INITIAL` (Eq. 1 from the base, the dev-MAP-best evaluation of ``config`` kept), one model per
    ``baselines`` switch (Eq. 1 from the switched base, selected the same way) and :data:`FINAL` (an
    entropy model per φ of ``phis`` from the initial model with ``entropy_config``, early-stopped after
    ``patience`` windows of ``window`` steps, then the final model from the base with their regulators at
    ``regulator_scale`` and ``config``, selected by dev MAP), each scored on the fold's test queries
    against the whole bank. Each fold is one run (the paper's "5 random runs" read as the 5 folds): its
    models train with its own seed, ``seeds[i]`` for fold i (default ``config.seed`` + the fold's index),
    in both configurations. Every training run and store is cached (``train``: a chapter's run-recording trainer;
    ``stages``: their artifact stage names, None: the cache's defaults), so a rerun only evaluates."""
    from sentcl.evaluation.scoring import evaluate_tasks

    spec = _task_spec(task, record, config)
    if not folds:
        raise ConfigError("no folds given (grouped_query_folds makes them)")
    clash = sorted(set(baselines or {}) & {UNTOUCHED, INITIAL, FINAL})
    if clash:
        raise ConfigError(f"baselines {clash} are named like the models {UNTOUCHED!r}, {INITIAL!r}, {FINAL!r}: rename them")
    seeds = [config.seed + f.index for f in folds] if seeds is None else [int(s) for s in seeds]
    if len(seeds) != len(folds):
        raise ConfigError(f"one training seed per fold: {len(folds)} folds, {len(seeds)} seeds")
    undeveloped = [f.index for f in folds if not f.dev]
    if undeveloped:
        raise ConfigError(f"folds {undeveloped}: no dev queries to select models on (give grouped_query_folds a dev_fraction)")
    out = FaqCrossValidation(spec.name, list(folds), seeds)
    for fold, seed in zip(folds, seeds, strict=True):
        runs = _FoldRuns(spec, record, fold, seed, config, entropy_config, scale=scale, regulator_scale=regulator_scale,
                         patience=patience, window=window, sampler=sampler, train=train, cache=cache, precision=precision,
                         stages=stages)
        test = record.take(fold.rows(record, "test"))

        def score(key: str, model: SentenceTransformer) -> None:
            values = evaluate_tasks(embedder(model, precision=precision, show_progress=False), {spec.name: test})  # noqa: B023 - called in this fold's iteration only
            out.per_fold.setdefault(key, []).append(values[spec.name])

        score(UNTOUCHED, base())
        initial = runs.selected(base, INITIAL)
        score(INITIAL, initial())
        for key, switch in (baselines or {}).items():
            score(key, runs.selected(lambda switch=switch: switch(base()), key)())  # type: ignore[misc]  # mypy cannot type a lambda's default
        score(FINAL, runs.final(base, runs.augment(initial, phis)))
    return out


def faq_fold_stage(
    base: LoadModel, record: RetrievalSet, fold: Fold, phis: Sequence[float], config: TrainingConfig,
    entropy_config: TrainingConfig, *, task: str, model: str, phi: float | None = None, scale: float,
    regulator_scale: float | None = None, baselines: Mapping[str, Switch] | None = None, patience: int = 3,
    window: int = 1, sampler: Callable[[], BatchSampler] | None = None, train: Train | None = None,
    cache: ArtifactCache | None = None, precision: str = "auto", seed: int | None = None, stages: FoldStages,
) -> None:
    """Build one run of one fold of :func:`faq_cross_validation` (same arguments; ``seed``: the fold's, default
    ``config.seed`` + its index) alone, under its stage ``stages(fold.index, model, phi)``: ``model`` is
    :data:`INITIAL`, a baseline's key, :data:`ENTROPY_MODEL` or :data:`STORE` at ``phi`` (one of ``phis``), or
    :data:`FINAL`. The runs it reads (the initial model, the entropy models and their stores) are loaded from the
    cache (built where missing), as :func:`faq_cross_validation` would build them; nothing is scored."""
    spec = _task_spec(task, record, config)
    runs = _FoldRuns(spec, record, fold, config.seed + fold.index if seed is None else int(seed), config, entropy_config,
                     scale=scale, regulator_scale=regulator_scale, patience=patience, window=window, sampler=sampler,
                     train=train, cache=cache, precision=precision, stages=stages)
    if model in (baselines or {}):
        switch = (baselines or {})[model]
        runs.selected(lambda: switch(base()), model)
        return
    if model not in (INITIAL, ENTROPY_MODEL, STORE, FINAL):
        raise ConfigError(f"no run {model!r} in a fold: {INITIAL!r}, a baseline ({sorted(baselines or {})}), "
                          f"{ENTROPY_MODEL!r}, {STORE!r} or {FINAL!r}")
    initial = runs.selected(base, INITIAL)
    if model == ENTROPY_MODEL:
        runs.entropy_model(initial, float(phi))  # type: ignore[arg-type]
    elif model == STORE:
        runs.augment(initial, [float(phi)])  # type: ignore[arg-type]
    elif model == FINAL:
        runs.final(base, runs.augment(initial, phis))


def _task_spec(task: str, record: RetrievalSet, config: TrainingConfig):
    from sentcl.evaluation.tasks import task as find_task

    spec = find_task(task)
    if spec.relevance_level is None:
        raise ConfigError(f"{spec.name} is not a retrieval task; FAQ cross-validation ranks the FAQ's answers")
    if (record.name, record.split) != (spec.dataset, spec.split):
        raise ConfigError(f"{spec.name} is computed on {spec.dataset}/{spec.split}, got {record.name}/{record.split}")
    if config.metric_for_best != "map":
        raise ConfigError("the FAQ models are selected by dev MAP (Appendix A.1): set metric_for_best='map' and a schedule")
    return spec


class _FoldRuns:
    """The training runs of one fold (its seed in both configurations, its training pairs, its dev-MAP evaluator)."""

    def __init__(self, spec, record: RetrievalSet, fold: Fold, seed: int, config: TrainingConfig,
                 entropy_config: TrainingConfig, *, scale: float, regulator_scale: float | None, patience: int, window: int,
                 sampler: Callable[[], BatchSampler] | None, train: Train | None, cache: ArtifactCache | None,
                 precision: str, stages: FoldStages | None):
        from sentcl.evaluation.scoring import dev_evaluator

        self.fold, self.stages, self.scale, self.regulator_scale = fold, stages, scale, regulator_scale
        self.patience, self.window, self.sampler, self.train, self.cache, self.precision = (
            patience, window, sampler, train, cache, precision)
        self.selection, self.entropy = replace(config, seed=seed), replace(entropy_config, seed=seed)
        self.where = f"{spec.name} fold {fold.index + 1}/{fold.k}"
        self.pairs = fold_pairs(record, fold.train, relevance_level=spec.relevance_level, name=f"{self.where} training pairs")
        # dev MAP, a fraction (Appendix A.1: the model "who has the highest MAP value on the development dataset")
        self.dev = dev_evaluator(spec, record.take(fold.rows(record, "dev")), metric_keys=["map"], precision=precision)

    def stage(self, model: str, phi: float | None = None) -> str | None:
        return self.stages(self.fold.index, model, phi) if self.stages else None

    def selected(self, start: LoadModel, key: str) -> LoadModel:
        """Eq. 1 from ``start()``, the dev-MAP-best evaluation kept: the initial model (``key`` :data:`INITIAL`) or a
        baseline's."""
        return train_initial_model(start, self.pairs, self.selection, scale=self.scale, evaluator=self.dev, train=self.train,
                                   sampler=self.sampler() if self.sampler else None, name=f"{self.where} {key}",
                                   stage=self.stage(key))[0]

    def _stages(self, phis: Sequence[float]):
        named = {float(phi): (self.stages(self.fold.index, ENTROPY_MODEL, phi), self.stages(self.fold.index, STORE, phi))
                 for phi in phis} if self.stages else None
        return named.__getitem__ if named else None

    def augment(self, initial: LoadModel, phis: Sequence[float]) -> Augmentation:
        """The entropy models of ``phis`` from the initial model, and their stores."""
        return augment(initial, self.pairs, phis, self.entropy, scale=self.scale, patience=self.patience, window=self.window,
                       cache=self.cache, sampler=self.sampler, train=self.train, precision=self.precision,
                       show_progress=False, name=f"{self.where} ", stages=self._stages(phis))

    def entropy_model(self, initial: LoadModel, phi: float) -> None:
        """The entropy model at ``phi`` alone (its store not built), as :meth:`augment` trains it."""
        entropy, _ = self._stages([phi])(float(phi)) if self.stages else (None, None)
        train_entropy_model(initial, self.pairs, float(phi), self.entropy, scale=self.scale, patience=self.patience,
                            window=self.window, sampler=self.sampler() if self.sampler else None, train=self.train,
                            name=f"{self.where} ", stage=entropy)

    def final(self, base: LoadModel, augmented: Augmentation) -> SentenceTransformer:
        """The final model from the base with the regulators of ``augmented``'s stores, selected by dev MAP."""
        model, _ = train_final_model(base, self.pairs, augmented.stores_for(augmented.phis), self.selection,
                                     scale=self.scale, regulator_scale=self.regulator_scale,
                                     sampler=self.sampler() if self.sampler else None, evaluator=self.dev,
                                     train=self.train, name=f"{self.where} RCL", stage=self.stage(FINAL))
        return model


__all__ = ["ENTROPY_MODEL", "FINAL", "INITIAL", "STORE", "UNTOUCHED", "FaqCrossValidation", "FoldStages", "Switch",
           "faq_cross_validation", "faq_fold_stage"]
