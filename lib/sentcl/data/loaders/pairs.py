"""Paraphrase pairs with a binary label: MRPC and QQP.

Formats:

- ``mrpc/msr-para-{train,val,test}.tsv``: the Microsoft Research Paraphrase Corpus files,
  tab-separated with the header ``Quality, #1 ID, #2 ID, #1 String, #2 String``
  (``Quality`` 1 = paraphrase); train and test start with a UTF-8 byte-order mark; no
  quoting (strings contain ``"``).
- ``qqp/{train,dev}.tsv``: GLUE's Quora Question Pairs files, tab-separated with the header
  ``id, qid1, qid2, question1, question2, is_duplicate``.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import DataFormatError
from ..records import LabelledPairs
from ..registry import DatasetInfo, loader
from .common import RecordBuilder, read_delimited, require_pair

MRPC_HEADER = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
MRPC_LABELS = ("not_equivalent", "equivalent")  # GLUE's names
QQP_HEADER = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
QQP_LABELS = ("not_duplicate", "duplicate")


def read_binary_pairs(
    entry: DatasetInfo,
    split: str,
    files: list[Path],
    *,
    header: list[str],
    columns: tuple[int, int, int],
    label_names: tuple[str, str],
) -> LabelledPairs:
    """Pairs from tab-separated files with a header; ``columns`` are the 0-based
    (label, sentence1, sentence2) columns and the label is ``0`` or ``1``."""
    label_col, a_col, b_col = columns
    sentence_columns = (f"{a_col + 1} ({header[a_col]})", f"{b_col + 1} ({header[b_col]})")
    rows = RecordBuilder(LabelledPairs, label_names=label_names)
    for path in files:
        for line, fields in read_delimited(path, "\t", min_fields=len(header), encoding="utf-8-sig", header=header):
            if fields[label_col].strip() not in ("0", "1"):
                raise DataFormatError(
                    path, line, f"a label 0 or 1 in column {label_col + 1} ({header[label_col]})", fields[label_col]
                )
            sentences = require_pair(path, line, (fields[a_col], fields[b_col]), sentence_columns)
            rows.add(*sentences, int(fields[label_col]))
    return rows.build(entry, split, files)


@loader("mrpc")
def load_mrpc(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """MRPC (Dolan & Brockett 2005): sentence pairs labelled paraphrase or not."""
    return read_binary_pairs(entry, split, files, header=MRPC_HEADER, columns=(0, 3, 4), label_names=MRPC_LABELS)


@loader("qqp")
def load_qqp(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """Quora Question Pairs (GLUE release): question pairs labelled duplicate or not."""
    return read_binary_pairs(entry, split, files, header=QQP_HEADER, columns=(5, 3, 4), label_names=QQP_LABELS)
