"""Significance: the intervals of the book's claims, Holm's correction, and what a row reports of its seeds.

A difference between two models is uncertain twice, over the training seeds and over the test items:
:func:`difference_interval` resamples both together (paired over items, and over seeds where the
design is), and :func:`holm` corrects a chapter's p-values together. Every chapter's verdicts come
from here through :mod:`sentcl.book.claims`: one statistics path. (Tan et al. (2022) mark single table
cells "_" p < 0.1 and "*" p < 0.05 from 5 runs with an unnamed test and no correction; the RCL chapter
says why it tests the paper's orderings instead of recomputing those marks.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError


def seed_mean_std(runs: Sequence[Mapping[str, float]]) -> tuple[dict[str, float], dict[str, float] | None]:
    """Per column, the mean over ``runs`` (one ``{column: value}`` per seed, or per fold) and the sample
    standard deviation (ddof 1; None with a single run): what a table row reports of its seeds."""
    if not runs:
        raise ConfigError("no runs to summarise")
    columns = list(runs[0])
    if any(list(r) != columns for r in runs):
        raise ConfigError(f"every run needs the same columns {columns}, got {[list(r) for r in runs]}")
    values = {c: np.array([r[c] for r in runs], dtype=np.float64) for c in columns}
    mean = {c: float(v.mean()) for c, v in values.items()}
    return mean, ({c: float(v.std(ddof=1)) for c, v in values.items()} if len(runs) > 1 else None)


# ------------------------------------------------------------------------------ intervals for claims
# Is a difference between two models a finding? Two sources of noise stand between a measured gap and
# the methods' true one: the training seeds (a model is one draw of its training) and the test items (a
# test set, a subset above all, is one draw of the task). The interval of a difference resamples both
# together (a two-level bootstrap); a chapter's claims are then Holm-corrected together.

BOOTSTRAP_RESAMPLES = 2000
ALPHA_CLAIMS = 0.05


def item_resamples(n_items: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> np.ndarray:
    """A ``(resamples, n_items)`` matrix of item indices drawn with replacement (seeded): the same matrix
    for every model scored on the same test items, so that their differences are paired over items."""
    if n_items < 2:
        raise ConfigError(f"a bootstrap over test items needs at least 2 items, got {n_items}")
    return np.random.default_rng(seed).integers(0, n_items, size=(resamples, n_items))


@dataclass(frozen=True)
class Difference:
    """``delta`` = mean over seeds of the left model's metric − the right model's, on all the test items;
    ``low``, ``high`` its percentile interval at ``level``; ``p`` the two-sided bootstrap p-value of
    "no difference" (:func:`difference_interval`)."""

    delta: float
    low: float
    high: float
    p: float
    level: float
    paired_seeds: bool

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def difference_interval(
    left: np.ndarray,
    right: np.ndarray,
    left_full: Sequence[float],
    right_full: Sequence[float],
    *,
    paired_seeds: bool,
    level: float = 1 - ALPHA_CLAIMS,
    seed: int = 0,
) -> Difference:
    """The interval of (left − right), resampling training seeds and test items together.

    Args:
        left, right: ``(seeds, resamples)`` arrays: each seed's model's metric on each item resample
            (:func:`item_resamples`, one matrix shared by both sides, so the items are paired).
        left_full, right_full: each seed's metric on all the items (the observed values).
        paired_seeds: whether seed k of one model and seed k of the other share what a seed decides
            (data order, initialisation): then one draw of seed indices serves both sides and the two
            seed lists must align; otherwise each side's seeds are drawn on their own (unpaired).
        level: the interval's coverage (0.95).

    Each bootstrap replicate b takes item resample b and, per side, a draw with replacement of its
    seeds; the side's value is the mean over the drawn seeds of its metric on resample b. Drawing S of
    S seeds underestimates their spread by a factor (S − 1)/S in variance, so each side's seed deviation
    (drawn mean − mean over all seeds, on resample b) is scaled by sqrt(S / (S − 1)). One seed gives no
    seed spread at all: the interval then holds the item noise only (see :func:`seed_noise_measured`).
    ``p`` = 2 min(P(δ* ≤ 0), P(δ* ≥ 0)) with the +1 correction, never below 1/(B + 1) × 2.
    """
    left, right = np.atleast_2d(np.asarray(left, dtype=np.float64)), np.atleast_2d(np.asarray(right, dtype=np.float64))
    if left.shape[1] != right.shape[1]:
        raise ConfigError(f"both sides need the same item resamples: {left.shape[1]} and {right.shape[1]} replicates")
    if len(left_full) != len(left) or len(right_full) != len(right):
        raise ConfigError("one full-data value per seed on each side")
    if paired_seeds and len(left) != len(right):
        raise ConfigError(f"paired seeds need the same seeds on both sides: {len(left)} and {len(right)}")
    rng = np.random.default_rng(seed)
    replicates = left.shape[1]
    draws_left = rng.integers(0, len(left), size=(replicates, len(left)))
    draws_right = draws_left if paired_seeds else rng.integers(0, len(right), size=(replicates, len(right)))
    samples = _side(left, draws_left) - _side(right, draws_right)
    samples = samples[np.isfinite(samples)]  # a resample on which a metric is undefined (e.g. constant scores)
    if len(samples) < replicates / 2:
        raise ConfigError(f"the metric is undefined on {replicates - len(samples)} of {replicates} resamples")
    replicates = len(samples)
    delta = float(np.mean(left_full) - np.mean(right_full))
    low, high = np.quantile(samples, [(1 - level) / 2, 1 - (1 - level) / 2])
    below, above = (np.sum(samples <= 0) + 1) / (replicates + 1), (np.sum(samples >= 0) + 1) / (replicates + 1)
    return Difference(delta, float(low), float(high), float(min(1.0, 2 * min(below, above))), level, paired_seeds)


def _side(values: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Per replicate b: the mean over all seeds on resample b, plus the drawn seeds' deviation from it
    (scaled by sqrt(S/(S-1)) for S > 1)."""
    seeds = values.shape[0]
    per_replicate = values.T  # (B, S)
    centre = per_replicate.mean(axis=1)
    if seeds == 1:
        return centre
    drawn = np.take_along_axis(per_replicate, draws, axis=1).mean(axis=1)
    return centre + (drawn - centre) * math.sqrt(seeds / (seeds - 1))


def seed_noise_measured(seeds_left: int, seeds_right: int, trained_left: bool, trained_right: bool) -> bool:
    """Whether an interval holds the seed-to-seed spread of every trained side: a trained model needs two
    seeds or more (an untrained one, e.g. the untouched encoder, has no seed noise)."""
    return (not trained_left or seeds_left >= 2) and (not trained_right or seeds_right >= 2)


def holm(p_values: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error over the family ``p_values``): sorted
    ascending, the k-th smallest (k from 1) times (m − k + 1), made non-decreasing, capped at 1. A claim
    is significant at α exactly when its adjusted p is below α. NaN stays NaN and is not counted in m."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    if m == 0:
        return out
    order = valid[np.argsort(p[valid], kind="stable")]
    adjusted = np.maximum.accumulate(p[order] * (m - np.arange(m)))
    out[order] = np.minimum(adjusted, 1.0)
    return out


__all__ = [
    "ALPHA_CLAIMS",
    "BOOTSTRAP_RESAMPLES",
    "Difference",
    "difference_interval",
    "holm",
    "item_resamples",
    "seed_mean_std",
    "seed_noise_measured",
]
