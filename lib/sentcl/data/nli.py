"""NLI training data as the MNRL-SBERT paper prepares it, and as SBERT trained its softmax baseline.

Taneja et al. (2023), §IV.A–B: SNLI train (550,152 rows) and MultiNLI train (392,702) are
merged into 942,854 rows; rows labelled neutral or contradiction are dropped, and so are the
rows without a gold label (``-`` in the official files, ``-1`` in the Hugging Face copies the
paper used); 314,315 (anchor, positive) = (premise, hypothesis) entailment pairs remain
(183,416 SNLI + 130,899 MultiNLI). Those train MNRL (Eq. 1): each pair's hypothesis is its
premise's positive, every other hypothesis of the batch a negative.

SBERT's softmax-loss baseline (Reimers & Gurevych 2019, §4) trains on the same files but on
every pair with a gold label, with its 3-way label (entailment, neutral, contradiction):
942,069 pairs.

:func:`prepare_nli` builds both from the loaders' records and counts every step, so that a
notebook can assert the paper's numbers (a seeded subset for a demo's training budget is
:func:`sentcl.data.records.subset`); :func:`nli_sentences` lists the sentences of NLI pairs (the set BERT-whitening
fits its kernel on, Su et al. 2021).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError
from .records import LabelledPairs, TrainingData

ENTAILMENT = "entailment"


@dataclass(frozen=True)
class NLICounts:
    """The counts of one NLI file (or their sum): what the paper's §IV.B reports."""

    rows: int
    """Rows in the files, those without a gold label included (942,854 for SNLI + MultiNLI train)."""
    labelled: int
    """Rows with a gold label (the softmax baseline's data)."""
    entailment: int
    """Rows labelled entailment (the MNRL pairs: 314,315 for SNLI + MultiNLI train)."""
    labels: dict[str, int]
    """Rows per gold label."""

    @property
    def without_gold_label(self) -> int:
        return self.rows - self.labelled


@dataclass(frozen=True)
class NLIData:
    """The two training sets of the chapter, from the same NLI records, with their counts."""

    entailment_pairs: TrainingData
    """(anchor, positive) = (premise, hypothesis) of every entailment pair; no labels (MNRL)."""
    labelled_pairs: TrainingData
    """(sentence1, sentence2) of every pair with a gold label, with its class id (SBERT's softmax loss)."""
    label_names: tuple[str, ...]
    counts: dict[str, NLICounts]
    """Per record (``"<name>/<split>"``) and ``"total"``."""

    @property
    def total(self) -> NLICounts:
        return self.counts["total"]


def count_nli(record: LabelledPairs) -> NLICounts:
    """Rows read (with those the loader dropped), labelled rows, entailment rows, rows per label."""
    labels = record.label_counts()
    if ENTAILMENT not in labels:
        raise ConfigError(f"{record.name}/{record.split} has no {ENTAILMENT!r} label (labels: {list(labels)})")
    return NLICounts(
        rows=len(record) + sum(record.dropped.values()),
        labelled=len(record),
        entailment=labels[ENTAILMENT],
        labels=labels,
    )


def prepare_nli(records: Sequence[LabelledPairs]) -> NLIData:
    """Merge NLI records (e.g. SNLI train and MultiNLI train) into MNRL's entailment pairs and
    SBERT's labelled pairs, in record order, and count them (Taneja et al. 2023, §IV.B)."""
    records = list(records)
    if not records:
        raise ConfigError("prepare_nli needs at least one NLI record (e.g. snli/train and multinli/train)")
    names = {r.label_names for r in records}
    if len(names) != 1:
        raise ConfigError(f"the NLI records use different label sets: {sorted(names)}")
    label_names = records[0].label_names
    counts = {f"{r.name}/{r.split}": count_nli(r) for r in records}
    counts["total"] = NLICounts(
        rows=sum(c.rows for c in counts.values()),
        labelled=sum(c.labelled for c in counts.values()),
        entailment=sum(c.entailment for c in counts.values()),
        labels={name: sum(c.labels[name] for c in counts.values()) for name in label_names},
    )
    source = "+".join(k for k in counts if k != "total")
    first = [s for r in records for s in r.sentences1]
    second = [s for r in records for s in r.sentences2]
    labels = np.concatenate([r.labels for r in records])
    keep = np.flatnonzero(labels == label_names.index(ENTAILMENT))
    return NLIData(
        entailment_pairs=TrainingData(
            columns={"anchor": [first[i] for i in keep], "positive": [second[i] for i in keep]},
            name=f"{source} {ENTAILMENT}",
        ),
        labelled_pairs=TrainingData(
            columns={"sentence1": first, "sentence2": second}, labels=labels, name=f"{source} labelled"
        ),
        label_names=label_names,
        counts=counts,
    )


def nli_sentences(records: Sequence[LabelledPairs]) -> list[str]:
    """Both sentences of every pair, every label, in record order, repeats kept (a premise occurs
    once per hypothesis): the NLI sentences BERT-whitening's "NLI" variant fits its kernel on
    (Su et al. 2021, ``eng/eval.py``)."""
    return [s for r in records for pair in zip(r.sentences1, r.sentences2, strict=True) for s in pair]


__all__ = ["ENTAILMENT", "NLICounts", "NLIData", "count_nli", "nli_sentences", "prepare_nli"]
