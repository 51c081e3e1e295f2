"""FAQ retrieval sets of the RCL paper (Tan et al. 2022, §4.1, Table 2): COUGH and FAQIR.

Each set has two registry splits:

- ``user_queries``: the official test collection. Queries are user questions, the
  corpus is the FAQ bank, ``qrels`` every annotated (query, FAQ item) pair. Every query
  ranks the whole bank (``candidates`` is None).
- ``faq_pairs``: each FAQ item's question is a query and its answer the document to
  find. The RCL paper reports FAQIR as "4133 FAQ-pairs for training and test" and
  evaluates "with 5-fold method": this is that view. Items whose answer text is
  identical are all relevant for each other's questions.

``document`` (``user_queries`` only) chooses the text of a FAQ item: ``"question_answer"``
(the default: question and answer joined by a space; RCL speaks of long queries and
index entries), ``"question"`` or ``"answer"``. The RCL paper does not say which it used.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from ...errors import ConfigError, DataFormatError
from ..records import RetrievalSet
from ..registry import DatasetInfo, loader
from .common import require_text
from .retrieval import Judgement, add_text, expect_files, iter_xml, read_table, resolve_qrels, retrieval_set

DOCUMENT_FIELDS = {"question_answer": ("question", "answer"), "question": ("question",), "answer": ("answer",)}
SPLITS = ("user_queries", "faq_pairs")


def _document_fields(split: str, document: str | None) -> tuple[str, ...]:
    """The FAQ fields that make a document of ``user_queries`` (``faq_pairs`` has fixed ones)."""
    if split == "faq_pairs":
        if document is not None:
            raise ConfigError("document= applies to the user_queries split only (faq_pairs: question -> answer)")
        return ()
    if document is None:
        return DOCUMENT_FIELDS["question_answer"]
    if document not in DOCUMENT_FIELDS:
        raise ConfigError(f"document={document!r}; valid: {sorted(DOCUMENT_FIELDS)}")
    return DOCUMENT_FIELDS[document]


def _faq_text(item: dict[str, str], fields: tuple[str, ...]) -> str:
    """The chosen fields of a FAQ item, the non-empty ones joined by a space."""
    return " ".join(item[f] for f in fields if item[f].strip())


def _faq_pairs(
    entry: DatasetInfo, split: str, files: list[Path], items: dict[str, dict[str, str]], dropped: Counter
) -> RetrievalSet:
    """The ``faq_pairs`` view: question -> answer(s) with that exact text."""
    queries = {k: it["question"] for k, it in items.items() if it["question"].strip()}
    corpus = {k: it["answer"] for k, it in items.items() if it["answer"].strip()}
    dropped["faq_item_without_question"] += len(items) - len(queries)
    dropped["faq_item_without_answer"] += len(items) - len(corpus)
    same_answer: dict[str, list[str]] = {}
    for k, text in corpus.items():
        same_answer.setdefault(text, []).append(k)
    qrels = {q: {d: 1 for d in same_answer[corpus[q]]} for q in queries if q in corpus}
    return retrieval_set(entry, split, files, queries, corpus, qrels, dropped)


def _check_split(entry: DatasetInfo, split: str) -> None:
    if split not in SPLITS:
        raise ConfigError(f"{entry.name}: split {split!r}; valid: {list(SPLITS)}")


# ---------------------------------------------------------------------------------------
# COUGH
# ---------------------------------------------------------------------------------------

COUGH_LABELS = {"positive": 1, "negative": 0}


@loader("cough")
def load_cough(entry: DatasetInfo, split: str, files: list[Path], document: str | None = None) -> RetrievalSet:
    """COUGH (Zhang et al. 2021), comma-separated files with a header.

    ``user_queries`` files (registry order): ``FAQ_Bank_eval.csv`` (columns ``index``,
    ``question``, ``answer``, ...: the 7,117 English non-forum FAQ items the paper
    evaluates on), ``User_Query_Bank.csv`` (``index``, ``query``) and
    ``Annotated_Relevance_Set.csv`` (``Query_index``, ``FAQ_index`` and a label column
    whose name starts with ``Label``, valued ``positive``/``negative``: the authors'
    binarisation of the annotators' mean score). ``faq_pairs``: the FAQ bank only.
    A FAQ item whose chosen text is empty is dropped and counted, with its judgements.
    """
    _check_split(entry, split)
    fields = _document_fields(split, document)
    dropped: Counter = Counter()
    if split == "faq_pairs":
        (bank_path,) = expect_files(entry, split, files, ("FAQ bank",))
        return _faq_pairs(entry, split, files, _cough_faq_bank(bank_path), dropped)
    bank_path, queries_path, judged_path = expect_files(entry, split, files, ("FAQ bank", "queries", "judgements"))
    corpus, empty = _faq_corpus(_cough_faq_bank(bank_path), fields, dropped)
    queries: dict[str, str] = {}
    for line, row in read_table(queries_path, ("index", "query"), delimiter=","):
        text = require_text(row["query"], queries_path, line, "query", strip=False)
        add_text(queries, row["index"], text, queries_path, line, "query")
    judgements = []
    for line, row in read_table(judged_path, ("Query_index", "FAQ_index", "Label*"), delimiter=","):
        label = row["Label*"].strip().lower()
        if label not in COUGH_LABELS:
            raise DataFormatError(judged_path, line, f"a label one of {sorted(COUGH_LABELS)}", row["Label*"])
        judgements.append(Judgement(judged_path, line, row["Query_index"], row["FAQ_index"], COUGH_LABELS[label]))
    qrels = resolve_qrels(judgements, queries, corpus, dropped, dropped_docs=empty)
    return retrieval_set(entry, split, files, queries, corpus, qrels, dropped)


def _cough_faq_bank(path: Path) -> dict[str, dict[str, str]]:
    items: dict[str, dict[str, str]] = {}
    for line, row in read_table(path, ("index", "question", "answer"), delimiter=","):
        add_text(items, row["index"], {"question": row["question"], "answer": row["answer"]}, path, line, "FAQ")
    return items


def _faq_corpus(
    items: dict[str, dict[str, str]], fields: tuple[str, ...], dropped: Counter
) -> tuple[dict[str, str], set[str]]:
    """FAQ items -> corpus texts; items with no text in the chosen fields are dropped
    (counted in ``faq_item_without_text``) and returned so their judgements are too."""
    corpus = {k: _faq_text(it, fields) for k, it in items.items()}
    empty = {k for k, text in corpus.items() if not text}
    dropped["faq_item_without_text"] += len(empty)
    return {k: t for k, t in corpus.items() if t}, empty


# ---------------------------------------------------------------------------------------
# FAQIR
# ---------------------------------------------------------------------------------------

# <Val> codes of the FAQIR annotations -> grades where higher is more relevant.
FAQIR_GRADES = {"1": 3, "2": 2, "3": 1, "4": 0}  # relevant, useful, useless, irrelevant


def read_faqir(
    path: Path,
) -> tuple[dict[str, tuple[str, str, int]], dict[str, dict[str, str]], list[tuple[str, str, int, int]]]:
    """Parse ``FAQIRv1.0.xml`` (Karan & Snajder 2016; layout from the release readme).

    Returns ``queries`` (id -> (text, template id, line)), FAQ ``items`` (id ->
    question/answer) and the judgements ``(template id, FAQ id, grade, line)``, one per
    pooled candidate: the best grade any annotator gave it (a pair is "relevant" if
    some annotator judged it so).
    """
    queries: dict[str, tuple[str, str, int]] = {}
    items: dict[str, dict[str, str]] = {}
    judged: list[tuple[str, str, int, int]] = []
    leaf: dict[str, tuple[str, int]] = {}  # texts of the children of the element being built
    group: list[tuple[str, list[int], int]] = []
    grades: list[int] = []
    for el in iter_xml(path):
        parent = el.parents[-1] if el.parents else ""
        if parent in ("Query", "qaPair", "IRCandidate", "IRCandidateList", "Annotation"):
            leaf[f"{parent}/{el.tag}"] = (el.text.strip() if el.tag in ("Id", "grpId", "QueryGroupID", "QueryID",
                                                                     "Val") else el.text, el.line)
        if el.tag == "Query" and parent == "queries":
            text, _ = leaf.pop("Query/QueryString", ("", el.line))
            require_text(text, path, el.line, "<QueryString>", strip=False)
            template = _required(leaf.pop("Query/QueryGroupID", None), path, el.line, "<QueryGroupID> in <Query>")
            qid = leaf.pop("Query/QueryID", (str(len(queries) + 1), el.line))[0]
            if qid in queries:
                raise DataFormatError(path, el.line, "a <QueryID> not used before in the file", qid)
            queries[qid] = (text, template, el.line)
            _clear(leaf, "Query/")
        elif el.tag == "qaPair":
            key = _required(leaf.pop("qaPair/Id", None), path, el.line, "<Id> in <qaPair>")
            question = leaf.pop("qaPair/Question", ("", 0))[0]
            answer = leaf.pop("qaPair/Answer", ("", 0))[0]
            add_text(items, key, {"question": question, "answer": answer}, path, el.line, "FAQ pair")
            _clear(leaf, "qaPair/")
        elif el.tag == "Annotation":
            val = _required(leaf.pop("Annotation/Val", None), path, el.line, "<Val> in <Annotation>")
            if val not in FAQIR_GRADES:
                raise DataFormatError(path, el.line, f"an annotation <Val> one of {sorted(FAQIR_GRADES)}", val)
            grades.append(FAQIR_GRADES[val])
            _clear(leaf, "Annotation/")
        elif el.tag == "IRCandidate":
            key = _required(leaf.pop("IRCandidate/Id", None), path, el.line, "<Id> in <IRCandidate>")
            if not grades:
                raise DataFormatError(path, el.line, "at least one <Annotation> in <IRCandidate>", None)
            group.append((key, grades, el.line))
            grades = []
            _clear(leaf, "IRCandidate/")
        elif el.tag == "IRCandidateList":
            template = _required(leaf.pop("IRCandidateList/grpId", None), path, el.line, "<grpId> in <IRCandidateList>")
            judged.extend((template, key, max(g), line) for key, g, line in group)
            group = []
            _clear(leaf, "IRCandidateList/")
    return queries, items, judged


def _required(value: tuple[str, int] | None, path: Path, line: int, what: str) -> str:
    if value is None or not value[0]:
        raise DataFormatError(path, line, what, None)
    return value[0]


def _clear(leaf: dict[str, tuple[str, int]], prefix: str) -> None:
    for key in [k for k in leaf if k.startswith(prefix)]:
        del leaf[key]


@loader("faqir")
def load_faqir(entry: DatasetInfo, split: str, files: list[Path], document: str | None = None) -> RetrievalSet:
    """FAQIR (Karan & Snajder 2016): 1,233 queries over 4,133 Yahoo! Answers FAQ pairs
    ("maintenance & repairs"). Judgements are per query template (``QueryGroupID``):
    every query inherits its template's pooled, annotated candidates, graded 3
    (relevant), 2 (useful), 1 (useless), 0 (irrelevant)."""
    _check_split(entry, split)
    fields = _document_fields(split, document)
    (xml_path,) = expect_files(entry, split, files, ("FAQIR XML",))
    queries, items, judged = read_faqir(xml_path)
    dropped: Counter = Counter()
    if split == "faq_pairs":
        return _faq_pairs(entry, split, files, items, dropped)
    corpus, empty = _faq_corpus(items, fields, dropped)
    by_template: dict[str, list[tuple[str, int, int]]] = {}
    for template, key, grade, line in judged:
        by_template.setdefault(template, []).append((key, grade, line))
    judgements = [
        Judgement(xml_path, line, qid, key, grade)
        for qid, (_, template, _) in queries.items()
        for key, grade, line in by_template.get(template, ())
    ]
    texts = {qid: text for qid, (text, _, _) in queries.items()}
    qrels = resolve_qrels(judgements, texts, corpus, dropped, dropped_docs=empty)
    return retrieval_set(entry, split, files, texts, corpus, qrels, dropped)
