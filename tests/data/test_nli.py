"""NLI preparation (sentcl.data.nli): the paper's counts, entailment pairs, labelled pairs, sentences."""

from __future__ import annotations

import pytest

from sentcl.data import load, samples_root
from sentcl.data.nli import nli_sentences, prepare_nli
from sentcl.data.records import LabelledPairs
from sentcl.errors import ConfigError

LABELS = ("entailment", "neutral", "contradiction")


def nli_record(name, pairs, dropped=0):
    """A LabelledPairs from (premise, hypothesis, label name) triples, with ``dropped`` rows without a gold label."""
    return LabelledPairs(
        name=name, split="train", sentences1=[p for p, _, _ in pairs], sentences2=[h for _, h, _ in pairs],
        labels=[LABELS.index(label) for _, _, label in pairs], label_names=LABELS,
        dropped={"no_gold_label": dropped} if dropped else {},
    )


# --------------------------------------------------------------------------- sentcl.data.nli

def test_prepare_nli_keeps_entailment_pairs_for_mnrl_and_every_labelled_pair_for_softmax():
    snli = nli_record("snli", [("p1", "h1", "entailment"), ("p1", "h2", "neutral"), ("p2", "h3", "contradiction"),
                               ("p2", "h4", "entailment")], dropped=2)
    mnli = nli_record("multinli", [("q1", "g1", "neutral"), ("q2", "g2", "entailment")])
    nli = prepare_nli([snli, mnli])
    assert nli.entailment_pairs.columns == {"anchor": ["p1", "p2", "q2"], "positive": ["h1", "h4", "g2"]}
    assert nli.entailment_pairs.labels is None  # MNRL takes no labels
    assert nli.labelled_pairs.columns["sentence1"] == ["p1", "p1", "p2", "p2", "q1", "q2"]
    assert nli.labelled_pairs.labels.tolist() == [0, 1, 2, 0, 1, 0]
    total = nli.total
    assert (total.rows, total.labelled, total.entailment, total.without_gold_label) == (8, 6, 3, 2)
    assert total.labels == {"entailment": 3, "neutral": 2, "contradiction": 1}
    assert nli.counts["snli/train"].rows == 6 and nli.counts["multinli/train"].entailment == 1
    assert nli.entailment_pairs.name == "snli/train+multinli/train entailment"

def test_prepare_nli_on_the_sample_files_matches_the_loaders_counts():
    snli, mnli = load("snli", "train", samples_root()), load("multinli", "train", samples_root())
    nli = prepare_nli([snli, mnli])
    assert nli.total.rows == len(snli) + len(mnli) + snli.dropped.get("no_gold_label", 0)
    assert nli.total.entailment == len(snli.with_label("entailment")) + len(mnli.with_label("entailment"))
    assert len(nli.entailment_pairs) == nli.total.entailment and len(nli.labelled_pairs) == nli.total.labelled

def test_prepare_nli_errors():
    with pytest.raises(ConfigError, match="at least one"):
        prepare_nli([])
    other = LabelledPairs(name="x", split="train", sentences1=["a"], sentences2=["b"], labels=[0], label_names=("yes", "no"))
    with pytest.raises(ConfigError, match="different label sets"):
        prepare_nli([nli_record("snli", [("a", "b", "entailment")]), other])
    with pytest.raises(ConfigError, match="no 'entailment' label"):
        prepare_nli([other])

def test_nli_sentences_lists_both_sentences_of_every_pair_with_repeats():
    record = nli_record("snli", [("p1", "h1", "entailment"), ("p1", "h2", "neutral")])
    assert nli_sentences([record, record]) == ["p1", "h1", "p1", "h2"] * 2


# --------------------------------------------------------------------------- sentcl.whitening
