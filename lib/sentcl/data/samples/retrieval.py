"""Small retrieval datasets the project writes itself, for ``data/samples``.

Two sets, written in the layouts and formats of the real ones so the real loaders read
them (``sentcl.data.load(name, split, data_dir=samples_root())``):

- a FAQ retrieval set in COUGH's layout (``cough/``: ``FAQ_Bank_eval.csv``,
  ``User_Query_Bank.csv``, ``Annotated_Relevance_Set.csv``), registry ``cough``;
- a re-ranking set in SemEval-2016 Task 3's layout (``semeval2016_task3_cqa_ql/``: train
  parts 1 and 2, dev and test XML, the test gold ``.relevancy`` files), registry
  ``semeval2016_cqa_a`` (question -> comments) and ``semeval2016_cqa_b`` (question ->
  related questions).

All text comes from the templates below (forum questions about everyday errands), never
from a real dataset. The output depends only on ``seed``; relevance follows the
templates: a comment is ``Good`` when it answers its thread's errand, a related
question is relevant when it is about the original question's errand, a FAQ item is
relevant to a user query when both are about the same errand and ask the same thing.
"""

from __future__ import annotations

import csv
import io
import random
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

from ...io import atomic_write_text


@dataclass(frozen=True)
class Errand:
    noun: str  # "work visa"
    action: str  # "renew my work visa"
    place: str  # "the immigration office"
    fact: str  # "bring your passport and two photos"


ERRANDS = (
    Errand("work visa", "renew my work visa", "the immigration office", "bring your passport and two photos"),
    Errand("driving licence", "convert my driving licence", "the traffic department", "an eye test is needed first"),
    Errand("apartment", "rent a furnished apartment", "the agents near the corniche", "ask for a one-year contract"),
    Errand("school place", "enrol my son in a school", "the education ministry portal", "apply before the term starts"),
    Errand("bank account", "open a bank account", "any branch of a local bank", "a salary letter is required"),
    Errand("used car", "buy a reliable used car", "the weekly car market", "check the service history"),
    Errand("home internet", "get home internet", "the telecom shop in the mall", "fibre plans are the fastest"),
    Errand("family doctor", "find a good family doctor", "the district health centre", "you need a health card"),
    Errand("gym", "join an affordable gym", "the sports club downtown", "monthly plans are cheaper in summer"),
    Errand("cat import", "bring my cat into the country", "the veterinary department", "an import permit is needed"),
    Errand("quiet beach", "spend a day at a quiet beach", "the northern coast", "go early on Friday morning"),
    Errand("old furniture", "sell my old furniture", "the online classifieds", "good photos sell it faster"),
)

SUBJECTS = ("Question about {noun}", "Help with {noun}", "{noun} advice needed", "How to {action}?")
BODIES = (
    "Hi all; how can I {action}? Any advice is welcome.",
    "I am new here and want to {action}. Where should I go and what do I need?",
    "Does anyone know the fastest way to {action}? Thanks in advance.",
    "",  # an empty body, as some real questions have
)
GOOD_COMMENTS = (
    "Go to {place}; {fact}.",
    "I did it last year: {fact}. The people at {place} were helpful.",
    "You can {action} at {place}, it takes about a week.",
)
POTENTIALLY_USEFUL_COMMENTS = ("Search the forum, there are older threads about {noun}.",)
BAD_COMMENTS = ("Thanks, I have the same question.", "Good luck!", "Why not ask your company PRO?",
                "Welcome to the forum!")

# FAQ items ask one of four things about an errand; a user query is relevant to the
# items of its errand that ask the same thing.
FAQ_INTENTS = {
    "how": ("How do I {action}?", "Follow these steps: go to {place}, then {fact}."),
    "where": ("Where can I {action}?", "The office to visit is {place}."),
    "needs": ("What do I need to {action}?", "Documents required: {fact}; {place} can tell you more."),
    "time": ("How long does it take to {action}?", "It takes a few days at {place}."),
}
QUERY_PARAPHRASES = {
    "how": ("what are the steps to {action}", "how does one {action}"),
    "where": ("which office helps me {action}", "where do people go to {action}"),
    "needs": ("which documents are required to {action}", "what do i need to {action}"),
    "time": ("how many days until i can {action}", "how long does it take to {action}"),
}


def _fill(template: str, errand: Errand) -> str:
    return template.format(noun=errand.noun, action=errand.action, place=errand.place, fact=errand.fact)


def _capitalise(text: str) -> str:
    return text[0].upper() + text[1:]


def write_retrieval_samples(root: Path, seed: int = 0) -> list[Path]:
    """Write both sample sets under ``root`` (a data root, e.g. ``data/samples``).

    Returns the files written (atomically). Same ``seed``, same bytes.
    """
    return write_faq_sample(Path(root) / "cough", seed) + write_cqa_sample(
        Path(root) / "semeval2016_task3_cqa_ql", seed
    )


# ---------------------------------------------------------------------------------------
# FAQ set (COUGH layout)
# ---------------------------------------------------------------------------------------


def _csv(rows: list[list[str]]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def write_faq_sample(folder: Path, seed: int = 0) -> list[Path]:
    """48 FAQ items (12 errands x 4 intents), 48 user queries, 6 judgements per query
    (the 4 items of its errand, 1 of them relevant, and 2 items of other errands).
    Like the real COUGH files, the query index has gaps and the judgement file keeps
    judgements of two queries the query bank does not have (the loader counts them)."""
    rng = random.Random(seed)
    items = [["index", "question", "answer", "source", "url", "language"]]
    item_ids: dict[tuple[int, str], str] = {}
    for e, errand in enumerate(ERRANDS):
        for intent, (question, answer) in FAQ_INTENTS.items():
            key = str(len(items) - 1)
            item_ids[(e, intent)] = key
            items.append([key, _fill(question, errand), _fill(answer, errand), "sample", "", "en"])
    queries = [["index", "query"]]
    judged = [["Query_index", "Query", "FAQ_index", "Label (mean score > 3 as positive)"]]
    index = 0
    for e, errand in enumerate(ERRANDS):
        for intent, paraphrases in QUERY_PARAPHRASES.items():
            index += rng.choice((1, 1, 1, 2))  # gaps, as in the real query bank
            text = _fill(rng.choice(paraphrases), errand)
            queries.append([str(index), text])
            others = rng.sample([k for (oe, _), k in item_ids.items() if oe != e], 2)
            for other_intent in FAQ_INTENTS:
                label = "positive" if other_intent == intent else "negative"
                judged.append([str(index), text, item_ids[(e, other_intent)], label])
            judged.extend([str(index), text, k, "negative"] for k in others)
    for missing in (index + 1, index + 2):  # queries removed from the bank, judgements kept
        judged.append([str(missing), "an unanswerable question", item_ids[(0, "how")], "negative"])
    written = []
    for name, rows in (("FAQ_Bank_eval.csv", items), ("User_Query_Bank.csv", queries),
                       ("Annotated_Relevance_Set.csv", judged)):
        written.append(atomic_write_text(folder / name, _csv(rows)))
    return written


# ---------------------------------------------------------------------------------------
# Re-ranking set (SemEval-2016 Task 3 layout)
# ---------------------------------------------------------------------------------------


RELATED = 6  # related threads per original question
COMMENTS = 3  # comments per thread


@dataclass
class _Comment:
    id: str
    text: str
    to_related: str  # RELC_RELEVANCE2RELQ
    to_original: str  # RELC_RELEVANCE2ORGQ


@dataclass
class _Thread:
    id: str  # Qn_Rk
    errand: int  # index into ERRANDS
    rank: int
    subject: str
    body: str
    to_original: str  # RELQ_RELEVANCE2ORGQ
    comments: list[_Comment]
    repeat_of: str | None = None


@dataclass
class _Original:
    id: str
    subject: str
    body: str
    threads: list[_Thread]


def _thread(rng: random.Random, qid: str, rank: int, e: int, relevant: bool) -> _Thread:
    tid = f"{qid}_R{rank}"
    errand = ERRANDS[e]
    good = rng.randint(1, 2)
    labels = ["Good"] * good + rng.sample(["PotentiallyUseful", "Bad", "Bad"], COMMENTS - good)
    rng.shuffle(labels)
    comments = []
    for c, label in enumerate(labels, start=1):
        pool = {"Good": GOOD_COMMENTS, "PotentiallyUseful": POTENTIALLY_USEFUL_COMMENTS, "Bad": BAD_COMMENTS}[label]
        to_original = "Good" if (relevant and label == "Good") else "Bad"
        comments.append(_Comment(f"{tid}_C{c}", _fill(rng.choice(pool), errand), label, to_original))
    return _Thread(tid, e, rank, _capitalise(_fill(rng.choice(SUBJECTS), errand)), _fill(rng.choice(BODIES), errand),
                   rng.choice(("PerfectMatch", "Relevant")) if relevant else "Irrelevant", comments)


def _originals(rng: random.Random, first: int, count: int) -> list[_Original]:
    """``count`` original questions numbered from ``first``, ``RELATED`` related threads
    each (2-3 about the same errand, in random search-engine order). The last thread of
    each question after the first repeats a thread of the one before, marked for
    subtask A as the organisers mark repeated threads."""
    originals: list[_Original] = []
    for n in range(first, first + count):
        qid = f"Q{n}"
        e = rng.randrange(len(ERRANDS))
        same = rng.randint(2, 3)
        plan = [e] * same + rng.sample([o for o in range(len(ERRANDS)) if o != e], RELATED - same)
        rng.shuffle(plan)
        threads = [_thread(rng, qid, rank, t, t == e) for rank, t in enumerate(plan, start=1)]
        if originals:
            earlier = originals[-1].threads[0]
            last = threads[-1]
            relevant = earlier.errand == e
            copy = [_Comment(f"{last.id}_C{i}", c.text, c.to_related, "Good" if relevant and c.to_related == "Good"
                             else "Bad") for i, c in enumerate(earlier.comments, start=1)]
            threads[-1] = _Thread(last.id, earlier.errand, last.rank, earlier.subject, earlier.body,
                                  rng.choice(("PerfectMatch", "Relevant")) if relevant else "Irrelevant", copy,
                                  repeat_of=earlier.id)
        errand = ERRANDS[e]
        originals.append(_Original(qid, _capitalise(_fill(rng.choice(SUBJECTS), errand)),
                                   _fill(rng.choice(BODIES[:3]), errand), threads))
    return originals


def _related_xml(t: _Thread, labelled: bool, full: bool, indent: str) -> list[str]:
    """One <Thread>; ``full``: with the relevance to the original question (full files),
    else as in -subtaskA files; unlabelled (test input) files show '?'."""

    def label(value: str) -> str:
        return value if labelled else "?"

    skip = f" SubtaskA_Skip_Because_Same_As_RelQuestion_ID={quoteattr(t.repeat_of)}" if t.repeat_of and full else ""
    to_orig = f" RELQ_RELEVANCE2ORGQ={quoteattr(label(t.to_original))}" if full else ""
    lines = [
        f"{indent}<Thread THREAD_SEQUENCE={quoteattr(t.id)}{skip}>",
        f"{indent}\t<RelQuestion RELQ_ID={quoteattr(t.id)} RELQ_RANKING_ORDER=\"{t.rank}\"{to_orig}>",
        f"{indent}\t\t<RelQSubject>{escape(t.subject)}</RelQSubject>",
        f"{indent}\t\t<RelQBody>{escape(t.body)}</RelQBody>",
        f"{indent}\t</RelQuestion>",
    ]
    for c in t.comments:
        to_org = f" RELC_RELEVANCE2ORGQ={quoteattr(label(c.to_original))}" if full else ""
        lines += [
            f"{indent}\t<RelComment RELC_ID={quoteattr(c.id)}{to_org}"
            f" RELC_RELEVANCE2RELQ={quoteattr(label(c.to_related))}>",
            f"{indent}\t\t<RelCText>{escape(c.text)}</RelCText>",
            f"{indent}\t</RelComment>",
        ]
    return [*lines, f"{indent}</Thread>"]


def _xml(originals: list[_Original], labelled: bool, subtask_a: bool) -> str:
    lines = ['<?xml version="1.0" encoding="utf-8"?>', '<xml version="1.0">']
    for o in originals:
        for t in o.threads:
            if subtask_a:
                if t.repeat_of is None:
                    lines += _related_xml(t, labelled, full=False, indent="\t")
                continue
            lines += [
                f"\t<OrgQuestion ORGQ_ID={quoteattr(o.id)}>",
                f"\t\t<OrgQSubject>{escape(o.subject)}</OrgQSubject>",
                f"\t\t<OrgQBody>{escape(o.body)}</OrgQBody>",
                *_related_xml(t, labelled, full=True, indent="\t\t"),
                "\t</OrgQuestion>",
            ]
    return "\n".join([*lines, "</xml>", ""])


def _gold(originals: list[_Original], subtask: str) -> str:
    lines = []
    for o in originals:
        if subtask == "A":
            for t in o.threads:
                if t.repeat_of is None:
                    lines += [f"{t.id}\t{c.id}\t{r}\t{1 / r:.15g}\t{str(c.to_related == 'Good').lower()}"
                              for r, c in enumerate(t.comments, start=1)]
        else:
            lines += [f"{o.id}\t{t.id}\t{t.rank}\t{1 / t.rank:.15g}\t{str(t.to_original != 'Irrelevant').lower()}"
                      for t in o.threads]
    return "\n".join(lines) + "\n"


def write_cqa_sample(folder: Path, seed: int = 0) -> list[Path]:
    """Train part 1 (4 original questions), part 2 (2), dev (3) and test (3), each with
    ``RELATED`` related threads of ``COMMENTS`` comments (the real data has 10 and 10;
    fewer keep the folder small); the test inputs have '?' labels and official-style
    gold files, as in the real distribution."""
    rng = random.Random(seed)
    part1 = _originals(rng, 1, 4)
    part2 = _originals(rng, 5, 2)
    dev = _originals(rng, 7, 3)
    test = _originals(rng, 10, 3)
    prefix = "SemEval2016-Task3-CQA-QL"
    files = {
        f"train/{prefix}-train-part1.xml": _xml(part1, True, False),
        f"train/{prefix}-train-part2.xml": _xml(part2, True, False),
        f"dev/{prefix}-dev.xml": _xml(dev, True, False),
        f"dev/{prefix}-dev-subtaskA.xml": _xml(dev, True, True),
        f"test/{prefix}-test-input.xml": _xml(test, False, False),
        f"test/{prefix}-test-subtaskA-input.xml": _xml(test, False, True),
        f"test/{prefix}-test-subtaskA.xml.subtaskA.relevancy": _gold(test, "A"),
        f"test/{prefix}-test.xml.subtaskB.relevancy": _gold(test, "B"),
    }
    return [atomic_write_text(folder / name, text) for name, text in files.items()]
