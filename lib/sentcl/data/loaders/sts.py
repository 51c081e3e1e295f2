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
from .common import NLI_LABELS, check_range, parse_score, read_delimited, require_text

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
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    subsets: list[str] = []
    unscored = 0
    for path in files:
        subset = sts_subset_name(path)
        for line, fields in read_delimited(path, "\t", min_fields=3):
            if len(fields) != 3:
                raise DataFormatError(
                    path, line, "exactly 3 tab-separated fields (score, sentence1, sentence2)", f"{len(fields)} fields"
                )
            if not fields[0].strip():
                unscored += 1
                continue
            score = parse_score(fields[0], path, line, "a numeric gold score in column 1")
            check_range(score, *STS_SCORE_RANGE, path, line, "a gold score")
            s1.append(require_text(fields[1], path, line, "2 (sentence1)", strip=False))
            s2.append(require_text(fields[2], path, line, "3 (sentence2)", strip=False))
            scores.append(score)
            subsets.append(subset)
    return ScoredPairs(
        name=entry.name,
        split=split,
        sentences1=s1,
        sentences2=s2,
        scores=scores,
        subsets=subsets,
        sources=[str(p) for p in files],
        dropped={"unscored": unscored} if unscored else {},
    )


@loader("stsbenchmark")
def load_stsbenchmark(entry: DatasetInfo, split: str, files: list[Path]) -> ScoredPairs:
    """STS Benchmark (Cer et al. 2017); ``subsets`` holds each row's genre
    (``main-captions``, ``main-news``, ``main-forums``)."""
    s1: list[str] = []
    s2: list[str] = []
    scores: list[float] = []
    genres: list[str] = []
    for path in files:
        for line, fields in read_delimited(path, "\t", min_fields=7):
            score = parse_score(fields[4], path, line, "a numeric gold score in column 5")
            check_range(score, *STS_SCORE_RANGE, path, line, "a gold score")
            genres.append(require_text(fields[0], path, line, "1 (genre)"))
            s1.append(require_text(fields[5], path, line, "6 (sentence1)", strip=False))
            s2.append(require_text(fields[6], path, line, "7 (sentence2)", strip=False))
            scores.append(score)
    return ScoredPairs(
        name=entry.name,
        split=split,
        sentences1=s1,
        sentences2=s2,
        scores=scores,
        subsets=genres,
        sources=[str(p) for p in files],
    )


def _read_sick(path: Path):
    """Yield ``(line, sentence_A, sentence_B, relatedness, entailment_label)`` of a SICK file."""
    for line, fields in read_delimited(path, "\t", min_fields=5, header=SICK_HEADER):
        a = require_text(fields[1], path, line, "2 (sentence_A)", strip=False)
        b = require_text(fields[2], path, line, "3 (sentence_B)", strip=False)
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
    rows = [r for path in files for r in _read_sick(path)]
    return ScoredPairs(
        name=entry.name,
        split=split,
        sentences1=[r[1] for r in rows],
        sentences2=[r[2] for r in rows],
        scores=[r[3] for r in rows],
        subsets=["SICK"] * len(rows),
        sources=[str(p) for p in files],
    )


@loader("sicke")
def load_sick_entailment(entry: DatasetInfo, split: str, files: list[Path]) -> LabelledPairs:
    """SICK entailment (SICK-E): pairs labelled entailment / neutral / contradiction."""
    rows = [r for path in files for r in _read_sick(path)]
    return LabelledPairs(
        name=entry.name,
        split=split,
        sentences1=[r[1] for r in rows],
        sentences2=[r[2] for r in rows],
        labels=[NLI_LABELS.index(r[4]) for r in rows],
        label_names=NLI_LABELS,
        sources=[str(p) for p in files],
    )
