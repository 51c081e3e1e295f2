"""Significance of an improvement across seeds: the marks of Tan et al. (2022)'s tables, recomputed.

The paper marks a cell "_" (p < 0.1) or "*" (p < 0.05) as a "statistically significant
improvement" over the base model (Tables 1–3, 5) or over the model with fewer regulators
(Table 4), from 5 random runs, without naming the test. We use the **one-sided paired t-test
across seeds** (:func:`scipy.stats.ttest_rel` with ``alternative="greater"``): run k of the
model and run k of the baseline share seed k (the same data order and initialisation of
anything random), so their difference is the effect of the method on that seed.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import ttest_rel

from ..errors import ConfigError

TEST_NAME = "one-sided paired t-test across seeds (scipy.stats.ttest_rel, alternative='greater')"
TWO_SIDED_TEST_NAME = "two-sided paired t-test across seeds (scipy.stats.ttest_rel)"
MARKS = ((0.05, "*"), (0.1, "_"))
"""(threshold, mark), strictest first: the paper's "*" (p < 0.05) and "_" (p < 0.1)."""


def paired_p_value(ours: ArrayLike, baseline: ArrayLike, alternative: str = "two-sided") -> float:
    """p of the paired t-test across seeds of ``ours`` against ``baseline`` (one value per seed, the
    same seeds in the same order; :func:`scipy.stats.ttest_rel` with ``alternative``: ``"two-sided"``
    for "do they differ", ``"greater"`` for "does ours improve"); NaN with fewer than 2 seeds or
    identical differences (no variance to test)."""
    ours, baseline = np.asarray(ours, dtype=float), np.asarray(baseline, dtype=float)
    if ours.shape != baseline.shape or ours.ndim != 1:
        raise ConfigError(f"one value per seed for both models, in the same order: got {ours.shape} and {baseline.shape}")
    if alternative not in ("two-sided", "greater", "less"):
        raise ConfigError(f"alternative must be 'two-sided', 'greater' or 'less', got {alternative!r}")
    differences = ours - baseline
    if len(differences) < 2 or np.allclose(differences, differences[0]):
        return math.nan
    return float(ttest_rel(ours, baseline, alternative=alternative).pvalue)


def improvement_p_value(ours: ArrayLike, baseline: ArrayLike) -> float:
    """p of the one-sided paired t-test that ``ours`` (one value per seed) beats ``baseline``
    (the same seeds, in the same order); NaN with fewer than 2 seeds or identical differences."""
    return paired_p_value(ours, baseline, alternative="greater")


def significance_mark(p: float) -> str:
    """The paper's mark for ``p``: "*" below 0.05, "_" below 0.1, "" otherwise (NaN: "")."""
    return next((mark for threshold, mark in MARKS if p < threshold), "")


__all__ = ["MARKS", "TEST_NAME", "TWO_SIDED_TEST_NAME", "improvement_p_value", "paired_p_value", "significance_mark"]
