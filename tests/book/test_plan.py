"""A chapter's plan of runs (sentcl.book.estimates.plan): its checks, its counting into the cost's rows, the notebook training
through it (ChapterRun refuses a stage the plan does not hold), and cost and coverage following a changed profile
(they read one plan and one set of parameters: no second list). The smoke notebooks' built artifacts against their
plans: tests/chapters/test_plans.py."""

from __future__ import annotations

import dataclasses
import re
import warnings

import pytest

from sentcl.book.estimates.cost import Stage
from sentcl.book.estimates.plan import Plan, PlannedStage, stage_name
from sentcl.book.notebook.chapter_run import ChapterRun
from sentcl.book.parameters import shipped_parameters
from sentcl.chapters import mnrl_sbert
from sentcl.errors import ConfigError


def test_stage_names_are_folder_words_under_the_chapter():
    assert stage_name("rcl", "final", "Eq. 1", "seed", 0) == "rcl.final.Eq-1.seed.0"
    assert stage_name("mnrl_sbert", "RoBERTa(first-last avg.)", "seed", 3) == "mnrl_sbert.RoBERTa-first-last-avg.seed.3"


def test_a_plan_refuses_a_name_twice_an_upstream_not_before_it_and_a_name_outside_the_chapter():
    a = PlannedStage("entropy", name="rcl.entropy.0", steps=5)
    with pytest.raises(ConfigError, match=re.escape("names stage 'rcl.entropy.0' twice")):
        Plan("rcl", [a, a])
    with pytest.raises(ConfigError, match=r"reads \['rcl.entropy.0'\], not planned before it"):
        Plan("rcl", [PlannedStage("store", name="rcl.store.0", upstream=("rcl.entropy.0",)), a])
    with pytest.raises(ConfigError, match="not named under the chapter"):
        Plan("rcl", [PlannedStage("x", name="bsc.x")])
    with pytest.raises(ConfigError, match="counts 3 runs"):
        Plan("rcl", [PlannedStage("x", runs=3, name="rcl.x")])
    plan = Plan("rcl", [a, PlannedStage("store", name="rcl.store.0", upstream=("rcl.entropy.0",))])
    assert plan.names == ["rcl.entropy.0", "rcl.store.0"] and plan.upstream_of("rcl.store.0") == [a]
    with pytest.raises(ConfigError, match=re.escape("no stage 'rcl.nope'; it plans 2: rcl.entropy.0, rcl.store.0")):
        plan["rcl.nope"]


def test_counted_sums_the_named_stages_by_what_and_keeps_an_unnamed_row_as_it_is():
    plan = Plan("rcl", [PlannedStage("finals", name=f"rcl.final.{s}", steps=10, step="eq1") for s in range(3)]
                + [PlannedStage("scoring", runs=7, sentences=100),
                   PlannedStage("scoring", runs=2, sentences=50)])  # unnamed: two rows, as counted
    assert plan.counted() == [Stage("finals", 3, steps=10, step="eq1"), Stage("scoring", 7, sentences=100),
                              Stage("scoring", 2, sentences=50)]
    uneven = Plan("rcl", [PlannedStage("finals", name="rcl.a", steps=10), PlannedStage("finals", name="rcl.b", steps=11)])
    with pytest.raises(ConfigError, match="different costs under 'finals'"):
        uneven.counted()


@pytest.fixture
def smoke():
    return shipped_parameters("mnrl_sbert", "smoke")


def test_a_chapter_run_trains_only_the_stages_of_its_plan(tmp_path, monkeypatch, smoke):
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = ChapterRun("mnrl_sbert", profile="smoke", data_dir=None, out_dir=tmp_path / "out",
                         models={"BERT": "tiny"}, paper_models={"BERT": "bert-base-uncased"}, parameters=smoke)
    assert run.plan is not None and run.plan.names == mnrl_sbert.plan(smoke).names
    seed = smoke["seeds"][0]
    assert run.planned(mnrl_sbert.training_stage("MNRLSBERT", seed)) == f"mnrl_sbert.MNRLSBERT.seed.{seed}"
    with pytest.raises(ConfigError, match=re.escape("no stage 'mnrl_sbert.MNRLSBERT.seed.99'")):
        run.planned(mnrl_sbert.training_stage("MNRLSBERT", 99))
    assert run.built == [f"mnrl_sbert.MNRLSBERT.seed.{seed}"]


def test_cost_and_coverage_follow_a_changed_profile(smoke):
    """A copy of the smoke profile with a row renamed, a seed added and twice the epochs: the plan's stages, the
    cost's counts and the rows' data needs all change with it, read from the one set of parameters."""
    changed = dict(smoke) | {"mnrl_rows": {"MNRL, renamed": "BERT"}, "seeds": [*smoke["seeds"], 7],
                             "epochs": 2 * smoke["epochs"]}
    before, after = mnrl_sbert.plan(smoke), mnrl_sbert.plan(changed)
    assert [n for n in after.names if ".MNRL-renamed." in n] == [
        f"mnrl_sbert.MNRL-renamed.seed.{s}" for s in changed["seeds"]]
    counted = {s.step: s for s in after.counted()}
    assert counted["mnrl"].runs == len(changed["seeds"]) == len(smoke["seeds"]) + 1
    assert counted["mnrl"].steps == 2 * {s.step: s for s in before.counted()}["mnrl"].steps
    assert counted["mnrl"].what == "MNRL (MNRL, renamed)"
    needs = mnrl_sbert.data_needs(changed)
    assert "MNRL, renamed" in needs and not set(smoke["mnrl_rows"]) & set(needs)


def test_a_renamed_parameter_is_one_error_in_cost_and_coverage(smoke):
    """A parameter the notebook renamed (``mnrl_rows`` -> ``mnrl_models``) and the chapter's module not: cost and
    coverage both stop at the same missing name, not at two lists that each went stale."""
    renamed = {("mnrl_models" if k == "mnrl_rows" else k): v for k, v in smoke.items()}
    for read in (mnrl_sbert.plan, mnrl_sbert.data_needs):
        with pytest.raises(KeyError, match="mnrl_rows"):
            read(renamed)


def test_a_planned_stage_is_a_cost_stage_of_one_run():
    stage = PlannedStage("x", name="rcl.x", steps=4)
    assert isinstance(stage, Stage) and stage.runs == 1
    assert {f.name for f in dataclasses.fields(Stage)} < {f.name for f in dataclasses.fields(PlannedStage)}


def test_the_stages_a_task_builds_alone_exclude_those_reading_a_stage_it_cannot():
    plan = Plan("rcl", [PlannedStage("a", name="rcl.a"), PlannedStage("b", name="rcl.b", alone=False),
                        PlannedStage("c", name="rcl.c", upstream=("rcl.b",)), PlannedStage("d", name="rcl.d", upstream=("rcl.a",)),
                        PlannedStage("scoring", runs=3)])
    assert [s.name for s in plan.alone()] == ["rcl.a", "rcl.d"]
