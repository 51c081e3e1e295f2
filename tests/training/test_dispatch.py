"""Host-device syncs and dispatched operations of a training step (sentcl.training.dispatch).

On the CPU nothing waits for a device, but the code that would make a GPU's host wait runs the same:
these tests fail when a step gains a sync, and show where it came from."""

from __future__ import annotations

import pytest
import torch

from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.losses import MultipleNegativesRankingLoss
from sentcl.losses.bsc import BatchSoftmaxContrastiveLoss, ComboLoss
from sentcl.models import tiny_model
from sentcl.training import Callback, Trainer, TrainingConfig
from sentcl.training.dispatch import DispatchCounter
from sentcl.training.optim import UncorrectedAdam

pytestmark = pytest.mark.usefixtures("one_thread")  # tests/training/conftest.py
MASK_CHECK = "masking_utils.py"
"""transformers' SDPA mask check (``padding_mask.all()``, one per forward pass of a column): not sentcl's."""


class PerStep(Callback):
    name = "per-step"

    def __init__(self, counter: DispatchCounter) -> None:
        self.counter, self.at = counter, []

    def on_step_end(self, trainer) -> None:
        self.at.append((self.counter.snapshot(), dict(self.counter.where)))


def step_counts(tmp_path, loss, data, **options):
    """Per optimizer step 2..5 of 6 (none of which logs, evaluates or checkpoints): (operations, syncs, the
    syncs' places that are not transformers' mask check)."""
    counter = DispatchCounter()
    per = PerStep(counter)
    config = TrainingConfig(batch_size=8, learning_rate=1e-3, log_steps=100, max_steps=6, weight_decay=0.01, **options)
    trainer = Trainer(tiny_model(0), loss, data, config, callbacks=[per], show_progress=False)
    with counter:
        trainer.train(tmp_path)
    out = []
    for ((ops0, syncs0), where0), ((ops1, syncs1), where1) in zip(per.at[:4], per.at[1:5], strict=True):
        new = {k: v - where0.get(k, 0) for k, v in where1.items() if v != where0.get(k, 0)}
        own = {k: v for k, v in new.items() if MASK_CHECK not in k}
        out.append((ops1 - ops0, syncs1 - syncs0 - sum(v for k, v in new.items() if MASK_CHECK in k), own))
    return out


@pytest.fixture(scope="module")
def pairs():
    return TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False).take(range(48))


@pytest.fixture(scope="module")
def scored():
    record = load("stsbenchmark", "train", samples_root())
    return TrainingData.from_record(record).take(range(48))


@pytest.mark.parametrize("loss", [MultipleNegativesRankingLoss, BatchSoftmaxContrastiveLoss])
@pytest.mark.parametrize("bias_correction", [True, False])
def test_a_step_that_does_not_log_reads_nothing_from_the_device(tmp_path, pairs, loss, bias_correction):
    counts = step_counts(tmp_path, loss, pairs, adam_bias_correction=bias_correction)
    assert [(syncs, own) for _, syncs, own in counts] == [(0, {})] * 4
    assert len({ops for ops, _, _ in counts}) == 1 and counts[0][0] > 100  # the same work every step


def test_a_loss_with_terms_and_labels_reads_nothing_either(tmp_path, scored):
    counts = step_counts(tmp_path, lambda m: ComboLoss(m, mu=0.5, threshold=0.5), scored)
    assert [(syncs, own) for _, syncs, own in counts] == [(0, {})] * 4


class ReadingLoss(MultipleNegativesRankingLoss):
    """MNRL that reads its value every step, as the trainer did before: what the tests above must catch."""

    def forward(self, *args, **kwargs):
        value = super().forward(*args, **kwargs)
        self.last_value = value.item()
        return value


def test_the_count_catches_a_step_that_reads_its_loss(tmp_path, pairs):
    counts = step_counts(tmp_path, ReadingLoss, pairs)
    assert [syncs for _, syncs, _ in counts] == [1] * 4
    assert all("_local_scalar_dense" in place for _, _, own in counts for place in own)


def test_the_multi_tensor_optimizer_dispatches_a_few_operations_where_the_loop_dispatched_several_per_parameter():
    params = [p for p in tiny_model(0).parameters() if p.requires_grad]
    ops = {}
    for foreach in (True, False):
        copies = [torch.nn.Parameter(p.detach().clone()) for p in params]
        for p in copies:
            p.grad = torch.ones_like(p)
        optimizer = UncorrectedAdam(copies, lr=1e-3, weight_decay=0.01, foreach=foreach)
        optimizer.step()  # the first step creates the moments
        with DispatchCounter() as counter:
            optimizer.step()
        ops[foreach] = counter.ops
        assert counter.syncs == 0
    assert ops[False] >= 7 * len(params) and ops[True] <= 12  # per parameter: step, decay, 2 moments, sqrt, eps, update


def test_the_counter_sees_each_kind_of_sync():
    x = torch.randn(6)
    with DispatchCounter() as counter:
        x.sum().item()
        float(x.max())
        bool(x.sum() > 0)
        x.tolist()
        x.cpu()
        torch.unique(x)
        x[x > 0]
        x.nonzero()
    assert counter.syncs == 8 and counter.ops > 8
