"""SemEval-2016/2017 Task 3, community question answering on Qatar Living (English).

The BSC paper (Chernyavskiy et al. 2022, §4, Table 2) uses two re-ranking subtasks:

- **CQA-A** (subtask A, question-comment similarity): a forum question (``RelQuestion``:
  subject and body) and the first 10 comments of its thread; a comment is relevant when
  ``RELC_RELEVANCE2RELQ`` is ``Good`` (``PotentiallyUseful`` and ``Bad`` are merged into
  non-relevant at test time, as the official scorer does).
- **CQA-B** (subtask B, question-question similarity): a new question (``OrgQuestion``)
  and the 10 related questions a search engine returned for it; relevant when
  ``RELQ_RELEVANCE2ORGQ`` is ``PerfectMatch`` or ``Relevant`` (``Irrelevant``: not).

Records: ``queries`` are the questions (A: ``RELQ_ID``; B: ``ORGQ_ID``), ``corpus`` the
candidates (A: ``RELC_ID`` comments; B: ``RELQ_ID`` related questions), ``candidates``
each query's list in file order (chronological for A, search-engine rank for B: the
official IR baseline ranks them in this order), ``qrels`` a 1/0 judgement for every
candidate. A question's text is its subject and body joined by ``separator`` (default
``" [SEP] "``, as the BSC reference code joins them; an empty body is left out).

Labels come from the XML attributes (train and dev files carry them) or, when the
registry lists a ``.relevancy`` file for the split, from that official gold file
(``qid <TAB> cid <TAB> rank <TAB> score <TAB> true|false``; test inputs have ``?``
labels). The gold file must cover exactly the XML's question/candidate pairs, and where
the XML also has labels they must agree: any mismatch is an error naming the line.

Subtask A reads either a ``-subtaskA`` file (threads only) or a full file (original
questions, each with one thread per ``<OrgQuestion>`` element); in a full file, threads
marked ``SubtaskA_Skip_Because_Same_As_RelQuestion_ID`` repeat an earlier thread
(possibly from another file, e.g. train part 1) and are skipped for subtask A, counted
in ``dropped["repeated_thread"]``, exactly as the organisers built the
``-subtaskA`` files (train part 2: 670 threads - 291 repeats = 379 questions, 3,790
comments, as README v3.2 §8 states).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import ConfigError, DataFormatError
from ..records import RetrievalSet
from ..registry import DatasetInfo, loader
from .common import parse_score, read_delimited
from .retrieval import XmlElement, add_text, iter_xml, require_files, retrieval_set

QUESTION_SEPARATOR = " [SEP] "
COMMENT_LABELS = {"Good": 1, "PotentiallyUseful": 0, "Bad": 0}  # RELC_RELEVANCE2RELQ, subtask A
QUESTION_LABELS = {"PerfectMatch": 1, "Relevant": 1, "Irrelevant": 0}  # RELQ_RELEVANCE2ORGQ, subtask B
UNLABELLED = "?"  # the label value in the official test inputs
GOLD_LABELS = {"true": 1, "false": 0}
SKIP_ATTRIBUTE = "SubtaskA_Skip_Because_Same_As_RelQuestion_ID"


@dataclass
class Candidate:
    """A comment (subtask A) or a related question (subtask B) with its XML label."""

    id: str
    text: str
    label: int | None  # None: unlabelled ("?" or no attribute)
    line: int


@dataclass
class Thread:
    question: Candidate  # the RelQuestion; its label is RELQ_RELEVANCE2ORGQ
    comments: list[Candidate]
    repeat_of: str | None
    line: int


@dataclass
class OriginalQuestion:
    id: str
    text: str
    line: int
    threads: list[Thread] = field(default_factory=list)


def _label(element: XmlElement, attribute: str, labels: dict[str, int], path: Path) -> int | None:
    value = element.attrs.get(attribute)
    if value is None or value == UNLABELLED:
        return None
    if value not in labels:
        raise DataFormatError(path, element.line, f"{attribute} one of {sorted(labels)} (or '?')", value)
    return labels[value]


def _question_text(subject: str | None, body: str | None, separator: str, path: Path, line: int) -> str:
    parts = [p for p in (subject, body) if p is not None and p.strip()]
    if not parts:
        raise DataFormatError(path, line, "a non-empty question subject or body", "both empty")
    return separator.join(parts)


def read_cqa_xml(path: Path, separator: str = QUESTION_SEPARATOR) -> tuple[list[OriginalQuestion], list[Thread]]:
    """Parse a SemEval-2016/2017 Task 3 English XML file (streaming, line-numbered errors).

    Returns the original questions (full files; one entry per ``<OrgQuestion>``
    element, so an original question appears once per related thread) and the
    top-level threads (``-subtaskA`` files); one of the two lists is empty.
    """
    originals: list[OriginalQuestion] = []
    loose: list[Thread] = []
    threads: list[Thread] = []  # threads seen since the last OrgQuestion closed
    texts: dict[str, str | None] = {}  # leaf texts of the element being built
    question: Candidate | None = None
    comments: list[Candidate] = []
    for el in iter_xml(path):
        if el.tag in ("OrgQSubject", "OrgQBody", "RelQSubject", "RelQBody", "RelCText"):
            texts[el.tag] = el.text
        elif el.tag == "RelQuestion":
            if "RelQSubject" not in texts:
                raise DataFormatError(path, el.line, "<RelQSubject> and <RelQBody> in <RelQuestion>", None)
            text = _question_text(texts.pop("RelQSubject"), texts.pop("RelQBody", None), separator, path, el.line)
            label = _label(el, "RELQ_RELEVANCE2ORGQ", QUESTION_LABELS, path)
            question = Candidate(el.attr("RELQ_ID", path), text, label, el.line)
        elif el.tag == "RelComment":
            comment = texts.pop("RelCText", None)
            if comment is None or not comment.strip():
                raise DataFormatError(path, el.line, "a non-empty <RelCText> in <RelComment>", comment)
            label = _label(el, "RELC_RELEVANCE2RELQ", COMMENT_LABELS, path)
            comments.append(Candidate(el.attr("RELC_ID", path), comment, label, el.line))
        elif el.tag == "Thread":
            if question is None:
                raise DataFormatError(path, el.line, "a <RelQuestion> in <Thread>", None)
            el.attr("THREAD_SEQUENCE", path)
            threads.append(Thread(question, comments, el.attrs.get(SKIP_ATTRIBUTE), el.line))
            question, comments = None, []
            if "OrgQuestion" not in el.parents:
                loose.append(threads.pop())
        elif el.tag == "OrgQuestion":
            if "OrgQSubject" not in texts:
                raise DataFormatError(path, el.line, "<OrgQSubject> and <OrgQBody> in <OrgQuestion>", None)
            text = _question_text(texts.pop("OrgQSubject"), texts.pop("OrgQBody", None), separator, path, el.line)
            originals.append(OriginalQuestion(el.attr("ORGQ_ID", path), text, el.line, threads))
            threads = []
    if originals and loose:
        raise DataFormatError(path, loose[0].line, "either <OrgQuestion> elements or top-level <Thread> elements",
                              "both")
    return originals, loose


def read_gold(path: Path) -> list[tuple[int, str, str, int]]:
    """Official gold ``.relevancy`` lines: ``(line, question_id, candidate_id, 1|0)``."""
    gold = []
    for line, fields in read_delimited(path, "\t", min_fields=5):
        if len(fields) != 5:
            raise DataFormatError(path, line, "exactly 5 tab-separated fields 'qid cid rank score true|false'",
                                  f"{len(fields)} fields")
        parse_score(fields[3], path, line, "a numeric score in field 4")
        if fields[4] not in GOLD_LABELS:
            raise DataFormatError(path, line, "a label 'true' or 'false' in field 5", fields[4])
        gold.append((line, fields[0], fields[1], GOLD_LABELS[fields[4]]))
    return gold


def _qrels(
    candidates: dict[str, list[Candidate]], xml_path: Path, gold_path: Path | None, label_name: str
) -> dict[str, dict[str, int]]:
    """Judgements of every candidate: from the gold file when given, else the XML labels."""
    if gold_path is None:
        qrels: dict[str, dict[str, int]] = {}
        for qid, cands in candidates.items():
            qrels[qid] = {}
            for c in cands:
                if c.label is None:
                    raise DataFormatError(
                        xml_path, c.line, f"a {label_name} label (or a gold .relevancy file in the registry split)",
                        "no label")
                qrels[qid][c.id] = c.label
        return qrels
    index = {(qid, c.id): c for qid, cands in candidates.items() for c in cands}
    judged: dict[tuple[str, str], int] = {}
    for line, qid, cid, grade in read_gold(gold_path):
        found = index.get((qid, cid))
        if found is None:
            raise DataFormatError(gold_path, line, f"a question/candidate pair of {xml_path.name}", f"{qid} {cid}")
        if (qid, cid) in judged:
            raise DataFormatError(gold_path, line, "one line per question/candidate pair", f"{qid} {cid} again")
        if found.label is not None and found.label != grade:
            raise DataFormatError(gold_path, line, f"the label {xml_path.name} gives {cid} ({found.label})", str(grade))
        judged[(qid, cid)] = grade
    for (qid, cid), c in index.items():
        if (qid, cid) not in judged:
            raise DataFormatError(xml_path, c.line, f"a line for {qid} {cid} in {gold_path.name}", "none")
    return {qid: {c.id: judged[(qid, c.id)] for c in cands} for qid, cands in candidates.items()}


def _xml_and_gold(entry: DatasetInfo, split: str, files: list[Path]) -> tuple[Path, Path | None]:
    require_files(entry, split, files)
    xmls = [f for f in files if f.suffix == ".xml"]
    golds = [f for f in files if f.suffix == ".relevancy"]
    if len(xmls) != 1 or len(golds) > 1 or len(files) != len(xmls) + len(golds):
        raise ConfigError(f"{entry.name}/{split}: the registry must list one .xml file and at most one .relevancy file")
    return xmls[0], (golds[0] if golds else None)


def _record(
    entry: DatasetInfo,
    split: str,
    files: list[Path],
    queries: dict[str, str],
    candidates: dict[str, list[Candidate]],
    xml_path: Path,
    gold_path: Path | None,
    label_name: str,
    dropped: Counter,
) -> RetrievalSet:
    """The record of one subtask: corpus = every candidate, qrels from gold or XML labels."""
    corpus: dict[str, str] = {}
    for cands in candidates.values():
        for c in cands:
            add_text(corpus, c.id, c.text, xml_path, c.line, "candidate")
    qrels = _qrels(candidates, xml_path, gold_path, label_name)
    ids = {q: [c.id for c in cands] for q, cands in candidates.items()}
    return retrieval_set(entry, split, files, queries, corpus, qrels, dropped, ids)


@loader("semeval2016_cqa_a", "semeval2017_cqa_a")
def load_cqa_subtask_a(
    entry: DatasetInfo, split: str, files: list[Path], separator: str = QUESTION_SEPARATOR
) -> RetrievalSet:
    """CQA-A: re-rank each question's thread comments (Good = relevant)."""
    xml_path, gold_path = _xml_and_gold(entry, split, files)
    originals, loose = read_cqa_xml(xml_path, separator)
    threads = loose or [t for o in originals for t in o.threads]
    dropped: Counter = Counter()
    queries: dict[str, str] = {}
    candidates: dict[str, list[Candidate]] = {}
    for t in threads:
        if t.repeat_of is not None:
            dropped["repeated_thread"] += 1
            continue
        add_text(queries, t.question.id, t.question.text, xml_path, t.question.line, "RelQuestion")
        candidates[t.question.id] = t.comments
    return _record(entry, split, files, queries, candidates, xml_path, gold_path, "RELC_RELEVANCE2RELQ", dropped)


@loader("semeval2016_cqa_b", "semeval2017_cqa_b")
def load_cqa_subtask_b(
    entry: DatasetInfo, split: str, files: list[Path], separator: str = QUESTION_SEPARATOR
) -> RetrievalSet:
    """CQA-B: re-rank each original question's related questions (PerfectMatch/Relevant = relevant)."""
    xml_path, gold_path = _xml_and_gold(entry, split, files)
    originals, loose = read_cqa_xml(xml_path, separator)
    if loose:
        raise DataFormatError(xml_path, loose[0].line, "<OrgQuestion> elements (subtask B needs a full file)",
                              "a subtask-A file with top-level <Thread> elements")
    queries: dict[str, str] = {}
    candidates: dict[str, list[Candidate]] = {}
    for o in originals:
        if o.id in queries and queries[o.id] != o.text:
            raise DataFormatError(xml_path, o.line, f"the same subject and body as the first <OrgQuestion> {o.id}",
                                  o.text)
        queries.setdefault(o.id, o.text)
        candidates.setdefault(o.id, []).extend(t.question for t in o.threads)
    return _record(entry, split, files, queries, candidates, xml_path, gold_path, "RELQ_RELEVANCE2ORGQ", Counter())
