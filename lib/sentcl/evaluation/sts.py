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
published MTEB scores to within 0.011 on every task (``tests/evaluation/test_cli.py``).

The task names and their (dataset, split) come from the task table,
:data:`sentcl.evaluation.tasks.TASKS`; :data:`STS_TASKS` is its seven English STS columns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from sentence_transformers import SentenceTransformer

from ..data import load
from ..data.records import ScoredPairs
from ..embeddings import Embed, encode
from ..errors import ConfigError, check_choice
from .common import embed_groups, pair_embeddings, pairwise_cosine
from .tasks import SETTINGS, STS_AVERAGE, TASKS, task

STS_TASKS: dict[str, tuple[str, str]] = {name: (TASKS[name].dataset, TASKS[name].split) for name in STS_AVERAGE}
"""The seven English STS tasks of :data:`~sentcl.evaluation.tasks.TASKS` -> (dataset, split)."""
# datasets scored as one pooled set whatever the setting (their subsets are genres or
# source years of one set, not a year's separate files)
_POOLED_ONLY = ("stsbenchmark", "sickr", "cnsd_stsb")
_NO_CORRELATION = {"spearman": float("nan"), "pearson": float("nan")}


def cosine_spearman(embeddings1: np.ndarray, embeddings2: np.ndarray, gold: Sequence[float]) -> float:
    """Spearman correlation ×100 between ``cos(embeddings1[i], embeddings2[i])`` and ``gold[i]``."""
    sims = pairwise_cosine(embeddings1, embeddings2)
    gold = np.asarray(gold, dtype=np.float64)
    if gold.shape != sims.shape:
        raise ConfigError(f"{len(gold)} gold scores for {len(sims)} pairs")
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
    and size-weighted means of the per-subset correlations (SentEval's three settings). A
    subset with a single pair (possible in a small seeded subset) has no
    correlation (NaN) and is left out of ``mean`` and ``wmean``.
    """
    if len(pairs) < 2:
        raise ConfigError(f"{pairs.name}/{pairs.split}: {len(pairs)} pairs, a correlation needs at least 2")
    e1, e2 = pair_embeddings(pairs.sentences1, pairs.sentences2, embed, embeddings1, embeddings2)
    sims = pairwise_cosine(e1, e2)
    subsets = np.asarray(pairs.subsets)
    per_subset = {}
    for name in pairs.subset_names:
        rows = subsets == name
        n = int(rows.sum())
        per_subset[name] = {"n": n, **(_correlations(sims[rows], pairs.scores[rows]) if n >= 2 else _NO_CORRELATION)}
    scored = [s for s in per_subset.values() if s["n"] >= 2]
    sizes = np.array([s["n"] for s in scored], dtype=np.float64)
    pooled = _correlations(sims, pairs.scores)
    result = {
        "dataset": pairs.name,
        "split": pairs.split,
        "n": len(pairs),
        "sample": pairs.sample,
        "dropped": dict(pairs.dropped),
    }
    for stat in ("spearman", "pearson"):
        values = np.array([s[stat] for s in scored])
        result[stat] = {
            "all": pooled[stat],
            "mean": float(values.mean()) if scored else float("nan"),
            "wmean": float(values @ sizes / sizes.sum()) if scored else float("nan"),
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
    """The seven English STS tasks (or ``tasks``, STS tasks of :data:`~sentcl.evaluation.tasks.TASKS`
    in any accepted spelling) loaded from the data root and scored by :func:`evaluate_sts_datasets`,
    keyed by their table names; the result also names ``sick_split``.

    ``sick_split`` is the SICK-R split: ``test`` (4927 pairs, SentEval and the papers) or
    ``all`` (9927 pairs, what MTEB's SICK-R scores).
    """
    chosen = [task(t) for t in (STS_AVERAGE if tasks is None else tasks)]
    if not chosen or any(t.evaluator != "sts" or t.positive_label is not None for t in chosen):
        valid = [n for n, t in TASKS.items() if t.evaluator == "sts" and t.positive_label is None]
        raise ConfigError(f"STS tasks with scored pairs, one of {', '.join(valid)}; got {list(tasks or [])}")
    if sick_split not in ("test", "all"):
        raise ConfigError(f"sick_split must be 'test' or 'all', got {sick_split!r}")
    datasets = {t.name: load(t.dataset, sick_split if t.name == "SICK-R" else t.split, data_dir) for t in chosen}
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
    check_choice("STS setting", setting, SETTINGS)
    matrices = embed_groups(embed, [[*d.sentences1, *d.sentences2] for d in datasets.values()])
    details = {}
    for (name, pairs), vectors in zip(datasets.items(), matrices):
        n = len(pairs)
        details[name] = evaluate_sts(pairs, embeddings1=vectors[:n], embeddings2=vectors[n:])
    scores = {
        name: d["spearman"]["all" if datasets[name].name in _POOLED_ONLY else setting] for name, d in details.items()
    }
    scores["avg"] = float(np.mean(list(scores.values())))
    return {"scores": scores, "setting": setting, "details": details}


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
