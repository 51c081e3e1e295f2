"""The chapters' paper profiles' cost, counted from their parameters (sentcl.book.estimates.cost, sentcl.chapters.*): every training the notebook runs
for Tables 1-5 and Table 2's folds, summed here by hand from the profile, times a step-time table."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from sentcl.book import parameters
from sentcl.book.estimates.cost import projection, run_steps
from sentcl.chapters.rcl import (
    CONTROL_RUN,
    ENTROPY_RUN,
    EQ1_RUN,
    PAPER_SIZES,
    RCL_RUN,
    STORE_RUN,
    dropout_run,
    entropy_stage,
    faq_stage,
    final_stage,
    measured_step,
    plan,
    rcl_paper_projection,
    store_stage,
)
from sentcl.paths import benchmark_result

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "rcl.ipynb"


@pytest.fixture(scope="module")
def paper():
    return parameters.chapter_profiles(NOTEBOOK)["paper"]


def test_the_paper_profile_counts_every_training_it_runs(paper):
    """5 entropy models; per seed Eq. 1, RCL and the control; per baseline seed attention dropout 0.1-0.3 (0.1 is the
    encoders' own rate: the Eq. 1 run of that seed, trained once), DropHead 0.1-0.3 and Table 4's 2, 4, 6 and 10
    regulators; every row and seed scored; per FAQ bank and fold the initial model, 5 distinct baselines, 4 entropy
    models and their stores and the final model."""
    stages = plan(paper).counted()
    by = {s.what: s for s in stages}
    seeds, baseline_seeds = len(paper["seeds"]), len(paper["baseline_seeds"])
    assert (seeds, baseline_seeds, len(paper["phis"])) == (5, 5, 5)
    epoch = math.ceil(PAPER_SIZES["nli_rows"] / 64)
    assert epoch == 4968
    entropy = by["entropy models (Eq. 2), early-stopped"]
    assert (entropy.runs, entropy.steps, entropy.fewest_steps) == (5, 4968, 500 * 4)
    finals = [s for s in stages if s.what.startswith("final models")]
    eq1 = seeds + baseline_seeds * (3 - 1) + baseline_seeds * 3  # Eq. 1; attention dropout 0.2, 0.3; DropHead x 3
    regulated = seeds * 2 + baseline_seeds * 4  # RCL and the control (8 regulators); Table 4's 2, 4, 6, 10
    assert sum(s.runs for s in finals) == eq1 + regulated == 60
    assert {s.step for s in finals} == {"plain_eq1", "final_4_regulators", "final_8_regulators"}
    assert all(s.steps == epoch and s.sentences == 10 * 3000 for s in finals)  # one epoch, STS-B dev every 10 %
    assert by["STS test sets: every row and seed scored"].runs == 1 + 5 + seeds * 3 + baseline_seeds * (3 + 3 + 4)
    assert by["STS test sets: every row and seed scored"].sentences == 2 * (3108 + 1500 + 3750 + 3000 + 1186 + 1379 + 4927)
    assert by["stores: every query and index, and the base's for the control"].runs == 6
    faq = [s for s in stages if s.what.startswith(("faqir", "cough")) and s.steps]
    assert sum(s.runs for s in faq) == 2 * 5 * (1 + 5 + 4 + 1)
    assert by["faqir: stores, per fold"].runs == by["cough: stores, per fold"].runs == 5 * 4
    faqir_train = round(4133 * 4 / 5 * 0.9)
    assert by["faqir: initial and baseline models (Eq. 1), per fold"].steps == 3 * math.ceil(faqir_train / 64)
    # the total, by hand: every run's steps at one second each, every sentence at 1,000 a second
    seconds = {"entropy_eq2": 1.0, "plain_eq1": 1.0, "final_4_regulators": 1.0, "final_8_regulators": 1.0}
    hours = projection(stages, seconds, 1000.0)
    steps = 5 * 4968 + 60 * 4968 + sum(s.runs * s.steps for s in faq)
    sentences = sum(s.runs * s.sentences for s in stages)
    assert hours["hours"] == pytest.approx((steps + sentences / 1000) / 3600, abs=0.01)
    assert hours["hours"] - hours["hours_fewest"] == pytest.approx(5 * (4968 - 2000) / 3600, abs=0.01)


def test_the_paper_plan_names_each_run_once_after_what_it_reads(paper):
    """The RCL plan names every artifact its notebook builds: per φ an entropy model and its store (after it), the
    base's store (the control's), per row and seed one final model after the stores it reads (attention dropout at
    the encoders' own 0.1 is the Eq. 1 run of that seed: no stage of its own), and per FAQ bank and fold the initial
    model, the distinct baselines, the entropy models (from the initial model) and their stores, and the final model."""
    planned = plan(paper)
    assert [n for n in planned.names if n.startswith("rcl.entropy.")] == [entropy_stage(phi) for phi in paper["phis"]]
    assert planned.upstream_of(store_stage(0.03)) == [planned[entropy_stage(0.03)]]
    assert store_stage() in planned and not planned[store_stage()].upstream
    finals = [n for n in planned.names if n.startswith("rcl.final.")]
    assert len(finals) == 60 and len(set(finals)) == 60
    assert dropout_run("attention dropout", 0.1) == EQ1_RUN and final_stage("attention dropout 0.2", 4) in planned
    assert not [n for n in finals if "attention-dropout-0-1." in n]
    assert planned[final_stage(RCL_RUN, 0)].upstream == tuple(store_stage(phi) for phi in paper["phis"][:4])
    assert planned[final_stage(CONTROL_RUN, 1)].upstream == (store_stage(),)
    assert planned[final_stage("10 regulators", 2)].upstream == tuple(store_stage(phi) for phi in paper["phis"])
    assert not planned[final_stage(EQ1_RUN, 3)].upstream
    for bank in ("faqir", "cough"):
        names = [n for n in planned.names if n.startswith(f"rcl.faq.{bank}.")]
        assert len(names) == 5 * (1 + 5 + 4 + 4 + 1)
        assert planned[faq_stage(bank, 4, ENTROPY_RUN, 0.02)].upstream == (faq_stage(bank, 4, EQ1_RUN),)
        assert planned[faq_stage(bank, 4, RCL_RUN)].upstream == tuple(faq_stage(bank, 4, STORE_RUN, phi) for phi in paper["phis"][:4])
    unnamed = [s.what for s in planned.stages if not s.name]
    assert unnamed == ["STS test sets: every row and seed scored", "faqir: test questions ranking the bank, per fold and model",
                       "cough: test questions ranking the bank, per fold and model"]


def test_the_smoke_plan_names_only_the_faq_banks_of_the_sample_data():
    """The smoke profile always reads the project's sample data, which has COUGH's layout and no FAQIR: its plan names
    the COUGH folds' stages and counts FAQIR's (as the other profiles do) without naming them."""
    smoke = parameters.chapter_profiles(NOTEBOOK)["smoke"]
    planned = plan(smoke)
    assert smoke["faq_datasets"] == {"Table 2a": "faqir", "Table 2b": "cough"}
    assert not [n for n in planned.names if ".faqir." in n] and len([n for n in planned.names if ".cough." in n]) == 14
    faqir = [s for s in planned.counted() if s.what.startswith("faqir")]
    assert [s.what for s in faqir] == [s.what for s in plan(smoke | {"profile": "demo"}).counted() if s.what.startswith("faqir")]
    assert sum(s.runs for s in faqir if s.steps) == 2 * (1 + 1 + 2 + 1)


def test_measured_steps_and_run_steps():
    assert [measured_step(r) for r in (0, 2, 4, 6, 8, 10)] == ["plain_eq1"] + ["final_4_regulators"] * 2 + [
        "final_8_regulators"] * 3
    assert run_steps(960, 16, 1) == 60 and run_steps(960, 16, 2, max_steps=100) == 100 and run_steps(5, 64, 3) == 3


def test_the_recorded_projection_is_the_profiles():
    """benchmarks/results/rcl_gpu_h100.json holds the projection the library computes from its measurements."""
    recorded = json.loads(benchmark_result("rcl_gpu_h100.json").read_text(encoding="utf-8"))
    assert recorded["projection"] == rcl_paper_projection(recorded)
    assert recorded["projection"]["hours"] > 10 * recorded["results"]["final_8_regulators"]["median_step_s"] * 4968 / 3600


IFCL_NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "ifcl.ipynb"


def test_the_ifcl_paper_profile_counts_every_training_it_runs():
    """Issue 23: per English row (IFCL, IFCL w/o TL and SimCSE on BERT-base, IFCL and SimCSE on BERT-large) and per
    trained Chinese row (SimCSE, IFCL) three seeds; one wiki1m epoch of 64 for the English rows, one epoch of the
    Chinese sets' sentences (both sides of 5,231 CNSD and 10,000 SimCLUE pairs) for the Chinese; STS-B dev every
    125 steps. Summed here by hand from the slides' setting."""
    from sentcl.chapters.ifcl import ifcl_paper_projection, plan

    paper = parameters.chapter_profiles(IFCL_NOTEBOOK)["paper"]
    assert len(paper["seeds"]) == 3
    stages = {s.what: s for s in plan(paper).counted()}
    english, chinese = 1_000_000 // 64, math.ceil(2 * (5_231 + 10_000) / 64)
    assert (english, chinese) == (15_625, 476)
    runs = {(s.step, s.steps): s.runs for s in stages.values() if s.steps}
    assert runs == {("IFCL-BERT-base", english): 2 * 3, ("IFCL-BERT-large", english): 3, ("SimCSE-BERT-base", english): 3,
                    ("SimCSE-BERT-large", english): 3, ("SimCSE-BERT-base", chinese): 3, ("IFCL-BERT-base", chinese): 3}
    dev = {s.steps: s.sentences for s in stages.values() if s.steps}
    assert dev == {english: 125 * 2 * 1_500, chinese: 3 * 2 * 1_458}  # every 125 steps, both sides of each dev pair
    scored = stages["English STS test sets: every row and seed scored"]
    assert scored.runs == 5 * 3 + 2 and scored.sentences == 2 * (3108 + 1500 + 3750 + 3000 + 1186 + 1379 + 4927)
    assert stages["Chinese STS test sets: every row and seed scored"].runs == 1 + 2 * 3
    record = json.loads(benchmark_result("ifcl_gpu_h100.json").read_text(encoding="utf-8"))
    projected = ifcl_paper_projection(record)
    assert projected["not measured"] == [f"SimCSE-BERT-large: 3 runs of {english:,} steps"]  # the record has no such run
    step = {r["model"]: r["step_s_median"] for r in record["table"]}
    trained = (6 * english + 3 * chinese) * step["IFCL-BERT-base"] + 3 * english * step["IFCL-BERT-large"] \
        + (3 * english + 3 * chinese) * step["SimCSE-BERT-base"]
    assert projected["hours"] >= trained / 3600 > 10  # at least the training steps: ten hours and more


def test_the_ifcl_plan_names_every_run_it_counts():
    """Every trained row and seed is one named stage (English and Chinese tables apart), counted as before by measured
    step, length and dev set; the smoke profile's Chinese SimCSE runs, which match the English ones' step and length
    but not their dev set, say "(Chinese)" (two rows of one label before)."""
    from sentcl.chapters.ifcl import plan, training_stage

    smoke = parameters.shipped_parameters("ifcl", "smoke")
    trained = [(row, False) for row in smoke["english_rows"]] + [
        (row, True) for row, method in smoke["chinese_rows"].items() if method != "untouched"]
    assert sorted(plan(smoke).names) == sorted(training_stage(row, seed, chinese) for row, chinese in trained
                                               for seed in smoke["seeds"])
    assert training_stage("SimCSE-BERT (◇)", 1, chinese=True) == "ifcl.chinese.SimCSE-BERT.seed.1"
    whats = [s.what for s in plan(smoke).counted()]
    assert len(set(whats)) == len(whats) and "SimCSE-BERT-base (Chinese): 2 runs of 6 steps" in whats


def test_the_mnrl_sbert_paper_profile_counts_every_training_it_runs():
    """MNRLSBERT and MNRLSRoBERTa: one epoch of the 314,315 entailment pairs in batches of 12; SBERT and SRoBERTa: one
    epoch of the 942,854 labelled NLI rows in batches of 16; one seed (the paper's). The T4 estimate sums them."""
    from sentcl.book.estimates.cost import T4_FP32_PEAK, T4_UTILISATION, t4_hours
    from sentcl.chapters.mnrl_sbert import plan

    paper = parameters.chapter_profiles(NOTEBOOK.with_name("mnrl_sbert.ipynb"))["paper"]
    stages = plan(paper).counted()
    assert [(s.step, s.runs, s.steps) for s in stages] == [("mnrl", 2, math.ceil(314_315 / 12)),
                                                           ("softmax", 2, math.ceil(942_854 / 16))]
    record = json.loads(benchmark_result("mnrl_sbert_cost_cpu.json").read_text(encoding="utf-8"))
    flop = sum(2 * steps * record["runs"][step]["median_training_gflop_per_step"] * 1e9
               for step, steps in (("mnrl", 26_193), ("softmax", 58_929)))
    low, high = t4_hours(stages, record)
    assert (low, high) == pytest.approx((flop / (T4_FP32_PEAK * T4_UTILISATION[1]) / 3600,
                                         flop / (T4_FP32_PEAK * T4_UTILISATION[0]) / 3600))
    assert 4 < low < high < 10  # four models of under 2 T4 hours each by the paper's account, 1-3.4 by ours


def test_the_geometry_paper_profile_counts_every_training_it_runs():
    """Two families x four methods x three seeds of one budget (the 314,315 entailment pairs in batches of 64), and per
    family RCL's four entropy models, early-stopped no sooner than 4 windows of 500 steps, each followed by its store
    (every query and index), the stores read by every final RCL run; the rehearsal's two families of one encoder (the
    tiny BERT) count its runs once, as its notebook trains them once."""
    from sentcl.chapters.geometry import entropy_stage, plan, stage_names, store_stage, training_stage

    paper = parameters.chapter_profiles(NOTEBOOK.with_name("geometry.ipynb"))["paper"]
    stages = {s.what.split(":")[0]: s for s in plan(paper).counted()}
    epoch = math.ceil(314_315 / 64)
    for method in ("MNRL", "BSC", "RCL", "IFCL"):
        assert (stages[method].runs, stages[method].steps) == (2 * 3, epoch)
    entropy = stages["RCL entropy models (Eq. 2), early-stopped"]
    assert (entropy.runs, entropy.steps, entropy.fewest_steps) == (2 * 4, epoch, 500 * 4)
    stores = stages["RCL stores (every query and index)"]
    assert (stores.runs, stores.steps, stores.sentences) == (2 * 4, 0, 2 * 314_315)
    planned = plan(paper)
    final = planned[training_stage("RCL", "roberta-base", 2)]
    assert final.upstream == tuple(store_stage("roberta-base", phi) for phi in (0.01, 0.02, 0.03, 0.04))
    assert planned.upstream_of(store_stage("roberta-base", 0.03)) == [planned[entropy_stage("roberta-base", 0.03)]]
    checked: list[str] = []
    names = stage_names("RCL", "roberta-base", 2, lambda stage: checked.append(stage) or stage)  # the notebook's run.planned
    assert names["stage"] == final.name and names["entropy_stage"](0.03) == entropy_stage("roberta-base", 0.03)
    assert names["store_stage"](0.03) == store_stage("roberta-base", 0.03) and checked == [store_stage("roberta-base", 0.03)]
    rehearsal = parameters.chapter_profiles(NOTEBOOK.with_name("geometry.ipynb"))["rehearsal"]
    assert set(rehearsal["base_models"].values()) == {"tiny"} and len(rehearsal["base_models"]) == 2
    counted = {s.what.split(":")[0]: s for s in plan(rehearsal).counted()}
    assert counted["MNRL"].steps == 50 and counted["RCL entropy models (Eq. 2), early-stopped"].fewest_steps == 5 * 4
    assert (counted["MNRL"].runs, counted["RCL entropy models (Eq. 2), early-stopped"].runs) == (3, 4)
    assert counted["RCL stores (every query and index)"].runs == 4


def test_checkpoints_per_run_follow_the_trainers_cadence():
    """Every 10 minutes of training (the trainer's default), every checkpoint_steps when sooner, and at the end."""
    from sentcl.book.estimates.cost import CHECKPOINT_MINUTES, checkpoints_per_run
    from sentcl.training import TrainingConfig

    assert CHECKPOINT_MINUTES == TrainingConfig().checkpoint_minutes
    assert checkpoints_per_run(15_625, 0.1) == 3  # 26 minutes: at 10 and 20 minutes (6,000 and 12,000 steps), the end
    assert checkpoints_per_run(6_000, 0.1) == 1 and checkpoints_per_run(6_001, 0.1) == 2  # the 10th minute's is the end's
    assert checkpoints_per_run(15_625, 0.1, checkpoint_steps=250) == 63  # 62 before the last step, and the end
    assert checkpoints_per_run(15_625, 1.0, checkpoint_steps=1_000) == 27  # every 600 steps by the clock: sooner; 26 and the end
    assert checkpoints_per_run(0, 0.1) == 0


def test_checkpoint_sizes_are_the_architectures_weights_and_adams_two_moments():
    import torch
    from transformers import BertConfig, BertModel, RobertaConfig, RobertaModel

    from sentcl.book.estimates.cost import BERT_BASE_PARAMETERS, BERT_LARGE_PARAMETERS, ROBERTA_BASE_PARAMETERS, checkpoint_bytes

    with torch.device("meta"):
        counted = [sum(p.numel() for p in model.parameters()) for model in (
            BertModel(BertConfig()), BertModel(BertConfig(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                                                          intermediate_size=4096)),
            RobertaModel(RobertaConfig(vocab_size=50_265, max_position_embeddings=514, type_vocab_size=1)))]
    assert counted == [BERT_BASE_PARAMETERS, BERT_LARGE_PARAMETERS, ROBERTA_BASE_PARAMETERS]
    recorded = json.loads(benchmark_result("checkpoint_write_cpu.json").read_text(encoding="utf-8"))
    assert recorded["parameters"] == BERT_BASE_PARAMETERS
    assert 1.0 < recorded["bytes"] / checkpoint_bytes(BERT_BASE_PARAMETERS) < 1.001  # the rest: names, shapes, state


def test_a_projection_shows_its_parts_and_counts_the_checkpoints(paper):
    """Steps, evaluations, other encodings and checkpoints add up to the hours; the RCL paper profile's final models
    (one 4,968-step epoch at 1 s a step: 82.8 minutes) checkpoint every 10 minutes of training (its checkpoint_steps is
    0: by time only) and at the end."""
    from sentcl.book.estimates.cost import BERT_BASE_PARAMETERS, checkpoint_bytes

    seconds = {"entropy_eq2": 1.0, "plain_eq1": 1.0, "final_4_regulators": 1.0, "final_8_regulators": 1.0}
    stages = plan(paper).counted()
    rate = checkpoint_bytes(BERT_BASE_PARAMETERS) / 10.0  # ten seconds a checkpoint
    counted = projection(stages, seconds, 1000.0, rate)
    uncounted = projection(stages, seconds, 1000.0)
    assert paper["checkpoint_steps"] == 0
    finals = [r for r in counted["table"] if r["stage"].startswith("final models")]
    assert all(r["checkpoints"] == r["runs"] * 9 for r in finals)  # 8 in 82.8 minutes (every 10), and the end
    assert sum(counted["parts"].values()) == pytest.approx(counted["hours"], abs=0.05)
    assert counted["hours"] - uncounted["hours"] == pytest.approx(counted["checkpoints"] * 10 / 3600, abs=0.01)
    assert counted["checkpoint_terabytes"] == pytest.approx(counted["checkpoints"] * checkpoint_bytes(BERT_BASE_PARAMETERS) / 1e12, abs=1e-3)
    assert uncounted["checkpoints"] == 0 and uncounted["parts"]["checkpoints"] == 0
    assert counted["parts"]["evaluations"] == pytest.approx(sum(s.runs * s.evaluation_sentences for s in stages) / 1000 / 3600, abs=0.01)


def test_the_mnrl_sbert_estimate_counts_its_checkpoints():
    """At the T4 step times of the two utilisations, each run checkpoints every 10 minutes of training (the
    profile's checkpoint_steps is 0: by time only) and at the end."""
    from sentcl.book.estimates.cost import T4_FP32_PEAK, T4_UTILISATION, checkpoints_per_run, t4_checkpoints
    from sentcl.chapters.mnrl_sbert import plan

    paper = parameters.chapter_profiles(NOTEBOOK.with_name("mnrl_sbert.ipynb"))["paper"]
    record = json.loads(benchmark_result("mnrl_sbert_cost_cpu.json").read_text(encoding="utf-8"))
    stages = plan(paper).counted()
    assert {s.checkpoint_steps or 0 for s in stages} == {paper["checkpoint_steps"]} == {0}
    low, high = t4_checkpoints(stages, record)
    by_hand = []
    for u in T4_UTILISATION:
        seconds = {step: record["runs"][step]["median_training_gflop_per_step"] * 1e9 / (T4_FP32_PEAK * u) for step in ("mnrl", "softmax")}
        by_hand.append(2 * checkpoints_per_run(26_193, seconds["mnrl"]) + 2 * checkpoints_per_run(58_929, seconds["softmax"]))
    assert (low, high) == (min(by_hand), max(by_hand)) and low >= 4  # at least the end of each of the four runs


def test_each_chapter_counts_its_own_profiles_plan():
    """cost.chapter_stages reads a chapter's own plan (its module's plan, counted) of the profile's shipped parameters; a
    chapter without a plan is an error saying so."""
    from sentcl.book.chapter_spec import Chapter
    from sentcl.book.estimates.cost import chapter_stages
    from sentcl.chapters import CHAPTERS, chapter
    from sentcl.errors import ConfigError

    counted = [c for c in CHAPTERS.values() if c.plan is not None]
    assert [c.name for c in counted] == ["mnrl_sbert", "bsc", "rcl", "ifcl", "geometry"]
    for spec in counted:
        for profile in ("paper", "demo"):
            stages = chapter_stages(spec, profile)
            assert stages == spec.plan(parameters.shipped_parameters(spec.name, profile)).counted()
            assert any(s.runs and s.steps for s in stages), (spec.name, profile)  # something trains
    assert sum(s.runs * s.steps for s in chapter_stages(chapter("rcl"), "demo")) < sum(s.runs * s.steps for s in chapter_stages(chapter("rcl")))
    unplanned = Chapter(name="unplanned", title="A chapter without a plan", memory=lambda p: [])
    with pytest.raises(ConfigError, match="unplanned: its plan of runs is not counted here"):
        chapter_stages(unplanned)
