"""The IFCL chapter (Xiao et al. 2023, identical and fraternal twins): its title, the data each row of the
slides' tables needs, its GPU-memory rows, its plan of runs (:func:`plan`, projected by
:func:`ifcl_paper_projection` from ``benchmarks/results/ifcl_gpu_h100.json``), and the measurement its demo
setting rests on (``benchmarks/ifcl_demo_setting.py``: each method's loss terms at the start and the end of the
same short run on the demo's stand-in, with the slides' twins and with twins from NLI entailment pairs).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..book.benchmarks import Measurement
from ..book.chapter_spec import Chapter
from ..book.cost import (
    BERT_BASE_PARAMETERS,
    BERT_LARGE_PARAMETERS,
    measured_checkpoint_write,
    projection,
    registry_count,
    run_steps,
    scored_sentences,
)
from ..book.coverage import scored_sets
from ..book.gpu_memory import MemoryRow, benchmark_record
from ..book.plan import Plan, PlannedStage, stage_name
from ..book.results import paper_values

NAME = "ifcl"
MEMORY_RECORD = "ifcl_gpu_h100.json"
DEMO_SETTING = "ifcl_demo_setting_cpu.json"


def ifcl_step(size: str, method: str) -> str:
    """The measured step of a row of ``method`` on the ``size`` encoder: ``benchmarks/ifcl_gpu.py``'s model names
    (IFCL w/o TL encodes IFCL's three views, so it runs IFCL's step)."""
    return f"{'SimCSE' if method == 'simcse' else 'IFCL'}-BERT-{size}"


def training_stage(row: str, seed: int, chinese: bool = False) -> str:
    """The artifact stage of a trained row's run with ``seed`` (its name in :func:`plan`): the English table's
    rows under ``english``, the Chinese table's under ``chinese`` (the two tables may share a row's name)."""
    return stage_name(NAME, "chinese" if chinese else "english", row, "seed", seed)


def plan(p: Mapping[str, Any]) -> Plan:
    """Every training and encoding the IFCL notebook runs with parameters ``p``: per English row and seed one run
    over the training sentences (the registry's count of ``train_dataset``, or ``train_sentences``), per trained
    Chinese row and seed one run over the Chinese training sentences (both sides of every pair: at most that many
    distinct ones), each from its encoder (no upstream stage; :func:`training_stage`), counted together by the
    measured step they run (:func:`ifcl_step`; the Chinese BERT is BERT-base's architecture), their length and
    their dev set's size (Chinese runs that differ from English ones by their dev set alone say "(Chinese)"); each
    run's dev evaluation (STS-B, Chinese STS-B) every ``eval_steps`` steps; every row and seed
    scored on the STS test sets (unnamed: not in the artifact cache). Table 4's mutual information (a few
    thousand sentences per row) is left out."""
    english = registry_count(p["train_dataset"])
    chinese = 2 * sum(registry_count(name) for name in p["chinese_train_datasets"])
    english, chinese = (min(n, p["train_sentences"] or n) for n in (english, chinese))
    runs: dict[tuple[str, int, int], list[tuple[str, bool]]] = {}  # (step, steps, dev sentences) -> (stage, Chinese?)
    for row, (size, method) in p["english_rows"].items():
        key = (ifcl_step(size, method), run_steps(english, p["batch_size"], p["epochs"], p["max_steps"]),
               2 * (p["dev_max_pairs"] or registry_count("stsbenchmark/dev")))
        runs.setdefault(key, []).extend((training_stage(row, seed), False) for seed in p["seeds"])
    for row, method in p["chinese_rows"].items():
        if method != "untouched":
            key = (ifcl_step("base", method), run_steps(chinese, p["batch_size"], p["epochs"], p["max_steps"]),
                   2 * (p["dev_max_pairs"] or registry_count("cnsd_stsb/dev")))
            runs.setdefault(key, []).extend((training_stage(row, seed, chinese=True), True) for seed in p["seeds"])
    what = {key: f"{key[0]}: {len(named)} runs of {key[1]:,} steps" for key, named in runs.items()}
    for key, named in runs.items():  # the Chinese runs of an English row's step and length, but another dev set
        if list(what.values()).count(what[key]) > 1 and all(chinese for _, chinese in named):
            what[key] = f"{key[0]} (Chinese): {len(named)} runs of {key[1]:,} steps"
    stages = []
    for (step, steps, dev), named in runs.items():
        evaluations = steps // p["eval_steps"] if p["eval_steps"] else 0
        stages += [PlannedStage(what[step, steps, dev], 1, steps, step, sentences=evaluations * dev,
                                evaluations=evaluations, evaluation_sentences=evaluations * dev,
                                parameters=BERT_LARGE_PARAMETERS if step.endswith("large") else BERT_BASE_PARAMETERS,
                                checkpoint_steps=p["checkpoint_steps"], name=name)
                   for name, _ in named]
    english_scored = len(p["english_rows"]) * len(p["seeds"]) + len(p["first_last_avg_rows"])
    stages.append(PlannedStage("English STS test sets: every row and seed scored", english_scored,
                               sentences=scored_sentences(p["sts_tasks"], p["sts_max_pairs"])))
    if p["chinese_rows"]:
        chinese_scored = sum(1 if m == "untouched" else len(p["seeds"]) for m in p["chinese_rows"].values())
        stages.append(PlannedStage("Chinese STS test sets: every row and seed scored", chinese_scored,
                                   sentences=scored_sentences(p["chinese_tasks"], p["chinese_max_pairs"])))
    return Plan(NAME, stages)


def ifcl_paper_projection(measured: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`projection` of the IFCL chapter's paper profile from a ``benchmarks/ifcl_gpu.py`` record: each
    model's median step, every sentence encoded at the slowest measured evaluation rate (an upper bound). A
    stage whose step the record did not measure is left out and named under ``"not measured"``."""
    from ..book.parameters import shipped_parameters

    paper = shipped_parameters(NAME)
    steps = {r["model"]: r["step_s_median"] for r in measured["table"]}
    rate = min(3000 / r["evaluation_3000_sentences_s"] for r in measured["table"])
    stages = plan(paper).counted()
    result = projection([s for s in stages if not s.step or s.step in steps], steps, rate,
                        measured_checkpoint_write()["bytes_per_s"])
    result["not measured"] = [s.what for s in stages if s.step and s.step not in steps]
    return result


def data_needs(p: Mapping[str, Any]) -> dict:
    """The data each row of the slides' tables the profile ``p`` computes needs (:data:`sentcl.book.coverage.Needs`)."""
    english, chinese = scored_sets(p["sts_tasks"]), scored_sets(p["chinese_tasks"])
    # a trained row the slides' tables lack (IFCL w/o TL's English scores) serves Table 4 only
    needs: dict = {("English STS", row): [p["train_dataset"], *english] for row in p["english_rows"]}
    needs |= {("English STS", row): english for row in p["first_last_avg_rows"]}
    needs |= {("Chinese STS", row): chinese if method == "untouched" else [*p["chinese_train_datasets"], *chinese]
              for row, method in p["chinese_rows"].items()}
    needs |= {("Table 4", row): [p["train_dataset"], *scored_sets(["STS-B"])] for row in p["mi_rows"]}
    values = paper_values(NAME)
    return {key: need for key, need in needs.items() if key in set(zip(values["table"], values["row"], strict=True))}


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Each model of ``benchmarks/results/ifcl_gpu_h100.json`` with its measured peak."""
    record = benchmark_record(MEMORY_RECORD)
    return [MemoryRow(row["model"], "bert-large" if "large" in row["model"] else "bert-base",
                      record["settings"]["batch"], record["settings"]["precision"], row["peak_gpu_memory_gib"],
                      MEMORY_RECORD)
            for row in record["table"]]


def ifcl_setting_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per (setting, method) of ``ifcl_demo_setting_cpu.json``: the loss and each of its terms in
    the first and last logged window, the cosine to the start, and whether the run counts as trained."""
    rows = []
    for run in result["runs"]:
        h = run["health"]
        start, end = h.get("loss_start") or {}, h.get("loss_end") or {}
        row = {"setting": run["setting"], "method": run["method"],
               "loss": f"{_g(start.get('loss'))} → {_g(end.get('loss'))}"}
        for term in ("InfoNCE identical", "InfoNCE fraternal", "Twin"):
            row[term] = f"{_g(start.get(term))} → {_g(end.get(term))}" if term in start else "—"
        row["cosine to start"] = "—" if h.get("start_cosine") is None else f"{h['start_cosine']:.4f}"
        row["trained (active)"] = "yes" if h.get("active") else f"no: {h.get('reason', '')}"
        rows.append(row)
    return pd.DataFrame(rows).set_index(["setting", "method"])


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _ifcl_setting_caption(result: dict[str, Any]) -> str:
    s = result["settings"]
    return (f"Each method trained for {s['steps']} steps of {s['batch_size']} at learning rate {s['learning_rate']:g} "
            f"(seed {s['seed']}, {s['precision']}) on all-MiniLM-L6-v2, measured by `benchmarks/ifcl_demo_setting.py` on "
            f"{result['machine']['cpu_model']} ({result['date'][:10]}): the loss and its terms in the first and the last "
            f"window of {s['log_steps']} steps, the mean cosine of its embeddings to the start's on the fixed probe, and "
            "whether it counts as trained (a loss at or below 0.001 in the first window: the objective was already solved).")


CHAPTER = Chapter(
    name=NAME,
    title="IFCL: identical and fraternal twins (Xiao et al. 2023)",
    memory=memory_rows,
    memory_record=MEMORY_RECORD,
    needs=data_needs,
    measurement=Measurement(DEMO_SETTING, "Which setting leaves the objective something to learn", ifcl_setting_frame,
                            _ifcl_setting_caption),
    plan=plan,
)


__all__ = ["CHAPTER", "data_needs", "ifcl_paper_projection", "ifcl_setting_frame", "ifcl_step", "memory_rows", "plan",
           "training_stage"]
