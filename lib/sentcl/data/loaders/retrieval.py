"""Retrieval sets: queries, a corpus and relevance judgements (qrels).

This module holds what every retrieval loader shares, and the loaders of the sets that
come as plain TREC-style text files:

- ``clef2020_checkthat_task2``: CLEF-2020 CheckThat! Task 2, Snopes verified-claim
  retrieval (Shaar et al.'s tweets; ``../shared/data/SOURCES.md`` section 9).
- ``pfcc_s``: PFCC-S, the Snopes part of "That is a known lie" (Shaar et al., ACL 2020),
  as the BSC paper uses it (§4, Table 3).
- ``antique``: ANTIQUE non-factoid answer ranking (Hashemi et al. 2020; BSC §4, Table 1).

The SemEval CQA loaders live in :mod:`.cqa`, the FAQ sets (COUGH, FAQIR) in :mod:`.faq`.

How a :class:`~sentcl.data.records.RetrievalSet` is filled, for every retrieval loader:

- ``queries`` / ``corpus``: id -> text, in file order, text exactly as distributed.
- ``qrels[query_id][doc_id] = grade``: every judgement the source gives, negative ones
  (grade 0) included, so a query whose candidates are all non-relevant keeps its entry.
  The grade scale is the source's own where it is graded (ANTIQUE 1-4); the registry
  entry's ``relevance_level`` says from which grade a document counts as relevant for
  binary measures (trec_eval's ``-l``).
- ``candidates``: per query, the list to re-rank (SemEval CQA, ANTIQUE's judged answers),
  or ``None`` when every query ranks the whole corpus.

Policy for judgements that do not fit (decided once, for all loaders):

- a judgement for a query id the query file does not have is dropped and counted
  (``dropped["judgement_unknown_query"]``): qrels files are routinely shared between
  query subsets (COUGH keeps judgements of the queries it removed);
- a judgement for a document id the corpus does not have is an error naming the qrels
  line: the corpus is the universe every judgement points into, so a missing document
  means a wrong or damaged corpus file;
- the same (query, document) judged twice keeps the highest grade and counts the extra
  line in ``dropped["duplicate_judgement"]``;
- a query without any judgement is dropped and counted
  (``dropped["query_without_judgements"]``): trec_eval-style scorers (CLEF's official
  one is trectools) evaluate only queries present in the qrels, and we make that visible
  instead of leaving it to the evaluator.
"""

from __future__ import annotations

import contextlib
import csv
import sys
import xml.parsers.expat
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path

from ...errors import ConfigError, DataFormatError, DataMissingError
from ..records import RetrievalSet
from ..registry import DatasetInfo, loader
from .common import Quoting, read_delimited, read_lines, require_text

# ---------------------------------------------------------------------------------------
# Shared helpers
# ---------------------------------------------------------------------------------------


def require_files(entry: DatasetInfo, split: str, files: list[Path]) -> None:
    """Raise one DataMissingError naming *every* missing file of the split (a partial
    copy, like COUGH in ../shared/data, then says at once what is still needed)."""
    missing = [str(f) for f in files if not f.exists()]
    if missing:
        raise DataMissingError(
            f"{entry.name}/{split}: {len(missing)} of {len(files)} files missing: {', '.join(missing)}"
            f" (see `sentcl data download {entry.name}`)"
        )


def expect_files(entry: DatasetInfo, split: str, files: list[Path], roles: tuple[str, ...]) -> list[Path]:
    """Check the registry gives the split exactly the files the loader reads, in order."""
    if len(files) != len(roles):
        raise ConfigError(
            f"{entry.name}/{split}: the registry must list {len(roles)} files ({', '.join(roles)}), "
            f"it lists {len(files)}"
        )
    require_files(entry, split, files)
    return files


@contextlib.contextmanager
def csv_field_limit(limit: int = 2**31 - 1) -> Iterator[None]:
    """Raise the csv module's per-field size cap (128 KiB) while reading files whose
    fields are longer (COUGH's longest FAQ answers); restore it afterwards."""
    old = csv.field_size_limit()
    csv.field_size_limit(min(limit, sys.maxsize))
    try:
        yield
    finally:
        csv.field_size_limit(old)


def read_table(
    path: Path,
    columns: tuple[str, ...],
    *,
    delimiter: str = "\t",
    quoting: Quoting = csv.QUOTE_MINIMAL,
) -> Iterator[tuple[int, dict[str, str]]]:
    """Yield ``(line, {column: value})`` rows of a delimited file with a header line.

    ``columns`` are the header names the caller needs (``"Label*"``: the one column
    whose name starts with ``Label``); a header without one of them is an error naming
    line 1 (a "missing column"), and so is a row with fewer fields than the header.
    Quoted fields may span lines (the line is where the record starts).
    """
    with csv_field_limit():
        rows = read_delimited(path, delimiter, min_fields=1, quoting=quoting)
        try:
            _, header = next(rows)
        except StopIteration:
            raise DataFormatError(path, 1, f"a header line with columns {list(columns)}", "an empty file") from None
        names = [h.strip() for h in header]
        index = {}
        for c in columns:
            found = [i for i, n in enumerate(names) if (n.startswith(c[:-1]) if c.endswith("*") else n == c)]
            if len(found) != 1:
                raise DataFormatError(path, 1, f"header columns {list(columns)}", f"{names} (no single {c!r})")
            index[c] = found[0]
        for line, fields in rows:
            if len(fields) < len(names):
                raise DataFormatError(
                    path, line, f"{len(names)} fields as in the header {names}", f"{len(fields)} fields"
                )
            yield line, {c: fields[i] for c, i in index.items()}


def add_text(table: dict, key: str, value: object, path: Path, line: int, what: str) -> None:
    """``table[key] = value``; an id seen before in the same file is an error."""
    if key in table:
        raise DataFormatError(path, line, f"a {what} id not used before in the file", key)
    table[key] = value


@dataclass(frozen=True)
class Judgement:
    """One relevance judgement as read from a file, with the line it came from."""

    path: Path
    line: int
    query_id: str
    doc_id: str
    grade: int


def parse_trec_qrels(path: Path, grades: range | None = None) -> list[Judgement]:
    """TREC qrels ``query_id iteration doc_id relevance`` (whitespace-separated).

    Exactly four fields per line and an integer relevance (within ``grades`` when
    given); anything else is an error naming the line.
    """
    judgements = []
    for line, text in read_lines(path):
        fields = text.split()
        if not fields:
            raise DataFormatError(path, line, "a qrels line 'query_id iteration doc_id relevance'", text)
        if len(fields) != 4:
            raise DataFormatError(
                path, line, "exactly 4 fields 'query_id iteration doc_id relevance'", f"{len(fields)} fields: {text}"
            )
        try:
            grade = int(fields[3])
        except ValueError:
            raise DataFormatError(path, line, "an integer relevance in field 4", fields[3]) from None
        if grades is not None and grade not in grades:
            raise DataFormatError(path, line, f"a relevance from {grades.start} to {grades.stop - 1}", fields[3])
        judgements.append(Judgement(path, line, fields[0], fields[2], grade))
    return judgements


def resolve_qrels(
    judgements: list[Judgement],
    queries: dict[str, str],
    corpus: dict[str, str],
    dropped: Counter,
    *,
    dropped_docs: Collection[str] = frozenset(),
) -> dict[str, dict[str, int]]:
    """Judgements -> ``qrels``, applying the module's policy (see the module docstring).

    ``dropped_docs`` are documents the loader itself dropped and counted (e.g. a FAQ item
    without text); their judgements are dropped and counted too, not reported as errors.
    """
    qrels: dict[str, dict[str, int]] = {}
    for j in judgements:
        if j.query_id not in queries:
            dropped["judgement_unknown_query"] += 1
            continue
        if j.doc_id not in corpus:
            if j.doc_id in dropped_docs:
                dropped["judgement_dropped_document"] += 1
                continue
            raise DataFormatError(j.path, j.line, "a document id present in the corpus", j.doc_id)
        judged = qrels.setdefault(j.query_id, {})
        if j.doc_id in judged:
            dropped["duplicate_judgement"] += 1
            judged[j.doc_id] = max(judged[j.doc_id], j.grade)
        else:
            judged[j.doc_id] = j.grade
    return qrels


def retrieval_set(
    entry: DatasetInfo,
    split: str,
    files: list[Path],
    queries: dict[str, str],
    corpus: dict[str, str],
    qrels: dict[str, dict[str, int]],
    dropped: Counter,
    candidates: dict[str, list[str]] | None = None,
) -> RetrievalSet:
    """Build the record: drop (and count) queries without judgements, keep the order."""
    without = [q for q in queries if q not in qrels]
    if without:
        dropped["query_without_judgements"] += len(without)
        queries = {q: t for q, t in queries.items() if q in qrels}
        if candidates is not None:
            candidates = {q: c for q, c in candidates.items() if q in qrels}
    return RetrievalSet(
        name=entry.name,
        split=split,
        queries=queries,
        corpus=corpus,
        qrels={q: qrels[q] for q in queries},
        candidates=candidates,
        sources=[str(p) for p in files],
        dropped={k: v for k, v in dropped.items() if v},
    )


# ---------------------------------------------------------------------------------------
# Streaming XML with line numbers (SemEval CQA, FAQIR)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class XmlElement:
    """A closed XML element: its tag, attributes, the line its start tag is on, the
    character data directly inside it and the tags of its ancestors (outermost first)."""

    tag: str
    attrs: dict[str, str]
    line: int
    text: str
    parents: tuple[str, ...]

    def attr(self, name: str, path: Path) -> str:
        """A required attribute; its absence is an error naming the element's line."""
        if name not in self.attrs:
            raise DataFormatError(path, self.line, f"attribute {name} on <{self.tag}>", f"only {sorted(self.attrs)}")
        return self.attrs[name]


def iter_xml(path: Path, chunk_size: int = 1 << 16) -> Iterator[XmlElement]:
    """Yield every element of an XML file when it closes, in document order.

    Streams with expat (memory stays small for large files). A malformed, truncated or
    wrongly encoded file raises a DataFormatError naming the line where parsing failed.
    External entities are never fetched.
    """
    parser = xml.parsers.expat.ParserCreate()
    parser.buffer_text = True
    stack: list[tuple[str, dict[str, str], int, list[str]]] = []
    closed: list[XmlElement] = []

    def start(tag: str, attrs: dict[str, str]) -> None:
        stack.append((tag, attrs, parser.CurrentLineNumber, []))

    def end(tag: str) -> None:
        name, attrs, line, parts = stack.pop()
        closed.append(XmlElement(name, attrs, line, "".join(parts), tuple(s[0] for s in stack)))

    def chars(data: str) -> None:
        if stack:
            stack[-1][3].append(data)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(chunk_size)
            try:
                parser.Parse(chunk, not chunk)
            except xml.parsers.expat.ExpatError as exc:
                found = f"{xml.parsers.expat.ErrorString(exc.code)} at column {exc.offset + 1}"
                raise DataFormatError(path, exc.lineno, "well-formed UTF-8 XML", found) from None
            yield from closed
            closed.clear()
            if not chunk:
                return


# ---------------------------------------------------------------------------------------
# CLEF-2020 CheckThat! Task 2
# ---------------------------------------------------------------------------------------

CLEF_DOCUMENT_FIELDS = {"vclaim": ("vclaim",), "vclaim_title": ("vclaim", "title")}


@loader("clef2020_checkthat_task2")
def load_clef2020_task2(
    entry: DatasetInfo, split: str, files: list[Path], document: str = "vclaim"
) -> RetrievalSet:
    """CLEF-2020 CheckThat! Task 2: rank the 10,375 Snopes verified claims for a tweet.

    Files (registry order): ``verified_claims.docs.tsv`` (``(index), vclaim, title``),
    ``<split>/tweets.queries.tsv`` (``(index), tweet_content``), both tab-separated with
    standard CSV quoting (14 claims span lines), and ``<split>/tweet-vclaim-pairs.qrels``
    (``tweet_id 0 vclaim_id 1``). ``document`` chooses the text of a verified claim:
    ``"vclaim"`` (the claim, as the BSC reference code embeds it) or ``"vclaim_title"``
    (claim and fact-check title joined by a space).
    """
    if document not in CLEF_DOCUMENT_FIELDS:
        raise ConfigError(f"document={document!r}; valid: {sorted(CLEF_DOCUMENT_FIELDS)}")
    vclaims_path, tweets_path, qrels_path = expect_files(entry, split, files, ("vclaims", "tweets", "qrels"))
    fields = CLEF_DOCUMENT_FIELDS[document]
    corpus: dict[str, str] = {}
    for line, row in read_table(vclaims_path, ("", "vclaim", "title")):
        for column in fields:
            require_text(row[column], vclaims_path, line, column, strip=False)
        add_text(corpus, row[""], " ".join(row[c] for c in fields), vclaims_path, line, "verified claim")
    queries: dict[str, str] = {}
    for line, row in read_table(tweets_path, ("", "tweet_content")):
        text = require_text(row["tweet_content"], tweets_path, line, "tweet_content", strip=False)
        add_text(queries, row[""], text, tweets_path, line, "tweet")
    dropped: Counter = Counter()
    qrels = resolve_qrels(parse_trec_qrels(qrels_path, range(0, 2)), queries, corpus, dropped)
    return retrieval_set(entry, split, files, queries, corpus, qrels, dropped)


# ---------------------------------------------------------------------------------------
# PFCC-S ("That is a known lie", Snopes part)
# ---------------------------------------------------------------------------------------

PFCC_TRAIN_PAIRS = 800  # BSC §4: 800 positive pairs for training, the remaining 200 for testing


@loader("pfcc_s")
def load_pfcc_s(entry: DatasetInfo, split: str, files: list[Path]) -> RetrievalSet:
    """PFCC-S: rank the Snopes verified claims for an input tweet (HasPositive@k).

    Files (registry order): ``verified-claims.tsv`` (header with a ``fact`` column: the
    verified claim) and ``tweet-veclaim-pairs.tsv`` (header with ``claim``: the input
    tweet, and ``fact``: the verified claim it is paired with), tab-separated with CSV
    quoting. This is the layout the BSC reference code reads; the first 800 pairs are
    ``train`` and the rest ``test``, as there. A tweet paired with several claims is one
    query; a pair's claim is matched to every verified claim with exactly that text.
    Query ids are the 0-based pair row of the tweet's first pair, document ids the
    0-based verified-claims row.
    """
    if split not in ("train", "test"):
        raise ConfigError(f"{entry.name}: split {split!r}; valid: ['test', 'train']")
    vclaims_path, pairs_path = expect_files(entry, split, files, ("verified claims", "pairs"))
    corpus: dict[str, str] = {}
    by_text: dict[str, list[str]] = {}
    for row_index, (line, row) in enumerate(read_table(vclaims_path, ("fact",))):
        text = require_text(row["fact"], vclaims_path, line, "fact", strip=False)
        corpus[str(row_index)] = text
        by_text.setdefault(text, []).append(str(row_index))
    queries: dict[str, str] = {}
    query_of_text: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    rows = list(read_table(pairs_path, ("claim", "fact")))
    if len(rows) <= PFCC_TRAIN_PAIRS:
        raise DataFormatError(pairs_path, None, f"more than {PFCC_TRAIN_PAIRS} pairs (train, then test)",
                              f"{len(rows)}")
    chosen = range(0, PFCC_TRAIN_PAIRS) if split == "train" else range(PFCC_TRAIN_PAIRS, len(rows))
    for row_index in chosen:
        line, row = rows[row_index]
        tweet = require_text(row["claim"], pairs_path, line, "claim", strip=False)
        fact = require_text(row["fact"], pairs_path, line, "fact", strip=False)
        if fact not in by_text:
            raise DataFormatError(pairs_path, line, f"a fact present in {vclaims_path.name}", fact)
        qid = query_of_text.setdefault(tweet, str(row_index))
        queries.setdefault(qid, tweet)
        for doc_id in by_text[fact]:
            qrels.setdefault(qid, {})[doc_id] = 1
    return retrieval_set(entry, split, files, queries, corpus, qrels, Counter())


# ---------------------------------------------------------------------------------------
# ANTIQUE
# ---------------------------------------------------------------------------------------

ANTIQUE_GRADES = range(1, 5)  # 1 = out of context ... 4 = convincing answer (Hashemi et al. 2020)


def _read_id_text(path: Path, what: str, keep: set[str] | None = None) -> dict[str, str]:
    """``id <TAB> text`` lines (ANTIQUE); the text is everything after the first tab.
    With ``keep``, only those ids are stored (the 400k-answer collection)."""
    table: dict[str, str] = {}
    for line, text in read_lines(path):
        key, tab, value = text.partition("\t")
        if not tab:
            raise DataFormatError(path, line, f"'{what} id <TAB> text'", text)
        if keep is not None and key not in keep:
            continue
        add_text(table, key, require_text(value, path, line, "2 (text)", strip=False), path, line, what)
    return table


@loader("antique")
def load_antique(entry: DatasetInfo, split: str, files: list[Path], candidates: str = "judged") -> RetrievalSet:
    """ANTIQUE (Hashemi et al. 2020): non-factoid questions from Yahoo! Answers, answers
    graded 1-4 (relevant from grade 3, the standard binarisation).

    Files (registry order): ``antique-collection.txt`` (``answer_id <TAB> text``),
    ``antique-<split>-queries.txt`` (``query_id <TAB> text``) and ``antique-<split>.qrel``
    (``query_id U0 answer_id grade``). ``candidates="judged"`` (default) re-ranks each
    question's judged answers, as the BSC paper does (§4: "the task is to rank the
    answers by their relevance"; its reference code scores the judged pairs), and keeps
    only judged answers in the corpus; ``"collection"`` ranks the whole collection.
    """
    if candidates not in ("judged", "collection"):
        raise ConfigError(f"candidates={candidates!r}; valid: ['collection', 'judged']")
    collection_path, queries_path, qrels_path = expect_files(
        entry, split, files, ("collection", "queries", "qrels")
    )
    queries = _read_id_text(queries_path, "query")
    judgements = parse_trec_qrels(qrels_path, ANTIQUE_GRADES)
    keep = {j.doc_id for j in judgements} if candidates == "judged" else None
    corpus = _read_id_text(collection_path, "answer", keep)
    dropped: Counter = Counter()
    qrels = resolve_qrels(judgements, queries, corpus, dropped)
    per_query = {q: list(judged) for q, judged in qrels.items()} if candidates == "judged" else None
    return retrieval_set(entry, split, files, queries, corpus, qrels, dropped, per_query)
