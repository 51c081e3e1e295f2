"""Data parallelism with gathered in-batch negatives: 2 CPU processes (gloo, launched by torchrun)
compute the same loss and gradients as one process on the whole batch."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import safetensors.torch
import torch
from torch import nn

from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.losses import MultipleNegativesRankingLoss, SoftmaxLoss
from sentcl.models import tiny_model
from sentcl.training import SequentialBatchSampler, Trainer, TrainingConfig

ROWS = list(range(3, 14))  # 11 rows: the two processes embed 6 and 5 of them

SCRIPT = r'''
import json, sys
from pathlib import Path

import safetensors.torch
import torch
import torch.distributed as dist
from torch import nn

torch.set_num_threads(1)
from sentcl.data.registry import load, samples_root
from sentcl.losses import MultipleNegativesRankingLoss, SoftmaxLoss
from sentcl.models import tiny_model
from sentcl.data import TrainingData
from sentcl.training import SequentialBatchSampler, Trainer, TrainingConfig

out = Path(sys.argv[1])
rows = json.loads(sys.argv[2])
nli = load("snli", "train", samples_root())
pairs = TrainingData.from_record(nli.with_label("entailment"), labels=False)
labelled = TrainingData.from_record(nli).take(range(16))


def without_dropout(model):
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


def softmax(model):
    return SoftmaxLoss(model, num_labels=3)


results = {}
for name, loss, data, chunk in (("mnrl", MultipleNegativesRankingLoss, pairs, None),
                                ("mnrl_cached", MultipleNegativesRankingLoss, pairs, 4),
                                ("softmax", softmax, labelled, None)):
    trainer = Trainer(without_dropout(tiny_model(0)), loss, data, TrainingConfig(batch_size=11, gradient_cache_chunk=chunk))
    value = trainer.step_gradients([rows])
    grads = {f"{owner}.{k}": p.grad.clone() for owner, module in (("model", trainer.model), ("loss", trainer.loss))
             for k, p in module.named_parameters() if p.grad is not None and not k.startswith("model.")}
    results[name] = value
    if dist.get_rank() == 0:
        safetensors.torch.save_file(grads, str(out / f"{name}.safetensors"))

config = TrainingConfig(batch_size=8, learning_rate=1e-3, max_steps=4, checkpoint_steps=2, log_steps=1)
trainer = Trainer(without_dropout(tiny_model(0)), MultipleNegativesRankingLoss, pairs, config,
                  sampler=SequentialBatchSampler(), show_progress=False)
result = trainer.train(out / "run")
if dist.get_rank() == 0:
    results["losses"] = [e["loss"] for e in result.losses]
    results["world_size"] = dist.get_world_size()
    (out / "results.json").write_text(json.dumps(results))
'''


def assert_close_to_scale(got: torch.Tensor, expected: torch.Tensor, what: str) -> None:
    """Equal up to float rounding of sums taken in another order: within 1e-4 of the tensor's largest entry
    (and 1e-9, for gradients that are zero in exact arithmetic, e.g. of attention key biases)."""
    scale = expected.abs().max().item()
    torch.testing.assert_close(got, expected, rtol=0.0, atol=1e-4 * scale + 1e-9, msg=lambda m: f"{what}: {m}")


def without_dropout(model: nn.Module) -> nn.Module:
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


@pytest.mark.slow
def test_two_gloo_processes_match_one_process_on_the_whole_batch(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(SCRIPT)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
               str(script), str(tmp_path), json.dumps(ROWS)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["world_size"] == 2

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        nli = load("snli", "train", samples_root())
        pairs = TrainingData.from_record(nli.with_label("entailment"), labels=False)
        labelled = TrainingData.from_record(nli).take(range(16))
        cases = (
            ("mnrl", MultipleNegativesRankingLoss, pairs),
            ("mnrl_cached", MultipleNegativesRankingLoss, pairs),
            ("softmax", lambda m: SoftmaxLoss(m, num_labels=3), labelled),  # loss parameters: not double counted
        )
        for name, loss, data in cases:
            trainer = Trainer(without_dropout(tiny_model(0)), loss, data, TrainingConfig(batch_size=11))
            value = trainer.step_gradients([ROWS])  # one process, the whole batch, no caching
            assert results[name] == pytest.approx(value, rel=1e-5), name
            expected = {
                f"{owner}.{k}": p.grad
                for owner, module in (("model", trainer.model), ("loss", trainer.loss))
                for k, p in module.named_parameters()
                if p.grad is not None and not k.startswith("model.")
            }
            got = safetensors.torch.load_file(str(tmp_path / f"{name}.safetensors"))
            assert got.keys() == expected.keys() and len(got) > 30
            for k in expected:
                assert_close_to_scale(got[k], expected[k], f"{name}: {k}")

        config = TrainingConfig(batch_size=8, learning_rate=1e-3, max_steps=4, checkpoint_steps=2, log_steps=1)
        single = Trainer(without_dropout(tiny_model(0)), MultipleNegativesRankingLoss, pairs, config,
                         sampler=SequentialBatchSampler(), show_progress=False)
        losses = [e["loss"] for e in single.train(tmp_path / "single").losses]
        assert np.allclose(results["losses"], losses, rtol=1e-4)
    finally:
        torch.set_num_threads(threads)
