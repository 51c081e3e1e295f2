"""Scored sentence pairs: SemEval STS 2012-2016, STS Benchmark, SICK (relatedness and entailment).

Formats (``../shared/data/SOURCES.md`` sections 1-3):

- ``sts/<year>/<subset>.test.tsv``: ``gold_score \\t sentence1 \\t sentence2``, no header,
  no quoting (the official ``STS.gs.*`` and ``STS.input.*`` files pasted together). An
  empty score marks a pair that was never scored (STS15/STS16 ship them); SentEval drops
  those rows, and so do we, counting them in ``dropped["unscored"]``.
- ``stsbenchmark/sts-{train,dev,test}.csv``: tab-separated despite the name, no header,
  ``genre, file, year, sid, score, sentence1, sentence2`` and sometimes two trailing
  source columns; no quoting (sentences contain ``"``).
- ``sick2014/SICK_*.txt``: tab-separated with a header
  ``pair_ID, sentence_A, sentence_B, relatedness_score, entailment_judgment``.

Sentences are returned exactly as distributed (only the line ending is removed): the
community's published scores for a model (SentEval, MTEB) are computed on this text.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import DataFormatError
from ..records import LabelledPairs, ScoredPairs
from ..registry import DatasetInfo, loader
from .common import NLI_LABELS, RecordBuilder, check_range, parse_score, read_delimited, require_pair, require_text

STS_SCORE_RANGE = (0.0, 5.0)
SICK_SCORE_RANGE = (1.0, 5.0)
SICK_HEADER = ["pair_ID", "sentence_A", "sentence_B", "relatedness_score", "entailment_judgment"]


def sts_subset_name(path: Path) -> str:
    """``MSRpar.test.tsv`` -> ``MSRpar``: the subset a row of a SemEval STS file belongs to."""
    return path.name.split(".test.")[0] if ".test." in path.name else path.stem


@loader("sts12", "sts13", "sts14", "sts15", "sts16")
def load_semeval_sts(entry: DatasetInfo, split: str, files: list[Path]) -> ScoredPairs:
    """One year of SemEval STS, every subset file pooled in registry order.

    ``subsets[i]`` names the file row ``i`` came from (e.g. ``"MSRpar"``), so an
    evaluator can score the pooled set ("all") or each subset.
    """
    rows = RecordBuilder(ScoredPairs)
    for path in files:
        subset = sts_subset_name(path)
        for line, fields in read_delimited(path, "\t", min_fields=3):
            if len(fields) != 3:
                raise DataFormatError(
                    path, line, "exactly 3 tab-separated fields (score, sentence1, sentence2)", f"{len(fields)} fields"
                )
            if not fields[0].strip():
                rows.dropped["unscored"] += 1
                continue
            score = parse_score(fields[0], path, line, "a numeric gold score in column 1")
            check_range(score, *STS_SCORE_RANGE, path, line, "a gold score")
            rows.add(*require_pair(path, line, (fields[1], fields[2]), ("2 (sentence1)", "3 (sentence2)")), score, subset)
    return rows.build(entry, split, files)


@loader("stsbenchmark")
def load_stsbenchmark(entry: DatasetInfo, split: str, files: list[Path]) -> ScoredPairs:
    """STS Benchmark (Cer et al. 2017); ``subsets`` holds each row's genre
    (``main-captions``, ``main-news``, ``main-forums``)."""
    rows = RecordBuilder(ScoredPairs)
    for path in files:
        for line, fields in read_delimited(path, "\t", min_fields=7):
            score = parse_score(fields[4], path, line, "a numeric gold score in column 5")
            check_range(score, *STS_SCORE_RANGE, path, line, "a gold score")
            genre = require_text(fields[0], path, line, "1 (genre)")
            rows.add(*require_pair(path, line, (fields[5], fields[6]), ("6 (sentence1)", "7 (sentence2)")), score, genre)
    return rows.build(entry, split, files)


def _read_sick(path: Path):
    """Yield ``(line, sentence_A, sentence_B, relatedness, entailment_label)`` of a SICK file."""
    for line, fields in read_delimited(path, "\t", min_fields=5, header=SICK_HEADER):
        a, b = require_pair(path, line, (fields[1], fields[2]), ("2 (sentence_A)", "3 (sentence_B)"))
        score = parse_score(fields[3], path, line, "a numeric relatedness_score in column 4")
        check_range(score, *SICK_SCORE_RANGE, path, line, "a relatedness_score")
        label = fields[4].strip().lower()
        if label not in NLI_LABELS:
            raise DataFormatError(
                path, line, f"an entailment_judgment in column 5 out of {[x.upper() for x in NLI_LABELS]}", fields[4]
            )
        yield line, a, b, score, label


@loader("sickr")
def load_sick_relatedness(entry: DatasetInfo, split: str, files: list[Path]) -> ScoredPairs:
    """SICK relatedness (SICK-R): pairs scored 1-5 (Marelli et al. 2014)."""
    rows = RecordBuilder(ScoredPairs)
    for path in files:
        for _, a, b, score, _ in _read_sick(path):
            rows.add(a, b, score, "SICK")
    return rows.build(entry, split, files)


@loader("sicke")
def load_sick_entailment(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """SICK entailment (SICK-E): pairs labelled entailment / neutral / contradiction."""
    rows = RecordBuilder(LabelledPairs, label_names=NLI_LABELS)
    for path in files:
        for _, a, b, _, label in _read_sick(path):
            rows.add(a, b, NLI_LABELS.index(label))
    return rows.build(entry, split, files)
