"""One configuration trained with several seeds: every seed scored ("mean"), or the best on dev (§5.2)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from sentcl.data.records import TrainingData
from sentcl.errors import ConfigError
from sentcl.training import TrainingConfig
from sentcl.training.health import training_health
from sentcl.training.seeds import SavedModel, check_seed_summary, train_seeds

DEV = {0: 0.5, 1: 0.7, 2: 0.7, 3: 0.6}  # seed -> its dev score: seeds 1 and 2 tie for the best


class FakeModel:
    def __init__(self, seed: int, start: str | None) -> None:
        self.seed, self.start = seed, start

    def save(self, folder: str) -> None:
        Path(folder).mkdir(parents=True)
        (Path(folder) / "seed").write_text(str(self.seed))


def fake_trainer(metric: str | None = "map", greater_is_better: bool = True):
    """``trainer_for`` and the ``train`` it goes with: a run's best dev score is DEV[seed]."""
    built: list[tuple[int, str | None]] = []

    def trainer_for(seed, start):
        built.append((seed, start))
        config = TrainingConfig(seed=seed, eval_steps=1 if metric else None, metric_for_best=metric,
                                greater_is_better=greater_is_better)
        return SimpleNamespace(config=config, model=FakeModel(seed, start), data=TrainingData({"a": ["x"] * 7}, name="toy"),
                               name=f"toy seed {seed}")

    def train(trainer):
        seed = trainer.config.seed
        evaluations = [{"step": 1, "map": DEV[seed]}] if metric else []
        return SimpleNamespace(seed=seed, best_metrics=evaluations[0] if evaluations else {},
                               health=training_health(trainer.config, 1, 1, [{"step": 1, "loss": 1.0}], start_cosine=0.9))

    return trainer_for, train, built


def test_mean_scores_every_seed_and_keeps_each_seeds_model(tmp_path):
    trainer_for, train, _ = fake_trainer(metric=None)
    logged = []
    runs = train_seeds(trainer_for, [0, 1, 2], score=lambda m: {"score": m.seed}, train=train, save_to=tmp_path / "MSE",
                       log=logged.append)
    assert runs.scores == {0: {"score": 0}, 1: {"score": 1}, 2: {"score": 2}}
    assert runs.kept is None and runs.dev == {0: None, 1: None, 2: None}
    assert {s: [r.seed for r in rs] for s, rs in runs.rests().items()} == {0: [0], 1: [1], 2: [2]}
    assert {s: Path(m.folder).name for s, m in runs.saved.items()} == {0: "seed0", 1: "seed1", 2: "seed2"}
    assert (Path(runs.saved[2].folder) / "seed").read_text() == "2"
    assert runs.note() == "mean ± std over seeds [0, 1, 2]"
    assert runs.describe() == "7 rows of toy, every seed scored" and runs.trained_on == "toy"
    assert len(logged) == 3 and logged[0].startswith("toy seed 0: 1 of 1 steps")


def test_best_on_dev_scores_only_the_first_best_seed_and_every_seed_starts_from_it_later(tmp_path):
    trainer_for, train, _ = fake_trainer()
    scored = []
    runs = train_seeds(trainer_for, [0, 1, 2, 3], seed_summary="best on dev", train=train, save_to=tmp_path / "BSC",
                       score=lambda m: scored.append(m.seed) or m.seed, log=None)
    assert scored == [1] and runs.kept == 1 and runs.scores == {1: 1}  # seeds 1 and 2 tie: the first is kept
    assert runs.dev == DEV and runs.dev_metric == "map"
    assert runs.note() == "seed 1 of [0, 1, 2, 3], the best on dev"
    assert "seed 1 kept; dev map: seed 0 0.5000, seed 1 0.7000" in runs.describe()
    assert set(runs.saved) == {0, 1, 2, 3} and len({m.folder for m in runs.saved.values()}) == 1
    assert Path(runs.saved[3].folder).name == "seed1"
    # a fine-tuning row: seed k starts from the saved model and rests on its runs too
    trainer_for, train, built = fake_trainer(metric=None)
    later = train_seeds(trainer_for, [0, 3], train=train, starts_from=runs.saved, log=None, score=lambda m: m.start)
    assert built == [(0, runs.saved[1].folder), (3, runs.saved[1].folder)]
    assert [r.seed for r in later.rests()[3]] == [3, 1]  # its own run, then the run of the model it started from


def test_lower_is_better_and_one_seed():
    trainer_for, train, _ = fake_trainer(greater_is_better=False)
    assert train_seeds(trainer_for, [0, 1, 3], seed_summary="best on dev", train=train, log=None).kept == 0
    trainer_for, train, _ = fake_trainer(metric=None)
    one = train_seeds(trainer_for, [0], seed_summary="best on dev", train=train, log=None, score=lambda m: 1.0)
    assert one.scores == {0: 1.0} and one.note() == "seed 0"


def test_starts_from_without_save_is_the_base_model():
    trainer_for, train, built = fake_trainer(metric=None)
    start = {0: SavedModel("/somewhere/seed0", ())}
    train_seeds(trainer_for, [0, 1], train=train, starts_from=start, log=None)
    assert built == [(0, "/somewhere/seed0"), (1, None)]


@pytest.mark.parametrize(("summary", "seeds", "select_on_dev", "message"), [
    ("median", [0], True, r"seed_summary = 'median': expected one of 'best on dev', 'mean'"),
    ("mean", [], True, r"seeds = \[\]: expected at least one seed"),
    ("best on dev", [0, 1], False, r"'best on dev' with seeds \[0, 1\] needs select_on_dev = True"),
])
def test_a_summary_that_cannot_be_computed_is_refused(summary, seeds, select_on_dev, message):
    with pytest.raises(ConfigError, match=message):
        check_seed_summary(summary, seeds, select_on_dev)
    check_seed_summary("best on dev", [0], False)  # one seed needs no dev scores
    check_seed_summary("mean", [0, 1], False)
