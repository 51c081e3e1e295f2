"""The STS tasks as loaded records, whole or as seeded subsets, scored together.

:func:`sentcl.evaluation.sts.evaluate_sts_tasks` loads the seven tasks itself and scores them
whole. A chapter that loads the tasks through its run (so that the datasets appendix lists
them) or that scores a subset of each (a CPU demo cannot embed the ~30,000 distinct sentences
of the seven tasks for every model it compares) uses :func:`sample_pairs` and
:func:`evaluate_sts_datasets` instead: the same Spearman ×100 of cosine similarity, in
SentEval's "all" setting (one correlation over every pair of a task, its subsets pooled, which
for STS-B and SICK-R is their pooled test set), every distinct sentence embedded once.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..data.records import ScoredPairs
from ..errors import ConfigError
from .common import Embed, embed_unique
from .sts import evaluate_sts


def sample_pairs(pairs: ScoredPairs, max_pairs: int, seed: int = 0) -> ScoredPairs:
    """At most ``max_pairs`` pairs of ``pairs``, drawn without replacement (seeded), in their order.

    0, or a number not below the size, keeps every pair (the record itself). The draw is uniform
    over the pooled pairs, so each subset of an STS year keeps about its share, as the "all"
    setting weighs them.
    """
    if isinstance(max_pairs, bool) or not isinstance(max_pairs, (int, np.integer)) or max_pairs < 0:
        raise ConfigError(f"max_pairs must be a non-negative integer (0: all pairs), got {max_pairs!r}")
    if max_pairs == 0 or max_pairs >= len(pairs):
        return pairs
    if max_pairs < 2:
        raise ConfigError(f"max_pairs must be at least 2 (a correlation needs two pairs), got {max_pairs}")
    rows = np.sort(np.random.default_rng(seed).choice(len(pairs), size=int(max_pairs), replace=False))
    return ScoredPairs(
        name=pairs.name,
        split=pairs.split,
        sentences1=[pairs.sentences1[i] for i in rows],
        sentences2=[pairs.sentences2[i] for i in rows],
        scores=pairs.scores[rows],
        subsets=[pairs.subsets[i] for i in rows],
        sources=list(pairs.sources),
        dropped=dict(pairs.dropped),
        sample=pairs.sample,
    )


def evaluate_sts_datasets(embed: Embed, datasets: Mapping[str, ScoredPairs]) -> dict[str, float]:
    """Spearman ×100 of cosine similarity on each task (SentEval "all"), and their mean as ``"avg"``.

    ``datasets`` maps a task name to its pairs (e.g. ``{"STS12": ..., "SICK-R": ...}``). Every
    distinct sentence of all the tasks is embedded in one call of ``embed``.
    """
    if not datasets:
        raise ConfigError("evaluate_sts_datasets needs at least one task")
    if "avg" in datasets:
        raise ConfigError("'avg' is the name of the average, not a task name")
    texts = [s for pairs in datasets.values() for s in (*pairs.sentences1, *pairs.sentences2)]
    vectors, index = embed_unique(embed, texts)
    scores, start = {}, 0
    for task, pairs in datasets.items():
        n = len(pairs)
        e1, e2 = vectors[index[start : start + n]], vectors[index[start + n : start + 2 * n]]
        start += 2 * n
        scores[task] = evaluate_sts(pairs, embeddings1=e1, embeddings2=e2)["spearman"]["all"]
    scores["avg"] = float(np.mean(list(scores.values())))
    return scores


__all__ = ["evaluate_sts_datasets", "sample_pairs"]
