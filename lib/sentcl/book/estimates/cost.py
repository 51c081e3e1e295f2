"""What a chapter's paper profile costs: the generic arithmetic under each chapter's own count of its work.

A chapter plans every training and encoding its notebook runs from a profile's parameters (its
:attr:`~sentcl.book.chapter_spec.Chapter.plan`, in ``sentcl/chapters/<chapter>.py``), summed into :class:`Stage` rows,
with the helpers here (:func:`run_steps`, :func:`registry_count`, :func:`scored_sentences`); :func:`chapter_stages`
gives a chapter's count for one of its profiles. :func:`projection`
multiplies the counts by the seconds per optimizer step and the encoding rate a benchmark measured;
:func:`t4_hours` converts a CPU measurement of each step's FLOPs onto a T4 instead.

Every projection shows its parts (:func:`projection`): the optimizer steps, the evaluations (the dev
sentences they encode), the other encodings (stores, test sets), and the checkpoints the trainer writes on
its cadence (:func:`checkpoints_per_run`: every ``checkpoint_minutes`` of training, 10 by default, every
``checkpoint_steps`` where a chapter sets them, and at the end), each of :func:`checkpoint_bytes` (the
weights and Adam's two moments) written at the rate ``benchmarks/checkpoint_write.py`` measured
(:func:`measured_checkpoint_write`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...errors import ConfigError
from ..chapter_spec import Chapter


@dataclass(frozen=True)
class Stage:
    """``runs`` runs of one kind of work: each ``steps`` optimizer steps at most (``fewest_steps`` at
    least, for early-stopped runs) of the measured ``step``, ``sentences`` sentences encoded, of which
    ``evaluation_sentences`` by its ``evaluations`` dev evaluations; a training run writes checkpoints
    (:func:`checkpoints_per_run`, every ``checkpoint_steps`` too where given) of a model of ``parameters``."""

    what: str
    runs: int
    steps: int = 0
    step: str = ""
    fewest_steps: int | None = None
    sentences: int = 0
    evaluations: int = 0
    evaluation_sentences: int = 0
    parameters: int = 0
    checkpoint_steps: int | None = None


BERT_BASE_PARAMETERS = 109_482_240
"""bert-base-uncased's trainable parameters (``BertModel(BertConfig())``, pooler included); bert-large's below."""
BERT_LARGE_PARAMETERS = 335_141_888
ROBERTA_BASE_PARAMETERS = 124_645_632
CHECKPOINT_MINUTES = 10.0
""":class:`sentcl.training.TrainingConfig`'s default ``checkpoint_minutes`` (a test holds them equal)."""


def checkpoint_bytes(parameters: int) -> int:
    """A training checkpoint's bytes: the fp32 weights and Adam's two fp32 moments (the rest is kilobytes)."""
    return 12 * parameters


def checkpoints_per_run(steps: int, step_s: float, checkpoint_steps: int | None = None,
                        minutes: float = CHECKPOINT_MINUTES) -> int:
    """The checkpoints one run of ``steps`` optimizer steps of ``step_s`` seconds writes: one every ``minutes`` of
    training (the clock restarts at each checkpoint), every ``checkpoint_steps`` when given, whichever comes
    first, and one at the end (:meth:`sentcl.training.TrainingConfig.due_to_checkpoint`)."""
    if steps <= 0:
        return 0
    every = max(1, math.ceil(minutes * 60 / step_s)) if step_s > 0 else steps
    if checkpoint_steps:
        every = min(every, checkpoint_steps)
    return (steps - 1) // every + 1


def measured_checkpoint_write() -> dict[str, Any]:
    """``benchmarks/results/checkpoint_write_cpu.json``: a bert-base checkpoint's bytes and write seconds
    (``bytes_per_s``, the rate :func:`projection` writes checkpoints at; ``machine``)."""
    from ...paths import benchmark_result

    return json.loads(benchmark_result("checkpoint_write_cpu.json").read_text(encoding="utf-8"))


def run_steps(rows: int, batch_size: int, epochs: int, max_steps: int = 0) -> int:
    """Optimizer steps of a run over ``rows`` in batches of ``batch_size`` for ``epochs``, cut at ``max_steps`` (0: not)."""
    steps = epochs * math.ceil(rows / batch_size)
    return min(steps, max_steps) if max_steps else steps


def registry_count(name: str) -> int:
    """The registry's count of rows of ``name`` ("dataset/split"); an error where it records none."""
    from ...data import info

    dataset, split = name.split("/")
    found = info(dataset).splits[split].count
    if found is None:
        raise ConfigError(f"the registry has no count for {name}")
    return int(found)


def scored_sentences(tasks: Sequence[str], max_pairs: int) -> int:
    """The sentences one model encodes to score ``tasks`` (both sides of each test pair, at most ``max_pairs``
    pairs a task; 0: all), counted from the registry."""
    from ...evaluation.tasks import task

    counts = [registry_count(f"{task(t).dataset}/{task(t).split}") for t in tasks]
    return 2 * sum(min(n, max_pairs or n) for n in counts)


def chapter_stages(chapter: Chapter, profile: str = "paper") -> list[Stage]:
    """Every training and encoding ``chapter``'s notebook runs in ``profile``: the chapter's plan
    (:attr:`~sentcl.book.chapter_spec.Chapter.plan`) of that profile's parameters as shipped, summed by what each
    stage is (:meth:`sentcl.book.estimates.plan.Plan.counted`); a ConfigError for a chapter without a plan."""
    from ..parameters import shipped_parameters

    if chapter.plan is None:
        raise ConfigError(f"{chapter.name}: its plan of runs is not counted here (the chapter has no plan)")
    return chapter.plan(shipped_parameters(chapter.name, profile)).counted()


T4_FP32_PEAK = 8.1e12
T4_UTILISATION = (0.25, 0.50)
"""A T4's fp32 peak (FLOP/s) and the share of it assumed reached on short padded batches: Colab's GPU
(the MNRL-SBERT paper's), onto which :func:`t4_hours` converts a CPU measurement by FLOPs."""


def t4_hours(stages: Sequence[Stage], measured: Mapping[str, Any]) -> tuple[float, float]:
    """The fewest and most T4 hours of ``stages``' training steps, each step's FLOPs
    from a CPU record of them (``measured["runs"][step]["median_training_gflop_per_step"]``, as
    ``benchmarks/mnrl_sbert_cost.py`` writes it)."""
    flop = sum(s.runs * s.steps * measured["runs"][s.step]["median_training_gflop_per_step"] * 1e9 for s in stages)
    low, high = (flop / (T4_FP32_PEAK * u) / 3600 for u in reversed(T4_UTILISATION))
    return low, high


def t4_checkpoints(stages: Sequence[Stage], measured: Mapping[str, Any]) -> tuple[int, int]:
    """The fewest and most checkpoints ``stages``' runs write (:func:`checkpoints_per_run`) at the T4 step times of
    :func:`t4_hours`' two utilisations (slower steps reach the trainer's 10 minutes in fewer steps)."""
    counts = [sum(s.runs * checkpoints_per_run(
        s.steps, measured["runs"][s.step]["median_training_gflop_per_step"] * 1e9 / (T4_FP32_PEAK * u), s.checkpoint_steps)
        for s in stages) for u in T4_UTILISATION]
    return min(counts), max(counts)


def projection(stages: Sequence[Stage], step_seconds: Mapping[str, float], sentences_per_s: float,
               checkpoint_bytes_per_s: float | None = None) -> dict[str, Any]:
    """Hours per stage and in total, from ``step_seconds`` (measured step -> seconds per optimizer step), the
    encoding rate and the checkpoint write rate (None: checkpoints not counted), in parts: ``{"table": [{"stage",
    "runs", "steps each", "evaluations each", "sentences each", "checkpoints", "steps (h)", "evaluations (h)",
    "other encodings (h)", "checkpoints (h)", "hours", "hours (fewest steps)"}], "hours", "hours_fewest",
    "parts": {part: hours}, "checkpoints", "checkpoint_terabytes"}``; an early-stopped stage's fewest hours take
    its earliest stop (and its checkpoints are counted at its planned steps)."""
    missing = sorted({s.step for s in stages if s.step and s.step not in step_seconds})
    if missing:
        raise ConfigError(f"no measured step time for {missing}; measured: {sorted(step_seconds)}")
    table: list[dict[str, Any]] = []
    written = 0
    for s in stages:
        per_step = step_seconds[s.step] if s.step else 0.0
        evaluations = s.runs * s.evaluation_sentences / sentences_per_s
        encodings = s.runs * (s.sentences - s.evaluation_sentences) / sentences_per_s
        count = s.runs * checkpoints_per_run(s.steps, per_step, s.checkpoint_steps) if s.parameters else 0
        size = checkpoint_bytes(s.parameters)
        checkpoints = count * size / checkpoint_bytes_per_s if checkpoint_bytes_per_s else 0.0
        written += count * size if checkpoint_bytes_per_s else 0
        steps_s = s.runs * s.steps * per_step
        fewest_s = s.runs * (s.steps if s.fewest_steps is None else s.fewest_steps) * per_step
        steps = "" if not s.steps else (f"{s.fewest_steps:,}–{s.steps:,}" if s.fewest_steps not in (None, s.steps) else f"{s.steps:,}")
        table.append({"stage": s.what, "runs": s.runs, "steps each": steps, "evaluations each": s.evaluations,
                      "sentences each": s.sentences, "checkpoints": count if checkpoint_bytes_per_s else None,
                      "steps (h)": round(steps_s / 3600, 3), "evaluations (h)": round(evaluations / 3600, 3),
                      "other encodings (h)": round(encodings / 3600, 3), "checkpoints (h)": round(checkpoints / 3600, 3),
                      "hours": round((steps_s + evaluations + encodings + checkpoints) / 3600, 3),
                      "hours (fewest steps)": round((fewest_s + evaluations + encodings + checkpoints) / 3600, 3)})
    parts = {part: round(sum(float(r[f"{part} (h)"]) for r in table), 2)
             for part in ("steps", "evaluations", "other encodings", "checkpoints")}
    return {"table": table, "hours": round(sum(float(r["hours"]) for r in table), 2),
            "hours_fewest": round(sum(float(r["hours (fewest steps)"]) for r in table), 2), "parts": parts,
            "checkpoints": sum(r["checkpoints"] or 0 for r in table), "checkpoint_terabytes": round(written / 1e12, 3)}


__all__ = ["BERT_BASE_PARAMETERS", "BERT_LARGE_PARAMETERS", "CHECKPOINT_MINUTES", "ROBERTA_BASE_PARAMETERS", "Stage",
           "T4_FP32_PEAK", "T4_UTILISATION", "chapter_stages", "checkpoint_bytes", "checkpoints_per_run", "measured_checkpoint_write",
           "projection", "registry_count", "run_steps", "scored_sentences", "t4_checkpoints", "t4_hours"]
