"""The masked-language-modelling corpus of sentcl-mini: the data root's non-test English text, with
every text the book evaluates on removed.

:data:`SOURCES` lists the registered (dataset, split) pairs the corpus reads, none of them a split
the book scores. :func:`evaluation_texts` collects what the book *does* score: every task of
:data:`sentcl.evaluation.tasks.TASKS` whose data is in the data root (STS12-16, STS-B test, SICK-R
test, MRPC test, the CQA and CLEF test sets, the Chinese test sets...): for pair tasks both
sentences, for retrieval tasks the queries and the documents they are judged against (a task that
re-ranks candidates: its candidates; a task that ranks a shared base, CLEF-2020's verified claims:
the claims its test queries are judged relevant to). :func:`build_corpus` then drops, after
normalising case and whitespace (:func:`normalise`),

- every text equal to an evaluation text (STS-B's train and dev splits share hundreds of sentences
  with the STS12-16 test sets, from which STS-B was built);
- every text that *contains* an evaluation text of at least :data:`MIN_CONTAINED_WORDS` words (a
  CQA comment quoting a test question);
- repeats (the unit is a distinct text);

and sets aside a held-out share, chosen by a hash of the text (so it does not depend on the order
the sources are read in), for the held-out MLM loss. Every count is kept (:class:`Corpus`), and
the model card lists them.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..data.records import LabelledPairs, RetrievalSet, ScoredPairs, Sentences
from ..errors import ConfigError, DataMissingError

SOURCES: tuple[tuple[str, str], ...] = (
    ("wiki1m", "prefix"),
    ("snli", "dev"),
    ("stsbenchmark", "train"),
    ("stsbenchmark", "dev"),
    ("sickr", "train"),
    ("sickr", "trial"),
    ("mrpc", "train"),
    ("mrpc", "dev"),
    ("clef2020_checkthat_task2", "train"),
    ("clef2020_checkthat_task2", "dev"),
    ("semeval2016_cqa_a", "train_part2"),
    ("semeval2016_cqa_a", "dev"),
    ("semeval2016_cqa_b", "train_part2"),
    ("semeval2016_cqa_b", "dev"),
)
"""The (dataset, split) pairs whose text the corpus reads: English, none of them a split the book
scores. Not read: SNLI test and the Chinese sets (never fine-tuned on in English), COUGH (its only
texts are the FAQ-retrieval queries, an evaluation set), and the test splits."""

LOAD_OPTIONS: dict[str, dict[str, str]] = {"clef2020_checkthat_task2": {"document": "vclaim"}}
"""Loader options per dataset: a CLEF document is the claim's text, as the CLEF-2020 task embeds it."""

MIN_CONTAINED_WORDS = 6
"""A corpus text that contains an evaluation text of at least this many words is dropped too (a
shorter one, "A man is cooking.", is too common to mean the corpus quotes a test item)."""

HELDOUT_PER_MILLE = 10
"""The held-out share of the distinct texts: those whose hash falls in the first 10 of 1000 buckets."""


_WORD = re.compile(r"\w+")


def normalise(text: str) -> str:
    """``text`` lower-cased, its words (runs of letters and digits) joined by single spaces: the form
    in which corpus and evaluation texts are compared. Stricter than normalising case and whitespace
    alone: SNLI's tokenized "A man is riding a horse ." meets STS's "A man is riding a horse."."""
    return " ".join(_WORD.findall(text.lower()))


def record_texts(record: ScoredPairs | LabelledPairs | Sentences | RetrievalSet, *, evaluated: bool = False) -> list[str]:
    """Every text of a record, in its order: a pair's two sentences; a retrieval set's queries and
    documents. With ``evaluated``, a retrieval set gives only the documents a query is scored
    against when the base is shared between splits: its candidates, else the judged documents."""
    if isinstance(record, Sentences):
        return list(record.texts)
    if isinstance(record, (ScoredPairs, LabelledPairs)):
        return [t for pair in zip(record.sentences1, record.sentences2, strict=True) for t in pair]
    if isinstance(record, RetrievalSet):
        if not evaluated:
            return [*record.queries.values(), *record.corpus.values()]
        if record.candidates is not None:
            documents = {d for docs in record.candidates.values() for d in docs}
        else:
            documents = {d for judged in record.qrels.values() for d in judged}
        return [*record.queries.values(), *(record.corpus[d] for d in sorted(documents) if d in record.corpus)]
    raise ConfigError(f"no texts in a {type(record).__name__} (expected sentences, pairs or a retrieval set)")


@dataclass
class EvaluationTexts:
    """The normalised texts of every evaluation set found in the data root."""

    texts: set[str]
    checked: dict[str, int]  # task -> distinct texts
    absent: dict[str, str]  # task -> why it could not be read

    def contained_in(self, text: str) -> str | None:
        """An evaluation text of at least :data:`MIN_CONTAINED_WORDS` words that ``text`` (normalised)
        contains as a run of whole words, or None."""
        words = text.split()
        for i in range(len(words) - MIN_CONTAINED_WORDS + 1):
            for candidate in self._by_start.get((words[i], words[i + 1]), ()):
                if tuple(words[i:i + len(candidate)]) == candidate:
                    return " ".join(candidate)
        return None

    def __post_init__(self) -> None:
        self._by_start: dict[tuple[str, ...], list[tuple[str, ...]]] = defaultdict(list)
        for text in self.texts:
            words = tuple(text.split())
            if len(words) >= MIN_CONTAINED_WORDS:
                self._by_start[words[:2]].append(words)


def evaluation_texts(data_dir: str | Path) -> EvaluationTexts:
    """The normalised texts of every evaluation task (:data:`sentcl.evaluation.tasks.TASKS`) whose
    data the data root holds (see the module doc); the others are listed as absent, with why."""
    from ..evaluation.tasks import TASKS, load_task

    texts: set[str] = set()
    checked: dict[str, int] = {}
    absent: dict[str, str] = {}
    for name in TASKS:
        try:
            record = load_task(name, data_dir)
        except DataMissingError as exc:
            absent[name] = str(exc)
            continue
        found = {normalise(t) for t in record_texts(record, evaluated=True)}
        checked[name] = len(found)
        texts |= found
    return EvaluationTexts(texts, checked, absent)


@dataclass
class SourceCount:
    """What one source gave the corpus."""

    dataset: str
    split: str
    texts: int = 0  # texts read
    kept: int = 0  # distinct texts it added
    repeated: int = 0  # texts already read (from this source or an earlier one)
    evaluation: int = 0  # equal to an evaluation text
    containing: int = 0  # containing an evaluation text
    empty: int = 0


@dataclass
class Corpus:
    """The distinct pretraining texts, as read (not normalised), split into train and held-out."""

    train: list[str]
    heldout: list[str]
    sources: list[SourceCount]
    evaluation: EvaluationTexts
    dropped_examples: dict[str, list[str]] = field(default_factory=dict)

    def summary(self) -> dict:
        """Counts for the model card."""
        return {
            "train_texts": len(self.train),
            "heldout_texts": len(self.heldout),
            "sources": [vars(s) for s in self.sources],
            "evaluation_sets_checked": self.evaluation.checked,
            "evaluation_sets_absent": sorted(self.evaluation.absent),
            "min_contained_words": MIN_CONTAINED_WORDS,
            "heldout_per_mille": HELDOUT_PER_MILLE,
        }


def is_heldout(normalised: str) -> bool:
    """Whether a (normalised) text belongs to the held-out share: by its sha256, not by its position."""
    bucket = int.from_bytes(hashlib.sha256(normalised.encode("utf-8")).digest()[:4], "little") % 1000
    return bucket < HELDOUT_PER_MILLE


def build_corpus(
    data_dir: str | Path,
    sources: Sequence[tuple[str, str]] = SOURCES,
    *,
    evaluation: EvaluationTexts | None = None,
    loader=None,
) -> Corpus:
    """Read ``sources`` from the data root and drop what the module doc says.

    Raises :class:`~sentcl.errors.DataMissingError` naming a source that is not in the data root
    (the corpus is the recipe: a missing source would silently change the model).
    """
    from ..data import load

    read = loader or (lambda name, split: load(name, split, data_dir, **LOAD_OPTIONS.get(name, {})))
    evaluation = evaluation if evaluation is not None else evaluation_texts(data_dir)
    seen: set[str] = set()
    train: list[str] = []
    heldout: list[str] = []
    counts: list[SourceCount] = []
    examples: dict[str, list[str]] = defaultdict(list)
    for dataset, split in sources:
        try:
            record = read(dataset, split)
        except DataMissingError as exc:
            raise DataMissingError(f"pretraining corpus source {dataset}/{split}: {exc}") from None
        count = SourceCount(dataset, split)
        for text in (t.strip() for t in record_texts(record)):
            count.texts += 1
            key = normalise(text)
            if not key:
                count.empty += 1
            elif key in seen:
                count.repeated += 1
            elif key in evaluation.texts:
                count.evaluation += 1
                _example(examples, "evaluation", text)
            elif (quoted := evaluation.contained_in(key)) is not None:
                count.containing += 1
                _example(examples, "containing", f"{text!r} contains {quoted!r}")
            else:
                count.kept += 1
                (heldout if is_heldout(key) else train).append(text)
            seen.add(key)
        counts.append(count)
    return Corpus(train, heldout, counts, evaluation, dict(examples))


def _example(examples: dict[str, list[str]], kind: str, text: str, keep: int = 5) -> None:
    if len(examples[kind]) < keep:
        examples[kind].append(text)


def overlap(corpus_texts: Iterable[str], evaluation: EvaluationTexts) -> Counter:
    """How many corpus texts equal, or contain, an evaluation text (both normalised): the check the
    tests run on a built corpus, with a plain set and a substring search rather than the builder's index."""
    found: Counter = Counter()
    long_texts = [t for t in evaluation.texts if len(t.split()) >= MIN_CONTAINED_WORDS]
    shingles: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for t in long_texts:
        shingles[tuple(t.split()[:MIN_CONTAINED_WORDS])].append(t)
    for text in corpus_texts:
        key = normalise(text)
        if key in evaluation.texts:
            found["equal"] += 1
            continue
        words = key.split()
        padded = f" {key} "
        for i in range(len(words) - MIN_CONTAINED_WORDS + 1):
            if any(f" {t} " in padded for t in shingles.get(tuple(words[i:i + MIN_CONTAINED_WORDS]), ())):
                found["containing"] += 1
                break
    return found
