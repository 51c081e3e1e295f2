"""Algorithm 1 of Tan et al. (2022) as cached stages (sentcl.training.entropy_models): loss-based early
stopping, entropy models and stores reused or rebuilt exactly as their inputs say, the final model's
key following its stores, and the FAQ variant on a COUGH-format fixture (the project's sample)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sentcl.artifacts import ArtifactCache
from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.embeddings import encode
from sentcl.errors import ConfigError
from sentcl.evaluation.retrieval import evaluate_retrieval
from sentcl.models import tiny_model
from sentcl.training import LossEarlyStopping, SequentialBatchSampler, TrainingConfig
from sentcl.training.entropy_models import (
    STORE_STAGE,
    augment,
    train_entropy_model,
    train_final_model,
    train_initial_model,
)

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py


def nli_like(n=16):
    words = ["a man plays", "the woman reads", "two kids run", "a dog sleeps", "people eat", "a cat jumps", "girls sing", "he cooks"]
    return TrainingData(
        {
            "anchor": [f"{words[k % 8]} in the park number {k}" for k in range(n)],
            "positive": [f"{words[k % 8]} outside {k}" for k in range(n)],
            "negative": [f"nobody {words[(k + 3) % 8]} {k}" for k in range(n)],
        },
        ids=np.arange(100, 100 + n),
    )


class FakeTrainer:
    """What LossEarlyStopping reads: the trainer's configuration, name and state (planned steps, running loss
    since the last log)."""

    def __init__(self, log_steps, config=None, total_steps=100):
        from sentcl.training.checkpoint import RunningMean

        self.log_steps, self.name = log_steps, "fake run"
        self.config = config or TrainingConfig(warmup_ratio=0.0)
        self.state = type("State", (), {"global_step": 0, "stopped_early": False, "loss_since_log": RunningMean(),
                                        "total_steps": total_steps})()

    def step(self, callback, loss):
        state = self.state
        state.global_step += 1
        state.loss_since_log.add(loss)
        callback.on_step_end(self)
        if state.global_step % self.log_steps == 0:
            state.loss_since_log.take()
        return state.stopped_early


@pytest.mark.parametrize("log_steps", [1, 3])
def test_early_stopping_reads_3_steps_of_loss_without_decrease(log_steps):
    """"Stop if the loss doesn't decrease within 3 steps": the step losses 5, 4, 4.5, 4, 3.9, 4, 4, 4.2
    reach their lowest at step 5; steps 6, 7, 8 do not go below it, so training stops after step 8."""
    losses = [5, 4, 4.5, 4, 3.9, 4, 4, 4.2, 1, 1]
    callback, trainer = LossEarlyStopping(patience=3), FakeTrainer(log_steps)
    stopped = next(k + 1 for k, loss in enumerate(losses) if trainer.step(callback, loss))
    assert stopped == 8 and callback.best == pytest.approx(3.9)
    # windows of 2 steps: means 4.5, 4.25, 3.95, 4.1 | 1 ... lowest 3.95 at step 6, then one window up: no stop yet
    windowed, trainer = LossEarlyStopping(patience=2, window=2), FakeTrainer(log_steps)
    assert not any(trainer.step(windowed, loss) for loss in losses[:8])
    assert [h["loss"] for h in windowed.history] == pytest.approx([4.5, 4.25, 3.95, 4.1])
    # its state survives a checkpoint: a restored copy continues identically
    copy = LossEarlyStopping(patience=2, window=2)
    copy.load_state_dict(windowed.state_dict())
    assert copy.state_dict() == windowed.state_dict()


def test_early_stopping_refuses_a_patience_that_ends_inside_the_warm_up():
    """Issue 23: 3 windows of one step stop a run no earlier than step 4, far inside a warm-up of 497 of 4,968
    steps; windows of 200 cannot stop it before step 800, after the warm-up; nor can a patience longer than the run."""
    config = TrainingConfig(warmup_ratio=0.1)
    with pytest.raises(ConfigError, match="could stop it at step 4, inside its warm-up of 497 of 4968 steps"):
        LossEarlyStopping(patience=3, window=1).on_train_begin(FakeTrainer(10, config, 4968))
    assert LossEarlyStopping(patience=3, window=200).earliest_stop() == 800
    LossEarlyStopping(patience=3, window=200).on_train_begin(FakeTrainer(10, config, 4968))
    LossEarlyStopping(patience=3, window=1).on_train_begin(FakeTrainer(10, TrainingConfig(warmup_ratio=0.0), 4968))
    LossEarlyStopping(patience=3, window=1).on_train_begin(FakeTrainer(10, config, 4))  # 1 warm-up step; stops at 4 at the earliest


def test_an_entropy_model_stops_3_steps_after_its_lowest_loss(tmp_path):
    """One batch repeated with a vanishing learning rate and no dropout: the loss never falls after
    step 1, so training stops after step 4 (steps 2, 3, 4 without a decrease), of the 50 allowed."""

    def start():
        model = tiny_model(seed=0)
        for module in model.modules():
            if isinstance(module, torch.nn.Dropout):
                module.p = 0.0
        return model

    config = TrainingConfig(batch_size=4, epochs=50, learning_rate=1e-30, warmup_ratio=0.0, seed=0, log_steps=1)
    _, result = train_entropy_model(start, nli_like(4), 0.02, config, scale=20.0, sampler=SequentialBatchSampler())
    assert result.stopped_early and result.global_step == 4


@pytest.mark.slow
def test_stages_are_reused_and_rebuilt_as_their_inputs_say(tmp_path):
    data = nli_like()
    cache = ArtifactCache(tmp_path / "cache")
    config = TrainingConfig(batch_size=8, max_steps=2, seed=0, log_steps=1)
    start = lambda: tiny_model(seed=0)  # noqa: E731
    first = augment(start, data, [0.01, 0.02], config, scale=20.0, cache=cache, show_progress=False)
    assert all(first.results[p].trained for p in first.phis)
    store = first.stores[0.01]
    assert store.columns == ["query", "index"] and len(store) == len(data) and store.array("query").dtype == np.float16
    np.testing.assert_allclose(  # the entropy model's own embeddings of the queries, by example id
        store.lookup("query", data.ids[[3, 1]]).astype(np.float32),
        encode(first.models[0.01], [data.columns["anchor"][3], data.columns["anchor"][1]], cache=False, precision="fp32"),
        rtol=3e-3, atol=3e-3,
    )
    assert not np.allclose(first.stores[0.01].array("query"), first.stores[0.02].array("query"))

    again = augment(start, data, [0.01, 0.03], config, scale=20.0, cache=cache, show_progress=False)
    assert not again.results[0.01].trained and again.results[0.03].trained  # only the changed φ trains
    assert again.stores[0.01].path == first.stores[0.01].path  # and only its store is new
    assert again.stores[0.03].path != first.stores[0.02].path

    final_config = TrainingConfig(batch_size=8, max_steps=2, seed=0, log_steps=1)
    _, final = train_final_model(start, data, first.stores_for([0.01, 0.02]), final_config, scale=20.0)
    _, same = train_final_model(start, data, first.stores_for([0.01, 0.02]), final_config, scale=20.0)
    _, other = train_final_model(start, data, again.stores_for([0.01, 0.03]), final_config, scale=20.0)
    assert final.trained and not same.trained and other.trained
    assert final.output_dir == same.output_dir != other.output_dir
    with pytest.raises(ConfigError, match="no entropy model for phi"):
        first.stores_for([0.05])


def test_each_run_and_store_is_built_under_the_stage_its_caller_names(tmp_path):
    """A chapter builds each artifact under the name its plan of runs gives it: augment's entropy models and stores
    under ``stages(φ)``, the final model under ``stage``, a named run through ``train(trainer, stage=...)``; a caller
    that names none gets the cache's default stages, and its ``train`` is called with the trainer alone."""
    data = nli_like(8)
    cache = ArtifactCache(tmp_path / "cache")
    config = TrainingConfig(batch_size=8, max_steps=1, seed=0, log_steps=1)
    start = lambda: tiny_model(seed=0)  # noqa: E731
    named: list[str] = []

    def train(trainer, stage):
        named.append(stage)
        return trainer.train_cached(cache, stage_name=stage)

    augmented = augment(start, data, [0.01], config, scale=20.0, cache=cache, train=train, show_progress=False,
                        stages=lambda phi: (f"x.entropy.{phi:g}", f"x.store.{phi:g}"))
    train_final_model(start, data, augmented.stores_for([0.01]), config, scale=20.0, train=train, stage="x.final")
    assert named == ["x.entropy.0.01", "x.final"]
    assert sorted(d.name for d in cache.root.iterdir()) == ["x.entropy.0.01", "x.final", "x.store.0.01"]
    assert augmented.stores[0.01].path.parent.name == "x.store.0.01"

    unnamed = augment(start, data, [0.01], config, scale=20.0, cache=cache, train=lambda t: t.train_cached(cache),
                      show_progress=False)
    assert unnamed.results[0.01].trained  # its own stage, not the named one
    assert {d.name for d in cache.root.iterdir()} >= {"train", STORE_STAGE}


@pytest.mark.slow
def test_faq_variant_on_a_cough_format_fixture():
    """Appendix A.1, FAQ datasets: an initial model (Eq. 1, selected by dev MAP), entropy models from it,
    the final model from the base, on the COUGH sample (question -> answer pairs)."""
    faq = load("cough", "faq_pairs", data_dir=samples_root())
    qids = list(faq.queries)
    train_q, dev_q = qids[:32], qids[32:]
    data = TrainingData({"query": [faq.queries[q] for q in train_q],
                         "index": [faq.corpus[next(iter(faq.qrels[q]))] for q in train_q]})
    dev = faq.take([qids.index(q) for q in dev_q])

    def dev_map(model):
        return {"map": evaluate_retrieval(dev, lambda t: encode(model, t, cache=False, precision="fp32"))["scores"]["map"]}

    base = lambda: tiny_model(seed=0)  # noqa: E731
    initial_config = TrainingConfig(batch_size=8, epochs=2, seed=0, eval_steps=2, metric_for_best="map", log_steps=1)
    initial, result = train_initial_model(base, data, initial_config, scale=20.0, evaluator=dev_map)
    assert result.best_metric == max(e["map"] for e in result.evaluations)
    from sentcl.models import fingerprint

    assert fingerprint(initial()) != fingerprint(base())  # the entropy models start from the initial model
    entropy_config = TrainingConfig(batch_size=8, max_steps=3, seed=0, log_steps=1)
    augmented = augment(initial, data, [0.01, 0.02], entropy_config, scale=20.0, show_progress=False)
    _, final = train_final_model(base, data, augmented.stores_for([0.01, 0.02]),
                                     TrainingConfig(batch_size=8, max_steps=2, seed=0, log_steps=1), scale=20.0,
                                     evaluator=dev_map)
    assert final.trained and 0.0 <= final.final_metrics["map"] <= 1.0
    with pytest.raises(ConfigError, match="metric_for_best"):
        train_initial_model(base, data, TrainingConfig(batch_size=8), scale=20.0, evaluator=dev_map)
