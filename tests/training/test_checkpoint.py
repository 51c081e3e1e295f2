"""Checkpoint files: tensors in safetensors, the rest in JSON, exact round trips, nothing pickled; the
trainer's state and a run's output folder (checkpoints kept and pruned, best weights, the finished run)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from sentcl.errors import ConfigError, DataFormatError
from sentcl.training.checkpoint import (
    CHECKPOINT_FORMAT,
    STATE_FILE,
    TENSORS_FILE,
    TREE_FILE,
    RunningMean,
    TrainerState,
    best_dir,
    checkpoints,
    latest_checkpoint,
    load_best,
    load_checkpoint,
    load_state,
    pack_plan,
    prune_best,
    read_finished,
    read_health,
    rng_state,
    save_best,
    save_checkpoint,
    save_state,
    seed_everything,
    set_rng_state,
    unpack_plan,
    write_finished,
)

# The keys of the "trainer" entry of every checkpoint and of trainer_state.json since format 1, in order:
# checkpoints written before TrainerState had its running means (and before it summed the loss's terms,
# "terms_sum_since_log") must still resume (test_trainer_state_reads_the_json_of_earlier_runs).
SAVED_STATE_KEYS = [
    "run_key",
    "world_size",
    "total_steps",
    "steps_per_epoch",
    "epoch",
    "batches_done",
    "global_step",
    "best_metric",
    "best_step",
    "stopped_early",
    "done",
    "losses",
    "evaluations",
    "terms_sum_since_log",
    "loss_sum_since_log",
    "steps_since_log",
    "loss_sum_since_eval",
    "steps_since_eval",
]


def test_round_trip_of_an_optimizer_like_tree(tmp_path):
    tree = {
        "state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.randn(4, 3)}, 7: {"momentum": torch.arange(5)}},
        "param_groups": [{"lr": 2e-5, "betas": (0.9, 0.999), "params": [0, 7], "fused": None, "nan": float("inf")}],
        "half": torch.ones(2, dtype=torch.bfloat16),
        "array": np.arange(6, dtype=np.uint32).reshape(2, 3),
        "big": 2**100,
        "nested": [("a", 1), []],
    }
    save_state(tmp_path, tree)
    assert sorted(p.name for p in tmp_path.iterdir()) == [TREE_FILE, TENSORS_FILE]
    back = load_state(tmp_path)
    assert set(back["state"]) == {0, 7}  # integer keys come back as integers
    assert torch.equal(back["state"][0]["exp_avg"], tree["state"][0]["exp_avg"])
    assert torch.equal(back["state"][7]["momentum"], tree["state"][7]["momentum"])
    assert back["param_groups"][0]["betas"] == (0.9, 0.999)
    assert back["param_groups"][0]["nan"] == float("inf")
    assert back["half"].dtype == torch.bfloat16
    assert np.array_equal(back["array"], tree["array"]) and back["array"].dtype == np.uint32
    assert back["big"] == 2**100
    assert back["nested"] == [("a", 1), []]
    json.loads((tmp_path / TREE_FILE).read_text())  # plain JSON, no pickle


def test_real_optimizer_state_restores_exactly(tmp_path):
    torch.manual_seed(0)
    layer = torch.nn.Linear(4, 2)
    opt = torch.optim.AdamW(layer.parameters(), lr=0.1)
    for _ in range(3):
        layer(torch.randn(5, 4)).pow(2).sum().backward()
        opt.step()
        opt.zero_grad()
    save_state(tmp_path, {"model": layer.state_dict(), "optimizer": opt.state_dict()})
    clone = torch.nn.Linear(4, 2)
    clone_opt = torch.optim.AdamW(clone.parameters(), lr=0.1)
    saved = load_state(tmp_path)
    clone.load_state_dict(saved["model"])
    clone_opt.load_state_dict(saved["optimizer"])
    x = torch.randn(5, 4)
    for model, optimizer in ((layer, opt), (clone, clone_opt)):
        model(x).pow(2).sum().backward()
        optimizer.step()
    assert torch.equal(layer.weight, clone.weight) and torch.equal(layer.bias, clone.bias)


def test_random_state_round_trip(tmp_path):
    seed_everything(5)
    save_state(tmp_path, rng_state())
    expected = (random.random(), np.random.rand(), torch.rand(3))
    seed_everything(99)
    set_rng_state(load_state(tmp_path))
    got = (random.random(), np.random.rand(), torch.rand(3))
    assert expected[0] == got[0] and expected[1] == got[1] and torch.equal(expected[2], got[2])


def test_refuses_objects_and_reports_missing_files(tmp_path):
    with pytest.raises(ConfigError, match="cannot store a object at /x"):
        save_state(tmp_path, {"x": object()})
    with pytest.raises(ConfigError, match="share the name"):
        save_state(tmp_path, {"d": {0: torch.ones(1), "0": torch.ones(1)}})
    with pytest.raises(DataFormatError, match=r"state\.safetensors"):
        load_state(tmp_path / "nowhere")


# ---------------------------------------------------------------------------------- the trainer's state


def test_running_mean_takes_the_mean_since_the_last_take():
    mean = RunningMean()
    assert mean.take() is None  # nothing added: no mean (an evaluation before any step)
    for value in (1.0, 2.0, 4.5):
        mean.add(value)
    assert mean.take() == 2.5
    assert (mean.total, mean.count) == (0.0, 0)
    mean.add(3.0)
    assert mean.take() == 3.0


def test_trainer_state_keeps_its_saved_keys():
    state = TrainerState("key", 1, 30, 15, global_step=7, losses=[{"step": 4, "loss": 2.0}])
    state.loss_since_log.add(1.5)
    state.loss_since_eval.add(1.5)
    state.loss_since_eval.add(0.5)
    saved = state.to_dict()
    assert list(saved) == SAVED_STATE_KEYS
    assert (saved["loss_sum_since_log"], saved["steps_since_log"]) == (1.5, 1)
    assert (saved["loss_sum_since_eval"], saved["steps_since_eval"]) == (2.0, 2)
    back = TrainerState.from_dict(json.loads(json.dumps(saved)))
    assert back == state and back.loss_since_eval.take() == 1.0


def test_trainer_state_reads_the_json_of_earlier_runs():
    """A ``trainer`` entry as the trainer wrote it before the running means were a class (and before the
    loss's terms were summed: none since the last log entry)."""
    saved = {
        "run_key": "abc", "world_size": 1, "total_steps": 30, "steps_per_epoch": 15, "epoch": 1, "batches_done": 5,
        "global_step": 20, "best_metric": 71.2, "best_step": 15, "stopped_early": False, "done": False,
        "losses": [{"step": 16, "epoch": 1.066667, "loss": 1.9, "lr": 0.0005}],
        "evaluations": [{"step": 15, "epoch": 1.0, "spearman": 71.2, "train_loss": 2.1}],
        "loss_sum_since_log": 7.5, "steps_since_log": 4, "loss_sum_since_eval": 9.0, "steps_since_eval": 5,
    }  # fmt: skip
    state = TrainerState.from_dict(saved)
    assert state.global_step == 20 and state.best_step == 15 and state.evaluations[0]["spearman"] == 71.2
    assert state.loss_since_log.take() == 7.5 / 4 and state.loss_since_eval.take() == 9.0 / 5
    assert state.terms_sum_since_log == {}
    assert TrainerState.from_dict(saved).to_dict() == {**saved, "terms_sum_since_log": {}}


# ---------------------------------------------------------------------------------- a run's output folder


def _state(step: int, run_key: str = "run", world_size: int = 1) -> TrainerState:
    return TrainerState(run_key, world_size, 10, 10, global_step=step)


def test_checkpoints_are_named_by_step_and_the_newest_kept(tmp_path):
    for step in (1, 2, 3, 4, 5):
        folder = save_checkpoint(tmp_path, _state(step), {"model": {"w": torch.full((2,), float(step))}}, keep=2)
        assert folder == tmp_path / "checkpoints" / f"checkpoint-{step:08d}"
    assert [p.name for p in checkpoints(tmp_path)] == ["checkpoint-00000004", "checkpoint-00000005"]
    assert latest_checkpoint(tmp_path) == tmp_path / "checkpoints" / "checkpoint-00000005"
    assert sorted(p.name for p in latest_checkpoint(tmp_path).iterdir()) == [TREE_FILE, TENSORS_FILE]
    tree = load_state(latest_checkpoint(tmp_path))
    assert list(tree) == ["format", "trainer", "model"] and tree["format"] == CHECKPOINT_FORMAT == 1
    assert list(tree["trainer"]) == SAVED_STATE_KEYS and tree["trainer"]["global_step"] == 5
    # a folder a kill left half-written (atomic_directory's temporary name) is neither listed nor counted
    (tmp_path / "checkpoints" / ".checkpoint-00000006.x1y2.tmp").mkdir()
    save_checkpoint(tmp_path, _state(7), {}, keep=2)
    assert [p.name for p in checkpoints(tmp_path)] == ["checkpoint-00000005", "checkpoint-00000007"]
    assert checkpoints(tmp_path / "elsewhere") == [] and latest_checkpoint(tmp_path / "elsewhere") is None


def test_load_checkpoint_returns_the_state_and_the_parts(tmp_path):
    plan = [np.array([3, 1, 2]), np.array([0, 4])]
    folder = save_checkpoint(tmp_path, _state(3), {"plan": pack_plan(plan), "sampler": {"epoch": 1}}, keep=1)
    state, parts = load_checkpoint(folder, "run", 1)
    assert state == _state(3) and list(parts) == ["plan", "sampler"] and parts["sampler"] == {"epoch": 1}
    assert [b.tolist() for b in unpack_plan(parts["plan"])] == [[3, 1, 2], [0, 4]]
    assert pack_plan(None) is None and unpack_plan(None) is None


def test_load_checkpoint_refuses_other_runs_formats_and_process_counts(tmp_path):
    folder = save_checkpoint(tmp_path, _state(3, world_size=2), {}, keep=1)
    with pytest.raises(ConfigError, match="holds checkpoints of another run"):
        load_checkpoint(folder, "another run", 2)
    with pytest.raises(ConfigError, match=r"written by 2 process\(es\); resume it with the same number \(this run has 1\)"):
        load_checkpoint(folder, "run", 1)
    tree = load_state(folder)
    save_state(folder, {**tree, "format": CHECKPOINT_FORMAT + 1})
    with pytest.raises(ConfigError, match="holds checkpoints of another run"):
        load_checkpoint(folder, "run", 2)


def test_only_the_best_weights_named_by_the_state_survive_pruning(tmp_path):
    for step, score in ((2, 0.1), (4, 0.5)):
        save_best(tmp_path, step, {"w": torch.full((2,), score)}, {"step": step, "dev": score})
    assert best_dir(tmp_path, 4) == tmp_path / "best" / "step-00000004"
    assert json.loads((best_dir(tmp_path, 4) / "best.json").read_text()) == {"step": 4, "dev": 0.5}
    prune_best(tmp_path, 4)
    assert [p.name for p in (tmp_path / "best").iterdir()] == ["step-00000004"]
    assert torch.equal(load_best(tmp_path, 4)["w"], torch.full((2,), 0.5))
    prune_best(tmp_path, None)
    assert list((tmp_path / "best").iterdir()) == []


def test_a_finished_run_is_read_back_and_its_checkpoints_removed(tmp_path):
    assert read_finished(tmp_path, "run") is None
    save_checkpoint(tmp_path, _state(3), {}, keep=1)
    save_best(tmp_path, 3, {"w": torch.ones(1)}, {"step": 3})
    final = _state(10)
    final.done = True
    write_finished(tmp_path, final, {"config": {"seed": 0}}, health={"active": True})
    assert not (tmp_path / "checkpoints").exists() and not (tmp_path / "best").exists()
    saved = json.loads((tmp_path / STATE_FILE).read_text())
    assert list(saved) == ["state", "run", "health"] and list(saved["state"]) == SAVED_STATE_KEYS
    assert read_finished(tmp_path, "run") == final and read_health(tmp_path) == {"active": True}
    del saved["health"]  # a run finished before health was recorded
    (tmp_path / STATE_FILE).write_text(json.dumps(saved))
    assert read_finished(tmp_path, "run") == final and read_health(tmp_path) is None
    with pytest.raises(ConfigError, match="holds a finished run with another configuration"):
        read_finished(tmp_path, "another run")
    (tmp_path / STATE_FILE).write_text("{not json")
    with pytest.raises(DataFormatError, match=STATE_FILE):
        read_finished(tmp_path, "run")


def test_the_background_writer_writes_the_tree_as_it_was_when_saved_and_raises_its_errors(tmp_path):
    from sentcl.training.checkpoint import CheckpointWriter, TrainerState, latest_checkpoint, load_state

    weights = torch.arange(6, dtype=torch.float32)
    writer = CheckpointWriter()
    writer.save(tmp_path, TrainerState("run", 1, 10, 10, global_step=3), {"model": {"w": weights}}, keep=1)
    weights.mul_(0)  # the training goes on changing its tensors while the files are written
    writer.save(tmp_path, TrainerState("run", 1, 10, 10, global_step=4), {"model": {"w": weights}}, keep=1)
    writer.wait()
    assert [folder.name for folder, _ in writer.written] == ["checkpoint-00000003", "checkpoint-00000004"]
    assert latest_checkpoint(tmp_path).name == "checkpoint-00000004" and len(list((tmp_path / "checkpoints").iterdir())) == 1
    assert torch.equal(load_state(latest_checkpoint(tmp_path))["model"]["w"], torch.zeros(6))
    (tmp_path / "blocked").write_text("a file where the checkpoints folder should be")
    writer.save(tmp_path / "blocked", TrainerState("run", 1, 10, 10, global_step=5), {"model": {"w": weights}}, keep=1)
    with pytest.raises(NotADirectoryError):
        writer.wait()
    writer.wait()  # the error is raised once


def test_the_background_writer_keeps_the_first_tree_unchanged(tmp_path):
    from sentcl.training.checkpoint import CheckpointWriter, TrainerState, load_state

    weights = torch.ones(4)
    writer = CheckpointWriter()
    writer.save(tmp_path, TrainerState("run", 1, 10, 10, global_step=1), {"model": {"w": weights}}, keep=2)
    weights.add_(1)
    writer.wait()
    assert torch.equal(load_state(writer.written[0][0])["model"]["w"], torch.ones(4))
