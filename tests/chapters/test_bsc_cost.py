"""The BSC chapter's projected paper-profile cost counts every training run the profile makes, with the
data the profile reads (benchmarks/bsc_gpu.py), and the committed record is that projection."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest

from sentcl.book.parameters import chapter_profiles
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
    plan = bsc_gpu.paper_plan()
    assert list(plan) == paper["tasks"]
    runs = sum(t["trained_rows"] * t["seeds"] for t in plan.values())
    expected = sum(len([r for r in paper["rows"][task] if r != "SimCSE (unsup.)"]) for task in paper["tasks"]) * len(paper["seeds"])
    assert runs == expected == 36 * 5  # 36 trained rows over Tables 1-5, five seeds each
    # CQA-B: subtask B's 1,999 question pairs (the registry), not the 19,990 comments of part 1 that §4 prints
    assert plan["CQA-B"]["pairs"] == info("semeval2016_cqa_b").splits["train"].judgements == 1999
    assert plan["QQP"]["pairs"] + plan["QQP"]["dev_texts"] // 2 == pytest.approx(10_000, abs=2)  # §4's sample, 9:1 dev


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
