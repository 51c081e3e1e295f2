"""Semantic textual similarity: Spearman ×100 between cosine similarity and the gold scores.

The protocol the papers (SimCSE, SBERT, RCL, IFCL, MNRL-SBERT) compare on:

- STS12-STS16 are scored with SentEval's **"all"** setting: one Spearman correlation over
  the pairs of every subset of a year pooled together. SentEval also reports, per year, the
  plain **mean** and the sample-**weighted mean** ("wmean") of the per-subset
  correlations; both are here too (``setting=``), and every subset's own correlation.
- STS13 has no SMT subset (1500 pairs); STS15/STS16 keep only the scored pairs (3000 and
  1186); the loaders in :mod:`sentcl.data` take care of that and report what they drop.
- STS Benchmark and SICK-R are scored on their test splits (1379 and 4927 pairs), pooled
  over their genres, whatever ``setting`` is chosen for STS12-16.
- Cosine similarity of the two sentences' embeddings (SentEval and MTEB: cosine of the raw
  embeddings, so normalising or not changes nothing), computed so that a sentence paired
  with itself gets exactly 1 (:func:`~sentcl.evaluation.common.pairwise_cosine`; STS12
  has 61 such pairs).

MTEB reports the same STS12-16 and STS-B numbers (cosine Spearman on the pooled test sets)
in [0, 1]; its SICK-R task, however, scores all 9927 SICK pairs (our split ``all``), not the
4927 test pairs that SentEval and the papers use. all-MiniLM-L6-v2 in fp32 reproduces its
published MTEB scores to within 0.011 on every task (``tests/test_eval_cli.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from ..data import load
from ..data.records import ScoredPairs, draw_rows
from ..embeddings import encode
from ..errors import ConfigError
from .common import Embed, embed_unique, pair_embeddings, pairwise_cosine

# task name as the papers' tables write it -> (dataset in the registry, split)
STS_TASKS: dict[str, tuple[str, str]] = {
    "STS12": ("sts12", "test"),
    "STS13": ("sts13", "test"),
    "STS14": ("sts14", "test"),
    "STS15": ("sts15", "test"),
    "STS16": ("sts16", "test"),
    "STSBenchmark": ("stsbenchmark", "test"),
    "SICK-R": ("sickr", "test"),
}
SETTINGS = ("all", "mean", "wmean")
# datasets scored as one pooled set whatever the setting (their subsets are genres, not years' files)
_POOLED_ONLY = ("stsbenchmark", "sickr")


def cosine_spearman(embeddings1: np.ndarray, embeddings2: np.ndarray, gold: Sequence[float]) -> float:
    """Spearman correlation ×100 between ``cos(embeddings1[i], embeddings2[i])`` and ``gold[i]``."""
    sims = pairwise_cosine(embeddings1, embeddings2)
    gold = np.asarray(gold, dtype=np.float64)
    if gold.shape != sims.shape:
        raise ValueError(f"{len(gold)} gold scores for {len(sims)} pairs")
    return _correlations(sims, gold)["spearman"]


def _correlations(sims: np.ndarray, gold: np.ndarray) -> dict[str, float]:
    from scipy.stats import pearsonr, spearmanr  # imported here: `sentcl --help` should not load scipy

    return {
        "spearman": 100.0 * float(spearmanr(sims, gold).statistic),
        "pearson": 100.0 * float(pearsonr(sims, gold).statistic),
    }


def evaluate_sts(
    pairs: ScoredPairs,
    embed: Embed | None = None,
    *,
    embeddings1: np.ndarray | None = None,
    embeddings2: np.ndarray | None = None,
) -> dict:
    """Spearman (and Pearson) ×100 of cosine similarity on one STS dataset, per subset and pooled.

    Give ``embed`` (each distinct sentence is encoded once) or ``embeddings1``/``embeddings2``
    (rows aligned with ``pairs.sentences1``/``sentences2``). Returns a JSON-able dict::

        {"dataset", "split", "n", "sample", "dropped",
         "spearman": {"all", "mean", "wmean"}, "pearson": {"all", "mean", "wmean"},
         "subsets": {name: {"n", "spearman", "pearson"}}}

    ``all`` is the correlation over every pair pooled; ``mean`` and ``wmean`` are the plain
    and size-weighted means of the per-subset correlations (SentEval's three settings).
    """
    if len(pairs) < 2:
        raise ValueError(f"{pairs.name}/{pairs.split}: {len(pairs)} pairs, a correlation needs at least 2")
    e1, e2 = pair_embeddings(pairs.sentences1, pairs.sentences2, embed, embeddings1, embeddings2)
    sims = pairwise_cosine(e1, e2)
    subsets = np.asarray(pairs.subsets)
    per_subset = {}
    for name in pairs.subset_names:
        rows = subsets == name
        per_subset[name] = {"n": int(rows.sum()), **_correlations(sims[rows], pairs.scores[rows])}
    sizes = np.array([s["n"] for s in per_subset.values()], dtype=np.float64)
    pooled = _correlations(sims, pairs.scores)
    result = {
        "dataset": pairs.name,
        "split": pairs.split,
        "n": len(pairs),
        "sample": pairs.sample,
        "dropped": dict(pairs.dropped),
    }
    for stat in ("spearman", "pearson"):
        values = np.array([s[stat] for s in per_subset.values()])
        result[stat] = {
            "all": pooled[stat],
            "mean": float(values.mean()),
            "wmean": float((values * sizes).sum() / sizes.sum()),
        }
    result["subsets"] = per_subset
    return result


def evaluate_sts_tasks(
    embed: Embed,
    data_dir: str | Path | None = None,
    tasks: Sequence[str] | None = None,
    setting: str = "all",
    sick_split: str = "test",
) -> dict:
    """The standard seven STS tasks (or ``tasks``) loaded from the data root and scored by
    :func:`evaluate_sts_datasets`; the result also names ``sick_split``.

    ``sick_split`` is the SICK-R split: ``test`` (4927 pairs, SentEval and the papers) or
    ``all`` (9927 pairs, what MTEB's SICK-R scores).
    """
    tasks = list(STS_TASKS) if tasks is None else list(tasks)
    unknown = [t for t in tasks if t not in STS_TASKS]
    if unknown or not tasks:
        raise ConfigError(f"unknown STS task(s) {unknown}; choose from {', '.join(STS_TASKS)}")
    if sick_split not in ("test", "all"):
        raise ConfigError(f"sick_split must be 'test' or 'all', got {sick_split!r}")
    splits = {t: sick_split if t == "SICK-R" else STS_TASKS[t][1] for t in tasks}
    datasets = {t: load(STS_TASKS[t][0], splits[t], data_dir) for t in tasks}
    return {**evaluate_sts_datasets(embed, datasets, setting), "sick_split": sick_split}


def evaluate_sts_datasets(embed: Embed, datasets: Mapping[str, ScoredPairs], setting: str = "all") -> dict:
    """Spearman ×100 on each of several loaded STS datasets, and their average.

    ``datasets`` maps a task name (as a table writes it, e.g. ``"STSb"``) to its pairs, whole
    or a :func:`sample_pairs` subset. Every distinct sentence of all the tasks is encoded in
    one call of ``embed``. Returns::

        {"scores": {task: ..., "avg": ...}, "setting": "all", "details": {task: evaluate_sts(...) result}}

    ``scores`` holds, for STS12-16, the Spearman of ``setting`` ("all", "mean" or "wmean")
    and, for STS Benchmark and SICK-R, the pooled Spearman; ``avg`` is their plain mean (the
    "Avg." column of the papers' tables).
    """
    if not datasets:
        raise ConfigError("evaluate_sts_datasets needs at least one task")
    if "avg" in datasets:
        raise ConfigError("'avg' is the name of the average, not a task name")
    if setting not in SETTINGS:
        raise ConfigError(f"unknown STS setting {setting!r}; choose from {', '.join(SETTINGS)}")
    texts = [s for d in datasets.values() for s in (*d.sentences1, *d.sentences2)]
    vectors, index = embed_unique(embed, texts)
    details, start = {}, 0
    for task, pairs in datasets.items():
        n = len(pairs)
        e1 = vectors[index[start : start + n]]
        e2 = vectors[index[start + n : start + 2 * n]]
        start += 2 * n
        details[task] = evaluate_sts(pairs, embeddings1=e1, embeddings2=e2)
    scores = {
        task: d["spearman"]["all" if datasets[task].name in _POOLED_ONLY else setting] for task, d in details.items()
    }
    scores["avg"] = float(np.mean(list(scores.values())))
    return {"scores": scores, "setting": setting, "details": details}


def sample_pairs(pairs: ScoredPairs, max_pairs: int, seed: int = 0) -> ScoredPairs:
    """At most ``max_pairs`` pairs of ``pairs``, drawn without replacement (seeded), in their order.

    0, or a number not below the size, keeps every pair (the record itself). The draw is
    uniform over the pooled pairs, so each subset of an STS year keeps about its share, as the
    "all" setting weighs them. For quick runs only: the papers score the whole test sets.
    """
    rows = draw_rows(len(pairs), max_pairs, seed, "max_pairs")
    if rows is None:
        return pairs
    if max_pairs < 2:
        raise ConfigError(f"max_pairs must be at least 2 (a correlation needs two pairs), got {max_pairs}")
    return pairs.take(rows)


def sts_dev_evaluator(pairs: ScoredPairs, precision: str = "auto", batch_size: int = 64) -> Callable[[SentenceTransformer], dict[str, float]]:
    """A trainer evaluator (``model -> {metric: value}``, :data:`sentcl.training.trainer.Evaluator`) on a dev set of scored pairs (e.g. STS-B dev, as the MNRL-SBERT and RCL
    papers select models): ``{"spearman": ..., "pearson": ...}``, ×100, of the cosine similarity
    over all pairs (:func:`evaluate_sts`, pooled). The embeddings bypass the
    embedding cache: the weights differ at every evaluation."""
    def evaluate(model: SentenceTransformer) -> dict[str, float]:
        def embed(texts: Sequence[str]) -> np.ndarray:
            return encode(model, texts, batch_size=batch_size, precision=precision, cache=False, show_progress=False)

        result = evaluate_sts(pairs, embed)
        return {"spearman": result["spearman"]["all"], "pearson": result["pearson"]["all"]}

    return evaluate
