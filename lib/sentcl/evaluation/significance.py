"""Significance: the intervals of the book's claims, Holm's correction, and what a row reports of its seeds.

A difference between two models is uncertain twice, over the training seeds and over the test items.
:func:`difference_interval` estimates the two parts separately and adds them, in the crossed design of
S seeds x n items (seed offsets a, item effects b, a seed x item interaction c, variances σa², σb², σc²;
the seed-averaged difference has variance σa²/S + σb²/n + σc²/(Sn) about the population of items):

- **training seeds**: the sample variance of each side's seed values on all the scored items, over its
  number of seeds (Welch), or, when seed k of the two sides share data order and initialisation, the
  sample variance of the per-seed differences over the number of seeds (paired). It estimates
  σa²/S + σc²/(Sn): the interaction, once. A side with one seed adds nothing: an untrained model (the
  untouched encoder) has no seed noise, and a trained one with one seed has its spread unmeasured
  (:func:`seed_noise_measured`: such a claim gets no interval);
- **test items**: the variance over item resamples (:func:`item_resamples`, one matrix shared by both
  models, so the difference is paired over items) of the seed-averaged difference estimates
  σb²/n + σc²/(Sn), the interaction a second time; each seed's own resample variance, (σb² + σc²)/n,
  gives the interaction's share, (mean over seeds of it − that of the mean) / (S − 1) (per side, or of
  the per-seed differences when paired), which is taken out (:data:`Difference.interaction`): the item
  term is σb²/n alone. The bootstrap is kept for this part because the tables' metrics (pooled
  Spearman, best-threshold F1) are not means of per-item values; it estimates a variance, never a tail;
- **the estimand** (:data:`ESTIMANDS`): a claim is about *this test set* (the paper's benchmark: what a
  reproduction asks is whether the same ordering holds on the same test items; the default) or about
  *the population of such items*. For the test set, the item term is multiplied by the
  finite-population factor 1 − n/N, n of its N items scored: 0 when every item is scored (the paper
  profile), 0.64 for 500 of STS-B's 1,379 test pairs; the claims apply it to each task's resamples
  before they reach here (:meth:`sentcl.book.output.evidence.RowEvidence.column_values`). For the
  population, the item term stays whole;
- **together**: SE² = seed variance + item variance, and the interval is delta ± t_{1−α/2, df} SE.
  Satterthwaite's df, (u + i)² / (u² / seed_df + i² / item_df) (seed_df Welch's over the two sides'
  S − 1, item_df the items' or resamples' count − 1), is taken with the seed variance u at its upper 90 %
  confidence bound (u = seed_var × seed_df / χ²_{0.1, seed_df}): plain Satterthwaite lets a seed
  variance that three seeds underestimate by chance buy degrees of freedom (it covered 92 % for 3 seeds
  vs one untouched row in simulation), the bound does not. With three seeds and seed noise dominating,
  df is about 2 (t 4.30 against 1.96): what a percentile bootstrap over three seeds cannot give (10
  distinct resamples; it covered 87 % for 3 vs 3 seeds and 78 % for 3 vs 1).

The p-value of "no difference" is the t distribution's, 2 P(T_df > |delta| / SE) (NaN when delta is):
not floored by any resample count, so a family of 166 claims can reach Holm's α / 166 when the gap is
several standard errors and the design has the degrees of freedom (:func:`holm`; :func:`holm_levels`
gives the level Holm's procedure tests each claim at: the interval at that level is the one a verdict
rests on, and it covers at that level, not jointly; :meth:`Difference.interval` at α / m is the
simultaneous, Bonferroni interval). The minimum detectable effect at power 1 − β (:meth:`Difference.mde`)
is (t_{1−a/2, df} + t_{1−β, df}) SE, the usual approximation to the non-central t; at three seeds the
SE it rests on is itself uncertain (from 0.36 to 1.6 times the true one), so the claims state it with
the seed variance at its upper 90 % bound beside it (:meth:`Difference.at_upper_seed_variance`), and
say "under 80 % power at this gap", never "cannot see it".

The coverage (3 vs 3, 3 vs 1 untouched, paired 3 vs 3, 5 vs 5; seed-, item- and interaction-dominated;
both estimands), the power at the true detectable effect and the family-wise error of families whose
claims share rows are simulated in ``tests/evaluation/test_significance.py``. (Tan et al. (2022) mark
single table cells "_" p < 0.1 and "*" p < 0.05 from 5 runs with an unnamed test and no correction;
the RCL chapter says why it tests the paper's orderings instead of recomputing those marks.)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

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
ESTIMANDS = ("test set", "population")
"""What a claim is about (module doc): the scored test set (the item term times 1 − n/N) or the population of
such items (the item term whole)."""
ESTIMAND = "test set"
"""The default: each paper claims its ordering on its benchmarks' test sets."""


def item_share(estimand: str, scored: int, population: int | None) -> float:
    """The factor on a task's item variance (module doc): 1 − n/N for ``"test set"`` (``scored`` n of
    ``population`` N items; N unknown, None: 1, the conservative population answer), 1 for ``"population"``."""
    if estimand not in ESTIMANDS:
        raise ConfigError(f"a claim's estimand is one of {ESTIMANDS}, got {estimand!r}")
    if estimand == "population" or population is None:
        return 1.0
    if not 0 < scored <= population:
        raise ConfigError(f"{scored} items scored of a test set of {population}")
    return 1.0 - scored / population


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
    test items, ``item_var`` with ``item_df`` (:func:`difference_interval`, module doc); ``interaction``:
    the seed x item interaction's share taken out of the items' resample variance (it is in ``seed_var``)."""

    delta: float
    seed_var: float
    seed_df: float
    item_var: float
    item_df: float
    paired_seeds: bool
    interaction: float = 0.0

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
    def upper_seed_var(self) -> float:
        """The seed variance at its upper :data:`SEED_VARIANCE_BOUND` confidence bound,
        seed_var x seed_df / χ²_{1 − bound, seed_df} (itself when it has no finite df)."""
        if self.seed_var > 0 and math.isfinite(self.seed_df):
            return self.seed_var * self.seed_df / float(stats.chi2.ppf(1 - SEED_VARIANCE_BOUND, self.seed_df))
        return self.seed_var

    @property
    def df(self) -> float:
        """The degrees of freedom of delta / se: Satterthwaite's, (u + i)² / (u² / seed_df + i² / item_df),
        with u = :attr:`upper_seed_var` and i = item_var (module doc)."""
        upper = self.upper_seed_var
        spread = sum(v * v / df for v, df in ((upper, self.seed_df), (self.item_var, self.item_df)) if v > 0)
        return (upper + self.item_var) ** 2 / spread if spread > 0 else math.inf

    def at_upper_seed_variance(self) -> Difference:
        """The same design with the seed variance at its upper bound (:attr:`upper_seed_var`): its
        :meth:`mde` is the detectable gap were the seeds' spread as large as the seeds allow (module doc)."""
        return replace(self, seed_var=self.upper_seed_var)

    def interval(self, alpha: float = ALPHA_CLAIMS) -> tuple[float, float]:
        """The two-sided ``1 − alpha`` interval, delta ∓ t_{1−alpha/2, df} se."""
        half = self.se * float(stats.t.isf(alpha / 2, self.df))
        return self.delta - half, self.delta + half

    @property
    def p(self) -> float:
        """The two-sided p-value of "no difference", 2 P(T_df > |delta| / se); 1 for a zero gap, 0 for a gap
        with no noise, NaN for an undefined one."""
        if not (math.isfinite(self.delta) and math.isfinite(self.se)):
            return math.nan
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
    defined = np.isfinite(left).all(axis=0) & np.isfinite(right).all(axis=0)
    if defined.sum() < max(2, replicates / 2):
        raise ConfigError(f"the metric is undefined on {replicates - int(defined.sum())} of {replicates} resamples")
    left, right = left[:, defined], right[:, defined]
    samples = left.mean(axis=0) - right.mean(axis=0)
    sides = [full_left - full_right] if paired_seeds else [full_left, full_right]
    terms = [(float(v.var(ddof=1)) / len(v), len(v) - 1) for v in sides if len(v) > 1]
    seed_var = sum(v for v, _ in terms)
    spread = sum(v * v / df for v, df in terms)
    shared = _interaction(left - right) if paired_seeds else _interaction(left) + _interaction(right)
    bootstrap = float(samples.var(ddof=1))
    shared = min(shared, bootstrap)
    return Difference(
        delta=float(full_left.mean() - full_right.mean()), seed_var=seed_var,
        seed_df=seed_var**2 / spread if spread > 0 else math.inf,
        item_var=bootstrap - shared, item_df=float(min(items or len(samples), len(samples)) - 1),
        paired_seeds=paired_seeds, interaction=shared,
    )


def _interaction(resampled: np.ndarray) -> float:
    """The seed x item interaction's share of the seed-averaged value's item variance, σc²/(Sn), from a
    ``(seeds, resamples)`` array: (mean of each seed's resample variance − the seed mean's) / (S − 1)
    (module doc); 0 for one seed, and never below 0."""
    seeds = len(resampled)
    if seeds < 2:
        return 0.0
    own = float(resampled.var(axis=1, ddof=1).mean())
    return max(own - float(resampled.mean(axis=0).var(ddof=1)), 0.0) / (seeds - 1)


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
    "ESTIMAND",
    "ESTIMANDS",
    "POWER",
    "Difference",
    "difference_interval",
    "holm",
    "holm_levels",
    "item_resamples",
    "item_share",
    "seed_mean_std",
    "seed_noise_measured",
]
