"""Why the RCL chapter trains at scale 20 although Tan et al. (2022) print exp(cos) with no temperature:
the pretrained base's Eq. 1 loss on a real NLI batch (SNLI dev, premise / entailment / contradiction, 64
rows) under scale 1 and scale 20. At scale 1 the softmax over 128 cosines in [-1, 1] is nearly uniform,
so the loss sits near log 128 however well the model ranks; at scale 20 (the scale sentence-transformers'
MNRL trains with) the same embeddings give a loss far below it, so the objective still has a signal."""

from __future__ import annotations

import math

import pytest
import torch

from sentcl.data import load
from sentcl.embeddings import encode
from sentcl.losses import entropy_loss
from sentcl.models import MINILM, load_encoder

BATCH = 64


@pytest.fixture(scope="module")
def nli_batch(shared_data):
    """The first 64 SNLI dev premises with an entailment and a contradiction (first of each, file order)."""
    record = load("snli", "dev", data_dir=shared_data)
    names = list(record.label_names)
    found: dict[str, dict[str, str]] = {}
    for premise, hypothesis, label in zip(record.sentences1, record.sentences2, record.labels, strict=True):
        found.setdefault(premise, {}).setdefault(names[label], hypothesis)
    rows = [(p, h["entailment"], h["contradiction"]) for p, h in found.items() if {"entailment", "contradiction"} <= set(h)]
    assert len(rows) >= BATCH
    return [list(column) for column in zip(*rows[:BATCH], strict=True)]


@pytest.mark.slow
def test_the_base_models_eq1_loss_is_near_uniform_at_scale_1_and_informative_at_scale_20(nli_batch):
    model = load_encoder(MINILM, device="cpu")  # the demo's base (bundled offline); trained with MNRL, scale 20
    q, ind, neg = (torch.from_numpy(encode(model, texts, cache=False, precision="fp32")) for texts in nli_batch)
    uniform = math.log(2 * BATCH)  # 64 indexes + 64 hard negatives per query
    at_1 = entropy_loss(q, ind, [neg], phi=0.0, scale=1.0).item()
    at_20 = entropy_loss(q, ind, [neg], phi=0.0, scale=20.0).item()
    print(f"Eq. 1 loss, batch {BATCH}: scale 1 {at_1:.3f}, scale 20 {at_20:.3f}, uniform log {2 * BATCH} = {uniform:.3f}")
    assert uniform - 2.0 <= at_1 < uniform  # cosines in [-1, 1]: at most 2 below uniform, whatever the model
    assert uniform - at_1 < 1.0  # and in fact within one nat: a nearly flat softmax, little gradient signal
    assert at_20 < 1.0 < at_1 - 2.5  # the same embeddings at scale 20: the positive dominates
