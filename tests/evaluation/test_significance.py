"""The statistics behind every chapter's verdicts: Holm's correction and the intervals of the claims over seeds and test items."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sentcl.errors import ConfigError


def test_holm_on_a_hand_worked_example():
    """p = .01, .04, .03, .005: sorted .005, .01, .03, .04 times 4, 3, 2, 1 = .02, .03, .06, .04, made
    non-decreasing: .02, .03, .06, .06. At 0.05 the first two (in sorted order) are findings; the .04,
    below 0.05 on its own, is not (Holm stops at .03 x 2)."""
    from sentcl.evaluation.significance import holm

    adjusted = holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert list(adjusted < 0.05) == [True, False, False, True]
    assert list(holm([0.5, math.nan, 0.01])[[0, 2]]) == pytest.approx([0.5, 0.02]) and math.isnan(holm([math.nan])[0])


def _mean_metric(per_item, resamples):
    """A metric that is a mean over items (MAP, MRR): its value on every resample."""
    return np.asarray(per_item)[resamples].mean(axis=1)


def test_one_seed_interval_is_the_percentile_bootstrap_of_the_item_differences():
    """One seed on each side: the interval is the plain paired bootstrap over items, which for a mean
    metric is about the normal interval mean(d) +- 1.96 sd(d)/sqrt(n); p tracks the t statistic."""
    from sentcl.evaluation.significance import difference_interval, item_resamples

    rng = np.random.default_rng(5)
    n = 400
    left, right = rng.normal(0.6, 1.0, n), rng.normal(0.45, 1.0, n)
    rs = item_resamples(n, 4000, seed=1)
    d = difference_interval(_mean_metric(left, rs)[None], _mean_metric(right, rs)[None], [left.mean()], [right.mean()],
                            paired_seeds=False)
    diff = left - right
    half = 1.96 * diff.std(ddof=1) / math.sqrt(n)
    assert d.delta == pytest.approx(diff.mean())
    assert d.low == pytest.approx(diff.mean() - half, abs=0.15 * half)
    assert d.high == pytest.approx(diff.mean() + half, abs=0.15 * half)
    z = diff.mean() / (diff.std(ddof=1) / math.sqrt(n))
    from scipy.stats import norm

    assert d.p == pytest.approx(2 * norm.sf(abs(z)), abs=0.02)


def test_the_interval_holds_the_item_noise_a_seeds_only_interval_would_miss():
    """Three seeds that agree to 0.001 but a test set of 40 items whose differences scatter widely: a
    seeds-only interval would exclude 0 (a "finding"); the combined one does not."""
    from sentcl.evaluation.significance import difference_interval, item_resamples

    rng = np.random.default_rng(0)
    n = 40
    base = rng.normal(0.0, 1.0, n)
    left = [base + 0.15 + 0.001 * s for s in range(3)]
    right = [base + rng.normal(0.0, 1.5, n) for _ in range(3)]
    rs = item_resamples(n, 2000, seed=2)
    d = difference_interval(np.stack([_mean_metric(x, rs) for x in left]), np.stack([_mean_metric(x, rs) for x in right]),
                            [x.mean() for x in left], [x.mean() for x in right], paired_seeds=True)
    assert d.low < 0 < d.high and d.p > 0.05
    # what a seeds-only interval sees: the left seeds agree to 0.001, so the seed spread alone is far
    # narrower than the gap; only the items' noise puts 0 inside
    assert np.ptp([x.mean() for x in left]) < 0.01 < (d.high - d.low) / 4


def test_the_interval_holds_the_seed_noise_an_items_only_interval_would_miss():
    """Items that agree closely but seeds that scatter: the seed spread widens the interval (scaled for
    few seeds), so a gap that one seed would show is undetermined over three."""
    from sentcl.evaluation.significance import difference_interval, item_resamples

    rng = np.random.default_rng(1)
    n = 2000
    base = rng.normal(0.0, 0.05, n)
    offsets = [0.6, -0.5, 0.2]  # seed-to-seed spread ~0.55 around a mean gap of 0.1
    left = [base + o for o in offsets]
    right = [base] * 3
    rs = item_resamples(n, 2000, seed=3)
    lr, rr = np.stack([_mean_metric(x, rs) for x in left]), np.stack([_mean_metric(x, rs) for x in right])
    full_l, full_r = [x.mean() for x in left], [x.mean() for x in right]
    combined = difference_interval(lr, rr, full_l, full_r, paired_seeds=True)
    one_seed = difference_interval(lr[:1], rr[:1], full_l[:1], full_r[:1], paired_seeds=True)
    assert one_seed.low > 0.5  # one seed: item noise only, the 0.6 offset looks like a finding
    assert combined.low < 0 < combined.high  # the seeds' spread puts 0 inside
    assert combined.delta == pytest.approx(np.mean(offsets))


def test_unpaired_seeds_draw_each_side_on_its_own():
    from sentcl.evaluation.significance import difference_interval

    left = np.array([[1.0, 1.0], [3.0, 3.0]])  # two seeds, two replicates, no item noise
    right = np.array([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    d = difference_interval(left, right, [1.0, 3.0], [0.0, 0.0, 0.0], paired_seeds=False)
    assert d.delta == 2.0 and not d.paired_seeds
    with pytest.raises(ConfigError, match="paired seeds need the same seeds"):
        difference_interval(left, right, [1.0, 3.0], [0.0, 0.0, 0.0], paired_seeds=True)


def test_seed_mean_std():
    from sentcl.evaluation.significance import seed_mean_std

    mean, std = seed_mean_std([{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 2.0}])
    assert mean == {"a": 2.0, "b": 2.0} and std == pytest.approx({"a": math.sqrt(2.0), "b": 0.0})
    assert seed_mean_std([{"a": 1.0}]) == ({"a": 1.0}, None)
    with pytest.raises(ConfigError, match="same columns"):
        seed_mean_std([{"a": 1.0}, {"b": 1.0}])
