"""The paired test behind the recomputed significance marks of the RCL chapter."""

from __future__ import annotations

import math

import pytest
from scipy.stats import ttest_rel

from sentcl.errors import ConfigError
from sentcl.evaluation.significance import improvement_p_value, significance_mark


def test_p_value_is_the_one_sided_paired_t_test():
    ours, base = [81.5, 82.0, 81.9, 82.3, 81.7], [81.2, 81.4, 81.8, 81.9, 81.0]
    p = improvement_p_value(ours, base)
    assert p == pytest.approx(ttest_rel(ours, base).pvalue / 2)  # one-sided: half the two-sided p, effect > 0
    assert improvement_p_value(base, ours) == pytest.approx(1 - p)  # a worse model is not "significant"
    # pairing matters: the same values unpaired in another order give another p
    assert improvement_p_value(ours, base[::-1]) != pytest.approx(p)


def test_marks_follow_the_papers_thresholds():
    assert [significance_mark(p) for p in (0.01, 0.049, 0.05, 0.08, 0.1, 0.5, math.nan)] == ["*", "*", "_", "_", "", "", ""]


def test_too_few_seeds_or_mismatched_runs():
    assert math.isnan(improvement_p_value([1.0], [0.5]))
    assert math.isnan(improvement_p_value([1.0, 2.0], [0.5, 1.5]))  # identical differences: no variance
    with pytest.raises(ConfigError, match="one value per seed"):
        improvement_p_value([1.0, 2.0], [1.0])


def test_two_sided_paired_p_value_against_an_independent_computation():
    from scipy.stats import t as student_t

    from sentcl.evaluation.significance import paired_p_value

    ours, base = [75.1, 75.9, 75.4], [75.0, 75.2, 75.3]
    d = [a - b for a, b in zip(ours, base, strict=True)]
    mean = sum(d) / len(d)
    sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))
    t = mean / (sd / math.sqrt(len(d)))
    expected = 2 * student_t.sf(abs(t), df=len(d) - 1)
    assert paired_p_value(ours, base) == pytest.approx(expected)
    assert paired_p_value(base, ours) == pytest.approx(expected)  # two-sided: symmetric
    assert paired_p_value(ours, base, "greater") == pytest.approx(expected / 2) == improvement_p_value(ours, base)
    with pytest.raises(ConfigError, match="alternative"):
        paired_p_value(ours, base, "bigger")
