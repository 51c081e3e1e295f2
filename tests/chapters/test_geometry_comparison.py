"""The equal-budget comparison: four methods, one trainer, one budget; costs from the cache's manifests."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from sentcl.artifacts import ArtifactCache
from sentcl.chapters.geometry.comparison import METHODS, MethodRun, MethodSettings, cost_ratios, stage_seconds, train_method
from sentcl.data.records import ScoredPairs, TrainingData
from sentcl.errors import ConfigError
from sentcl.losses import BatchSoftmaxContrastiveLoss, IFCLLoss, MultipleNegativesRankingLoss
from sentcl.losses.rcl import RegulatorLoss
from sentcl.models import tiny_model
from sentcl.training import GeometryCallback, TrainingConfig
from sentcl.training.shuffling import ExampleBasedShuffler

pytestmark = pytest.mark.usefixtures("one_thread")

WORDS = "red green blue small large quick slow bright dark warm cold old new".split()


@pytest.fixture(scope="module")
def pairs():
    rng = np.random.default_rng(0)
    queries = [" ".join(rng.choice(WORDS, 5)) + f" {i}" for i in range(24)]
    return TrainingData(columns={"query": queries, "index": [q.upper() for q in queries]}, name="toy pairs")


@pytest.fixture(scope="module")
def sts():
    rng = np.random.default_rng(1)
    s1 = [" ".join(rng.choice(WORDS, 4)) for _ in range(12)]
    return ScoredPairs(name="toy-sts", split="test", sentences1=s1, sentences2=[s[::-1] for s in s1],
                       scores=np.linspace(0, 5, 12), subsets=["x"] * 12)


def config(seed=0):
    return TrainingConfig(batch_size=8, learning_rate=1e-3, max_steps=3, seed=seed, log_steps=1)


SETTINGS = MethodSettings(phis=(0.01, 0.02), entropy_steps=2, neighbours=8, group_size=4)


@pytest.mark.slow
def test_each_method_trains_with_its_own_loss_on_the_same_budget(pairs, sts):
    cache = ArtifactCache()
    seen = {}

    def train(trainer):
        seen.setdefault(trainer.name, trainer)
        return trainer.train_cached(cache)

    runs = {}
    for method in METHODS:
        callback = GeometryCallback(sts, every_steps=2)
        runs[method] = train_method(method, lambda: tiny_model(0), pairs, config(), SETTINGS, train=train,
                                    callbacks=[callback], name=f"{method} seed 0")
        assert runs[method].result.global_step == 3  # the same number of steps for every method
        assert [h["step"] for h in callback.history] == [0, 2]  # the final run's trajectory
        assert json.loads((runs[method].result.output_dir / "geometry.json").read_text()) == callback.history
    losses = {m: type(seen[f"{m} seed 0"].loss) for m in METHODS}
    assert losses == {"MNRL": MultipleNegativesRankingLoss, "BSC": BatchSoftmaxContrastiveLoss,
                      "RCL": RegulatorLoss, "IFCL": IFCLLoss}
    assert isinstance(seen["BSC seed 0"].sampler, ExampleBasedShuffler)
    # IFCL never sees the pairs' second sentences: its rows are the queries and their twins
    ifcl = seen["IFCL seed 0"].data
    assert ifcl.columns["text"] == pairs.columns["query"] and not set(ifcl.columns["fraternal"]) & set(pairs.columns["index"])
    # RCL's cost holds its entropy models and stores; the others one training stage each
    assert set(runs["RCL"].stages) == {"entropy model φ=0.01", "store φ=0.01", "entropy model φ=0.02", "store φ=0.02",
                                       "training"}
    assert all(set(runs[m].stages) == {"training"} for m in ("MNRL", "BSC", "IFCL"))
    assert all(r.cost_s > 0 for r in runs.values())
    # a rerun loads every stage from the cache and reports the same (recorded) costs
    again = train_method("RCL", lambda: tiny_model(0), pairs, config(), SETTINGS, train=train, name="RCL seed 0")
    assert not again.result.trained and again.stages == runs["RCL"].stages


@pytest.mark.slow
def test_runs_are_built_under_the_stage_names_given(pairs, tmp_path, monkeypatch):
    """stage= names the method's run, entropy_stage(phi) RCL's entropy models and store_stage(phi) their stores:
    through a chapter's train (stage=) and through the default Trainer.train_cached (stage_name=); nothing is
    left under the stores' default stage name."""
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path))
    names = []

    def train(trainer, stage=None):
        names.append(stage)
        return trainer.train_cached(stage_name=stage)

    settings = MethodSettings(phis=(0.01, 0.02), entropy_steps=2)
    rcl = train_method("RCL", lambda: tiny_model(0), pairs, config(), settings, train=train, stage="ch.RCL.seed.0",
                       entropy_stage=lambda phi: f"ch.entropy.{phi:g}", store_stage=lambda phi: f"ch.store.{phi:g}")
    assert names == ["ch.entropy.0.01", "ch.entropy.0.02", "ch.RCL.seed.0"]
    assert rcl.result.output_dir.parent.name == "ch.RCL.seed.0"
    assert [r.output_dir.parent.name for r in rcl.upstream] == ["ch.entropy.0.01", "ch.entropy.0.02"]
    assert set(rcl.stages) == {"entropy model φ=0.01", "store φ=0.01", "entropy model φ=0.02", "store φ=0.02", "training"}
    default = train_method("RCL", lambda: tiny_model(0), pairs, config(), replace(settings, phis=(0.03,)),
                           stage="cd.RCL.seed.0", entropy_stage=lambda phi: f"cd.entropy.{phi:g}",
                           store_stage=lambda phi: f"cd.store.{phi:g}")
    assert [r.output_dir.parent.name for r in default.runs] == ["cd.RCL.seed.0", "cd.entropy.0.03"]
    mnrl = train_method("MNRL", lambda: tiny_model(0), pairs, config(), settings, stage="ch.MNRL.seed.0")
    assert mnrl.result.output_dir.parent.name == "ch.MNRL.seed.0"
    built = {p.name for p in (tmp_path / "artifacts").iterdir()}
    assert built == {"ch.entropy.0.01", "ch.entropy.0.02", "ch.store.0.01", "ch.store.0.02", "ch.RCL.seed.0",
                     "cd.entropy.0.03", "cd.store.0.03", "cd.RCL.seed.0", "ch.MNRL.seed.0"}


def test_stores_are_named_beside_their_entropy_models(pairs):
    """A store's name alone is refused: the entropy model it encodes with would be built under the cache's default."""
    with pytest.raises(ConfigError, match="pass entropy_stage with store_stage"):
        train_method("RCL", lambda: tiny_model(0), pairs, config(), store_stage=lambda phi: f"ch.store.{phi:g}")


def test_stage_seconds_leave_out_geometry_measuring(tmp_path):
    (tmp_path / "artifact.json").write_text(json.dumps({"build_time_s": 10.0}))
    assert stage_seconds(tmp_path) == 10.0
    (tmp_path / "geometry.json").write_text(json.dumps([{"step": 0, "seconds": 1.5}, {"step": 5, "seconds": 2.0}]))
    assert stage_seconds(tmp_path) == pytest.approx(6.5)
    with pytest.raises(ValueError, match=r"artifact\.json"):
        stage_seconds(tmp_path / "missing")


def test_cost_ratios_are_means_over_seeds_relative_to_mnrl():
    def run(method, seed, seconds):
        return MethodRun(method, seed, model=None, result=None, stages={"training": seconds})

    runs = [run("MNRL", 0, 10), run("MNRL", 1, 30), run("BSC", 0, 22), run("BSC", 1, 22), run("RCL", 0, 60)]
    assert cost_ratios(runs) == {"MNRL": 1.0, "BSC": pytest.approx(1.1), "RCL": pytest.approx(3.0)}
    with pytest.raises(ValueError, match="MNRL"):
        cost_ratios(runs[2:])


def test_bad_input(pairs):
    with pytest.raises(ValueError, match="method"):
        train_method("SimCSE", lambda: tiny_model(0), pairs, config())
    three = TrainingData(columns={**pairs.columns, "negative": pairs.columns["index"][::-1]}, name="triplets")
    with pytest.raises(ValueError, match="unlabelled"):
        train_method("MNRL", lambda: tiny_model(0), three, config())
