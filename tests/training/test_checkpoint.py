"""Checkpoint files: tensors in safetensors, the rest in JSON, exact round trips, nothing pickled."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import torch

from sentcl.errors import ConfigError, DataFormatError
from sentcl.training.checkpoint import (
    TENSORS_FILE,
    TREE_FILE,
    load_state,
    rng_state,
    save_state,
    seed_everything,
    set_rng_state,
)


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
    with pytest.raises(DataFormatError, match="state.safetensors"):
        load_state(tmp_path / "nowhere")
