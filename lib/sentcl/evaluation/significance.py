"""Significance: the intervals of the book's claims, Holm's correction, and what a row reports of its seeds.

A difference between two models is uncertain twice, over the training seeds and over the test items.
:func:`difference_interval` estimates the two parts separately and adds them:

- **test items**: the variance over item resamples (:func:`item_resamples`, one matrix shared by both
  models, so the difference is paired over items) of the seed-averaged difference. The bootstrap is
  kept for this part because the tables' metrics (pooled Spearman, best-threshold F1) are not means of
  per-item values; it estimates a variance, never a tail, so its resample count sets no floor;
- **training seeds**: the sample variance of each side's seed values on all the test items, over its
  number of seeds (Welch), or, when seed k of the two sides share data order and initialisation, the
  sample variance of the per-seed differences over the number of seeds (paired). On the whole test set
  the items are fixed, so these values vary by seed alone. A side with one seed adds nothing: an
  untrained model (the untouched encoder) has no seed noise, and a trained one with one seed has its
  spread unmeasured (:func:`seed_noise_measured`; its claims are undetermined);
- **together**: SE² = item variance + seed variance, and the interval is delta ± t_{1−α/2, df} SE.
  Satterthwaite's df, (u + i)² / (u² / seed_df + i² / item_df) (seed_df Welch's over the two sides'
  S − 1, item_df the items' or resamples' count − 1), is taken with the seed variance u at its upper 90 %
  confidence bound (u = seed_var × seed_df / χ²_{0.1, seed_df}): plain Satterthwaite lets a seed
  variance that three seeds underestimate by chance buy degrees of freedom (it covered 92 % for 3 seeds
  vs one untouched row in simulation), the bound does not. With three seeds and seed noise dominating,
  df is about 2 (t 4.30 against 1.96): what a percentile bootstrap over three seeds cannot give (10
  distinct resamples; it covered 87 % for 3 vs 3 seeds and 78 % for 3 vs 1). Where item noise
  dominates, df is large and the interval is about the item bootstrap's.

  The seed-to-seed variance of full-test-set values holds the seed × item interaction too, and so does
  the item term: counted twice, the interval errs wide by that interaction's share.

The p-value of "no difference" is the t distribution's, 2 P(T_df > |delta| / SE): not floored by any
resample count, so a family of 166 claims can reach Holm's α / 166 when the gap is several standard
errors and the design has the degrees of freedom (:func:`holm`; :func:`holm_levels` gives the level
each claim is tested at, the interval a verdict rests on). The minimum detectable effect at power
1 − β (:meth:`Difference.mde`) is (t_{1−a/2, df} + t_{1−β, df}) SE, the usual approximation to the
non-central t (77 % power for the stated 80 % at df 2, 79 % at df 4, 80 % at df ≥ 10). At three seeds
the SE and df a claim states are themselves uncertain, and so is its detectable effect.

The coverage at three seeds (3 vs 3 and 3 vs 1, seed noise dominating and item noise dominating), the
power at the stated effect and the 166-claim family are simulated in
``tests/evaluation/test_significance.py``. (Tan et al. (2022) mark single table cells "_" p < 0.1 and
"*" p < 0.05 from 5 runs with an unnamed test and no correction; the RCL chapter says why it tests the
paper's orderings instead of recomputing those marks.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

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

BOOTSTRAP_RESAMPLES = 2000
"""Item resamples per task: they estimate the item part's variance (relative error about 3 %)."""
ALPHA_CLAIMS = 0.05
POWER = 0.8
"""The power at which a claim's minimum detectable effect is stated."""


def item_resamples(n_items: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> np.ndarray:
    """A ``(resamples, n_items)`` matrix of item indices drawn with replacement (seeded): the same matrix
    for every model scored on the same test items, so that their differences are paired over items."""
    if n_items < 2:
        raise ConfigError(f"a bootstrap over test items needs at least 2 items, got {n_items}")
    return np.random.default_rng(seed).integers(0, n_items, size=(resamples, n_items))


@dataclass(frozen=True)
class Difference:
    """``delta`` = mean over seeds of the left model's metric − the right model's, on all the test items;
    its variance from the training seeds, ``seed_var`` with ``seed_df`` degrees of freedom, and from the
    test items, ``item_var`` with ``item_df`` (:func:`difference_interval`, module doc)."""

    delta: float
    seed_var: float
    seed_df: float
    item_var: float
    item_df: float
    paired_seeds: bool

    @property
    def se(self) -> float:
        """The standard error, sqrt(seed_var + item_var)."""
        return math.sqrt(self.seed_var + self.item_var)

    @property
    def seed_se(self) -> float:
        return math.sqrt(self.seed_var)

    @property
    def item_se(self) -> float:
        return math.sqrt(self.item_var)

    @property
    def df(self) -> float:
        """The degrees of freedom of delta / se: Satterthwaite's, (u + i)² / (u² / seed_df + i² / item_df),
        with u the seed variance at its upper :data:`SEED_VARIANCE_BOUND` confidence bound,
        seed_var x seed_df / χ²_{1 − bound, seed_df}, and i = item_var (module doc)."""
        upper = self.seed_var * self.seed_df / float(stats.chi2.ppf(1 - SEED_VARIANCE_BOUND, self.seed_df)) \
            if self.seed_var > 0 and math.isfinite(self.seed_df) else self.seed_var
        spread = sum(v * v / df for v, df in ((upper, self.seed_df), (self.item_var, self.item_df)) if v > 0)
        return (upper + self.item_var) ** 2 / spread if spread > 0 else math.inf

    def interval(self, alpha: float = ALPHA_CLAIMS) -> tuple[float, float]:
        """The two-sided ``1 − alpha`` interval, delta ∓ t_{1−alpha/2, df} se."""
        half = self.se * float(stats.t.isf(alpha / 2, self.df))
        return self.delta - half, self.delta + half

    @property
    def p(self) -> float:
        """The two-sided p-value of "no difference", 2 P(T_df > |delta| / se); 1 for a zero gap, 0 for a gap
        with no noise."""
        if self.se == 0:
            return 1.0 if self.delta == 0 else 0.0
        return float(min(1.0, 2 * stats.t.sf(abs(self.delta) / self.se, self.df)))

    def mde(self, alpha: float = ALPHA_CLAIMS, power: float = POWER) -> float:
        """The smallest gap this design detects with probability ``power`` at two-sided level ``alpha``:
        (t_{1−alpha/2, df} + t_{power, df}) se."""
        return self.se * float(stats.t.isf(alpha / 2, self.df) + stats.t.ppf(power, self.df))


SEED_VARIANCE_BOUND = 0.9
"""The degrees of freedom are computed with the seed variance at this upper confidence bound (module doc)."""


def difference_interval(
    left: np.ndarray,
    right: np.ndarray,
    left_full: Sequence[float],
    right_full: Sequence[float],
    *,
    paired_seeds: bool,
    items: int | None = None,
) -> Difference:
    """The seed and item variances of (left − right) and their degrees of freedom (module doc).

    Args:
        left, right: ``(seeds, resamples)`` arrays: each seed's model's metric on each item resample
            (:func:`item_resamples`, one matrix shared by both sides, so the items are paired).
        left_full, right_full: each seed's metric on all the items (the observed values).
        paired_seeds: whether seed k of one model and seed k of the other share what a seed decides
            (data order, initialisation): the seed part is then the variance of the per-seed
            differences, and the two seed lists must align; otherwise each side's own (Welch).
        items: the number of test items (the item term's df is min(items, resamples) − 1; None: the
            resamples' count alone).

    A resample on which a metric is undefined (e.g. constant scores) is left out of the item variance;
    more than half of them undefined is an error.
    """
    left, right = np.atleast_2d(np.asarray(left, dtype=np.float64)), np.atleast_2d(np.asarray(right, dtype=np.float64))
    full_left, full_right = np.asarray(left_full, dtype=np.float64), np.asarray(right_full, dtype=np.float64)
    if left.shape[1] != right.shape[1]:
        raise ConfigError(f"both sides need the same item resamples: {left.shape[1]} and {right.shape[1]} replicates")
    if len(full_left) != len(left) or len(full_right) != len(right):
        raise ConfigError("one full-data value per seed on each side")
    if paired_seeds and len(left) != len(right):
        raise ConfigError(f"paired seeds need the same seeds on both sides: {len(left)} and {len(right)}")
    replicates = left.shape[1]
    samples = left.mean(axis=0) - right.mean(axis=0)
    samples = samples[np.isfinite(samples)]
    if len(samples) < max(2, replicates / 2):
        raise ConfigError(f"the metric is undefined on {replicates - len(samples)} of {replicates} resamples")
    sides = [full_left - full_right] if paired_seeds else [full_left, full_right]
    terms = [(float(v.var(ddof=1)) / len(v), len(v) - 1) for v in sides if len(v) > 1]
    seed_var = sum(v for v, _ in terms)
    spread = sum(v * v / df for v, df in terms)
    return Difference(
        delta=float(full_left.mean() - full_right.mean()), seed_var=seed_var,
        seed_df=seed_var**2 / spread if spread > 0 else math.inf,
        item_var=float(samples.var(ddof=1)), item_df=float(min(items or len(samples), len(samples)) - 1),
        paired_seeds=paired_seeds,
    )


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


def holm_levels(p_values: Sequence[float], alpha: float = ALPHA_CLAIMS) -> np.ndarray:
    """The level at which Holm's procedure tests each claim: the k-th smallest p (k from 1) at
    alpha / (m − k + 1) while every smaller one was rejected; from the first claim it keeps on, that
    claim's level for it and every larger p (Holm stops there). An interval at its claim's level
    excludes 0 exactly when Holm rejects the claim (:func:`holm` < alpha): the interval a verdict rests
    on. NaN stays NaN and is not counted in m."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    valid = np.flatnonzero(~np.isnan(p))
    m = len(valid)
    order = valid[np.argsort(p[valid], kind="stable")]
    levels = alpha / (m - np.arange(m))
    kept = np.flatnonzero(p[order] >= levels)
    if len(kept):
        levels[kept[0]:] = levels[kept[0]]
    out[order] = levels
    return out


__all__ = [
    "ALPHA_CLAIMS",
    "BOOTSTRAP_RESAMPLES",
    "POWER",
    "Difference",
    "difference_interval",
    "holm",
    "holm_levels",
    "item_resamples",
    "seed_mean_std",
    "seed_noise_measured",
]
