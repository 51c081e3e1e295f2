"""The BSC chapter's plan of runs (sentcl.chapters.bsc.plan) names every training run the paper profile makes, with
the data the profile reads; benchmarks/bsc_gpu.py projects that plan, and the committed record is that projection."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from sentcl.book.parameters import chapter_profiles, shipped_parameters
from sentcl.chapters.bsc import ZERO_SHOT, paper_sizes, plan, training_stage, training_what
from sentcl.data.registry import info

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bsc_gpu():
    spec = importlib.util.spec_from_file_location("bsc_gpu", ROOT / "benchmarks" / "bsc_gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_plan_is_the_paper_profiles_every_training_run(bsc_gpu):
    paper = chapter_profiles(ROOT / "notebooks" / "bsc.ipynb")["paper"]
    planned = plan(paper)
    trained = {task: [r for r in paper["rows"][task] if r != ZERO_SHOT] for task in paper["tasks"]}
    assert len(planned) == sum(map(len, trained.values())) * len(paper["seeds"]) == 36 * 5  # 36 trained rows, five seeds each
    assert set(planned.names) == {training_stage(task, row, seed) for task, rows in trained.items() for row in rows
                                  for seed in paper["seeds"]}
    sizes = paper_sizes(paper)
    for s in planned:  # every run of a task: its epochs over its training pairs, a dev evaluation per epoch
        task = next(t for t in paper["tasks"] if s.what.startswith(f"{t}: "))
        epochs, (pairs, dev_texts) = paper["epochs"][task], sizes[task]
        assert s.steps == math.ceil(pairs / paper["batch_size"][task]) * epochs
        assert s.evaluations == epochs and s.evaluation_sentences == epochs * dev_texts
        assert s.sentences - s.evaluation_sentences == (2 * pairs * epochs if s.what == training_what(task, True) else 0)
    # a fine-tuning row's seed starts from the best on dev of its starting row's seeds: it reads all of them
    assert planned[training_stage("STSb", "Fine-tuning MSE with BSC", 3)].upstream == tuple(
        training_stage("STSb", "MSE", seed) for seed in paper["seeds"])
    per_task = bsc_gpu.paper_plan()  # what the projection reads: the plan, counted, per task
    assert list(per_task) == paper["tasks"]
    assert sum(t["trained_rows"] * t["seeds"] for t in per_task.values()) == sum(s.runs for t in per_task.values()
                                                                               for s in t["stages"]) == 36 * 5
    # CQA-B: subtask B's 1,999 question pairs (the registry), not the 19,990 comments of part 1 that §4 prints
    assert per_task["CQA-B"]["pairs"] == info("semeval2016_cqa_b").splits["train"].judgements == 1999
    assert per_task["QQP"]["pairs"] + per_task["QQP"]["dev_texts"] // 2 == pytest.approx(10_000, abs=2)  # §4's sample, 9:1 dev


def test_a_fine_tuning_row_without_its_starting_row_plans_that_row_too():
    """A profile whose rows fine-tune a model its rows do not train (the notebook trains the starting row first,
    unscored): the plan names that row's runs, before the row that reads them, seed by seed under "mean"."""
    smoke = shipped_parameters("bsc", "smoke")
    changed = {**smoke, "rows": {**smoke["rows"], "STSb": ["Fine-tuning BSC with MSE"]}}
    names = [n for n in plan(changed).names if n.startswith("bsc.STSb.")]
    assert names == [training_stage("STSb", row, seed) for row in ("BSC", "Fine-tuning BSC with MSE") for seed in smoke["seeds"]]
    assert plan(changed)[training_stage("STSb", "Fine-tuning BSC with MSE", 1)].upstream == (training_stage("STSb", "BSC", 1),)


def test_the_recorded_projection_is_the_profiles(bsc_gpu):
    record = json.loads((ROOT / "benchmarks" / "results" / "bsc_gpu_h100.json").read_text())
    for precision in dict.fromkeys(m["precision"] for m in record["measured"]):
        expected = bsc_gpu.project(record["measured"], precision)
        assert [r for r in record["table"] if r["precision"] == precision] == expected
        total = next(r for r in expected if r["task"] == "all")
        per_task = [r for r in expected if r["task"] != "all"]
        assert total["training runs"] == sum(r["training runs"] for r in per_task)
        assert total["optimizer steps"] == sum(
            math.ceil(r["training pairs"] / r["batch"]) * r["epochs"] * r["training runs"] for r in per_task)
