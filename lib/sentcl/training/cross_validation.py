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
plan of runs does (:mod:`sentcl.book.plan`).
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
from sentcl.training.entropy_models import LoadModel, Train, augment, train_final_model, train_initial_model
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
        selection, entropy = replace(config, seed=seed), replace(entropy_config, seed=seed)
        where = f"{spec.name} fold {fold.index + 1}/{fold.k}"
        pairs = fold_pairs(record, fold.train, relevance_level=spec.relevance_level, name=f"{where} training pairs")
        # dev MAP, a fraction (Appendix A.1: the model "who has the highest MAP value on the development dataset")
        dev = dev_evaluator(spec, record.take(fold.rows(record, "dev")), metric_keys=["map"], precision=precision)
        test = record.take(fold.rows(record, "test"))

        def score(key: str, model: SentenceTransformer) -> None:
            values = evaluate_tasks(embedder(model, precision=precision, show_progress=False), {spec.name: test})  # noqa: B023 - called in this fold's iteration only
            out.per_fold.setdefault(key, []).append(values[spec.name])

        def stage(model: str, phi: float | None = None) -> str | None:
            return stages(fold.index, model, phi) if stages else None  # noqa: B023 - called in this fold's iteration only

        def selected(start: LoadModel, name: str, key: str) -> LoadModel:
            return train_initial_model(start, pairs, selection, scale=scale, evaluator=dev, train=train,  # noqa: B023 - called in this fold's iteration only
                                       sampler=sampler() if sampler else None, name=f"{where} {name}", stage=stage(key))[0]  # noqa: B023 - called in this fold's iteration only

        score(UNTOUCHED, base())
        initial = selected(base, "initial model (Eq. 1)", INITIAL)
        score(INITIAL, initial())
        for key, switch in (baselines or {}).items():
            score(key, selected(lambda switch=switch: switch(base()), key, key)())  # type: ignore[misc]  # mypy cannot type a lambda's default
        augmented_stages = {float(phi): (stages(fold.index, ENTROPY_MODEL, phi), stages(fold.index, STORE, phi))
                            for phi in phis} if stages else None
        augmented = augment(initial, pairs, phis, entropy, scale=scale, patience=patience, window=window,
                            cache=cache, sampler=sampler, train=train, precision=precision, show_progress=False,
                            name=f"{where} ", stages=augmented_stages.__getitem__ if augmented_stages else None)
        model, _ = train_final_model(base, pairs, augmented.stores_for(augmented.phis), selection, scale=scale,
                                     regulator_scale=regulator_scale, sampler=sampler() if sampler else None,
                                     evaluator=dev, train=train, name=f"{where} RCL", stage=stage(FINAL))
        score(FINAL, model)
    return out


__all__ = ["ENTROPY_MODEL", "FINAL", "INITIAL", "STORE", "UNTOUCHED", "FaqCrossValidation", "FoldStages", "Switch",
           "faq_cross_validation"]
