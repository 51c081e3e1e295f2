"""The next step's batches tokenised ahead in a worker thread (sentcl.training.prefetch): the same tensors as
tokenising in the loop, the worker idle after settle(), and a trained run identical with and without it."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.losses import MultipleNegativesRankingLoss
from sentcl.models import tiny_model
from sentcl.training import Trainer, TrainingConfig
from sentcl.training.prefetch import BatchInputs, to_device

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py


@pytest.fixture(scope="module")
def pairs():
    return TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False).take(range(32))


def test_batches_made_ahead_are_the_batches_made_in_the_loop(pairs):
    model = tiny_model(0)
    threads = []

    def tokenize(rows):
        threads.append(threading.current_thread().name)
        return [model.preprocess(texts) for texts in pairs.batch_texts(rows)]

    inputs = BatchInputs(tokenize, torch.device("cpu"))
    batches = [np.arange(0, 8), np.arange(8, 16), np.array([3, 30, 5])]
    inputs.start()
    inputs.ahead(batches)
    inputs.settle()
    assert threads == ["sentcl-tokenize_0"] * 3  # made by the worker, before they were taken
    made_ahead = [inputs.take(rows) for rows in batches]
    inputs.close()
    made_now = [inputs.take(rows) for rows in batches]
    assert threads[3:] == [threading.current_thread().name] * 3
    for ahead, now in zip(made_ahead, made_now, strict=True):
        assert len(ahead) == len(now) == 2
        for a, b in zip(ahead, now, strict=True):
            assert a.keys() == b.keys() and a.keys() >= {"input_ids", "attention_mask"}
            assert all(torch.equal(a[k], b[k]) if isinstance(a[k], torch.Tensor) else a[k] == b[k] for k in a)


def test_a_numpy_array_reaches_the_device_as_a_tensor_of_its_type():
    got = to_device(np.array([1.5, 0.0], dtype=np.float32), torch.device("cpu"))
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and got.tolist() == [1.5, 0.0]
    assert to_device("text", torch.device("cpu")) == "text"


def test_a_run_trains_the_same_with_the_worker_as_without(tmp_path, pairs, monkeypatch):
    config = TrainingConfig(batch_size=8, learning_rate=1e-3, log_steps=1, epochs=2)
    runs = []
    for worker in (True, False):
        if not worker:
            monkeypatch.setattr(BatchInputs, "start", lambda self: None)
        trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, pairs, config, show_progress=False)
        runs.append((trainer.train(tmp_path / str(worker)).losses, trainer.model.state_dict()))
    (losses, weights), (losses_inline, weights_inline) = runs
    assert losses == losses_inline and len(losses) == 8
    assert all(torch.equal(weights[k], weights_inline[k]) for k in weights)
