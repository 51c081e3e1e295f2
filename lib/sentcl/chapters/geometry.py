"""The geometry chapter (ours: no paper values): alignment, uniformity and anisotropy of every model, and the
four methods trained under one budget. Its title, its tables (:func:`equal_budget_columns`), its GPU-memory rows (estimates, beside RCL's nearest
measurement), and its plan of runs (:func:`plan`: no GPU record).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..book.chapter_spec import Chapter
from ..book.cost import run_steps
from ..book.gpu_memory import MemoryRow, chapter_rows, estimated
from ..book.plan import Plan, PlannedStage, stage_name
from . import rcl

NAME = "geometry"

GEOMETRY_PAPER_PAIRS = 314_315
"""The entailment pairs of SNLI + MultiNLI train (the MNRL-SBERT paper's count, which its notebook asserts)."""
STS_TABLE = "Equal budget: STS"
RETRIEVAL_TABLE = "Equal budget: retrieval, test, cost"
CORRELATION_TABLE = "Geometry and the STS average (ours)"


def equal_budget_columns(sts_tasks: Sequence[str], retrieval_task: str) -> dict[str, dict[str, tuple[str, str]]]:
    """The equal-budget tables -> their columns -> (the task scored, its metric): :data:`STS_TABLE`, each of
    ``sts_tasks`` by its Spearman and their average; :data:`RETRIEVAL_TABLE`, each metric of ``retrieval_task``."""
    from ..book.evidence import AVERAGE
    from ..evaluation.tasks import task

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
    """The stage names :func:`sentcl.training.comparison.train_method` takes for ``method``'s run from ``model`` with
    ``seed``: its own (``stage``) and, read by RCL alone, its entropy models' (``entropy_stage``) and their stores'
    (``store_stage``); a store's name passes ``planned`` (the notebook's
    :meth:`~sentcl.book.chapter.ChapterRun.planned`; a training's is checked where it is trained)."""
    return {"stage": training_stage(method, model, seed), "entropy_stage": functools.partial(entropy_stage, model),
            "store_stage": lambda phi: planned(store_stage(model, phi))}


def plan(p: Mapping[str, Any], pairs: int = GEOMETRY_PAPER_PAIRS) -> Plan:
    """Every training the geometry notebook runs with parameters ``p``: per encoder, seed and method one run of one
    budget (``train_rows`` pairs, else ``pairs``; IFCL trains on the distinct premises of the same pairs, at most
    as many; :func:`training_stage`), and per encoder RCL's entropy models (:func:`entropy_stage`: trained once,
    shared by the seeds, read by every final RCL run), early-stopped between the earliest stop of their patience
    and the whole budget, each followed by its augmented-embedding store (:func:`store_stage`: every query and index
    of the pairs encoded), the stores read by every final RCL run. Counted per family and seed, where two families
    of one encoder count its runs once (the notebook trains them once)."""
    from ..training.comparison import METHODS, MethodSettings

    rows = min(p["train_rows"] or pairs, pairs)
    steps = run_steps(rows, p["batch_size"], p["epochs"], p["max_steps"])
    entropy = min(steps, p["rcl_entropy_max_steps"] or steps)
    earliest = min(entropy, p["rcl_early_stopping_window"] * (MethodSettings().patience + 1))
    stages: list[PlannedStage] = []
    for model in dict.fromkeys(p["base_models"].values()):
        stores = tuple(store_stage(model, phi) for phi in p["rcl_phis"])
        for seed in p["seeds"]:
            for method in METHODS:
                if method == "RCL" and seed == p["seeds"][0]:  # built with the first seed's RCL run
                    for phi in p["rcl_phis"]:
                        stages += [PlannedStage("RCL entropy models (Eq. 2), early-stopped: every family", 1, entropy,
                                                "RCL entropy", earliest, name=entropy_stage(model, phi)),
                                   PlannedStage("RCL stores (every query and index): every family", sentences=2 * rows,
                                                name=store_stage(model, phi), upstream=(entropy_stage(model, phi),))]
                stages.append(PlannedStage(f"{method}: every family and seed", 1, steps, method,
                                           name=training_stage(method, model, seed),
                                           upstream=stores if method == "RCL" else ()))
    return Plan(NAME, stages)


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Per family, each method's run at the one batch size: estimated (BSC and MNRL pairs: two texts a row; RCL's
    triplets and IFCL's three views: three)."""
    methods = [("MNRL", 2), ("BSC", 2), ("RCL (triplets)", 3), ("IFCL (three views)", 3)]
    return [estimated(f"{family} ({model}), {method}", model, paper["batch_size"], texts, paper["max_seq_length"])
            for family, model in paper["base_models"].items() for method, texts in methods]


def nearest_measurement() -> str:
    """The sentence under the memory table: its RCL runs are RCL's paper setting, so RCL's record is the nearest
    measurement of the estimate."""
    nearest = max(chapter_rows(rcl.CHAPTER), key=lambda r: r.peak_gib)
    return (f"The nearest measurement: RCL's record of its {nearest.run} (batch {nearest.batch} triplets of "
            f"NLI-like lengths, {nearest.precision}) peaked at {nearest.peak_gib:.2f} GiB, far below the "
            "estimate's bound, which puts every text at 128 tokens.")


CHAPTER = Chapter(
    name=NAME,
    title="Geometry: alignment, uniformity, anisotropy, and the four methods under one budget",
    memory=memory_rows,
    memory_note=nearest_measurement,
    own=True,
    plan=plan,
    one_budget=True,
)


__all__ = ["CHAPTER", "CORRELATION_TABLE", "GEOMETRY_PAPER_PAIRS", "RETRIEVAL_TABLE", "STS_TABLE", "entropy_stage",
           "equal_budget_columns", "memory_rows", "nearest_measurement", "plan", "stage_names",
           "store_stage", "training_stage"]
