"""Chinese sentence pairs: CNSD's Chinese STS-B and SimCLUE.

Formats (``../shared/data/SOURCES.md`` sections 5 and 6):

- ``cnsd_stsb/cnsd-sts-{train,dev,test}.txt``: one pair per line,
  ``id||sentence1||sentence2||score`` with an integer score 0-5; the id is the English
  STS-B year and sid (e.g. ``2012test-0024``).
- ``simclue/*.json``: JSON lines ``{"sentence1", "sentence2", "label"}`` with the label
  ``"0"`` (not similar) or ``"1"`` (similar).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import DataFormatError
from ..records import LabelledPairs, ScoredPairs
from ..registry import DatasetInfo, loader
from .common import (
    RecordBuilder,
    check_range,
    json_field,
    parse_score,
    read_jsonl,
    read_lines,
    require_pair,
    require_text,
)

CNSD_SEPARATOR = "||"
SIMCLUE_LABELS = ("not_similar", "similar")


@loader("cnsd_stsb")
def load_cnsd_stsb(entry: DatasetInfo, split: str, files: list[Path]) -> ScoredPairs:
    """Chinese STS-B (CNSD): ``subsets`` holds the source year of each pair (e.g. ``2012test``)."""
    rows = RecordBuilder(ScoredPairs)
    for path in files:
        for line, text in read_lines(path):
            parts = text.split(CNSD_SEPARATOR)
            if len(parts) != 4:
                raise DataFormatError(
                    path, line, "4 fields separated by '||' (id, sentence1, sentence2, score)", f"{len(parts)} fields"
                )
            score = parse_score(parts[3], path, line, "an integer score 0-5 in field 4")
            if score != int(score):
                raise DataFormatError(path, line, "an integer score 0-5 in field 4", parts[3])
            check_range(score, 0.0, 5.0, path, line, "a score")
            year = require_text(parts[0], path, line, "1 (id)").split("-")[0]
            rows.add(*require_pair(path, line, (parts[1], parts[2]), ("2 (sentence1)", "3 (sentence2)")), score, year)
    return rows.build(entry, split, files)


@loader("simclue")
def load_simclue(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """SimCLUE sentence pairs labelled similar (1) or not (0)."""
    rows = RecordBuilder(LabelledPairs, label_names=SIMCLUE_LABELS)
    for path in files:
        for line, obj in read_jsonl(path):
            label = json_field(obj, "label", path, line)
            if label not in ("0", "1"):
                raise DataFormatError(path, line, 'a label "0" or "1"', label)
            rows.add(
                require_text(json_field(obj, "sentence1", path, line), path, line, "sentence1", strip=False),
                require_text(json_field(obj, "sentence2", path, line), path, line, "sentence2", strip=False),
                int(label),
            )
    return rows.build(entry, split, files)
