"""The evaluation tasks of the four papers, named as their tables name them, in one table.

Each :class:`EvalTask` says which registered dataset and split a column of a paper's table
is computed on, which evaluator scores it with which protocol, and which metrics the paper
prints, in the paper's units; :func:`load_tasks` reads their records. This module is the
table only: :mod:`sentcl.evaluation.scoring` scores tasks (:func:`~.scoring.score`, with each
test item's scores; :func:`~.scoring.evaluate_tasks`, the values ``{task: {metric: value}}``),
encoding every distinct text of all the tasks **once**, and :func:`~.scoring.average` is the
"Average" / "Avg." column of the STS tables.

=============  ==================================  ==============  ================================
task           dataset / split                     evaluator       metrics (units)
=============  ==================================  ==============  ================================
STS12-STS16    sts12 … sts16 / test                sts             Spearman ×100
STSb           stsbenchmark / test                 sts             Spearman ×100
SICK-R         sickr / test                        sts             Spearman ×100
Chinese STS-B  cnsd_stsb / test                    sts             Spearman ×100
SimCLUE        simclue / test                      sts             Spearman ×100
CQA-A          semeval2017_cqa_a / test            retrieval       MAP, MRR (fractions)
CQA-B          semeval2017_cqa_b / test            retrieval       MAP, MRR (fractions)
CQA-A-2016     semeval2016_cqa_a / test            retrieval       MAP, MRR (fractions)
CQA-B-2016     semeval2016_cqa_b / test            retrieval       MAP, MRR (fractions)
Antique        antique / test                      retrieval       MRR, P@1, nDCG@1 (fractions)
PFCC-S         pfcc_s / test                       retrieval       HP@1, HP@5, HP@50 (fractions)
CLEF-2020      clef2020_checkthat_task2 / test     retrieval       HP@1, HP@5, HP@50, MAP@5
MRPC           mrpc / test                         classification  F1 ×100
QQP            qqp / dev                           classification  F1 ×100
FAQIR          faqir / faq_pairs                   retrieval       Acc@1, Acc@3, Acc@5, MAP (×100)
COUGH          cough / faq_pairs                   retrieval       Acc@1, Acc@3, Acc@5, MAP (×100)
=============  ==================================  ==============  ================================

Protocols:

- STS: SentEval's "all" setting, one Spearman correlation over every pair of the set, the
  subsets of an STS year pooled; STSb and SICK-R on their test splits (1379 and 4927 pairs:
  SentEval's, not MTEB's 9927-pair SICK-R). SimCLUE's gold is its label: 1 "similar", 0 not.
- CQA: each question re-ranks its 10 candidates, scored by the SemEval Task 3 official
  scorer (stable sort, so ties keep the file's order; cut at 10); relevant = Good (A),
  PerfectMatch or Relevant (B).
- Antique: each test question re-ranks its judged answers (loader option
  ``candidates="judged"``), trec_eval, relevant from grade 3.
- PFCC-S, CLEF-2020: each tweet ranks the whole base of verified claims, trec_eval.
- FAQIR, COUGH: each FAQ question ranks every answer, trec_eval, an answer with the text of
  the question's own answer relevant.
- MRPC, QQP: positive ("equivalent", "duplicate") when the cosine is at least the
  threshold that maximises F1 on the evaluated set.

Names are matched without regard to case, spaces, hyphens and underscores, so every
paper's spelling works: "STS-B" (IFCL), "STSb" (MNRL-SBERT, BSC), "stsb"/"sickr"/"sts12"
(RCL); "STSBenchmark" (the old command-line name) is an alias of STSb.

Metrics (the evaluators' definitions: :mod:`.sts`, :mod:`.retrieval`, :mod:`.classification`):

- **Spearman**: Spearman's rank correlation ×100 between the cosine similarity of the two
  sentences and the gold score.
- **MAP**: mean over queries of average precision (the precisions at the ranks of the
  relevant documents, summed, divided by the number of relevant documents); **MAP@5** cuts
  the ranking at 5 (CheckThat! 2020's official measure). **MRR**: mean reciprocal rank of
  the first relevant document. **P@1**: precision at 1. **nDCG@1**: normalised discounted
  cumulative gain at 1, graded gain.
- **HP@k** (BSC's *HasPositives@k*: "whether there is a positive match among the first k
  results") and **Acc@k** (RCL's *Acc_topk*) are the same measure, the retrieval
  evaluator's ``acc@k`` (trec_eval ``success_k``): 1 when a relevant document is ranked in
  the top k, averaged over queries.
- **F1**: F1 ×100 of the positive class, predicting positive when the cosine is at least
  the threshold that maximises F1 on the evaluated set.

Decisions the papers leave open (each task's ``note`` repeats its own):

- BSC's CQA-A/CQA-B test sets are SemEval-2017's, which are not in the data here; the
  SemEval-2016 test sets (``CQA-A-2016``, ``CQA-B-2016``) are, with the same format, scorer
  and labels. Likewise ``CLEF-2020`` (CheckThat! 2020 Task 2) is the available release of
  PFCC-S's Snopes data.
- MRPC: BSC says it has "no answers for the test set" yet does not name the set its F1 is
  on; the labelled official test set (1725 pairs, SentEval's copy) is scored. QQP: GLUE's
  test set has no labels, so its dev set (40,430 pairs) is scored.
- MRPC/QQP thresholds: the best-F1 threshold on the evaluated set, as
  sentence-transformers' ``BinaryClassificationEvaluator`` (Thakur et al.'s tool) does.
- FAQIR/COUGH: RCL ranks answers for questions of "FAQ-pairs" with a 5-fold split it does
  not describe; the task scores the ``faq_pairs`` view (question -> its answer, every
  answer with the same text relevant); a fold is the same record restricted to its
  queries (``RetrievalSet.take``) passed to :func:`~.scoring.evaluate_tasks`.
- SimCLUE: IFCL reports a Spearman correlation on it although its gold is binary; the
  correlation of the cosine with the 0/1 label is computed.
- Antique nDCG@1 uses the grades 1-4 as gains (trec_eval), not BSC's [0, 1] rescaling of
  them for training.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..data import load
from ..data.records import LabelledPairs, RetrievalSet, ScoredPairs, subset
from ..errors import ConfigError
from .retrieval import PROTOCOLS, metric_name
from .sts import SETTINGS

EVALUATORS = ("sts", "retrieval", "classification")
SEMEVAL_METRICS = ("map", "mrr")  # what the SemEval Task 3 scorer computes


@dataclass(frozen=True)
class Metric:
    """One metric column of a paper's table.

    ``label`` is how the table names it, ``key`` the evaluator's name for it (``"spearman"``,
    ``"f1"``, a retrieval metric such as ``"acc@5"``) and ``scale`` turns the evaluator's
    value into the table's units: the STS evaluator already gives Spearman ×100, the others
    give fractions, which a paper printing percentages multiplies by 100.
    """

    label: str
    key: str
    scale: float = 1.0


@dataclass(frozen=True)
class EvalTask:
    """One evaluation task: a column (or group of columns) of a paper's table.

    Attributes:
        name: the column name as the papers write it (``"STSb"``, ``"CQA-A"``).
        dataset, split: the registry dataset and split it is computed on.
        evaluator: ``"sts"``, ``"retrieval"`` or ``"classification"``.
        metrics: the metrics reported, in the paper's units.
        papers: the chapters whose tables have this column (empty for a stand-in set).
        aliases: other spellings (on top of case/punctuation-insensitive matching).
        setting: STS only: SentEval's aggregate over subsets (``"all"``: pooled).
        positive_label: classification, and STS on binary labels: the positive class.
        protocol: retrieval only: ``"trec"`` (trec_eval) or ``"semeval"`` (the SemEval CQA scorer).
        relevance_level: retrieval only: the lowest grade that counts as relevant.
        load_options: loader options, as ``(name, value)`` pairs (e.g. Antique's candidates).
        note: what the paper leaves open and what was chosen, and why.
    """

    name: str
    dataset: str
    split: str
    evaluator: str
    metrics: tuple[Metric, ...]
    papers: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    setting: str | None = None
    positive_label: str | None = None
    protocol: str | None = None
    relevance_level: int | None = None
    load_options: tuple[tuple[str, Any], ...] = ()
    note: str = ""

    def __post_init__(self) -> None:
        if self.evaluator not in EVALUATORS:
            raise ConfigError(f"{self.name}: evaluator {self.evaluator!r}; valid: {', '.join(EVALUATORS)}")
        if not self.metrics:
            raise ConfigError(f"{self.name}: no metrics")
        keys = [m.key for m in self.metrics]
        is_sts, is_retrieval = self.evaluator == "sts", self.evaluator == "retrieval"
        if is_sts != (self.setting is not None) or (is_sts and self.setting not in SETTINGS):
            raise ConfigError(f"{self.name}: an STS task needs setting one of {SETTINGS}, no other task has one")
        if is_sts and set(keys) - {"spearman", "pearson"}:
            raise ConfigError(f"{self.name}: STS metrics are 'spearman' and 'pearson', got {keys}")
        if self.evaluator == "classification" and (self.positive_label is None or set(keys) - {"f1", "accuracy", "precision", "recall"}):
            raise ConfigError(f"{self.name}: classification needs positive_label and metrics among f1, accuracy, precision, recall")
        if is_retrieval != (self.protocol is not None) or is_retrieval != (self.relevance_level is not None):
            raise ConfigError(f"{self.name}: protocol and relevance_level are for retrieval tasks, and they need both")
        if is_retrieval:
            if self.protocol not in PROTOCOLS:
                raise ConfigError(f"{self.name}: protocol {self.protocol!r}; valid: {', '.join(PROTOCOLS)}")
            if any(metric_name(k) != k for k in keys):
                raise ConfigError(f"{self.name}: write retrieval metric keys canonically, got {keys}")
            if self.protocol == "semeval" and set(keys) - set(SEMEVAL_METRICS):
                raise ConfigError(f"{self.name}: the SemEval scorer computes {SEMEVAL_METRICS} only, got {keys}")


def _normalised(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name).lower()


def _sts(name: str, dataset: str, papers: tuple[str, ...], **kw) -> EvalTask:
    return EvalTask(name, dataset, "test", "sts", (SPEARMAN,), papers, setting="all", **kw)


SPEARMAN = Metric("Spearman", "spearman")
_MAP_MRR = (Metric("MAP", "map"), Metric("MRR", "mrr"))
_HAS_POSITIVE = (Metric("HP@1", "acc@1"), Metric("HP@5", "acc@5"), Metric("HP@50", "acc@50"))
_FAQ = (Metric("Acc@1", "acc@1", 100.0), Metric("Acc@3", "acc@3", 100.0), Metric("Acc@5", "acc@5", 100.0),
        Metric("MAP", "map", 100.0))
_ENGLISH_STS = ("mnrl_sbert", "rcl", "ifcl")
_CQA_2016 = (
    "Not a column of the papers: the SemEval-2016 test set, the only CQA test set in the data here; "
    "same format, labels and scorer as the paper's SemEval-2017 one."
)
_FAQ_NOTE = (
    "RCL (§4.2, Table 2) ranks answers for the questions of the FAQ pairs with a 5-fold split it does not "
    "describe: the faq_pairs view (question -> every answer with its text), scored whole; pass a fold's "
    "RetrievalSet.take(...) to evaluate_tasks for one fold. Percent, as RCL prints."
)

TASKS: dict[str, EvalTask] = {
    t.name: t
    for t in (
        _sts("STS12", "sts12", _ENGLISH_STS),
        _sts("STS13", "sts13", _ENGLISH_STS, note="Without the LDC-licensed SMT subset (1500 pairs), as SentEval."),
        _sts("STS14", "sts14", _ENGLISH_STS),
        _sts("STS15", "sts15", _ENGLISH_STS, note="The 3000 scored pairs (unscored input lines dropped)."),
        _sts("STS16", "sts16", _ENGLISH_STS, note="The 1186 scored pairs (unscored input lines dropped)."),
        _sts("STSb", "stsbenchmark", ("mnrl_sbert", "bsc", "rcl", "ifcl"), aliases=("STSBenchmark",),
             note="STS Benchmark test, 1379 pairs, pooled over genres."),
        _sts("SICK-R", "sickr", _ENGLISH_STS,
             note="The 4927 test pairs as SentEval and the papers; MTEB's SICK-R scores all 9927 (split 'all')."),
        _sts("Chinese STS-B", "cnsd_stsb", ("ifcl",), note="CNSD's translation of STS-B, test split (1361 pairs)."),
        _sts("SimCLUE", "simclue", ("ifcl",), positive_label="similar",
             note="IFCL reports Spearman on SimCLUE, whose gold is binary: the correlation of the cosine with "
             "the label (1 similar, 0 not), on the public test set (28,031 pairs)."),
        EvalTask("CQA-A", "semeval2017_cqa_a", "test", "retrieval", _MAP_MRR, ("bsc",), protocol="semeval",
                 relevance_level=1,
                 note="SemEval-2017 Task 3 subtask A test (BSC §4), the official scorer's MAP and MRR; fractions "
                 "as BSC Table 2 prints."),
        EvalTask("CQA-B", "semeval2017_cqa_b", "test", "retrieval", _MAP_MRR, ("bsc",), protocol="semeval",
                 relevance_level=1,
                 note="SemEval-2017 Task 3 subtask B test (BSC §4), the official scorer's MAP and MRR."),
        EvalTask("CQA-A-2016", "semeval2016_cqa_a", "test", "retrieval", _MAP_MRR, protocol="semeval",
                 relevance_level=1, note=_CQA_2016),
        EvalTask("CQA-B-2016", "semeval2016_cqa_b", "test", "retrieval", _MAP_MRR, protocol="semeval",
                 relevance_level=1, note=_CQA_2016),
        EvalTask("Antique", "antique", "test", "retrieval",
                 (Metric("MRR", "mrr"), Metric("P@1", "p@1"), Metric("nDCG@1", "ndcg@1")), ("bsc",),
                 protocol="trec", relevance_level=3, load_options=(("candidates", "judged"),),
                 note="Each test question re-ranks its judged answers (BSC §4: 'rank the answers by their "
                 "relevance'); grades 3-4 relevant (the standard binarisation); nDCG gains are the grades 1-4."),
        EvalTask("PFCC-S", "pfcc_s", "test", "retrieval", _HAS_POSITIVE, ("bsc",), protocol="trec",
                 relevance_level=1,
                 note="Each test tweet ranks all verified claims; HasPositive@k = acc@k (BSC Table 3)."),
        EvalTask("CLEF-2020", "clef2020_checkthat_task2", "test", "retrieval",
                 (*_HAS_POSITIVE, Metric("MAP@5", "map@5")), protocol="trec", relevance_level=1,
                 load_options=(("document", "vclaim"),),
                 note="Not a column of the papers: CheckThat! 2020 Task 2, the released version of PFCC-S's "
                 "Snopes data, with PFCC-S's metrics and the task's official MAP@5."),
        EvalTask("MRPC", "mrpc", "test", "classification", (Metric("F1", "f1", 100.0),), ("bsc",),
                 positive_label="equivalent",
                 note="The labelled official test set (1725 pairs); threshold: the best F1 on it, as "
                 "sentence-transformers' BinaryClassificationEvaluator (Thakur et al. 2021)."),
        EvalTask("QQP", "qqp", "dev", "classification", (Metric("F1", "f1", 100.0),), ("bsc",),
                 positive_label="duplicate",
                 note="GLUE's dev set (its test set has no labels); threshold: the best F1 on it."),
        EvalTask("FAQIR", "faqir", "faq_pairs", "retrieval", _FAQ, ("rcl",), protocol="trec", relevance_level=1,
                 note=_FAQ_NOTE + " Relevance level 1: the faq_pairs view grades every match 1."),
        EvalTask("COUGH", "cough", "faq_pairs", "retrieval", _FAQ, ("rcl",), protocol="trec", relevance_level=1,
                 note=_FAQ_NOTE),
    )
}

STS_AVERAGE = ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R")
"""The seven columns the "Average" / "Avg." of the English STS tables averages."""

_BY_KEY: dict[str, str] = {}
for _t in TASKS.values():
    for _spelling in (_t.name, *_t.aliases):
        if _BY_KEY.setdefault(_normalised(_spelling), _t.name) != _t.name:
            raise ConfigError(f"{_spelling!r} names two tasks")


def task(name: str) -> EvalTask:
    """The task a paper's column name denotes (case, spaces, hyphens and underscores ignored)."""
    canonical = _BY_KEY.get(_normalised(name)) if isinstance(name, str) else None
    if canonical is None:
        raise ConfigError(f"unknown evaluation task {name!r}; valid: {', '.join(TASKS)}")
    return TASKS[canonical]


def load_task(
    name: str, data_dir: str | Path | None = None, *, loader: Callable[..., Any] | None = None
) -> ScoredPairs | LabelledPairs | RetrievalSet:
    """The record a task is computed on: its dataset and split, loaded with its loader options,
    by ``loader(dataset, split, **options)`` (default :func:`sentcl.data.load` from ``data_dir``;
    a chapter passes its own, which logs what it read)."""
    t = task(name)
    if loader is None:
        return load(t.dataset, t.split, data_dir, **dict(t.load_options))
    return loader(t.dataset, t.split, **dict(t.load_options))


def load_tasks(
    names: Sequence[str],
    data_dir: str | Path | None = None,
    max_pairs: int = 0,
    seed: int = 0,
    *,
    loader: Callable[..., Any] | None = None,
) -> dict[str, ScoredPairs | LabelledPairs | RetrievalSet]:
    """:func:`load_task` for each name (keyed as given), each cut to at most ``max_pairs``
    pairs, or queries for a retrieval task, drawn with ``seed`` by
    :func:`~sentcl.data.records.subset` (0: all; for quick runs only, the papers score the whole
    sets). The draw is uniform over the pooled pairs, so each subset of an STS year keeps about
    its share, as the "all" setting weighs them."""
    if isinstance(names, str):
        raise ConfigError(f"names must be a list of task names, got the string {names!r}")
    records: dict[str, ScoredPairs | LabelledPairs | RetrievalSet] = {}
    for name in names:
        pairs = task(name).evaluator != "retrieval"
        if pairs and max_pairs == 1:
            raise ConfigError(f"max_pairs must be at least 2 (a correlation or a threshold needs two pairs), got {max_pairs}")
        records[name] = subset(load_task(name, data_dir, loader=loader), max_pairs, seed, "max_pairs")
    return records
