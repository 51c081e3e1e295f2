"""The one scoring path: a model's embeddings -> each task's metrics and per-item scores.

::

    records = load_tasks(["STS12", "STSb", "CQA-A-2016", "MRPC"], data_dir)   # sentcl.evaluation.tasks
    scored = score(embedder(model), records)          # every distinct text encoded once
    scored["STSb"].values                             # {"Spearman": 82.03}: the table's cell
    scored["STSb"].value("Spearman", resamples)       # the same metric on (B, n) resamples of the pairs

Every number of the book's evaluation tables goes through :func:`score`: the chapters' notebooks
(through :func:`evaluate_tasks`, which keeps only the values), the command line
(``sentcl evaluate tasks|sts``), the geometry chapter and the dev evaluators that select models
during training (:func:`dev_evaluator`). :mod:`.tasks` says which dataset, split, evaluator,
protocol and metrics each paper's column is; the evaluators (:mod:`.sts`, :mod:`.retrieval`,
:mod:`.classification`) compute them; this module runs them and keeps, besides each evaluator's
full result, its **per-item outputs** (:mod:`.items`), from which every metric of the task can be
recomputed on any resample of the test items, so that a difference between two models can be
bootstrapped over the items.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ..data.records import LabelledPairs, RetrievalSet, ScoredPairs
from ..embeddings import Embed, encode
from ..errors import ConfigError
from .classification import evaluate_pair_classification
from .encode_once import embed_groups, pairwise_cosine
from .per_item import Items, PairPredictions, PairSimilarities, QueryMetrics
from .retrieval import evaluate_retrieval
from .sts import evaluate_sts
from .tasks import SPEARMAN, STS_AVERAGE, EvalTask, Metric, load_tasks, task

if TYPE_CHECKING:
    from ..training.trainer import Evaluator

Record = ScoredPairs | LabelledPairs | RetrievalSet

@dataclass(frozen=True)
class TaskScores:
    """One task's evaluation of one model: the table's values, the per-item outputs and the evaluator's result."""

    task: EvalTask
    """The task (from the task table) the values are for."""
    values: dict[str, float]
    """``{metric label: value}`` in the paper's units: the table's cells."""
    items: Items
    """The per-item outputs every metric can be recomputed from on resampled items."""
    result: dict
    """The evaluator's full JSON-able result (counts, per-subset correlations, thresholds...)."""

    def value(self, label: str, rows: np.ndarray | Sequence[int] | None = None) -> float | np.ndarray:
        """The table's metric ``label`` (``"Spearman"``, ``"MAP"``, ``"HP@5"``, ``"F1"``...) in the paper's
        units on the items ``rows`` (None, 1-D or 2-D, as :meth:`Items.metric`)."""
        for m in self.task.metrics:
            if m.label == label:
                return self.items.metric(m.key, rows) * m.scale
        raise ConfigError(f"{self.task.name} has no metric {label!r}; its metrics: {', '.join(m.label for m in self.task.metrics)}")


def _evaluated(name: str, t: EvalTask, record: Any) -> Record:
    """``record`` as the task's evaluator takes it, after checking it is the task's data."""
    if (getattr(record, "name", None), getattr(record, "split", None)) != (t.dataset, t.split):
        found = f"{record.name}/{record.split}" if hasattr(record, "split") else type(record).__name__
        raise ConfigError(f"{name} is computed on {t.dataset}/{t.split}, got {found} (load it with load_task)")
    if t.evaluator == "sts" and t.positive_label is not None and isinstance(record, LabelledPairs):
        if t.positive_label not in record.label_names:
            raise ConfigError(f"{name}: no label {t.positive_label!r}; labels are {list(record.label_names)}")
        positive = record.label_names.index(t.positive_label)
        return ScoredPairs(
            name=record.name, split=record.split, sources=list(record.sources), dropped=dict(record.dropped),
            sample=record.sample, sentences1=record.sentences1, sentences2=record.sentences2,
            scores=(record.labels == positive).astype(np.float64), subsets=[record.name] * len(record),
        )
    expected: type[Record] = {"sts": ScoredPairs, "classification": LabelledPairs, "retrieval": RetrievalSet}[t.evaluator]
    if not isinstance(record, expected):
        raise ConfigError(f"{name}: the {t.evaluator} evaluator takes {expected.__name__}, got {type(record).__name__}")
    return record


def _texts(record: Record) -> list[str]:
    if isinstance(record, RetrievalSet):
        return [*record.queries.values(), *record.corpus.values()]
    return [*record.sentences1, *record.sentences2]


def _report(t: EvalTask, result: Mapping[str, Any]) -> dict[str, float]:
    """The task's metrics, ``{label: value}`` in the paper's units, from its evaluator's result."""
    out = {}
    for m in t.metrics:
        if t.evaluator == "sts":
            value = result[m.key][t.setting]
        elif t.evaluator == "retrieval":
            value = result["scores"][m.key]
        else:
            value = result[m.key]
        out[m.label] = float(value) * m.scale
    return out


def _scored(t: EvalTask, record: Record, vectors: np.ndarray) -> TaskScores:
    """Run the task's evaluator on ``record`` with the rows of ``vectors`` (its texts' embeddings, in :func:`_texts` order)."""
    items: Items
    if isinstance(record, RetrievalSet):  # _evaluated gave each task its evaluator's kind of record
        assert t.relevance_level is not None and t.protocol is not None  # a retrieval task has both (EvalTask)
        nq = len(record.queries)
        result = evaluate_retrieval(
            record, query_embeddings=vectors[:nq], corpus_embeddings=vectors[nq:], metrics=[m.key for m in t.metrics],
            relevance_level=t.relevance_level, protocol=t.protocol, per_query=True,
        )
        per_query = result.pop("per_query")
        items = QueryMetrics({m.key: np.array([v[m.key] for v in per_query.values()]) for m in t.metrics})
    else:
        n = len(record)
        e1, e2 = vectors[:n], vectors[n:]
        similarities = pairwise_cosine(e1, e2)
        if isinstance(record, ScoredPairs):
            assert t.setting is not None  # an STS task has one (EvalTask)
            result = evaluate_sts(record, embeddings1=e1, embeddings2=e2)
            items = PairSimilarities(similarities, record.scores, t.setting)
        else:
            assert t.positive_label is not None  # a classification task has one (EvalTask)
            result = evaluate_pair_classification(record, embeddings1=e1, embeddings2=e2, positive_label=t.positive_label)
            items = PairPredictions(similarities, np.asarray(record.labels == record.label_names.index(t.positive_label)))
    return TaskScores(t, _report(t, result), items, result)


def score(embed: Embed, records: Mapping[str, Any], *, tasks: Mapping[str, EvalTask] | None = None) -> dict[str, TaskScores]:
    """Every task of ``records`` scored from **one** call of ``embed``: ``{name: TaskScores}``.

    ``records`` maps task names (any accepted spelling; the keys are kept) to their records
    (:func:`~sentcl.evaluation.tasks.load_task`, or a subset of one). The texts of all the tasks
    are collected, every distinct text is encoded once, and each task is scored from its rows of
    that matrix with its evaluator and protocol. ``tasks`` replaces the table's task for some of
    the names with a variant of it (``dataclasses.replace(task("SICK-R"), split="all")``, MTEB's
    SICK-R; a dev split, as :func:`dev_evaluator` does); each record must be its task's dataset
    and split.
    """
    if not records:
        raise ConfigError("no evaluation task given")
    given = dict(tasks or {})
    unknown = [name for name in given if name not in records]
    if unknown:
        raise ConfigError(f"tasks given for {unknown}, which have no record; records: {list(records)}")
    chosen = {name: given.get(name) or task(name) for name in records}
    seen: dict[str, str] = {}
    for name, t in chosen.items():
        if seen.setdefault(t.name, name) != name:
            raise ConfigError(f"{seen[t.name]!r} and {name!r} are the same task ({t.name})")
    data = {name: _evaluated(name, chosen[name], record) for name, record in records.items()}
    matrices = embed_groups(embed, [_texts(record) for record in data.values()])
    return {name: _scored(chosen[name], record, vectors) for (name, record), vectors in zip(data.items(), matrices, strict=True)}


def evaluate_tasks(
    embed: Embed,
    tasks: Sequence[str] | Mapping[str, Any],
    *,
    data_dir: str | Path | None = None,
    max_pairs: int = 0,
    seed: int = 0,
) -> dict[str, dict[str, float]]:
    """Score ``embed`` on several tasks: ``{task: {metric label: value}}`` in the papers' units.

    ``tasks`` is a list of task names, loaded from ``data_dir`` by
    :func:`~sentcl.evaluation.tasks.load_tasks` (with ``max_pairs`` and ``seed``), or a mapping
    name -> record already loaded (e.g. a chapter's subsampled STS sets), used as given. Every
    distinct text of all the tasks is encoded in one call of ``embed`` (:func:`score`, whose
    values these are). Keys are the names as given.
    """
    if isinstance(tasks, Mapping):
        if data_dir is not None or max_pairs or seed:
            raise ConfigError("data_dir, max_pairs and seed apply to task names; records are used as given")
        records = tasks
    else:
        records = load_tasks(tasks, data_dir, max_pairs, seed)
    return {name: scores.values for name, scores in score(embed, records).items()}


def average(scores: Mapping[str, Mapping[str, float]]) -> float:
    """The tables' "Average" column: the mean Spearman over the English STS columns
    (:data:`~sentcl.evaluation.tasks.STS_AVERAGE`) present in ``scores`` (an :func:`evaluate_tasks` result)."""
    columns = [name for name in scores if task(name).name in STS_AVERAGE]
    if not columns:
        raise ConfigError(f"no STS column to average in {list(scores)}; the average is over {', '.join(STS_AVERAGE)}")
    return float(np.mean([scores[name][SPEARMAN.label] for name in columns]))


def dev_evaluator(
    name_or_task: str | EvalTask,
    record: Record,
    *,
    metric_keys: Sequence[str] | None = None,
    precision: str = "auto",
    batch_size: int = 64,
) -> Evaluator:
    """A trainer evaluator (``model -> {metric: value}``, :data:`sentcl.training.trainer.Evaluator`)
    scoring ``record``, a dev set, as the task scores its test set.

    The papers select models on dev data: MNRL-SBERT, RCL and IFCL on STS-B dev (Spearman), RCL's
    FAQ models on dev questions (MAP, Appendix A.1), BSC on each task's dev data (§5.2).
    ``record`` may be of any dataset and split the task's evaluator takes (STS-B dev for
    ``"STSb"``); it is scored through :func:`score` with the task's evaluator, protocol, setting,
    relevance level and positive label. The keys are the evaluator's (``metric_for_best`` names
    one): ``metric_keys``, by default ``"spearman"`` and ``"pearson"`` (×100) for an STS task and
    the task's metric keys otherwise (fractions: ``"map"``, ``"mrr"``, ``"f1"``...). The
    embeddings bypass the embedding cache: the weights differ at every evaluation.
    """
    t = name_or_task if isinstance(name_or_task, EvalTask) else task(name_or_task)
    if metric_keys is None:
        keys = ("spearman", "pearson") if t.evaluator == "sts" else tuple(m.key for m in t.metrics)
    elif isinstance(metric_keys, str):
        raise ConfigError(f"metric_keys must be a list of metric keys, got the string {metric_keys!r}")
    else:
        keys = tuple(dict.fromkeys(metric_keys))
    if not keys:
        raise ConfigError(f"{t.name}: no metric to evaluate on the dev set")
    on_dev = replace(t, dataset=str(getattr(record, "name", "")), split=str(getattr(record, "split", "")),
                     metrics=tuple(Metric(k, k) for k in keys))
    _evaluated(t.name, on_dev, record)  # a record of the wrong kind fails now, not at the first evaluation

    def evaluate(model) -> dict[str, float]:
        def embed(texts: Sequence[str]) -> np.ndarray:
            return encode(model, texts, batch_size=batch_size, precision=precision, cache=False, show_progress=False)

        return score(embed, {t.name: record}, tasks={t.name: on_dev})[t.name].values

    return evaluate


__all__ = [
    "TaskScores",
    "average",
    "dev_evaluator",
    "evaluate_tasks",
    "score",
]
