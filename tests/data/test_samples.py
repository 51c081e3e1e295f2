"""data/samples: regenerated identically, read by the real loaders, marked as sample data,
small, and carrying a similarity signal (so smoke-profile numbers are not noise)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from scipy.stats import spearmanr

from sentcl.data import load, registry, samples_root
from sentcl.data.registry import SAMPLE_MARKER
from sentcl.data.samples import build, write

# what sentcl.data.samples promises (dataset, split) -> (records, dropped)
SAMPLE_COUNTS = {
    ("sts12", "test"): (40, {}),
    ("sts13", "test"): (30, {}),
    ("sts14", "test"): (48, {}),
    ("sts15", "test"): (40, {"unscored": 15}),
    ("sts16", "test"): (40, {"unscored": 20}),
    ("stsbenchmark", "train"): (60, {}),
    ("stsbenchmark", "dev"): (24, {}),
    ("stsbenchmark", "test"): (36, {}),
    ("sickr", "train"): (60, {}),
    ("sickr", "trial"): (20, {}),
    ("sickr", "test"): (40, {}), ("sickr", "all"): (120, {}),
    ("sicke", "test"): (40, {}),
    ("snli", "train"): (360, {"no_gold_label": 4}),
    ("snli", "dev"): (60, {}),
    ("snli", "test"): (60, {}),
    ("multinli", "train"): (120, {}),
    ("multinli", "dev_matched"): (30, {"no_gold_label": 2}),
    ("multinli", "dev_mismatched"): (30, {"no_gold_label": 2}),
    ("allnli", "train"): (None, {"no_gold_label": 4}),
    ("mrpc", "train"): (60, {}),
    ("mrpc", "dev"): (20, {}),
    ("mrpc", "test"): (40, {}),
    ("qqp", "train"): (60, {}),
    ("qqp", "dev"): (30, {}),
    ("cnsd_stsb", "train"): (40, {}),
    ("cnsd_stsb", "dev"): (20, {}),
    ("cnsd_stsb", "test"): (30, {}),
    ("simclue", "test"): (40, {}),
    ("simclue", "train_1w"): (40, {}),
    ("wiki1m", "train"): (200, {}),
    ("wiki1m", "prefix"): (100, {}),
}


def test_committed_samples_are_what_the_script_writes(tmp_path):
    """Regenerate into tmp: this module's files (and the marker) are identical, byte for
    byte, to the committed ones, and a second generation is identical too (deterministic).
    (The retrieval samples it also writes are checked by tests/test_data_retrieval.py.)"""
    written = write(tmp_path)
    assert build() == build()
    committed = samples_root()
    ours = {SAMPLE_MARKER, *build()}
    for path in written:
        rel = path.relative_to(tmp_path)
        if rel.as_posix() not in ours:
            continue
        assert (committed / rel).is_file(), f"{rel} is not committed: run `python -m sentcl.data.samples`"
        assert (committed / rel).read_bytes() == path.read_bytes(), (
            f"{rel} differs: run `python -m sentcl.data.samples`"
        )


def test_samples_are_small():
    total = sum(p.stat().st_size for p in samples_root().rglob("*") if p.is_file())
    assert total < 500_000
    assert (samples_root() / SAMPLE_MARKER).is_file()


def test_samples_hold_no_text_of_the_real_data_root(shared_data):
    """A spot check that the samples are ours: none of their sentences occurs in the
    real STS Benchmark or SNLI files."""
    real = set()
    for rel in ("stsbenchmark/sts-test.csv", "stsbenchmark/sts-train.csv", "snli/snli_1.0_dev.tokenized.tsv"):
        for line in (shared_data / rel).read_text(encoding="utf-8").splitlines():
            real.update(line.split("\t"))
    ours = load("stsbenchmark", "train", samples_root())
    assert not (set(ours.sentences1) | set(ours.sentences2)) & real


@pytest.mark.parametrize(("dataset", "split"), sorted(SAMPLE_COUNTS))
def test_samples_load_with_the_real_loaders(dataset, split):
    count, dropped = SAMPLE_COUNTS[dataset, split]
    record = load(dataset, split, samples_root())
    assert record.sample is True
    assert "[sample data]" in record.describe()
    assert record.dropped == dropped
    if count is not None:
        assert len(record) == count


def test_every_registered_dataset_of_this_module_has_samples():
    names = {d for d, _ in SAMPLE_COUNTS}
    families = {"scored_pairs", "labelled_pairs", "triplets", "sentences"}
    assert {n for n, e in registry().items() if e.kind in families} <= names


def test_allnli_sample_triplets_are_entailment_and_contradiction():
    pairs = {}
    for name in ("snli", "multinli"):
        nli = load(name, "train", samples_root())
        pairs.update({(a, b): nli.label_names[lab] for a, b, lab in zip(nli.sentences1, nli.sentences2, nli.labels, strict=True)})
    triplets = load("allnli", "train", samples_root())
    assert len(triplets) > 200 and len(triplets) % 2 == 0
    for anchor, pos, neg in zip(triplets.anchors, triplets.positives, triplets.negatives, strict=True):
        assert "entailment" in {pairs.get((anchor, pos)), pairs.get((pos, anchor))}
        assert "contradiction" in {pairs.get((anchor, neg)), pairs.get((neg, anchor))} or "contradiction" in {
            pairs.get((pos, neg)),
            pairs.get((neg, pos)),
        }


def _word_overlap(a: str, b: str) -> float:
    wa, wb = set(re.findall(r"\w+", a.lower())), set(re.findall(r"\w+", b.lower()))
    return len(wa & wb) / len(wa | wb)


@pytest.mark.parametrize("dataset", ["sts12", "sts15", "stsbenchmark", "sickr"])
def test_sample_scores_follow_the_sentences(dataset):
    record = load(dataset, None, samples_root())
    overlap = [_word_overlap(a, b) for a, b in zip(record.sentences1, record.sentences2, strict=True)]
    rho = spearmanr(overlap, record.scores).statistic
    assert rho > 0.6
    assert np.std(record.scores) > 1.0
