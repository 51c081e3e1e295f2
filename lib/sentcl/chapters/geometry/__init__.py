"""The geometry chapter (ours: no paper values): alignment, uniformity and anisotropy of every model, and the
four methods trained under one budget. Its title, its tables (:func:`equal_budget_columns`), its GPU-memory rows (estimates, beside RCL's nearest
measurement), its plan of runs (:func:`plan`: no GPU record), and how each planned stage is made.

:func:`build` builds any one planned stage alone (``sentcl reproduce --executor ray``: one task each) by its ``args``,
through the functions the notebook itself calls (:func:`training_pairs`, :func:`train`; RCL's entropy models and
stores: :func:`entropy_model`, :func:`store`, through :mod:`sentcl.chapters.geometry.comparison`'s RCL steps, which
:func:`~sentcl.chapters.geometry.comparison.train_method` runs), so a task builds the very keys the notebook then finds.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...book.chapter_spec import Chapter
from ...book.estimates.cost import chapter_stages, run_steps
from ...book.estimates.gpu_memory import MemoryRow, chapter_rows, estimated
from ...book.estimates.plan import Plan, PlannedStage, stage_name
from ...errors import ConfigError
from ..mnrl_sbert import load_nli
from ..rcl import CHAPTER as RCL

if TYPE_CHECKING:
    import pandas as pd
    from sentence_transformers import SentenceTransformer

    from ...book.notebook.chapter_run import ChapterRun
    from ...data.records import TrainingData
    from ...training import TrainingConfig, TrainingResult
    from .comparison import MethodRun, MethodSettings

NAME = "geometry"

GEOMETRY_PAPER_PAIRS = 314_315
"""The entailment pairs of SNLI + MultiNLI train (the MNRL-SBERT paper's count, which its notebook asserts)."""
STS_TABLE = "Equal budget: STS"
RETRIEVAL_TABLE = "Equal budget: retrieval, test, cost"
CORRELATION_TABLE = "Geometry and the STS average (ours)"
METHOD_RUN, ENTROPY_RUN, STORE_RUN = "method", "RCL entropy", "RCL store"
"""The kinds of planned stage (the first of their ``args``): a method's run, an entropy model of RCL, its store."""
CONTROL_METHOD = "MNRL"
"""The one method a control encoder (``control_models``) trains: the plainest, the one every other method is
compared with."""


def equal_budget_columns(sts_tasks: Sequence[str], retrieval_task: str) -> dict[str, dict[str, tuple[str, str]]]:
    """The equal-budget tables -> their columns -> (the task scored, its metric): :data:`STS_TABLE`, each of
    ``sts_tasks`` by its Spearman and their average; :data:`RETRIEVAL_TABLE`, each metric of ``retrieval_task``."""
    from ...book.output.evidence import AVERAGE
    from ...evaluation.tasks import task

    return {STS_TABLE: {c: (c, "Spearman") for c in sts_tasks} | {"Average": (AVERAGE, "")},
            RETRIEVAL_TABLE: {f"{retrieval_task} {m.label}": (retrieval_task, m.label) for m in task(retrieval_task).metrics}}


def training_stage(method: str, model: str, seed: int) -> str:
    """The artifact stage of ``method``'s run (RCL: its final model) from the encoder ``model`` with ``seed`` (its
    name in :func:`plan`): named by the encoder, not the family, so that two families of one encoder (the
    rehearsal's tiny BERT for both) share the run, trained once."""
    return stage_name(NAME, method, model, "seed", seed)


def entropy_stage(model: str, phi: float) -> str:
    """The artifact stage of RCL's entropy model at ``phi`` from the encoder ``model`` (its name in :func:`plan`;
    trained with the entropy seed, shared by every seed of the final model)."""
    return stage_name(NAME, "RCL-entropy", model, "phi", f"{phi:g}")


def store_stage(model: str, phi: float) -> str:
    """The artifact stage of the augmented-embedding store of RCL's entropy model at ``phi`` from the encoder
    ``model`` (its name in :func:`plan`; built once, after its entropy model, read by every final RCL run)."""
    return stage_name(NAME, "RCL-store", model, "phi", f"{phi:g}")


def stage_names(method: str, model: str, seed: int, planned: Callable[[str], str] = str) -> dict[str, Any]:
    """The stage names :func:`sentcl.chapters.geometry.comparison.train_method` takes for ``method``'s run from ``model`` with
    ``seed``: its own (``stage``) and, read by RCL alone, its entropy models' (``entropy_stage``) and their stores'
    (``store_stage``); a store's name passes ``planned`` (the notebook's
    :meth:`~sentcl.book.notebook.chapter_run.ChapterRun.planned`; a training's is checked where it is trained)."""
    return {"stage": training_stage(method, model, seed), "entropy_stage": functools.partial(entropy_stage, model),
            "store_stage": lambda phi: planned(store_stage(model, phi))}


def plan(p: Mapping[str, Any], pairs: int = GEOMETRY_PAPER_PAIRS) -> Plan:
    """Every training the geometry notebook runs with parameters ``p``: per encoder, seed and method one run of one
    budget (``train_rows`` pairs, else ``pairs``; IFCL trains on the distinct premises of the same pairs, at most
    as many; :func:`training_stage`), and per encoder RCL's entropy models (:func:`entropy_stage`: trained once,
    shared by the seeds, read by every final RCL run), early-stopped between the earliest stop of their patience
    and the whole budget, each followed by its augmented-embedding store (:func:`store_stage`: every query and index
    of the pairs encoded), the stores read by every final RCL run; per control encoder (``control_models``) and seed
    one :data:`CONTROL_METHOD` run of the same budget. Counted per family and seed, where two families of one
    encoder count its runs once (the notebook trains them once)."""
    from .comparison import MethodSettings

    rows = min(p["train_rows"] or pairs, pairs)
    steps = run_steps(rows, p["batch_size"], p["epochs"], p["max_steps"])
    entropy = min(steps, p["rcl_entropy_max_steps"] or steps)
    earliest = min(entropy, p["rcl_early_stopping_window"] * (MethodSettings().patience + 1))
    stages: list[PlannedStage] = []
    methods = family_methods(p)
    for model, family in trained_families(p).items():
        stores = tuple(store_stage(model, phi) for phi in p["rcl_phis"])
        for seed in p["seeds"]:
            for method in methods[family]:
                if method == "RCL" and seed == p["seeds"][0]:  # built with the first seed's RCL run
                    for phi in p["rcl_phis"]:
                        stages += [PlannedStage("RCL entropy models (Eq. 2), early-stopped: every family", 1, entropy,
                                                "RCL entropy", earliest, name=entropy_stage(model, phi),
                                                args=(ENTROPY_RUN, family, phi)),
                                   PlannedStage("RCL stores (every query and index): every family", sentences=2 * rows,
                                                name=store_stage(model, phi), upstream=(entropy_stage(model, phi),),
                                                args=(STORE_RUN, family, phi))]
                stages.append(PlannedStage(f"{method}: every family and seed", 1, steps, method,
                                           name=training_stage(method, model, seed),
                                           upstream=stores if method == "RCL" else (), args=(METHOD_RUN, family, method, seed)))
    return Plan(NAME, stages)


def family_methods(p: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Each family the notebook trains from -> the methods it trains: every method from each family of
    ``base_models``; :data:`CONTROL_METHOD` alone, under the same budget and seeds, from each of ``control_models``
    (family -> encoder: a control, such as the base's architecture at random initialisation, whose run says what
    the base's pretraining brings). A control named like a base family is refused."""
    from .comparison import METHODS

    clash = sorted(set(p["base_models"]) & set(p["control_models"]))
    if clash:
        raise ConfigError(f"geometry: control_models names {clash}, already families of base_models; name the controls apart")
    return {**{family: tuple(METHODS) for family in p["base_models"]}, **{family: (CONTROL_METHOD,) for family in p["control_models"]}}


def encoder(p: Mapping[str, Any], family: str) -> str:
    """The encoder ``family`` (of ``base_models`` or ``control_models``) starts from."""
    return {**p["base_models"], **p["control_models"]}[family]


def trained_families(p: Mapping[str, Any]) -> dict[str, str]:
    """Each distinct encoder of ``base_models`` and ``control_models`` -> the first family that starts from it: the
    family whose runs train it (a later family of the same encoder finds them in the cache)."""
    found: dict[str, str] = {}
    for family in family_methods(p):
        found.setdefault(encoder(p, family), family)
    return found


def row_label(method: str, family: str, base_models: Mapping[str, str]) -> str:
    """The results row of ``method``'s models from ``family`` (or of the untouched base): the method alone where
    the run has one family and ``family`` is it, else ``"<method> (<family>)"`` (a control's rows always)."""
    return method if list(base_models) == [family] else f"{method} ({family})"


def control_note(p: Mapping[str, Any], family: str) -> str:
    """What a row of the control ``family`` says it is (its note); ``""`` for a family of ``base_models``."""
    if family not in p["control_models"]:
        return ""
    return (f"control: {p['control_models'][family]}, trained as {CONTROL_METHOD} under the same budget and seeds; "
            "no paper model")


def geometry_source(p: Mapping[str, Any], family: str) -> dict[str, str]:
    """Where a model of ``family`` started, as :meth:`~sentcl.book.notebook.chapter_run.ChapterRun.record_geometry`
    takes it: a family of ``base_models`` by its name; a control by its encoder, with :func:`control_note`."""
    if family in p["base_models"]:
        return {"family": family}
    return {"encoder": encoder(p, family), "note": control_note(p, family)}


def control_claims(p: Mapping[str, Any]) -> list[tuple[str, str, str, bool]]:
    """(left, right, name, paired over seeds) of each control's claims (``control_models``): the first base family's
    :data:`CONTROL_METHOD` above the control's (what the base's pretraining brings; paired: the same seed draws the
    same data order), and the control's above its untouched start (whether it learned at all)."""
    base = next(iter(p["base_models"]))
    ours = row_label(CONTROL_METHOD, base, p["base_models"])
    claims = []
    for family in p["control_models"]:
        theirs = row_label(CONTROL_METHOD, family, p["base_models"])
        claims += [(ours, theirs, f"{ours} above {theirs} (what pretraining brings)", True),
                   (theirs, row_label("base (untouched)", family, p["base_models"]), f"{theirs} above its untouched start", False)]
    return claims


def base_loader(p: Mapping[str, Any], family: str) -> Callable[[], SentenceTransformer]:
    """A loader of ``family``'s untouched encoder (``pooling``, ``max_seq_length``; each call a fresh copy): where
    every method of the family starts."""
    from ...models import load_encoder

    return lambda: load_encoder(encoder(p, family), pooling=p["pooling"], max_seq_length=p["max_seq_length"])


def training_pairs(run: ChapterRun) -> TrainingData:
    """The (premise, entailment hypothesis) pairs every method trains on: those of the run's NLI train sets
    (``nli_datasets``, merged: :func:`sentcl.chapters.mnrl_sbert.load_nli`), ``train_rows`` of them (seeded; 0: all)."""
    from ...data.records import subset

    return subset(load_nli(run).entailment_pairs, run.parameters["train_rows"], 0, "train_rows")


def training_steps(p: Mapping[str, Any], pairs: TrainingData) -> int:
    """The one budget: optimizer steps of each method's run on ``pairs`` (``max_steps``, else the epochs)."""
    return p["max_steps"] or p["epochs"] * math.ceil(len(pairs) / p["batch_size"])


def trajectory_every(p: Mapping[str, Any], pairs: TrainingData) -> int:
    """Steps between two geometry points of a traced run (``trajectory_points`` over :func:`training_steps`)."""
    return max(1, training_steps(p, pairs) // p["trajectory_points"])


def method_settings(p: Mapping[str, Any]) -> MethodSettings:
    """Each method's own settings (:class:`~sentcl.chapters.geometry.comparison.MethodSettings`: MNRL's and RCL's scale,
    BSC's temperature and example-based shuffling, RCL's φs, entropy budget, early stopping and regulator scale,
    IFCL's temperature, queue and twins) from the parameters; RCL's entropy models warm up as the budget does."""
    from .comparison import MethodSettings

    return MethodSettings(
        scale=p["scale"], bsc_temperature=p["bsc_temperature"], group_size=p["bsc_group_size"], neighbours=p["bsc_neighbours"],
        phis=tuple(p["rcl_phis"]), entropy_steps=p["rcl_entropy_max_steps"] or None, patience=3,
        window=p["rcl_early_stopping_window"], regulator_scale=p["rcl_regulator_scale"], entropy_warmup_ratio=p["warmup_ratio"],
        ifcl_temperature=p["ifcl_temperature"], queue_batches=p["ifcl_queue_batches"],
        forgetting_decay=p["ifcl_forgetting_decay"], twin_weight=p["ifcl_twin_weight"], repetition_rate=p["ifcl_repetition_rate"])


def training_config(p: Mapping[str, Any], seed: int) -> TrainingConfig:
    """The one budget with ``seed`` (SBERT's NLI setting in the paper profile): every method's run."""
    from ...training import TrainingConfig

    return TrainingConfig(epochs=p["epochs"], batch_size=p["batch_size"], learning_rate=p["learning_rate"], optimizer="adamw",
                          weight_decay=p["weight_decay"], warmup_ratio=p["warmup_ratio"], max_grad_norm=1.0, seed=seed,
                          max_steps=p["max_steps"] or None, checkpoint_steps=p["checkpoint_steps"] or None,
                          precision=p["precision"])


def train(run: ChapterRun, pairs: TrainingData, method: str, family: str, seed: int) -> MethodRun:
    """Train ``method`` from ``family``'s encoder on ``pairs`` with ``seed`` under the one budget
    (:func:`sentcl.chapters.geometry.comparison.train_method`: MNRL, BSC, RCL's Eq. 3 after its entropy models and stores,
    IFCL), under the planned stages :func:`stage_names` (cached: a rerun loads it); a seed of ``trajectory_seeds``
    with a geometry callback every :func:`trajectory_every` steps (the trajectory kept beside the run)."""
    from .comparison import train_method

    p = run.parameters
    callbacks = [run.geometry_callback(trajectory_every(p, pairs))] if seed in p["trajectory_seeds"] else []
    return train_method(method, base_loader(p, family), pairs, training_config(p, seed), method_settings(p), train=run.train,
                        name=f"{row_label(method, family, p['base_models'])} seed {seed}", callbacks=callbacks,
                        **stage_names(method, encoder(p, family), seed, run.planned))


def entropy_model(run: ChapterRun, pairs: TrainingData, family: str, phi: float) -> tuple[SentenceTransformer, TrainingResult]:
    """RCL's entropy model (Eq. 2) at ``phi`` from ``family``'s encoder alone (its store not built), as the first
    seed's RCL run trains it (:func:`sentcl.chapters.geometry.comparison.rcl_entropy_model`), under :func:`entropy_stage`."""
    from .comparison import rcl_entropy_model

    p = run.parameters
    return rcl_entropy_model(base_loader(p, family), pairs, phi, training_config(p, p["seeds"][0]), method_settings(p),
                             train=run.train, stage=entropy_stage(encoder(p, family), phi))


def store(run: ChapterRun, pairs: TrainingData, family: str, phi: float) -> None:
    """The augmented-embedding store of RCL's entropy model at ``phi`` from ``family``'s encoder (Algorithm 1, line 4;
    the entropy model loaded from the cache), as the first seed's RCL run builds it, under :func:`store_stage`."""
    from .comparison import rcl_augment

    p = run.parameters
    names = stage_names("RCL", encoder(p, family), p["seeds"][0], run.planned)
    rcl_augment(base_loader(p, family), pairs, training_config(p, p["seeds"][0]), method_settings(p), phis=[phi],
                train=run.train, entropy_stage=names["entropy_stage"], store_stage=names["store_stage"])


def build(run: ChapterRun, stage: PlannedStage) -> None:
    """Build one planned stage (:func:`plan`; its ``args``) into the artifact cache, as the notebook would: a method's
    run of one family and seed (RCL's after the stores it reads, from the cache), an entropy model, or a store
    (after its entropy model, from the cache)."""
    kind, family, *what = stage.args
    pairs = training_pairs(run)
    if kind == METHOD_RUN:
        method, seed = what
        train(run, pairs, method, family, seed)
    elif kind == ENTROPY_RUN:
        entropy_model(run, pairs, family, *what)
    elif kind == STORE_RUN:
        store(run, pairs, family, *what)
    else:
        raise ConfigError(f"{stage.name}: no builder for a stage of kind {kind!r}")


def paper_cost() -> list[pd.DataFrame]:
    """What the chapter's cost cell shows (with :func:`sentcl.book.notebook.show`): the paper profile's runs as
    shipped, each with its optimizer steps (the fewest and the most where early stopping may end it), counted from
    its plan (:func:`~sentcl.book.estimates.cost.chapter_stages`); no measurement times them."""
    import pandas as pd

    return [pd.DataFrame([{"runs of": s.what, "runs": s.runs, "optimizer steps each": f"{s.steps:,}" if s.fewest_steps is None
                           else f"{s.fewest_steps:,}–{s.steps:,}"} for s in chapter_stages(CHAPTER)]).set_index("runs of")]


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Per family, each method's run at the one batch size: estimated (BSC and MNRL pairs: two texts a row; RCL's
    triplets and IFCL's three views: three)."""
    methods = [("MNRL", 2), ("BSC", 2), ("RCL (triplets)", 3), ("IFCL (three views)", 3)]
    return [estimated(f"{family} ({model}), {method}", model, paper["batch_size"], texts, paper["max_seq_length"])
            for family, model in paper["base_models"].items() for method, texts in methods]


def nearest_measurement() -> str:
    """The sentence under the memory table: its RCL runs are RCL's paper setting, so RCL's record is the nearest
    measurement of the estimate."""
    nearest = max(chapter_rows(RCL), key=lambda r: r.peak_gib)
    return (f"The nearest measurement: RCL's record of its {nearest.run} (batch {nearest.batch} triplets of "
            f"NLI-like lengths, {nearest.precision}) peaked at {nearest.peak_gib:.2f} GiB, far below the "
            "estimate's bound, which puts every text at 128 tokens.")


def encoders(p: Mapping[str, Any]) -> dict[str, str]:
    """Model family -> the encoder its runs start from, in a profile's parameters ``p`` (the notebook's run)."""
    return dict(p["base_models"])


PAPER_MODELS = {"BERT": "bert-base-uncased", "RoBERTa": "roberta-base"}
"""Model family -> the paper's encoder: the papers' BERT and RoBERTa."""


CHAPTER = Chapter(
    name=NAME,
    order=5,
    title="Geometry: alignment, uniformity, anisotropy, and the four methods under one budget",
    memory=memory_rows,
    memory_note=nearest_measurement,
    own=True,
    plan=plan,
    build=build,
    models=encoders,
    paper_models=PAPER_MODELS,
    one_budget=True,
)


__all__ = ["CHAPTER", "CONTROL_METHOD", "CORRELATION_TABLE", "ENTROPY_RUN", "GEOMETRY_PAPER_PAIRS", "METHOD_RUN", "PAPER_MODELS", "RETRIEVAL_TABLE",
           "STORE_RUN", "STS_TABLE", "base_loader", "build", "control_claims", "control_note", "encoder", "geometry_source", "encoders", "family_methods", "entropy_model", "entropy_stage", "equal_budget_columns",
           "memory_rows", "method_settings", "nearest_measurement", "plan", "row_label", "stage_names", "store", "store_stage",
           "train", "trained_families", "training_config", "training_pairs", "training_stage", "training_steps",
           "trajectory_every"]
