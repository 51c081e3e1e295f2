"""Natural language inference: SNLI, MultiNLI, and AllNLI triplets built from their train sets.

Formats:

- ``snli/snli_1.0_<split>.jsonl``, ``multinli/multinli_1.0_<split>.jsonl``: the official
  JSON-lines files, one pair per line with ``gold_label``, ``sentence1``, ``sentence2``.
- ``snli/snli_1.0_{dev,test}.tokenized.tsv``: SNLI dev/test as distributed by e-SNLI
  (InferSent format, tokenized text), pasted into a TSV with the header
  ``premise, hypothesis, label`` (``../shared/data/SOURCES.md`` section 8).

A pair whose ``gold_label`` is ``-`` has no annotator majority; the official files keep
it, every standard use drops it. We drop it and count it in
``dropped["no_gold_label"]`` (SNLI train: 785 of 550,152 rows).
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

from ...errors import DataFormatError
from ..records import LabelledPairs, Triplets
from ..registry import DatasetInfo, loader
from .common import NLI_LABELS, RecordBuilder, json_field, read_delimited, read_jsonl, require_pair

NO_GOLD_LABEL = "-"
TSV_HEADER = ["premise", "hypothesis", "label"]


def read_nli(path: Path, dropped: dict[str, int]) -> Iterator[tuple[str, str, int]]:
    """Yield ``(premise, hypothesis, label id)`` of an NLI file (``.jsonl`` or ``.tsv``).

    Rows without a gold label are counted in ``dropped["no_gold_label"]``.
    """
    if path.suffix == ".jsonl":
        rows = (
            (
                line,
                json_field(obj, "sentence1", path, line),
                json_field(obj, "sentence2", path, line),
                json_field(obj, "gold_label", path, line),
            )
            for line, obj in read_jsonl(path)
        )
    else:
        rows = ((line, f[0], f[1], f[2]) for line, f in read_delimited(path, "\t", min_fields=3, header=TSV_HEADER))
    for line, premise, hypothesis, label in rows:
        label = label.strip()
        if label == NO_GOLD_LABEL:
            dropped["no_gold_label"] = dropped.get("no_gold_label", 0) + 1
            continue
        if label not in NLI_LABELS:
            raise DataFormatError(path, line, f"a gold label out of {[*NLI_LABELS, NO_GOLD_LABEL]}", label)
        premise, hypothesis = require_pair(path, line, (premise, hypothesis), ("premise (sentence1)", "hypothesis (sentence2)"))
        yield premise, hypothesis, NLI_LABELS.index(label)


@loader("snli", "multinli")
def load_nli_pairs(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """Premise/hypothesis pairs labelled entailment / neutral / contradiction."""
    rows = RecordBuilder(LabelledPairs, label_names=NLI_LABELS)
    for path in files:
        for premise, hypothesis, label in read_nli(path, rows.dropped):
            rows.add(premise, hypothesis, label)
    return rows.build(entry, split, files)


@loader("allnli")
def load_allnli_triplets(entry: DatasetInfo, split: str, files: list[Path], seed: int = 0) -> Triplets:
    """(anchor, entailment, contradiction) triplets from SNLI + MultiNLI train, built the way
    sentence-transformers' NLI example (``training_nli_v2.py``) builds them.

    Every pair is read in both directions (premise -> hypothesis and hypothesis -> premise,
    same label), sentences stripped. Every sentence that has at least one entailment and one
    contradiction partner becomes an anchor and gives two triplets:
    ``(anchor, e, c)`` and ``(e', anchor, c')``, with ``e, e'`` drawn from its entailment
    partners and ``c, c'`` from its contradiction partners. The reference draws with
    ``random.choice`` from Python sets (an order that changes between runs); here partners
    keep their order of first appearance and the draws use ``random.Random(seed)``, so the
    triplets are the same on every run.
    """
    rows = RecordBuilder(Triplets)
    # sentence -> (entailment partners, contradiction partners), as insertion-ordered sets
    partners: dict[str, tuple[dict[str, None], dict[str, None]]] = {}
    slots = {NLI_LABELS.index("entailment"): 0, NLI_LABELS.index("contradiction"): 1}
    for path in files:
        for premise, hypothesis, label in read_nli(path, rows.dropped):
            if label not in slots:
                continue
            premise, hypothesis = premise.strip(), hypothesis.strip()
            partners.setdefault(premise, ({}, {}))[slots[label]][hypothesis] = None
            partners.setdefault(hypothesis, ({}, {}))[slots[label]][premise] = None
    rng = random.Random(seed)
    for sentence, (ent, con) in partners.items():
        if not ent or not con:
            continue
        ent_list, con_list = list(ent), list(con)
        rows.add(sentence, rng.choice(ent_list), rng.choice(con_list))
        rows.add(rng.choice(ent_list), sentence, rng.choice(con_list))
    return rows.build(entry, split, files)
