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
  with itself gets exactly 1 (:func:`~sentcl.evaluation.encode_once.pairwise_cosine`; STS12
  has 61 such pairs).

MTEB reports the same STS12-16 and STS-B numbers (cosine Spearman on the pooled test sets)
in [0, 1]; its SICK-R task, however, scores all 9927 SICK pairs (our split ``all``), not the
4927 test pairs that SentEval and the papers use. all-MiniLM-L6-v2 in fp32 reproduces its
published MTEB scores to within 0.011 on every task (``tests/evaluation/test_cli.py``).

Which dataset and split a paper's STS column is, and its setting, are in the task table
(:data:`sentcl.evaluation.tasks.TASKS`); :mod:`sentcl.evaluation.scoring` scores tasks through
:func:`evaluate_sts` and keeps each pair's similarity for resampling.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..data.records import ScoredPairs
from ..embeddings import Embed
from ..errors import ConfigError
from .encode_once import pair_embeddings, pairwise_cosine

SETTINGS = ("all", "mean", "wmean")
"""SentEval's aggregates of an STS year's subsets: the pooled correlation, the mean and the
size-weighted mean of the subsets' correlations."""
# datasets scored as one pooled set whatever the setting (their subsets are genres or
# source years of one set, not a year's separate files)
POOLED_ONLY = ("stsbenchmark", "sickr", "cnsd_stsb")
_NO_CORRELATION = {"spearman": float("nan"), "pearson": float("nan")}


def cosine_spearman(embeddings1: np.ndarray, embeddings2: np.ndarray, gold: ArrayLike) -> float:
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
