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
from .common import check_range, json_field, parse_score, read_jsonl, read_lines, require_text

CNSD_SEPARATOR = "||"
SIMCLUE_LABELS = ("not_similar", "similar")


@loader("cnsd_stsb")
def load_cnsd_stsb(entry: DatasetInfo, split: str, files: list[Path]) -> ScoredPairs:
    """Chinese STS-B (CNSD): ``subsets`` holds the source year of each pair (e.g. ``2012test``)."""
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    years: list[str] = []
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
            years.append(require_text(parts[0], path, line, "1 (id)").split("-")[0])
            s1.append(require_text(parts[1], path, line, "2 (sentence1)", strip=False))
            s2.append(require_text(parts[2], path, line, "3 (sentence2)", strip=False))
            scores.append(score)
    return ScoredPairs(
        name=entry.name,
        split=split,
        sentences1=s1,
        sentences2=s2,
        scores=scores,
        subsets=years,
        sources=[str(p) for p in files],
    )


@loader("simclue")
def load_simclue(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """SimCLUE sentence pairs labelled similar (1) or not (0)."""
    s1: list[str] = []
    s2: list[str] = []
    labels: list[int] = []
    for path in files:
        for line, obj in read_jsonl(path):
            label = json_field(obj, "label", path, line)
            if label not in ("0", "1"):
                raise DataFormatError(path, line, 'a label "0" or "1"', label)
            s1.append(require_text(json_field(obj, "sentence1", path, line), path, line, "sentence1", strip=False))
            s2.append(require_text(json_field(obj, "sentence2", path, line), path, line, "sentence2", strip=False))
            labels.append(int(label))
    return LabelledPairs(
        name=entry.name,
        split=split,
        sentences1=s1,
        sentences2=s2,
        labels=labels,
        label_names=SIMCLUE_LABELS,
        sources=[str(p) for p in files],
    )
