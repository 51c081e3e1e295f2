"""The trainer on the tiny model: seeded, resumable with loss/sampler/callback state, model selection,
early stopping, ids to losses, re-encoding samplers, gradient caching and accumulation, mixed precision."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy.stats import spearmanr
from sentence_transformers import SentenceTransformer
from torch import nn

from sentcl.artifacts import ArtifactCache
from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.embeddings import embedder, encode
from sentcl.errors import ConfigError
from sentcl.evaluation.geometry import evaluate_geometry
from sentcl.evaluation.scoring import dev_evaluator
from sentcl.losses import MultipleNegativesRankingLoss, SentclLoss, SoftmaxLoss
from sentcl.models import tiny_model
from sentcl.training import (
    BatchSampler,
    Callback,
    GeometryCallback,
    NoDuplicatesBatchSampler,
    SequentialBatchSampler,
    Trainer,
    TrainingConfig,
    checkpoint,
)
from sentcl.training.checkpoint import load_state

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py


@pytest.fixture(scope="module")
def nli():
    return load("snli", "train", samples_root())


@pytest.fixture(scope="module")
def pairs(nli):
    """120 (premise, entailed hypothesis) pairs of the sample SNLI."""
    return TrainingData.from_record(nli.with_label("entailment"), labels=False)


@pytest.fixture(scope="module")
def sts_dev():
    return load("stsbenchmark", "dev", samples_root())


@pytest.fixture(scope="module")
def evaluator(sts_dev):
    return dev_evaluator("STSb", sts_dev)


def test_sts_evaluator_is_the_cosine_spearman_of_the_dev_pairs(sts_dev):
    model = tiny_model(0)
    a = encode(model, sts_dev.sentences1, precision="fp32", cache=False)
    b = encode(model, sts_dev.sentences2, precision="fp32", cache=False)
    cos = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    metrics = dev_evaluator("STSb", sts_dev, precision="fp32")(model)
    assert metrics["spearman"] == pytest.approx(100 * spearmanr(cos, sts_dev.scores).statistic, abs=1e-9)
    assert set(metrics) == {"spearman", "pearson"}


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def same_weights(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def assert_close_to_scale(got: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Equal up to float rounding of sums taken in another order: within 1e-4 of the tensor's largest entry
    (and 1e-9, for gradients that are zero in exact arithmetic, e.g. of attention key biases)."""
    scale = expected.abs().max().item()
    torch.testing.assert_close(got, expected, rtol=0.0, atol=1e-4 * scale + 1e-9, msg=lambda m: f"{what}: {m}")


def without_dropout(model: SentenceTransformer) -> SentenceTransformer:
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


FAST = dict(batch_size=8, learning_rate=1e-3, log_steps=4)


# ---------------------------------------------------------------------------------------- determinism


@pytest.mark.slow
def test_same_seed_same_numbers(tmp_path, pairs, evaluator):
    cfg = TrainingConfig(**FAST, seed=3, eval_fraction=0.5)
    runs = []
    for name, seed in (("a", 3), ("b", 3), ("c", 4)):
        model = tiny_model(0)  # dropout 0.1 on: the seed must fix the masks too
        config = TrainingConfig(**{**cfg.to_dict(), "seed": seed})
        trainer = Trainer(model, MultipleNegativesRankingLoss, pairs, config, sampler=NoDuplicatesBatchSampler(),
                          evaluator=evaluator, show_progress=False)
        result = trainer.train(tmp_path / name)
        runs.append((result, weights(model)))
    (a, wa), (b, wb), (c, wc) = runs
    assert a.losses == b.losses and a.evaluations == b.evaluations and same_weights(wa, wb)
    assert [e["step"] for e in a.evaluations] == [8, 15]  # eval_fraction 0.5 of 15 steps
    assert a.losses != c.losses and not same_weights(wa, wc)


# ---------------------------------------------------------------------------------------- resume


class QueueLoss(SentclLoss):
    """MNRL whose negatives also include a queue of past batches' positives (as IFCL's hippocampus
    queue), and which needs the rows' ids: state that a resume must restore."""

    batch_extras = ("ids",)

    def __init__(self, model, size: int = 16):
        super().__init__(model)
        dim = model.get_embedding_dimension()
        self.register_buffer("queue", torch.zeros(size, dim))
        self.register_buffer("filled", torch.zeros((), dtype=torch.long))
        self.ids_seen: list[list[int]] = []

    def compute_loss_from_embeddings(self, embeddings, labels=None, *, ids):
        self.ids_seen.append(ids.tolist())
        anchors, positives = embeddings
        candidates = torch.cat([positives, self.queue[: int(self.filled)]])
        scores = 20 * F.normalize(anchors, dim=-1) @ F.normalize(candidates, dim=-1).T
        loss = F.cross_entropy(scores, torch.arange(len(anchors)))
        with torch.no_grad():
            self.queue = torch.cat([positives.detach().float(), self.queue])[: len(self.queue)]
            self.filled = torch.clamp(self.filled + len(positives), max=len(self.queue))
        return loss

    def get_config_dict(self):
        return {"size": len(self.queue)}


class Recorder(Callback):
    """Keeps the training loss of every step: callback state that must survive the resume."""

    name = "recorder"

    def __init__(self):
        self.steps = []

    def on_step_end(self, trainer):
        self.steps.append(trainer.state.global_step)

    def state_dict(self):
        return {"steps": list(self.steps)}

    def load_state_dict(self, state):
        self.steps = list(state["steps"])


class CrashAt(Callback):
    name = "crash"

    def __init__(self, step):
        self.step = step

    def on_step_end(self, trainer):
        if trainer.state.global_step == self.step:
            raise KeyboardInterrupt("simulated crash")


@pytest.mark.slow
def test_resume_restores_loss_sampler_and_callback_state(tmp_path, pairs, evaluator, sts_dev):
    cfg = TrainingConfig(**FAST, epochs=2, checkpoint_steps=4, eval_fraction=0.5)

    def trainer(extra=()):
        model = tiny_model(0)
        callbacks = [Recorder(), GeometryCallback(sts_dev, every_steps=7), *extra]
        return Trainer(model, QueueLoss, pairs, cfg, sampler=NoDuplicatesBatchSampler(), evaluator=evaluator,
                       callbacks=callbacks, show_progress=False)

    straight = trainer()
    expected = straight.train(tmp_path / "straight")
    # ids reach the loss: every row once per epoch
    for epoch in (straight.loss.ids_seen[:15], straight.loss.ids_seen[15:]):
        assert sorted(i for batch in epoch for i in batch) == list(range(len(pairs)))

    crashing = trainer(extra=[CrashAt(22)])  # in epoch 2, after the checkpoint at step 20
    with pytest.raises(KeyboardInterrupt):
        crashing.train(tmp_path / "resumed")
    resumed = trainer()
    got = resumed.train(tmp_path / "resumed")
    assert got.resumed_from_step == 20
    assert got.evaluations == expected.evaluations and got.losses == expected.losses
    assert same_weights(weights(resumed.model), weights(straight.model))
    assert torch.equal(resumed.loss.queue, straight.loss.queue)
    assert resumed.callbacks[0].steps == straight.callbacks[0].steps == list(range(1, 31))
    geometry = straight.callbacks[1].history
    assert all(g.pop("seconds") >= 0 for g in geometry)  # the time a measurement took: not a resumed quantity
    saved = json.loads((tmp_path / "resumed" / "geometry.json").read_text())
    assert all(g.pop("seconds") >= 0 for g in saved) and saved == geometry
    assert [{k: v for k, v in g.items() if k != "seconds"} for g in resumed.callbacks[1].history] == geometry
    assert [g["step"] for g in geometry] == [0, 7, 14, 21, 28]
    initial = evaluate_geometry(sts_dev, embedder(tiny_model(0), precision="fp32", cache=False))
    assert geometry[0] == {"step": 0, **{k: initial[k] for k in ("alignment", "uniformity", "anisotropy", "top_variance_share")}}
    assert resumed.loss.ids_seen == straight.loss.ids_seen[20:]


def test_output_folder_keeps_the_layout_of_checkpoint_format_1(tmp_path, pairs):
    """The names and entries that checkpoints written by earlier versions have: they must still resume."""
    scores = iter([0.5, 0.1])
    cfg = TrainingConfig(**FAST, eval_steps=2, metric_for_best="dev", checkpoint_steps=1, keep_checkpoints=2)
    crashing = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, evaluator=lambda m: {"dev": next(scores)},
                       callbacks=[CrashAt(5)], show_progress=False)
    with pytest.raises(KeyboardInterrupt):
        crashing.train(tmp_path)
    # checkpoints after every step; the newest two kept; the best weights of step 2
    assert sorted(p.name for p in (tmp_path / "checkpoints").iterdir()) == ["checkpoint-00000003", "checkpoint-00000004"]
    assert [p.name for p in (tmp_path / "best").iterdir()] == ["step-00000002"]
    assert sorted(p.name for p in (tmp_path / "best" / "step-00000002").iterdir()) == [
        "best.json", "state.json", "state.safetensors"]  # fmt: skip
    folder = tmp_path / "checkpoints" / "checkpoint-00000004"
    assert sorted(p.name for p in folder.iterdir()) == ["state.json", "state.safetensors"]
    tree = load_state(folder)
    assert list(tree) == "format trainer plan model loss optimizer scheduler scaler sampler callbacks rng".split()
    assert list(tree["trainer"]) == (
        "run_key world_size total_steps steps_per_epoch epoch batches_done global_step best_metric best_step "
        "stopped_early done losses evaluations terms_sum_since_log loss_sum_since_log steps_since_log loss_sum_since_eval "
        "steps_since_eval"
    ).split()
    assert tree["format"] == 1 and tree["trainer"]["global_step"] == 4 and tree["trainer"]["best_step"] == 2
    assert (tree["trainer"]["steps_since_log"], tree["trainer"]["steps_since_eval"]) == (0, 0)  # logged, evaluated at 4
    # the schedule's attributes, once per parameter group (weight matrices, biases and LayerNorm weights)
    assert tree["scheduler"]["lr_lambdas"] == [{"kind": "linear", "warmup_steps": 2, "total_steps": 15}] * 2
    resumed = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, TrainingConfig(**{**cfg.to_dict(), "max_steps": 6}),
                      evaluator=lambda m: {"dev": 0.0}, show_progress=False)
    with pytest.raises(ConfigError, match="holds checkpoints of another run"):  # max_steps is part of the run's key
        resumed.train(tmp_path)
    resumed = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, evaluator=lambda m: {"dev": 0.0},
                      show_progress=False)
    result = resumed.train(tmp_path)
    assert result.resumed_from_step == 4 and result.global_step == 15 and result.best_step == 2


def test_checkpoints_on_their_own_cadence_never_per_evaluation_and_the_run_says_what_they_cost(tmp_path, pairs):
    """Evaluating (and improving) after every step writes no checkpoint, only the best weights, the older
    ones removed; by default a run checkpoints every 10 minutes (none in a short run) and at the end; the
    clock, read at logging steps, checkpoints there once its minutes have passed; the run record counts
    the checkpoints and best weights written, their bytes and seconds."""
    def trainer(cfg, crash=None, scores=None):
        scores = iter(scores if scores is not None else np.linspace(0.0, 1.0, 16))
        return Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, evaluator=lambda m: {"dev": next(scores)},
                       callbacks=[CrashAt(crash)] if crash else [], show_progress=False)

    every_step = TrainingConfig(**FAST, eval_steps=1, metric_for_best="dev", keep_checkpoints=20)
    with pytest.raises(KeyboardInterrupt):
        trainer(every_step, crash=9).train(tmp_path / "evaluating")
    assert not (tmp_path / "evaluating" / "checkpoints").exists()  # 8 evaluations, no checkpoint
    assert [p.name for p in (tmp_path / "evaluating" / "best").iterdir()] == ["step-00000008"]
    result = trainer(every_step).train(tmp_path / "whole")
    assert result.global_step == 15 and result.best_step == 15
    written = result.run["checkpoints"]
    assert written["count"] == 1 and written["bytes"] > 100_000 and written["seconds"] > 0  # the end's
    assert written["background_seconds"] > 0  # the files written off the loop
    best = result.run["best_weights"]
    assert best["count"] == 15 and written["bytes"] > best["bytes"] / 15 > 0  # weights only, without Adam's moments

    clocked = TrainingConfig(**FAST, checkpoint_minutes=1e-9, keep_checkpoints=20)
    crashing = trainer(clocked, crash=9)
    with pytest.raises(KeyboardInterrupt):
        crashing.train(tmp_path / "clocked")
    folders = checkpoint.checkpoints(tmp_path / "clocked")
    assert [p.name for p in folders] == ["checkpoint-00000004", "checkpoint-00000008"]  # the log steps (every 4)
    counted = crashing._writes["checkpoints"]
    assert counted.count == 2 and counted.bytes == sum(f.stat().st_size for d in folders for f in d.iterdir())


def test_finished_run_is_loaded_and_foreign_runs_refused(tmp_path, pairs):
    cfg = TrainingConfig(**FAST, max_steps=3)
    first = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, show_progress=False)
    first.train(tmp_path)
    assert not (tmp_path / "checkpoints").exists() and (tmp_path / "model" / "modules.json").is_file()
    again = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, show_progress=False)
    result = again.train(tmp_path)
    assert result.resumed_from_step is None and result.global_step == 3
    assert same_weights(weights(again.model), weights(first.model))
    other = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs,
                    TrainingConfig(**{**cfg.to_dict(), "learning_rate": 5e-4}), show_progress=False)
    with pytest.raises(ConfigError, match="another configuration"):
        other.train(tmp_path)


def test_train_cached_reuses_and_invalidates(tmp_path, pairs):
    cache = ArtifactCache(tmp_path)
    cfg = TrainingConfig(**FAST, max_steps=2)

    def run(config):
        recorder = Recorder()
        trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, config, callbacks=[recorder],
                          show_progress=False)
        return trainer.train_cached(cache), recorder.steps, trainer

    first, steps, trainer = run(cfg)
    assert steps == [1, 2] and first.output_dir == cache.path(trainer.stage())
    second, steps, _ = run(cfg)
    assert steps == [] and second.output_dir == first.output_dir  # a hit: nothing trained
    third, steps, _ = run(TrainingConfig(**{**cfg.to_dict(), "learning_rate": 5e-4}))
    assert steps == [1, 2] and third.output_dir != first.output_dir
    # output-only options do not change the key
    for option in ({"log_steps": 1}, {"checkpoint_steps": 1, "keep_checkpoints": 2}):
        _, steps, _ = run(TrainingConfig(**{**cfg.to_dict(), **option}))
        assert steps == [], option


# ---------------------------------------------------------------------------------------- model selection


def test_best_checkpoint_and_early_stopping(tmp_path, pairs):
    scripted = iter([0.1, 0.5, 0.3, 0.2, 0.9])

    class Snapshot(Callback):
        name = "snapshot"

        def __init__(self):
            self.at = {}

        def on_step_end(self, trainer):
            self.at[trainer.state.global_step] = weights(trainer.model)

    cfg = TrainingConfig(**FAST, eval_steps=2, metric_for_best="dev", early_stopping_patience=4)
    snapshot = Snapshot()
    trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, evaluator=lambda m: {"dev": next(scripted)},
                      callbacks=[snapshot], show_progress=False)
    result = trainer.train(tmp_path)
    assert [e["step"] for e in result.evaluations] == [2, 4, 6, 8]
    assert result.stopped_early and result.global_step == 8
    assert result.best_step == 4 and result.best_metric == 0.5 and result.best_metrics["dev"] == 0.5
    assert same_weights(weights(trainer.model), snapshot.at[4])
    saved = SentenceTransformer(str(result.model_dir), device="cpu")
    assert same_weights(weights(saved), snapshot.at[4])
    state = json.loads((tmp_path / "trainer_state.json").read_text())
    assert state["state"]["best_step"] == 4 and state["state"]["done"]


def test_monitoring_the_training_loss(tmp_path, pairs):
    cfg = TrainingConfig(**FAST, eval_steps=1, metric_for_best="train_loss", greater_is_better=False,
                         early_stopping_patience=3, max_steps=15)
    result = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, show_progress=False).train(tmp_path)
    losses = [e["train_loss"] for e in result.evaluations]
    assert losses[result.best_step - 1] == min(losses)
    if result.stopped_early:
        assert result.global_step - result.best_step == 3


# ---------------------------------------------------------------------------------------- samplers, loss options


class RecordingSequential(BatchSampler):
    """The data's order (like SequentialBatchSampler), but it asks for the current embeddings."""

    reencodes = True

    def __init__(self):
        super().__init__()
        self.embeddings = []

    def plan(self, data, batch_size, rng, encode):
        self.embeddings.append(encode(data.columns["sentence1"][:10]))
        order = np.arange(len(data))
        return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


@pytest.mark.slow
def test_reencoding_sampler_sees_the_current_model_and_leaves_training_alone(tmp_path, pairs):
    cfg = TrainingConfig(**FAST, epochs=2)
    sampler = RecordingSequential()
    reencoding = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, sampler=sampler, show_progress=False)
    reencoding.train(tmp_path / "a")
    plain = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, sampler=SequentialBatchSampler(),
                    show_progress=False)
    plain.train(tmp_path / "b")
    assert len(sampler.embeddings) == 2
    first, second = sampler.embeddings
    # fp32 against fp32: the trainer re-encodes with "auto", which is fp32 on every CPU
    assert np.allclose(first, encode(tiny_model(0), pairs.columns["sentence1"][:10], precision="fp32", cache=False))
    assert not np.allclose(first, second)  # epoch 2 was planned with the trained model
    assert same_weights(weights(reencoding.model), weights(plain.model))  # encoding between epochs changed nothing


class TemperatureLoss(MultipleNegativesRankingLoss):
    """MNRL with a trainable inverse temperature that has its own learning rate (as in BSC)."""

    def __init__(self, model):
        super().__init__(model)
        self.log_scale = nn.Parameter(torch.tensor(3.0))

    def compute_loss_from_embeddings(self, embeddings, labels=None):
        a, p = embeddings
        scores = self.log_scale.exp() * F.normalize(a, dim=-1) @ F.normalize(p, dim=-1).T
        return F.cross_entropy(scores, torch.arange(len(a)))

    def parameter_groups(self):
        return [{"params": [self.log_scale], "lr": 0.05, "weight_decay": 0.0}]


def test_loss_parameter_groups_and_state(tmp_path, pairs):
    cfg = TrainingConfig(**FAST, max_steps=3, scheduler="constant", weight_decay=0.01)
    trainer = Trainer(tiny_model(0), TemperatureLoss, pairs, cfg, show_progress=False)
    trainer.train(tmp_path)
    groups = trainer.optimizer.param_groups
    assert groups[-1]["lr"] == 0.05 and groups[-1]["params"][0] is trainer.loss.log_scale
    assert groups[0]["weight_decay"] == 0.01 and groups[1]["weight_decay"] == 0.0  # matrices / biases, LayerNorm
    assert trainer.loss.log_scale.item() != 3.0


def test_bad_inputs_are_refused(pairs):
    model = tiny_model(0)

    class NeedsScores(SentclLoss):
        batch_extras = ("scores",)

        def compute_loss_from_embeddings(self, embeddings, labels=None, **extras):
            return embeddings[0].sum()

        def get_config_dict(self):
            return {}

    with pytest.raises(ConfigError, match=r"asks for batch extras \['scores'\]"):
        Trainer(model, NeedsScores(model), pairs)
    with pytest.raises(ConfigError, match="TrainingData"):
        Trainer(model, MultipleNegativesRankingLoss(model), [("a", "b")])
    labelled = TrainingData({"a": ["x", "y"], "b": ["u", "v"]}, labels=[0, 1])
    with pytest.raises(ConfigError, match="takes no labels"):
        Trainer(model, MultipleNegativesRankingLoss(model), labelled, TrainingConfig(batch_size=2)).step_gradients([[0, 1]])


# ---------------------------------------------------------------------------------------- gradients


def _grads(trainer: Trainer, batches) -> tuple[float, dict[str, torch.Tensor]]:
    value = trainer.step_gradients(batches)
    named = {f"model.{k}": p for k, p in trainer.model.named_parameters()}
    named.update({f"loss.{k}": p for k, p in trainer.loss.named_parameters() if not k.startswith("model.")})
    return value, {k: p.grad.clone() for k, p in named.items() if p.grad is not None}


@pytest.mark.parametrize("loss_name", ["mnrl", "softmax"])
def test_gradient_cache_gives_the_plain_gradients(nli, loss_name):
    if loss_name == "mnrl":  # (premise, entailment, contradiction) triplets: hard negatives too
        e, c = nli.with_label("entailment"), nli.with_label("contradiction")
        data = TrainingData({"anchor": e.sentences1[:10], "positive": e.sentences2[:10], "negative": c.sentences2[:10]})
        make = MultipleNegativesRankingLoss
    else:
        data = TrainingData.from_record(nli).take(range(10))
        make = lambda m: SoftmaxLoss(m, num_labels=3)  # noqa: E731
    rows = np.arange(10)
    plain = Trainer(without_dropout(tiny_model(0)), make, data, TrainingConfig(batch_size=10))
    cached = Trainer(without_dropout(tiny_model(0)), make, data, TrainingConfig(batch_size=10, gradient_cache_chunk=3))
    v1, g1 = _grads(plain, [rows])
    v2, g2 = _grads(cached, [rows])
    assert v1 == pytest.approx(v2, rel=1e-5)
    assert g1.keys() == g2.keys() and len(g1) > 30
    for k in g1:
        assert_close_to_scale(g2[k], g1[k], k)


def test_gradient_accumulation_matches_one_large_batch_for_a_per_row_loss(nli):
    data = TrainingData.from_record(nli).take(range(16))
    make = lambda m: SoftmaxLoss(m, num_labels=3)  # noqa: E731
    big = Trainer(without_dropout(tiny_model(0)), make, data, TrainingConfig(batch_size=8))
    accumulated = Trainer(without_dropout(tiny_model(0)), make, data,
                          TrainingConfig(batch_size=4, gradient_accumulation_steps=2))
    v1, g1 = _grads(big, [range(8)])
    v2, g2 = _grads(accumulated, [range(4), range(4, 8)])
    assert v1 == pytest.approx(v2, rel=1e-5)
    assert g1.keys() == g2.keys()
    for k in g1:
        assert_close_to_scale(g2[k], g1[k], k)


@pytest.mark.precision
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_mixed_precision_runs_and_checkpoints_the_scaler(tmp_path, pairs, precision):
    cfg = TrainingConfig(**FAST, max_steps=3, precision=precision, checkpoint_steps=1, keep_checkpoints=3)

    class Look(Callback):
        name = "look"

        def on_step_end(self, trainer):
            self.scaler = trainer.scaler

    look = Look()
    trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, callbacks=[look], show_progress=False)
    result = trainer.train(tmp_path)
    assert all(np.isfinite(e["loss"]) for e in result.losses)
    assert (look.scaler is not None) == (precision == "fp16")


# ---------------------------------------------------------------------------------------- damaged files


@pytest.mark.slow
def test_a_damaged_checkpoint_is_said_and_the_one_before_it_resumed(tmp_path, pairs, capfd):
    """A truncated state.safetensors in the newest checkpoint: one line, that checkpoint removed, the run
    resumed from the one before and ending exactly where an uninterrupted run ends; with every
    checkpoint damaged, the run starts afresh."""
    cfg = TrainingConfig(**FAST, max_steps=8, checkpoint_steps=2, keep_checkpoints=2)

    def trainer(extra=()):
        return Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, callbacks=list(extra), show_progress=False)

    straight = trainer()
    straight.train(tmp_path / "straight")
    for damaged, resumed_from in ((["checkpoint-00000004"], 2), (["checkpoint-00000002", "checkpoint-00000004"], None)):
        out = tmp_path / f"resumed-{len(damaged)}"
        with pytest.raises(KeyboardInterrupt):
            trainer([CrashAt(5)]).train(out)
        for name in damaged:
            tensors = out / "checkpoints" / name / "state.safetensors"
            tensors.write_bytes(tensors.read_bytes()[:1000])
        capfd.readouterr()
        again = trainer()
        result = again.train(out)
        lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("sentcl")]
        assert len(lines) == len(damaged)  # one line per damaged checkpoint
        assert all(f"damaged file {out / 'checkpoints'}" in line and "state.safetensors" in line for line in lines)
        assert result.resumed_from_step == resumed_from
        assert same_weights(weights(again.model), weights(straight.model))


def test_a_damaged_trained_model_in_the_cache_is_said_and_trained_again(tmp_path, pairs, capfd):
    """The cached run's model.safetensors truncated (caught by the manifest's sizes) or overwritten with
    garbage of the same size (caught when it does not load): one line each, trained again, same weights."""
    cache = ArtifactCache(tmp_path)
    cfg = TrainingConfig(**FAST, max_steps=2)

    def run():
        trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, cfg, show_progress=False)
        return trainer.train_cached(cache), trainer

    first, trainer = run()
    good = weights(trainer.model)
    weights_file = first.model_dir / "model.safetensors"
    for damage, said in ((lambda data: data[: len(data) // 2], "bytes, the manifest"),
                         (lambda data: b"\0" * len(data), "does not load")):
        weights_file.write_bytes(damage(weights_file.read_bytes()))
        capfd.readouterr()
        result, again = run()
        (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("sentcl")]
        assert line.startswith("sentcl: damaged file") and said in line and "building stage 'train' again" in line
        assert result.trained and same_weights(weights(again.model), good)
