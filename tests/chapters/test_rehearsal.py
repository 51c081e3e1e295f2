"""The rehearsal profile (issue 23): every chapter's paper schedule, run at small scale on a CPU.

The rehearsal is the paper profile with a tiny stand-in encoder, its learning rate, capped training rows,
the offline data root's files where the paper's are absent, and evaluation subsets; everything that shapes a
run -- epochs, warm-up fractions, early stopping, evaluation cadence, seeds, rows, tables, losses,
temperatures, poolings -- stays the paper's, and a parameter counted in optimizer steps is rescaled to the
same fraction of the shorter run. These tests hold the profiles files to that and drive the schedules that
decide whether a model trains (warm-up, early stopping) step by step, without a model: the whole rehearsal
is ``sentcl reproduce --profile rehearsal`` (about half an hour on 2 cores).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sentcl.book import parameters
from sentcl.chapters import CHAPTERS as REGISTRY
from sentcl.errors import ConfigError
from sentcl.training import LossEarlyStopping, TrainingConfig
from sentcl.training.checkpoint import RunningMean
from sentcl.training.health import training_health

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHAPTERS = tuple(REGISTRY)

STAND_IN = "tiny"
RATE_FACTOR = 50
"""The rehearsal's learning rates are the paper's times this: the tiny random stand-in at the paper's 2e-5
ends a 50-step run at cosine 0.9996 to its start (untrained by the health rule); at 1e-3 it moves (0.54)."""

# What the rehearsal may change, per chapter, by kind: the stand-in encoder, its learning rate, the offline
# root's files where the paper's are absent (and the counts they give), the training rows, the parameters
# counted in optimizer steps (rescaled: test_step_counts_sit_at_the_papers_fraction_of_the_run), the
# evaluation subsets, what the stand-in's own shape requires, and, for BSC alone, the number of seeds ("runs":
# two of the paper's five, so the best-on-dev path runs; five would not fit 30 minutes).
MAY_DIFFER = {
    "mnrl_sbert": {
        "encoder": {"base_models"}, "rate": {"learning_rate"},
        "data": {"nli_datasets", "expected_nli_rows", "expected_entailment_pairs", "whitening_fit_datasets"},
        "rows": {"train_pairs", "whitening_fit_sentences"}, "steps": set(), "evaluation": {"sts_max_pairs"},
        "stand-in": {"whitening_k"},  # 63 of the tiny model's 64 dimensions carry variance (no LayerNorm bias)
        "runs": set(),
    },
    "bsc": {
        "encoder": {"base_model", "zero_shot_model", "pfcc_negatives_model"}, "rate": {"learning_rate"},
        "data": set(), "rows": {"train_rows"}, "steps": set(), "evaluation": {"eval_max_queries", "dev_max_queries"},
        "stand-in": set(), "runs": {"seeds"},
    },
    "rcl": {
        "encoder": {"base_model"}, "rate": {"learning_rate"}, "data": {"nli_datasets"}, "rows": {"train_rows", "max_steps"},
        "steps": {"early_stopping_window"}, "evaluation": {"dev_max_pairs", "sts_max_pairs"}, "stand-in": set(),
        "runs": set(),
    },
    "ifcl": {
        "encoder": {"english_models", "chinese_model"}, "rate": {"learning_rates", "chinese_learning_rate"},
        "data": {"train_dataset"}, "rows": {"train_sentences", "mi_sentences"}, "steps": {"eval_steps"},
        "evaluation": {"sts_max_pairs", "chinese_max_pairs", "dev_max_pairs"}, "stand-in": set(), "runs": set(),
    },
    "geometry": {
        "encoder": {"base_models"}, "rate": {"learning_rate"}, "data": {"nli_datasets"}, "rows": {"train_rows"},
        "steps": {"rcl_early_stopping_window"}, "evaluation": {"sts_max_pairs", "retrieval_max_queries"},
        "stand-in": set(), "runs": set(),
    },
}

# The paper profile's planned optimizer steps, where a parameter is counted in steps (the runs' sizes on the
# paper's data): RCL's entropy models on the NLI triplets in batches of 64; the geometry chapter's one epoch of
# SNLI + MultiNLI's 314,315 entailment pairs in batches of 64; IFCL's one epoch of wiki1m's 1,000,000 sentences.
PAPER_STEPS = {"rcl": 4968, "geometry": math.ceil(314_315 / 64), "ifcl": 1_000_000 // 64}
RESCALED = {"rcl": "early_stopping_window", "geometry": "rcl_early_stopping_window", "ifcl": "eval_steps"}


@pytest.fixture(scope="module")
def profiles() -> dict[str, dict[str, dict]]:
    return {chapter: parameters.chapter_profiles(NOTEBOOKS / f"{chapter}.ipynb") for chapter in CHAPTERS}


def rehearsal_steps(chapter: str, values: dict) -> int:
    """The planned optimizer steps of one run of the rehearsal's training rows (one epoch)."""
    rows = {"rcl": "train_rows", "geometry": "train_rows", "ifcl": "train_sentences"}[chapter]
    return values["epochs"] * math.ceil(values[rows] / values["batch_size"])


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_rehearsal_differs_from_the_paper_only_where_a_cpu_must(profiles, chapter):
    paper, rehearsal = profiles[chapter]["paper"], profiles[chapter]["rehearsal"]
    allowed = set().union(*MAY_DIFFER[chapter].values())
    changed = {name for name, value in rehearsal.items() if value != paper[name] and name != "profile"}
    assert changed <= allowed, f"the rehearsal changes {sorted(changed - allowed)}: a schedule, row or loss of the paper's"
    for name in MAY_DIFFER[chapter]["encoder"]:  # every encoder is the stand-in, every family of the paper kept
        models = rehearsal[name] if isinstance(rehearsal[name], dict) else {"": rehearsal[name]}
        assert set(models.values()) == {STAND_IN}, (name, models)
        assert not isinstance(paper[name], dict) or set(models) == set(paper[name]), (name, models)
    # a capped count: never "all" (0) where the paper trains on everything
    for name in MAY_DIFFER[chapter]["rows"]:
        assert rehearsal[name], name
    for name in MAY_DIFFER[chapter]["runs"]:  # the paper's seeds, at least two of them
        assert set(rehearsal[name]) <= set(paper[name]) and len(rehearsal[name]) >= min(2, len(paper[name])), name


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_learning_rates_are_the_papers_times_one_factor(profiles, chapter):
    """One factor for every rate keeps the paper's ratios (BSC's CQA-B at 1.5 x the others, IFCL's large model at 1/3)."""
    paper, rehearsal = profiles[chapter]["paper"], profiles[chapter]["rehearsal"]
    for name in MAY_DIFFER[chapter]["rate"]:
        ours, theirs = rehearsal[name], paper[name]
        pairs = [(ours[k], theirs[k]) for k in theirs] if isinstance(theirs, dict) else [(ours, theirs)]
        assert isinstance(ours, dict) == isinstance(theirs, dict) and (not isinstance(ours, dict) or set(ours) == set(theirs))
        for mine, papers in pairs:
            assert mine == pytest.approx(papers * RATE_FACTOR, rel=1e-9), (name, mine, papers)


@pytest.mark.parametrize("chapter", sorted(RESCALED))
def test_step_counts_sit_at_the_papers_fraction_of_the_run(profiles, chapter):
    """A parameter counted in optimizer steps (RCL's early-stopping window, IFCL's evaluation cadence) is the
    paper's fraction of the paper's run, applied to the rehearsal's run (rounded; at least one step)."""
    name = RESCALED[chapter]
    paper, rehearsal = profiles[chapter]["paper"][name], profiles[chapter]["rehearsal"][name]
    fraction = paper / PAPER_STEPS[chapter]
    assert rehearsal == max(1, round(fraction * rehearsal_steps(chapter, profiles[chapter]["rehearsal"])))


def drive_entropy_model(values: dict, planned: int, window: int, patience: int, warmup_ratio: float) -> tuple[dict, int, int]:
    """An entropy model's schedule driven step by step through the early-stopping callback and the health rules,
    on the losses of a converged encoder (flat, batch-to-batch noise only: the hardest case for early stopping).
    Returns the health record, the steps taken and the warm-up's steps."""
    config = TrainingConfig(learning_rate=values["learning_rate"], warmup_ratio=warmup_ratio,
                            batch_size=values["batch_size"], log_steps=max(1, min(10, planned // 10)))
    callback = LossEarlyStopping(patience, window)
    state = SimpleNamespace(global_step=0, stopped_early=False, loss_since_log=RunningMean(), total_steps=planned)
    trainer = SimpleNamespace(config=config, state=state, name="entropy model")
    callback.on_train_begin(trainer)  # refuses a patience that could end the run inside its warm-up
    noise, losses = np.random.default_rng(0).normal(0.3, 0.05, planned), []
    while state.global_step < planned and not state.stopped_early:
        state.global_step += 1
        state.loss_since_log.add(float(noise[state.global_step - 1]))
        callback.on_step_end(trainer)
        if state.global_step % config.log_steps == 0 or state.stopped_early:
            losses.append({"step": state.global_step, "loss": state.loss_since_log.take()})
    health = training_health(config, planned, state.global_step, losses, start_cosine=0.99)
    return health, state.global_step, config.schedule(planned).warmup_steps


ENTROPY = {  # chapter -> (window, patience, warm-up ratio, step cap) parameter names
    "rcl": ("early_stopping_window", "early_stopping_patience", "entropy_warmup_ratio", "entropy_max_steps"),
    "geometry": ("rcl_early_stopping_window", None, "warmup_ratio", "rcl_entropy_max_steps"),
}


def entropy_schedule(chapter: str, values: dict) -> tuple[int, int, int, float]:
    window, patience, warmup, cap = ENTROPY[chapter]
    planned = PAPER_STEPS[chapter] if values["profile"] == "paper" else rehearsal_steps(chapter, values)
    planned = min(planned, values[cap] or planned)
    return planned, values[window], values[patience] if patience else 3, values[warmup]


@pytest.mark.parametrize(("chapter", "profile"), [(c, p) for c in ENTROPY for p in ("paper", "rehearsal", "demo")])
def test_the_entropy_models_train_past_their_warm_up_and_stay_active(profiles, chapter, profile):
    """Issue 23: with 3 windows of one step inside a warm-up over 10 % of 4,968 planned steps, an entropy model of
    a converged encoder stopped after 6 steps, at learning-rate factors 0 ... 0.010: it never trained. Each
    profile's schedule: no stop inside the warm-up, and an active run by the health rules."""
    values = profiles[chapter][profile]
    planned, window, patience, warmup_ratio = entropy_schedule(chapter, values)
    health, taken, warmup = drive_entropy_model(values, planned, window, patience, warmup_ratio)
    assert taken > warmup and health["active"], (taken, warmup, health["reason"])
    assert health["steps_at_half_peak"] >= 0.2 * taken


@pytest.mark.parametrize("chapter", sorted(ENTROPY))
def test_the_rehearsal_is_long_enough_to_catch_the_literal_reading(profiles, chapter):
    """The rehearsal must fail where the paper profile would: "3 steps" read as 3 single-step windows stops an
    entropy model inside its warm-up, so the callback refuses it. A run of fewer than 40 steps (a warm-up of
    at most 3 steps, over before a 4-step patience ends) would let the defect through unseen."""
    values = profiles[chapter]["rehearsal"]
    planned, _, patience, warmup_ratio = entropy_schedule(chapter, values)
    with pytest.raises(ConfigError, match="inside its warm-up"):
        drive_entropy_model(values, planned, 1, patience, warmup_ratio)


def main_runs(chapter: str, v: dict) -> list[tuple[str, TrainingConfig, int]]:
    """The rehearsal's training runs other than the entropy models, as the notebooks configure them:
    (what, config, optimizer steps per epoch)."""
    def config(batch: int, rate: float, **options) -> TrainingConfig:
        return TrainingConfig(epochs=options.pop("epochs", v["epochs"]), batch_size=batch, learning_rate=rate,
                              warmup_ratio=v["warmup_ratio"], log_steps=2, **options)

    if chapter == "mnrl_sbert":
        return [("MNRL", config(v["mnrl_batch_size"], v["learning_rate"]), math.ceil(v["train_pairs"] / v["mnrl_batch_size"])),
                ("softmax", config(v["softmax_batch_size"], v["learning_rate"]), math.ceil(v["train_pairs"] / v["softmax_batch_size"]))]
    if chapter == "bsc":  # every task's BSC rows: the training rows less the 9:1 dev tenth where the task holds one out
        return [(task, config(v["batch_size"][task], v["learning_rate"][task], epochs=v["epochs"][task],
                              eval_fraction=1.0 if v["select_on_dev"] else None),
                 math.ceil(v["train_rows"][task] * (0.9 if v["dev_data"][task] == "9:1" else 1) / v["batch_size"][task]))
                for task in v["tasks"] if task not in v["not_run_tasks"]]
    if chapter == "rcl":
        return [("final model", config(v["batch_size"], v["learning_rate"], max_steps=v["max_steps"] or None,
                                       eval_fraction=v["final_eval_fraction"] or None), math.ceil(v["train_rows"] / v["batch_size"]))]
    if chapter == "ifcl":
        return [(size, config(v["batch_size"], rate, eval_steps=v["eval_steps"] or None), math.ceil(v["train_sentences"] / v["batch_size"]))
                for size, rate in v["learning_rates"].items()]
    return [("every method", config(v["batch_size"], v["learning_rate"], max_steps=v["max_steps"] or None),
             math.ceil(v["train_rows"] / v["batch_size"]))]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_rehearsal_run_keeps_the_papers_schedule_shape_and_can_train(profiles, chapter):
    """Each run of the rehearsal: at least 10 optimizer steps, a warm-up of at least one step wherever the paper
    warms up, as many evaluations per epoch as the paper's cadence asks (none merged into one step), and a run
    of those steps that the health rules count as trained."""
    paper = profiles[chapter]["paper"]
    for what, config, per_epoch in main_runs(chapter, profiles[chapter]["rehearsal"]):
        total = config.total_steps(per_epoch)
        schedule = config.schedule(total)
        assert total >= 10, (what, total)
        assert schedule.warmup_steps >= 1 or config.warmup_ratio == 0, what
        if config.eval_fraction:  # every evaluation the fraction asks for, each at its own step
            assert len(config.eval_points(per_epoch)) == math.ceil(round(1 / config.eval_fraction, 9)), what
        if config.eval_steps:  # as dense as the paper's cadence, or every step where the run is too short for it
            assert total // config.eval_steps >= min(total, PAPER_STEPS[chapter] // paper["eval_steps"]), what
        losses = [{"step": s, "loss": 1.0 / s} for s in range(2, total + 1, 2)]
        assert training_health(config, total, total, losses, start_cosine=0.9)["active"], what
