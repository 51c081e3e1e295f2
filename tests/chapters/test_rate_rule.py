"""Each demo that picks its learning rate by the rule its profile states (``benchmarks/rate_rule.py``) runs at the rate
its record chose, and that choice follows from the record's own runs by the rule, recomputed here: a row qualifies when
its seed-0 run learned (the health rule) and its STS-B dev score is not below the untouched encoder's; the rule takes
the rates where the most rows qualify, then their best mean dev score."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentcl.book.parameters import shipped_parameters
from sentcl.chapters import CHAPTERS

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
RULED = sorted(c for c in CHAPTERS if (RESULTS / f"rate_rule_{c}_cpu.json").is_file())


def test_the_chapters_whose_demo_fine_tunes_sentcl_mini_have_a_rate_rule_record():
    mini = sorted(c for c, spec in CHAPTERS.items() if spec.models and "sentcl-mini" in spec.models(shipped_parameters(c, "demo")).values())
    assert mini and mini == RULED


@pytest.mark.parametrize("chapter", RULED)
def test_the_demo_runs_at_the_rate_its_rule_chose_recomputed_from_the_record(chapter):
    record = json.loads((RESULTS / f"rate_rule_{chapter}_cpu.json").read_text())
    demo = shipped_parameters(chapter, "demo")
    key = next(k for k in ("learning_rate", "learning_rates") if k in demo)  # IFCL's: one rate per encoder family
    rates = demo[key].values() if isinstance(demo[key], dict) else [demo[key]]
    assert set(rates) == {record["chosen"]}  # one rate for every trained row
    assert record["demo_profile"] == {k: v for k, v in demo.items() if k != key}  # measured on this profile
    assert record["untouched"]["model"] in CHAPTERS[chapter].models(demo).values() and record["seed"] == demo["seeds"][0]
    floor, ranked = record["untouched"]["stsb_dev"], []
    for run in record["runs"]:
        assert set(run["health"]) == set(run["stsb_dev"]) and run["health"]  # every trained model scored on dev
        good = [dev for name, dev in run["stsb_dev"].items() if run["health"][name]["learned"] and dev >= floor]
        ranked.append((len(good), sum(good) / len(good) if good else float("-inf"), -run["learning_rate"]))
    assert -max(ranked)[2] == record["chosen"]
