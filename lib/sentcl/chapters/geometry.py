"""The geometry chapter (ours: no paper values): alignment, uniformity and anisotropy of every model, and the
four methods trained under one budget. Its title, its tables (:func:`equal_budget_columns`), its GPU-memory rows (estimates, beside RCL's nearest
measurement), and its plan of runs (:func:`geometry_stages`: counts only, no GPU record).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..book.chapter_spec import Chapter
from ..book.cost import Stage, run_steps
from ..book.gpu_memory import MemoryRow, chapter_rows, estimated
from ..book.plan import Plan
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


def geometry_stages(p: Mapping[str, Any], pairs: int = GEOMETRY_PAPER_PAIRS) -> list[Stage]:
    """Every training the geometry notebook runs with parameters ``p``: per family, method and seed one run of
    one budget (``train_rows`` pairs, else ``pairs``; IFCL trains on the distinct premises of the same pairs,
    at most as many), and per family RCL's entropy models (trained once, shared by the seeds), early-stopped
    between the earliest stop of their patience and the whole budget."""
    from ..training.comparison import METHODS, MethodSettings

    rows = min(p["train_rows"] or pairs, pairs)
    steps = run_steps(rows, p["batch_size"], p["epochs"], p["max_steps"])
    entropy = min(steps, p["rcl_entropy_max_steps"] or steps)
    earliest = min(entropy, p["rcl_early_stopping_window"] * (MethodSettings().patience + 1))
    families, seeds = len(p["base_models"]), len(p["seeds"])
    return [Stage(f"{method}: every family and seed", families * seeds, steps, method) for method in METHODS] + [
        Stage("RCL entropy models (Eq. 2), early-stopped: every family", families * len(p["rcl_phis"]), entropy,
              "RCL entropy", earliest)]


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
    plan=lambda p: Plan.counting(NAME, geometry_stages(p)),
    one_budget=True,
)


__all__ = ["CHAPTER", "CORRELATION_TABLE", "GEOMETRY_PAPER_PAIRS", "RETRIEVAL_TABLE", "STS_TABLE", "equal_budget_columns",
           "geometry_stages", "memory_rows", "nearest_measurement"]
