"""The RCL chapter (Tan et al. 2022, regularized contrastive learning with entropy models): its title, its
tables of STS scores (:data:`CAPTIONS`, and :func:`sts_tables`: the tables a row is recorded under), the data
each paper row needs, its GPU-memory rows, and its plan of runs counted from its parameters.

:func:`rcl_stages` walks the chapter notebook's loops over a profile's parameters (the same rows, seeds
and folds) and returns one :class:`~sentcl.book.cost.Stage` per kind of work: the entropy models (early-stopped:
between the earliest stop the patience allows and their planned steps), their stores (and the control's store
of the base model's embeddings), the final models of Tables 1, 3, 4 and 5 grouped by the step they run
(Eq. 1, or Eq. 3 with so many regulators), the STS-B dev evaluations that select them, the scoring of
every row and seed on the STS test sets, and Table 2's folds (initial, baseline, entropy and final
models, their dev-MAP evaluations against the whole bank, their stores and test rankings). A training
run that the notebook's cache shares between rows (attention dropout at the encoders' own rate is the
Eq. 1 run of the same seed) is counted once. :func:`rcl_paper_projection` multiplies the counts by the measured
seconds per optimizer step (``benchmarks/results/rcl_gpu_h100.json``) and sentences per second.

Sizes the parameters do not hold (:data:`PAPER_SIZES`): the NLI training triplets, the FAQ banks, the
STS-B dev set; the STS test sets' sizes come from the data registry.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ..book.chapter_spec import Chapter
from ..book.cost import BERT_BASE_PARAMETERS, Stage, measured_checkpoint_write, projection, run_steps, scored_sentences
from ..book.coverage import scored_sets
from ..book.gpu_memory import MemoryRow, benchmark_record
from ..book.plan import Plan
from ..book.results import paper_values
from ..errors import ConfigError

NAME = "rcl"
MEMORY_RECORD = "rcl_gpu_h100.json"

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
CAPTIONS = {"Table 1a": "attention dropout", "Table 1b": "DropHead", "Table 3": "base, DropHead, attention dropout, RCL",
            "Table 4": "number of regulators (Average)", "Table 5": "entropy models vs RCL"}
"""The tables of STS scores -> what their rows compare, in the order the chapter shows them (Table 2's FAQ
banks are shown by their own cell)."""


def sts_tables(row: str, paper_tables: Sequence[str]) -> tuple[list[str], dict[str, tuple[str, str]] | None]:
    """The tables a row's STS scores are recorded under, and its columns there (column -> (task, metric); None:
    every STS task and their average). A row named by a number of regulators ("2 regulators (phi = 0.01)", and
    ours such as "0 regulators, Eq. 1 fine-tuned (ours)") is Table 4's alone, in its one column, the average;
    any other row goes under the tables the paper lists it in (``paper_tables``) but Table 2 (the FAQ banks,
    recorded from their folds), and a row the paper lists in none of those (ours) under Tables 3 and 5."""
    from ..book.evidence import AVERAGE

    if row[:1].isdigit():
        return ["Table 4"], {"Average": (AVERAGE, "")}
    return [t for t in paper_tables if not t.startswith("Table 2")] or ["Table 3", "Table 5"], None


def measured_step(regulators: int) -> str:
    """The measured step a final model with ``regulators`` regulators runs at: the nearest measured
    count (a tie: the larger), as the regulators' lookups cost little beside the encoder's step."""
    return MEASURED_STEPS[min(MEASURED_STEPS, key=lambda n: (abs(n - regulators), -n))]


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


def rcl_paper_projection(measured: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`projection` of the RCL chapter's paper profile (its notebook's defaults and profile, as shipped)
    from a ``benchmarks/rcl_gpu.py`` record (``measured["results"]``: each stage's ``median_step_s``, the
    store's ``store_write_sentences_per_s``), with the stages' counts (:func:`rcl_stages`)."""
    from ..book.parameters import shipped_parameters

    paper = shipped_parameters(NAME)
    results = measured["results"]
    steps = {name: r["median_step_s"] for name, r in results.items() if "median_step_s" in r}
    return projection(rcl_stages(paper), steps, results["store"]["store_write_sentences_per_s"],
                      measured_checkpoint_write()["bytes_per_s"])


def data_needs(p: Mapping[str, Any]) -> dict:
    """The data each paper row the profile ``p`` computes needs (:data:`sentcl.book.coverage.Needs`)."""
    values = paper_values(NAME)
    sts = scored_sets(p["sts_tasks"])
    needs: dict = {}
    for table, row in zip(values["table"], values["row"], strict=True):
        if table in p["faq_datasets"]:  # Table 2's folds train and rank on the FAQ bank itself
            needs[(table, row)] = [f"{p['faq_datasets'][table]}/faq_pairs"]
        else:
            untouched = row in ("SRoBERTa-base", "0 regulators")
            needs[(table, row)] = sts if untouched else [*p["nli_datasets"], *sts]
    return needs


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Each stage of ``benchmarks/results/rcl_gpu_h100.json`` with its measured peak (RoBERTa-base, the paper's batch)."""
    record = benchmark_record(MEMORY_RECORD)
    batch = int(record["measured"].split("batch ")[1].split()[0])
    names = {"entropy_eq2": "entropy model (Eq. 2)", "plain_eq1": "Eq. 1 fine-tuning",
             "final_4_regulators": "final model, 4 regulators", "final_8_regulators": "final model, 8 regulators"}
    return [MemoryRow(f"RoBERTa-base, {names.get(stage, stage)}", "roberta-base", batch, record["settings"]["precision"],
                      result["peak_gpu_memory_gib"], MEMORY_RECORD)
            for stage, result in record["results"].items() if "peak_gpu_memory_gib" in result]


CHAPTER = Chapter(
    name=NAME,
    title="RCL: regularized contrastive learning with entropy models (Tan et al. 2022)",
    memory=memory_rows,
    memory_record=MEMORY_RECORD,
    needs=data_needs,
    plan=lambda p: Plan.counting(NAME, rcl_stages(p)),
)


__all__ = ["CAPTIONS", "CHAPTER", "ENCODER_ATTENTION_DROPOUT", "MEASURED_STEPS", "PAPER_SIZES", "data_needs",
           "measured_step", "memory_rows", "rcl_paper_projection", "rcl_stages", "sts_tables"]
