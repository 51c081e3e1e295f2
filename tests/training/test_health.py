"""Did it train? The health record of a run (sentcl.training.health): hand-worked schedules, a model that
did not move, a solved objective, a run stopped inside its warm-up, and the loss's terms in the log."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.artifacts import ArtifactCache
from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.losses import ComboLoss, MultipleNegativesRankingLoss
from sentcl.models import tiny_model
from sentcl.training import Trainer, TrainingConfig
from sentcl.training.health import SOLVED_LOSS, health_table, loss_fell, mean_cosine, probe_sentences, training_health

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py


def _losses(*values, every=10):
    return [{"step": every * (k + 1), "loss": v} for k, v in enumerate(values)]


def test_a_whole_linear_run_spends_half_its_steps_at_half_the_peak_rate():
    """100 planned steps, 10 warm-up: factor s/10 for s < 10, then (100 - s)/90; >= 0.5 for s in [5, 55]: 51 steps."""
    config = TrainingConfig(learning_rate=2e-5, warmup_ratio=0.1)
    health = training_health(config, 100, 100, _losses(2.0, 1.0), start_cosine=0.95)
    assert health["steps_at_half_peak"] == 51 and health["share_at_half_peak"] == 0.51
    assert health["peak_lr"] == pytest.approx(2e-5) and health["max_lr"] == pytest.approx(2e-5)
    assert health["final_lr"] == pytest.approx(2e-5 * 1 / 90)
    assert health["loss_start"] == {"step": 10, "loss": 2.0} and health["loss_end"] == {"step": 20, "loss": 1.0}
    assert health["active"] and health["reason"] == ""


def test_a_run_stopped_inside_its_warm_up_is_inactive():
    """RCL's entropy models in the paper profile: 6 of 4,968 planned steps, warm-up over 497 (factors 0 ... 0.010)."""
    config = TrainingConfig(learning_rate=2e-5, warmup_ratio=0.1)
    health = training_health(config, 4968, 6, _losses(0.5, every=6), start_cosine=1.0)
    assert health["steps_at_half_peak"] == 0 and health["max_lr"] == pytest.approx(2e-5 * 5 / 497)
    assert not health["active"]
    assert "barely moved: mean cosine 1.00000" in health["reason"] and "0 of 4968 planned steps" in health["reason"]


def test_a_run_stopped_early_after_its_warm_up_is_judged_on_the_steps_it_took():
    """An entropy model early-stopped by design at step 2,000 of 4,968 (warm-up 497): 1,751 of its steps at half
    the peak rate or more (35 % of the planned, 88 % of the taken): active. Stopped at 400, inside the warm-up, it
    never reached the peak and is judged on the planned steps: inactive."""
    config = TrainingConfig(learning_rate=2e-5, warmup_ratio=0.1)
    after = training_health(config, 4968, 2000, _losses(0.5, 0.4, every=1000), start_cosine=0.99)
    assert after["steps_at_half_peak"] == 2000 - 249 and after["active"], after["reason"]
    inside = training_health(config, 4968, 400, _losses(0.5, 0.4, every=200), start_cosine=0.99)
    assert not inside["active"] and "151 of 4968 planned steps" in inside["reason"]


@pytest.mark.parametrize(("cosine", "loss", "steps", "inactive_because"), [
    (0.9989, 1.0, 100, None),
    (0.999, 1.0, 100, "barely moved"),  # the threshold itself is still
    (0.95, SOLVED_LOSS, 100, "already solved"),
    (0.95, 1.0, 30, "planned steps at >= half the peak"),  # 30 of 300 planned steps, all in the warm-up: 15 at half (5 %)
])
def test_each_reason_alone(cosine, loss, steps, inactive_because):
    config = TrainingConfig(learning_rate=1e-4, warmup_ratio=0.1)
    health = training_health(config, 100 if steps != 30 else 300, steps, _losses(loss, 0.5), start_cosine=cosine)
    if inactive_because is None:
        assert health["active"], health["reason"]
    else:
        assert not health["active"] and inactive_because in health["reason"] and health["reason"].count(";") == 0


def test_the_health_table_shows_each_models_loss_and_terms_first_and_last():
    """IFCL's objective has three terms, SimCSE's one: each model's loss and terms in the first -> the last window,
    a term a model lacks left empty, an inactive model with its reason, a run without a record said so."""
    config = TrainingConfig(learning_rate=3e-5, warmup_ratio=0.0)
    terms = [{"step": 10, "loss": 0.6, "terms": {"InfoNCE identical": 0.01, "Twin": 0.59}},
             {"step": 60, "loss": 0.2, "terms": {"InfoNCE identical": 0.005, "Twin": 0.195}}]
    ifcl = training_health(config, 60, 60, terms, start_cosine=0.98)
    simcse = training_health(config, 80, 60, _losses(2e-5, 1e-5), start_cosine=0.995)
    table = health_table({"IFCL seed 0": ifcl, "lost seed 1": None, "SimCSE seed 0": simcse})
    assert list(table.index) == ["IFCL seed 0", "lost seed 1", "SimCSE seed 0"]
    assert table.loc["IFCL seed 0", "Twin: first -> last window"] == "0.59 -> 0.195"
    assert table.loc["IFCL seed 0", "loss: first -> last window"] == "0.6 -> 0.2"
    assert table.loc["IFCL seed 0", "steps"] == "60 of 60" and table.loc["IFCL seed 0", "stopped early"] == "no"
    assert table.loc["IFCL seed 0", "active"] == "yes" and table.loc["IFCL seed 0", "cosine to its start"] == "0.9800"
    assert table.loc["SimCSE seed 0", "stopped early"] == "yes" and table.isna().loc["SimCSE seed 0", "Twin: first -> last window"]
    assert table.loc["SimCSE seed 0", "active"].startswith("no: loss 2e-05 at step 10: the objective was already solved")
    assert table.loc["lost seed 1", "active"] == "no health record"


def test_the_fall_of_a_loss_is_judged_against_its_window_to_window_noise():
    """Hand-worked: windows 2.0, 1.5, 1.2, 1.0, 0.9, 0.85, 0.8: successive differences 0.5, 0.3, 0.2, 0.1, 0.05,
    0.05, squares summing to 0.395, sigma^2 = 0.395 / (2 x 6) = 0.0329, the SE of first - last sqrt(2 x 0.0329) =
    0.2566: a fall of 1.2 > 2 x 0.2566. A flat noisy loss and a rising one did not fall; three windows are too few."""
    fell, fall, se = loss_fell([2.0, 1.5, 1.2, 1.0, 0.9, 0.85, 0.8])
    assert fell and fall == pytest.approx(1.2) and se == pytest.approx(0.2566, abs=1e-4)
    assert loss_fell([1.0, 0.9, 0.8, 0.7]) == (True, pytest.approx(0.3), pytest.approx(0.1))  # linear: 0.3 > 2 x 0.1
    assert loss_fell([1.0, 1.2, 0.9, 1.1, 0.95])[0] is False
    assert loss_fell([1.0, 0.5, 0.2])[0] is None


@pytest.mark.parametrize(("what", "windows", "chance", "because"), [
    # the demo's (issue 33): SBERT's softmax loss at ln 3 while its encoder drifts
    ("SBERT softmax", [1.095, 1.101, 1.092, 1.099, 1.090, 1.097, 1.093, 1.095, 1.088], np.log(3),
     ["did not fall beyond its window-to-window noise", "ends at its chance level 1.099"]),
    # MNRL on a stand-in that had already solved it: the loss rises
    ("MNRL", [0.041, 0.052, 0.047, 0.066, 0.071, 0.083, 0.079, 0.096], np.log(12), ["its loss rose: 0.041 -> 0.096"]),
    # RCL's demo entropy models: Eq. 1 rising
    ("RCL entropy model", [0.354, 0.371, 0.392, 0.405, 0.431, 0.447], None, ["its loss rose: 0.354 -> 0.447"]),
    ("a softmax classifier that fell to chance", [1.6, 1.4, 1.25, 1.15, 1.11, 1.10], np.log(3), ["ends at its chance level"]),
    ("too few windows", [2.0, 1.0, 0.5], None, ["only 3 logged loss windows: too few to judge"]),
    ("a model that learned", [2.0, 1.5, 1.2, 1.0, 0.9, 0.85, 0.8], np.log(16), []),
])
def test_a_model_that_moved_but_did_not_learn_is_said_so(what, windows, chance, because):
    config = TrainingConfig(learning_rate=2e-5, warmup_ratio=0.1)
    health = training_health(config, 10 * len(windows), 10 * len(windows), _losses(*windows), start_cosine=0.9,
                             chance=chance)
    assert health["active"], what  # it moved, at its peak rate: only the loss says it did not learn
    assert health["learned"] == (not because), (what, health["learned_reason"])
    assert all(b in health["learned_reason"] for b in because), (what, health["learned_reason"])
    assert health["at_chance"] == (None if chance is None else any("chance" in b for b in because))


def test_each_term_is_judged_and_the_health_table_says_whether_it_learned():
    """RCL's Eq. 3: Eq. 1 falls while the regulators stay flat; the loss (their sum) fell, so it learned."""
    config = TrainingConfig(learning_rate=3e-5, warmup_ratio=0.0)
    eq1 = [2.0, 1.6, 1.3, 1.1, 1.0]
    regulators = [0.30, 0.31, 0.29, 0.30, 0.31]
    losses = [{"step": 10 * (k + 1), "loss": a + b, "terms": {"Eq. 1": a, "regulators": b}}
              for k, (a, b) in enumerate(zip(eq1, regulators, strict=True))]
    health = training_health(config, 50, 50, losses, start_cosine=0.9)
    assert health["fell"] == {"loss": True, "Eq. 1": True, "regulators": False} and health["learned"]
    assert health["fall"]["Eq. 1"] == pytest.approx(1.0)
    rising = training_health(config, 50, 50, _losses(0.354, 0.371, 0.392, 0.405, 0.447), start_cosine=0.9)
    short = training_health(config, 20, 20, _losses(0.5, 0.3), start_cosine=0.9)
    table = health_table({"RCL": health, "entropy model": rising, "short": short})
    assert table.loc["RCL", "learned (loss fell)"] == "yes"
    assert table.loc["entropy model", "learned (loss fell)"].startswith("no: its loss rose")
    assert table.loc["short", "learned (loss fell)"].startswith("not judged: only 2 logged loss windows")


def test_the_losses_expose_their_chance_level():
    """SBERT's softmax loss over 3 NLI classes: ln 3; MNRL: ln of the candidates per anchor of its last batch
    (N positives and N x m hard negatives); a loss without one: None."""
    import torch

    from sentcl.losses import SoftmaxLoss
    from sentcl.losses.bsc import BatchSoftmaxContrastiveLoss

    model = tiny_model(0)
    assert SoftmaxLoss(model, num_labels=3).chance_level == pytest.approx(np.log(3))
    mnrl = MultipleNegativesRankingLoss(model)
    assert mnrl.chance_level is None
    torch.manual_seed(0)
    value = mnrl.compute_loss_from_embeddings([torch.randn(8, 4), torch.randn(8, 4), torch.randn(8, 4)])
    assert mnrl.chance_level == pytest.approx(np.log(16)) and float(value) > 0
    assert BatchSoftmaxContrastiveLoss(model).chance_level is None


def test_mean_cosine_is_rowwise():
    a = np.array([[1.0, 0.0], [0.0, 2.0]])
    assert mean_cosine(a, np.array([[2.0, 0.0], [0.0, -1.0]])) == pytest.approx(0.0)  # (1 + -1) / 2
    assert mean_cosine(a, a * 3) == pytest.approx(1.0)


@pytest.fixture(scope="module")
def pairs():
    return TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)


def test_a_trained_run_records_its_health_and_a_still_one_says_it_did_not_move(tmp_path, pairs):
    cache = ArtifactCache(tmp_path)
    moved = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, TrainingConfig(batch_size=8, learning_rate=1e-3,
                    log_steps=2), show_progress=False).train_cached(cache)
    assert moved.health["active"] and moved.health["trained_steps"] == moved.health["planned_steps"] == 15
    assert moved.health["start_cosine"] < 0.999 and moved.health["loss_start"]["step"] == 2
    still = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, TrainingConfig(batch_size=8, learning_rate=1e-9),
                    show_progress=False).train_cached(cache)
    assert not still.health["active"] and still.health["start_cosine"] > 0.99999 and "barely moved" in still.health["reason"]
    again = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, TrainingConfig(batch_size=8, learning_rate=1e-9),
                    show_progress=False).train_cached(cache)
    assert not again.trained and again.health == still.health  # read back with the cached run
    assert len(probe_sentences()) == 128 and len(set(probe_sentences())) == 128


def test_the_terms_of_an_objective_are_logged_and_add_up_to_its_loss(tmp_path):
    """BSC's combo (μ·BSC + (1 − μ)·MSE): each log entry holds the mean of each term, which add up to the loss."""
    record = load("stsbenchmark", "train", samples_root())
    data = TrainingData.from_record(record, labels=True)
    data = TrainingData(data.columns, data.labels / 5.0, name=data.name)  # gold scores as target similarities in [0, 1]
    trainer = Trainer(tiny_model(0), lambda m: ComboLoss(m, temperature=0.1, mu=0.5, threshold=0.6), data,
                      TrainingConfig(batch_size=8, learning_rate=1e-3, log_steps=3), show_progress=False)
    result = trainer.train(tmp_path)
    for entry in result.losses:
        assert set(entry["terms"]) == {"mu BSC", "(1-mu) MSE"}
        assert sum(entry["terms"].values()) == pytest.approx(entry["loss"], rel=1e-5)
    assert set(result.health["loss_start"]) == {"step", "loss", "mu BSC", "(1-mu) MSE"}
