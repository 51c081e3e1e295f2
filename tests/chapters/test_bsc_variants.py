"""The BSC paper's rows as variants: each row's loss, batches and training rows (Chernyavskiy et al. 2022)."""

from __future__ import annotations

import pytest

from sentcl.book.output.results import paper_values
from sentcl.chapters.bsc.variants import (
    VARIANTS,
    LossSettings,
    Variant,
    batch_sampler,
    loss_factory,
    started_from,
    training_order,
)
from sentcl.errors import ConfigError
from sentcl.losses import BatchSoftmaxContrastiveLoss, ComboLoss, TripletLoss
from sentcl.models import load_encoder
from sentcl.training.samplers import RandomBatchSampler, SequentialBatchSampler
from sentcl.training.shuffling import ClusterShuffler, ExampleBasedShuffler

CITED_OR_UNTRAINED = {"SimCSE (unsup.)", "Hashemi et al. (2020)", "Nakov et al. (2017)", "Shaar et al. (2020)",
                      "Thakur et al. (2021)", "Thakur et al. (2021) (augmented SBERT)", "Reimers and Gurevych (2019)"}


def test_every_row_the_paper_trains_is_a_variant():
    rows = set(paper_values("bsc")["row"])
    assert rows - CITED_OR_UNTRAINED == set(VARIANTS)


@pytest.mark.parametrize(("row", "loss", "batches", "rows"), [
    ("BSC", "bsc", "example", "pairs"),  # §5.2: "We applied example-based shuffling to train with the BSC loss"
    ("BSC - random shuffle", "bsc", "random", "pairs"),
    ("BSC - w/o shuffle", "bsc", "none", "pairs"),
    ("BSC - clusters shuffle", "bsc", "clusters", "pairs"),
    ("BSC - positives", "bsc", "example", "positives"),
    ("MSE", "mse", "random", "pointwise"),
    ("Combo BSC + MSE", "combo", "example", "pairs"),
    ("Triplet loss", "triplet", "random", "triplets"),
])
def test_what_each_row_changes(row, loss, batches, rows):
    variant = VARIANTS[row]
    assert (variant.loss, variant.batches, variant.rows, variant.starts_from) == (loss, batches, rows, None)


def test_the_normalisation_and_fine_tuning_rows():
    assert dict(VARIANTS["BSC - no norm"].options) == {"normalization": "none"}
    assert dict(VARIANTS["BSC - 1-dim norm"].options) == {"normalization": "l2"}
    assert VARIANTS["Fine-tuning MSE with BSC"].loss == "bsc" and VARIANTS["Fine-tuning MSE with BSC"].starts_from == "MSE"
    assert VARIANTS["Fine-tuning BSC with MSE"].loss == "mse" and VARIANTS["Fine-tuning BSC with MSE"].starts_from == "BSC"
    with pytest.raises(ConfigError, match="batches"):
        Variant("bsc", "kNN")
    with pytest.raises(TypeError):
        VARIANTS["BSC"].options["normalization"] = "none"  # type: ignore[index]


@pytest.fixture(scope="module")
def tiny():
    return load_encoder("tiny")


def test_loss_factory_builds_each_loss_with_the_tasks_settings(tiny):
    settings = LossSettings(temperature=0.055, normalization="coordinate", threshold=0.6, mu=0.1, triplet_margin=0.6)
    bsc = loss_factory(VARIANTS["BSC"], settings)(tiny)
    assert type(bsc) is BatchSoftmaxContrastiveLoss
    config = bsc.get_config_dict()
    assert config["temperature"] == pytest.approx(0.055) and config["normalization"] == "coordinate"
    assert config["threshold"] == pytest.approx(0.6) and config["sides"] == "sum" and config["symmetric"]
    assert loss_factory(VARIANTS["BSC - no norm"], settings)(tiny).get_config_dict()["normalization"] == "none"
    mse, combo = (loss_factory(VARIANTS[r], settings)(tiny) for r in ("MSE", "Combo BSC + MSE"))
    assert type(mse) is ComboLoss and mse.get_config_dict()["mu"] == 0.0  # the MSE is the combo with mu = 0
    assert combo.get_config_dict()["mu"] == pytest.approx(0.1)
    triplet = loss_factory(VARIANTS["Triplet loss"], settings)(tiny)
    assert type(triplet) is TripletLoss and triplet.get_config_dict() == {"margin": 0.6, "distance": "euclidean"}


def test_batch_samplers():
    example = batch_sampler("example", group_size=5, neighbours=50, column=1, start_epoch=1, index="flat")
    assert type(example) is ExampleBasedShuffler
    assert example.options() | {"group_size": 5, "neighbours": 50, "column": 1, "start_epoch": 1} == example.options()
    assert type(batch_sampler("clusters", clusters=7)) is ClusterShuffler
    assert type(batch_sampler("random")) is RandomBatchSampler
    assert type(batch_sampler("none")) is SequentialBatchSampler
    with pytest.raises(ConfigError):
        batch_sampler("shingles")


def test_rows_that_fine_tune_train_after_the_rows_they_start_from():
    rows = ["Fine-tuning BSC with MSE", "MSE", "SimCSE (unsup.)", "BSC", "Fine-tuning MSE with BSC"]
    assert training_order(rows) == ["MSE", "SimCSE (unsup.)", "BSC", "Fine-tuning BSC with MSE", "Fine-tuning MSE with BSC"]
    assert started_from(rows) == {"MSE", "BSC"}
    assert started_from(["MSE", "BSC"]) == set()
