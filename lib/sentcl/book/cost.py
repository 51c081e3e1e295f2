"""What the chapters' paper profiles cost: every training (and, for RCL and IFCL, encoding) their parameters
imply, counted from them, times the step times and the encoding rate a benchmark measured where one did
(IFCL: :func:`ifcl_stages`, :func:`ifcl_paper_projection`; MNRL-SBERT: :func:`mnrl_sbert_stages`, whose
per-run estimate ``benchmarks/mnrl_sbert_cost.py`` makes; the geometry chapter: :func:`geometry_stages`,
counts only, no GPU record; BSC: ``benchmarks/bsc_gpu.py``; RCL below).

:func:`rcl_stages` walks the chapter notebook's loops over a profile's parameters (the same rows, seeds
and folds) and returns one :class:`Stage` per kind of work: the entropy models (early-stopped: between
the earliest stop the patience allows and their planned steps), their stores (and the control's store
of the base model's embeddings), the final models of Tables 1, 3, 4 and 5 grouped by the step they run
(Eq. 1, or Eq. 3 with so many regulators), the STS-B dev evaluations that select them, the scoring of
every row and seed on the STS test sets, and Table 2's folds (initial, baseline, entropy and final
models, their dev-MAP evaluations against the whole bank, their stores and test rankings). A training
run that the notebook's cache shares between rows (attention dropout at the encoders' own rate is the
Eq. 1 run of the same seed) is counted once. :func:`projection` multiplies the counts by the measured
seconds per optimizer step (``benchmarks/results/rcl_gpu_h100.json``) and sentences per second.

Sizes the parameters do not hold (:data:`PAPER_SIZES`): the NLI training triplets, the FAQ banks, the
STS-B dev set; the STS test sets' sizes come from the data registry.

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

from ..errors import ConfigError

PAPER_SIZES: dict[str, Any] = {
    # Issue 23: the paper profile plans 4,968 optimizer steps of 64 per epoch on the premise triplets of
    # SNLI + MultiNLI train (not countable offline): at most 317,952 triplets.
    "nli_rows": 4_968 * 64,
    # FAQ pairs per bank: FAQIR 4,133 (§4.1, the registry); COUGH's English FAQ bank 7,117 items (its README).
    "faq_pairs": {"faqir": 4_133, "cough": 7_117},
    "stsb_dev_pairs": 1_500,
}
ENCODER_ATTENTION_DROPOUT = 0.1
"""BERT's and RoBERTa's own attention dropout: the switch at this rate trains the Eq. 1 run (book/rcl.md)."""
MEASURED_STEPS = {0: "plain_eq1", 4: "final_4_regulators", 8: "final_8_regulators"}
"""The benchmark's measured steps by number of regulators; Eq. 2's step is ``"entropy_eq2"``."""


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
    from ..paths import benchmark_result

    return json.loads(benchmark_result("checkpoint_write_cpu.json").read_text(encoding="utf-8"))


def measured_step(regulators: int) -> str:
    """The measured step a final model with ``regulators`` regulators runs at: the nearest measured
    count (a tie: the larger), as the regulators' lookups cost little beside the encoder's step."""
    return MEASURED_STEPS[min(MEASURED_STEPS, key=lambda n: (abs(n - regulators), -n))]


def run_steps(rows: int, batch_size: int, epochs: int, max_steps: int = 0) -> int:
    """Optimizer steps of a run over ``rows`` in batches of ``batch_size`` for ``epochs``, cut at ``max_steps`` (0: not)."""
    steps = epochs * math.ceil(rows / batch_size)
    return min(steps, max_steps) if max_steps else steps


def registry_count(name: str) -> int:
    """The registry's count of rows of ``name`` ("dataset/split"); an error where it records none."""
    from ..data import info

    dataset, split = name.split("/")
    found = info(dataset).splits[split].count
    if found is None:
        raise ConfigError(f"the registry has no count for {name}")
    return int(found)


def scored_sentences(tasks: Sequence[str], max_pairs: int) -> int:
    """The sentences one model encodes to score ``tasks`` (both sides of each test pair, at most ``max_pairs``
    pairs a task; 0: all), counted from the registry."""
    from ..evaluation.tasks import task

    counts = [registry_count(f"{task(t).dataset}/{task(t).split}") for t in tasks]
    return 2 * sum(min(n, max_pairs or n) for n in counts)


def rcl_stages(p: Mapping[str, Any], sizes: Mapping[str, Any] = PAPER_SIZES) -> list[Stage]:
    """Every training and encoding the RCL notebook runs with parameters ``p`` (a profile's resolved
    parameters), on data of ``sizes`` (:data:`PAPER_SIZES`), as :class:`Stage` rows (module doc)."""
    rows, batch, k_rcl, phis = sizes["nli_rows"], p["batch_size"], p["rcl_entropy_models"], p["phis"]
    if k_rcl > len(phis):
        raise ConfigError(f"rcl_entropy_models = {k_rcl} exceeds the {len(phis)} phis")
    final_steps = run_steps(rows, batch, p["epochs"], p["max_steps"])
    entropy_steps = run_steps(rows, batch, p["epochs"], p["entropy_max_steps"])
    earliest = min(entropy_steps, p["early_stopping_window"] * (p["early_stopping_patience"] + 1))
    evaluations = _evaluations(p["final_eval_fraction"], p["epochs"], final_steps)
    dev = 2 * (p["dev_max_pairs"] or sizes["stsb_dev_pairs"])
    sts = scored_sentences(p["sts_tasks"], p["sts_max_pairs"])
    control = bool(p["base_regulators_control"])

    finals: list[tuple[int, int, str, str]] = []  # (regulators, seed, row, group) of every row x seed the notebook trains
    for seed in p["seeds"]:
        finals += [(0, seed, "Eq. 1", "Eq. 1 fine-tuning"), (2 * k_rcl, seed, "RCL", "RCL")]
        finals += [(2 * k_rcl, seed, "control", "control")] if control else []
    for seed in p["baseline_seeds"]:
        finals += [(0, seed, f"attention dropout {q:g}", "attention dropout") for q in p["attention_dropout_ps"]]
        finals += [(0, seed, f"DropHead {q:g}", "DropHead") for q in p["drophead_ps"]]
        finals += [(2 * k, seed, f"{2 * k} regulators", "Table 4") for k in p["table4_entropy_models"]
                   if k != k_rcl and k <= len(phis)]
    shared = {(0, seed, f"attention dropout {ENCODER_ATTENTION_DROPOUT:g}") for seed in p["seeds"]}  # the Eq. 1 run
    trained = [f for f in finals if f[:3] not in shared]
    stages = [
        Stage("entropy models (Eq. 2), early-stopped", len(phis), entropy_steps, "entropy_eq2", earliest,
              parameters=BERT_BASE_PARAMETERS, checkpoint_steps=p["checkpoint_steps"]),
        Stage("stores: every query and index" + (", and the base's for the control" if control else ""),
              len(phis) + control, sentences=2 * rows),
    ]
    for regulators in sorted({f[0] for f in trained}):
        groups = dict.fromkeys(group for r, _, _, group in trained if r == regulators)
        objective = "Eq. 1" if not regulators else f"Eq. 3 with {regulators} regulators"
        stages.append(Stage(f"final models, {objective} ({', '.join(groups)})", sum(f[0] == regulators for f in trained),
                            final_steps, measured_step(regulators), sentences=evaluations * dev, evaluations=evaluations,
                            evaluation_sentences=evaluations * dev, parameters=BERT_BASE_PARAMETERS,
                            checkpoint_steps=p["checkpoint_steps"]))
    stages.append(Stage("STS test sets: every row and seed scored", 1 + len(phis) + len(finals), sentences=sts))
    for name in p["faq_datasets"].values():
        if sizes["faq_pairs"].get(name):
            stages += _faq_stages(p, name, sizes["faq_pairs"][name])
    return stages


def _faq_stages(p: Mapping[str, Any], name: str, pairs: int) -> list[Stage]:
    """Table 2 on one FAQ bank of ``pairs`` pairs: per fold, the initial model, the distinct baselines and the
    final model (each selected on dev MAP against the whole bank), the entropy models and stores, the test ranking."""
    folds, batch, k_rcl = p["faq_folds"], p["batch_size"], p["rcl_entropy_models"]
    learning = pairs * (folds - 1) / folds
    train, dev, test = round(learning * (1 - p["faq_dev_fraction"])), round(learning * p["faq_dev_fraction"]), pairs / folds
    selected_steps = run_steps(train, batch, p["faq_epochs"], p["faq_max_steps"])
    entropy_steps = run_steps(train, batch, p["epochs"], p["entropy_max_steps"])
    earliest = min(entropy_steps, p["early_stopping_window"] * (p["early_stopping_patience"] + 1))
    evaluations = _evaluations(p["faq_eval_fraction"], p["faq_epochs"], selected_steps)
    baselines = [q for q in p["attention_dropout_ps"] if q != ENCODER_ATTENTION_DROPOUT] + list(p["drophead_ps"])
    per_evaluation = round(dev + pairs)
    trained = {"parameters": BERT_BASE_PARAMETERS, "checkpoint_steps": p["checkpoint_steps"]}
    selected = {"sentences": evaluations * per_evaluation, "evaluations": evaluations,
                "evaluation_sentences": evaluations * per_evaluation, **trained}
    return [
        Stage(f"{name}: initial and baseline models (Eq. 1), per fold", folds * (1 + len(baselines)), selected_steps,
              "plain_eq1", **selected),
        Stage(f"{name}: entropy models and stores, per fold", folds * k_rcl, entropy_steps, "entropy_eq2", earliest,
              sentences=2 * train, **trained),
        Stage(f"{name}: final models, per fold", folds, selected_steps, measured_step(2 * k_rcl), **selected),
        Stage(f"{name}: test questions ranking the bank, per fold and model",
              folds * (3 + len(p["attention_dropout_ps"]) + len(p["drophead_ps"])),
              sentences=round(test + pairs)),
    ]


def _evaluations(fraction: float, epochs: int, steps: int) -> int:
    """Evaluations of a run that evaluates every ``fraction`` of an epoch (0: none), at most one per step."""
    return min(steps, math.ceil(round(1 / fraction, 9)) * epochs) if fraction else 0


def ifcl_step(size: str, method: str) -> str:
    """The measured step of a row of ``method`` on the ``size`` encoder: ``benchmarks/ifcl_gpu.py``'s model names
    (IFCL w/o TL encodes IFCL's three views, so it runs IFCL's step)."""
    return f"{'SimCSE' if method == 'simcse' else 'IFCL'}-BERT-{size}"


def ifcl_stages(p: Mapping[str, Any]) -> list[Stage]:
    """Every training and encoding the IFCL notebook runs with parameters ``p``, as :class:`Stage` rows: per
    English row and seed one run over the training sentences (the registry's count of ``train_dataset``, or
    ``train_sentences``), per trained Chinese row and seed one run over the
    Chinese training sentences (both sides of every pair: at most that many distinct ones), grouped by the
    measured step they run (:func:`ifcl_step`; the Chinese BERT is BERT-base's architecture); each run's
    STS-B dev evaluation every ``eval_steps`` steps; every row and seed scored on the STS test sets. Table 4's
    mutual information (a few thousand sentences per row) is left out."""
    english = registry_count(p["train_dataset"])
    chinese = 2 * sum(registry_count(name) for name in p["chinese_train_datasets"])
    english, chinese = (min(n, p["train_sentences"] or n) for n in (english, chinese))
    runs: dict[tuple[str, int, int], int] = {}  # (measured step, steps, dev sentences per evaluation) -> runs
    for size, method in p["english_rows"].values():
        key = (ifcl_step(size, method), run_steps(english, p["batch_size"], p["epochs"], p["max_steps"]),
               2 * (p["dev_max_pairs"] or registry_count("stsbenchmark/dev")))
        runs[key] = runs.get(key, 0) + len(p["seeds"])
    for method in p["chinese_rows"].values():
        if method != "untouched":
            key = (ifcl_step("base", method), run_steps(chinese, p["batch_size"], p["epochs"], p["max_steps"]),
                   2 * (p["dev_max_pairs"] or registry_count("cnsd_stsb/dev")))
            runs[key] = runs.get(key, 0) + len(p["seeds"])
    evaluations = {steps: steps // p["eval_steps"] if p["eval_steps"] else 0 for (_, steps, _) in runs}
    stages = [Stage(f"{step}: {n} runs of {steps:,} steps", n, steps, step, sentences=evaluations[steps] * dev,
                    evaluations=evaluations[steps], evaluation_sentences=evaluations[steps] * dev,
                    parameters=BERT_LARGE_PARAMETERS if step.endswith("large") else BERT_BASE_PARAMETERS,
                    checkpoint_steps=p["checkpoint_steps"])
              for (step, steps, dev), n in runs.items()]
    english_scored = len(p["english_rows"]) * len(p["seeds"]) + len(p["first_last_avg_rows"])
    stages.append(Stage("English STS test sets: every row and seed scored", english_scored,
                        sentences=scored_sentences(p["sts_tasks"], p["sts_max_pairs"])))
    if p["chinese_rows"]:
        chinese_scored = sum(1 if m == "untouched" else len(p["seeds"]) for m in p["chinese_rows"].values())
        stages.append(Stage("Chinese STS test sets: every row and seed scored", chinese_scored,
                            sentences=scored_sentences(p["chinese_tasks"], p["chinese_max_pairs"])))
    return stages


def ifcl_paper_projection(measured: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`projection` of the IFCL chapter's paper profile from a ``benchmarks/ifcl_gpu.py`` record: each
    model's median step, every sentence encoded at the slowest measured evaluation rate (an upper bound). A
    stage whose step the record did not measure is left out and named under ``"not measured"``."""
    from .parameters import shipped_parameters

    paper = shipped_parameters("ifcl")
    steps = {r["model"]: r["step_s_median"] for r in measured["table"]}
    rate = min(3000 / r["evaluation_3000_sentences_s"] for r in measured["table"])
    stages = ifcl_stages(paper)
    result = projection([s for s in stages if not s.step or s.step in steps], steps, rate,
                        measured_checkpoint_write()["bytes_per_s"])
    result["not measured"] = [s.what for s in stages if s.step and s.step not in steps]
    return result


def mnrl_sbert_stages(p: Mapping[str, Any]) -> list[Stage]:
    """Every training the MNRL-SBERT notebook runs with parameters ``p``: per MNRL row and seed one epoch of the
    entailment pairs in batches of ``mnrl_batch_size``, per softmax row and seed one epoch of the labelled NLI rows
    in batches of ``softmax_batch_size`` (``train_pairs`` rows each where set; else the counts the data preparation
    asserts). Step names are ``benchmarks/mnrl_sbert_cost.py``'s (``"mnrl"``, ``"softmax"``)."""
    seeds = len(p["seeds"])
    pairs = min(p["train_pairs"] or p["expected_entailment_pairs"], p["expected_entailment_pairs"])
    rows = min(p["train_pairs"] or p["expected_nli_rows"], p["expected_nli_rows"])
    return [Stage(f"MNRL ({', '.join(p['mnrl_rows'])})", len(p["mnrl_rows"]) * seeds,
                  run_steps(pairs, p["mnrl_batch_size"], p["epochs"]), "mnrl", checkpoint_steps=p["checkpoint_steps"]),
            Stage(f"softmax loss ({', '.join(p['softmax_rows'])})", len(p["softmax_rows"]) * seeds,
                  run_steps(rows, p["softmax_batch_size"], p["epochs"]), "softmax", checkpoint_steps=p["checkpoint_steps"])]


T4_FP32_PEAK = 8.1e12
T4_UTILISATION = (0.25, 0.50)
"""A T4's fp32 peak (FLOP/s) and the share of it assumed reached on short padded batches: the MNRL-SBERT
paper's Colab GPU, onto which ``benchmarks/mnrl_sbert_cost.py`` converts a CPU measurement by FLOPs."""


def t4_hours(stages: Sequence[Stage], measured: Mapping[str, Any]) -> tuple[float, float]:
    """The fewest and most T4 hours of ``stages``' training steps (:func:`mnrl_sbert_stages`), each step's FLOPs
    from a ``benchmarks/mnrl_sbert_cost.py`` record (``measured["runs"][step]["median_training_gflop_per_step"]``)."""
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


GEOMETRY_PAPER_PAIRS = 314_315
"""The entailment pairs of SNLI + MultiNLI train (the MNRL-SBERT paper's count, which its notebook asserts)."""


def geometry_stages(p: Mapping[str, Any], pairs: int = GEOMETRY_PAPER_PAIRS) -> list[Stage]:
    """Every training the geometry notebook runs with parameters ``p``: per family, method and seed one run of
    one budget (``train_rows`` pairs, else ``pairs``; IFCL trains on the distinct premises of the same pairs,
    at most as many), and per family RCL's entropy models (trained once, shared by the seeds), early-stopped
    between the earliest stop of their patience and the whole budget."""
    from ..training.comparison import MethodSettings

    rows = min(p["train_rows"] or pairs, pairs)
    steps = run_steps(rows, p["batch_size"], p["epochs"], p["max_steps"])
    entropy = min(steps, p["rcl_entropy_max_steps"] or steps)
    earliest = min(entropy, p["rcl_early_stopping_window"] * (MethodSettings().patience + 1))
    families, seeds = len(p["base_models"]), len(p["seeds"])
    return [Stage(f"{method}: every family and seed", families * seeds, steps, method) for method in ("MNRL", "BSC", "RCL", "IFCL")] + [
        Stage("RCL entropy models (Eq. 2), early-stopped: every family", families * len(p["rcl_phis"]), entropy,
              "RCL entropy", earliest)]


def rcl_paper_projection(measured: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`projection` of the RCL chapter's paper profile (its notebook's defaults and profile, as shipped)
    from a ``benchmarks/rcl_gpu.py`` record (``measured["results"]``: each stage's ``median_step_s``, the
    store's ``store_write_sentences_per_s``), with the stages' counts (:func:`rcl_stages`)."""
    from .parameters import shipped_parameters

    paper = shipped_parameters("rcl")
    results = measured["results"]
    steps = {name: r["median_step_s"] for name, r in results.items() if "median_step_s" in r}
    return projection(rcl_stages(paper), steps, results["store"]["store_write_sentences_per_s"],
                      measured_checkpoint_write()["bytes_per_s"])


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


__all__ = ["BERT_BASE_PARAMETERS", "BERT_LARGE_PARAMETERS", "CHECKPOINT_MINUTES", "ENCODER_ATTENTION_DROPOUT",
           "ROBERTA_BASE_PARAMETERS", "checkpoint_bytes", "checkpoints_per_run", "measured_checkpoint_write", "GEOMETRY_PAPER_PAIRS", "MEASURED_STEPS", "PAPER_SIZES", "Stage",
           "geometry_stages", "ifcl_paper_projection", "ifcl_stages", "ifcl_step", "measured_step", "mnrl_sbert_stages",
           "projection", "rcl_paper_projection", "rcl_stages", "registry_count", "run_steps", "scored_sentences", "t4_checkpoints", "t4_hours", "T4_FP32_PEAK", "T4_UTILISATION"]
