"""The statistics behind every chapter's verdicts: Holm's correction, the intervals of the claims over seeds
and test items, their coverage at three seeds, and the power and detectable effect they state (simulated)."""

from __future__ import annotations

import math
import zlib
from itertools import combinations

import numpy as np
import pytest
from scipy import stats

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


def test_holm_levels_on_the_same_example():
    """The same p-values: .005 tested at .05/4 (rejected), .01 at .05/3 (rejected), .03 at .05/2 = .025
    (kept: Holm stops), and .04, after it, at that same .025. Each p is below its level exactly when its
    Holm-adjusted p is below .05."""
    from sentcl.evaluation.significance import holm, holm_levels

    p = [0.01, 0.04, 0.03, 0.005]
    levels = holm_levels(p)
    assert levels == pytest.approx([0.05 / 3, 0.025, 0.025, 0.05 / 4])
    assert list(np.asarray(p) < levels) == list(holm(p) < 0.05)
    rng = np.random.default_rng(0)
    for _ in range(200):  # the equivalence on random families, some with NaN
        q = rng.uniform(0, 0.03, 12) ** rng.uniform(0.5, 2)
        q[rng.random(12) < 0.1] = np.nan
        ok = ~np.isnan(q)
        assert list((q < holm_levels(q))[ok]) == list((holm(q) < 0.05)[ok])


def _mean_metric(per_item, resamples):
    """A metric that is a mean over items (MAP, MRR): its value on every resample."""
    return np.asarray(per_item)[..., resamples].mean(axis=-1)


def test_one_seed_on_each_side_is_the_paired_item_interval():
    """One seed on each side: the standard error is the item bootstrap's, which for a mean metric is about
    sd(d)/sqrt(n) of the paired per-item differences d; df is the items' (a t with n − 1 df)."""
    from sentcl.evaluation.significance import difference_interval, item_resamples

    rng = np.random.default_rng(5)
    n = 400
    left, right = rng.normal(0.6, 1.0, n), rng.normal(0.45, 1.0, n)
    rs = item_resamples(n, 4000, seed=1)
    d = difference_interval(_mean_metric(left, rs)[None], _mean_metric(right, rs)[None], [left.mean()], [right.mean()],
                            paired_seeds=False, items=n)
    diff = left - right
    se = diff.std(ddof=1) / math.sqrt(n)
    assert d.delta == pytest.approx(diff.mean())
    assert d.se == pytest.approx(se, rel=0.05) and d.seed_se == 0 and d.item_df == n - 1
    assert d.p == pytest.approx(2 * stats.t.sf(abs(diff.mean()) / se, n - 1), rel=0.1)


def test_a_hand_worked_welch_interval_without_item_noise():
    """No item noise: left seeds 1, 2, 3 (variance 1), right seeds 0, 0, 0 (untouched: one value, no
    spread). SE = sqrt(1/3), df = 2 (the left seeds' alone), the 95 % interval 2 -/+ 4.303 x 0.5774 =
    [-0.484, 4.484], p = 2 P(T_2 > 3.464) = 0.0742; the minimum detectable effect at 80 % power, level
    0.05: (4.303 + 1.061) x 0.5774 = 3.097. Paired with right seeds 0, 1, 5 instead: differences 1, 1,
    -2, variance 3, SE 1, df 2."""
    from sentcl.evaluation.significance import difference_interval

    flat = np.ones((3, 50))
    d = difference_interval(flat * [[1], [2], [3]], np.zeros((1, 50)), [1, 2, 3], [0], paired_seeds=False)
    assert (d.delta, d.seed_df) == (2.0, 2.0) and d.se == pytest.approx(math.sqrt(1 / 3)) and d.item_se == 0
    assert d.interval() == pytest.approx((-0.484, 4.484), abs=1e-3)
    assert d.p == pytest.approx(0.0742, abs=1e-4)
    assert d.mde() == pytest.approx(3.097, abs=1e-3)
    assert d.mde(alpha=0.05 / 10) > d.mde()  # a family of 10 at its first Holm step: a larger gap needed
    paired = difference_interval(flat * [[1], [2], [3]], flat * [[0], [1], [5]], [1, 2, 3], [0, 1, 5], paired_seeds=True)
    assert (paired.delta, paired.se, paired.seed_df) == pytest.approx((0.0, 1.0, 2.0))
    with pytest.raises(ConfigError, match="paired seeds need the same seeds"):
        difference_interval(flat, np.zeros((1, 50)), [1, 2, 3], [0], paired_seeds=True)


def test_the_interval_holds_the_item_noise_a_seeds_only_interval_would_miss():
    """Three seeds that agree to 0.001 but a test set of 40 items whose differences scatter widely: a
    seeds-only interval would exclude 0 (a "finding"); the combined one does not."""
    from sentcl.evaluation.significance import difference_interval, item_resamples

    rng = np.random.default_rng(0)
    n = 40
    base = rng.normal(0.0, 1.0, n)
    left = [base + 0.15 + 0.001 * s for s in range(3)]
    scatter = rng.normal(0.0, 1.5, n)
    right = [base + scatter - 0.001 * s for s in range(3)]
    rs = item_resamples(n, 2000, seed=2)
    d = difference_interval(np.stack([_mean_metric(x, rs) for x in left]), np.stack([_mean_metric(x, rs) for x in right]),
                            [x.mean() for x in left], [x.mean() for x in right], paired_seeds=True, items=n)
    low, high = d.interval()
    assert low < 0 < high and d.p > 0.05 and d.item_se > 10 * d.seed_se


# ------------------------------------------------------------------ simulation: coverage, power, family-wise error

def _scores(rng, means, seeds, trained, *, seed_sd, item_sd, inter_sd, items, rho=0.0, paired=False):
    """Per-item scores of several models on the same ``items`` test items (one array ``(seeds, items)`` each): the
    model's mean, a seed offset (sd ``seed_sd``; shared halves between models whose seed k is paired), the items'
    shared difficulty, the model's own item effect (sd ``item_sd`` x sqrt(items / 2): the mean difference of two
    models has item SE ``item_sd`` on ``items`` items; correlated ``rho`` between models), and a seed x item
    interaction (sd ``inter_sd`` x sqrt(items): a seed's mean carries interaction SE ``inter_sd``). An untrained
    model has one "seed", no offset and no interaction. Returns the arrays and each model's own item effects."""
    shared = rng.normal(0, 1, items)
    common_item = rng.normal(0, item_sd * math.sqrt(items / 2), items)
    common_seed = rng.normal(0, seed_sd / math.sqrt(2), max(seeds))
    out, effects = [], []
    for mean, n_seeds, is_trained in zip(means, seeds, trained, strict=True):
        own = math.sqrt(rho) * common_item + math.sqrt(1 - rho) * rng.normal(0, item_sd * math.sqrt(items / 2), items)
        if is_trained:
            offsets = rng.normal(0, seed_sd, n_seeds)
            if paired:
                offsets = common_seed[:n_seeds] + offsets / math.sqrt(2)
            inter = rng.normal(0, inter_sd * math.sqrt(items), (n_seeds, items))
        else:
            offsets, inter = np.zeros(n_seeds), np.zeros((n_seeds, items))
        out.append(mean + offsets[:, None] + shared + own + inter)
        effects.append(own)
    return out, effects


def _claim(rng, left, right, scored, population, estimand, paired, resamples=200):
    """The Difference of ``left`` − ``right`` (``(seeds, N)`` per-item scores) scored on a random ``scored`` of the
    ``population`` items, as the claims compute it: the item resamples drawn towards the full value by the
    estimand's item share (``RowEvidence.column_values``)."""
    from sentcl.evaluation.significance import difference_interval, item_share

    keep = rng.permutation(population)[:scored]
    rs = rng.integers(0, scored, (resamples, scored))
    share = math.sqrt(item_share(estimand, scored, population if scored < population else scored))
    sides = []
    for x in (left[:, keep], right[:, keep]):
        full = x.mean(axis=1)
        sides.append((full, full[:, None] + share * (_mean_metric(x, rs) - full[:, None])))
    (lf, lr), (rf, rr) = sides
    return difference_interval(lr, rr, lf, rf, paired_seeds=paired, items=scored)


DESIGNS = {  # (seeds left, seeds right, trained right, paired, seed sd, item sd, interaction sd)
    "3 vs 3, seed noise dominates": (3, 3, True, False, 1.0, 0.1, 0.05),
    "3 vs 1 untouched, seed noise dominates": (3, 1, False, False, 1.0, 0.1, 0.05),
    "3 vs 3 paired, seed noise dominates": (3, 3, True, True, 1.0, 0.1, 0.05),
    "5 vs 5, seed noise dominates": (5, 5, True, False, 1.0, 0.1, 0.05),
    "3 vs 3, item noise dominates (BSC's MSE vs BSC: seed SE 0.29, item SE 0.57)": (3, 3, True, False, 0.29 * math.sqrt(1.5), 0.57, 0.05),
    "3 vs 1 untouched, item noise dominates": (3, 1, False, False, 0.29 * math.sqrt(3), 0.57, 0.05),
    "5 vs 5, item noise dominates": (5, 5, True, False, 0.3, 0.57, 0.05),
    "3 vs 3, interaction dominates": (3, 3, True, False, 0.05, 0.1, 1.0),
    "3 vs 1 untouched, interaction dominates": (3, 1, False, False, 0.05, 0.1, 1.0),
    "3 vs 3 paired, interaction dominates": (3, 3, True, True, 0.05, 0.1, 1.0),
    "5 vs 5, interaction dominates": (5, 5, True, False, 0.05, 0.1, 1.0),
}
ESTIMAND_CASES = {  # (estimand, scored items, test-set size): the truth is the population's gap, or this test set's
    "population of items, 150 scored": ("population", 150, 150),
    "this test set, all 150 scored": ("test set", 150, 150),
    "this test set, 150 of 400 scored": ("test set", 150, 400),
}


def _coverage(design, case, claims=1500, gap=1.0):
    left_seeds, right_seeds, trained, paired, seed_sd, item_sd, inter_sd = DESIGNS[design]
    estimand, scored, population = ESTIMAND_CASES[case]
    rng = np.random.default_rng(zlib.crc32(f"{design} {case}".encode()))
    covered = []
    for _ in range(claims):
        # the item and interaction sds are stated at the scored count; the test set holds `population` items
        scale = math.sqrt(population / scored)
        (left, right), (own_left, own_right) = _scores(rng, (gap, 0.0), (left_seeds, right_seeds), (True, trained),
                                                       seed_sd=seed_sd, item_sd=item_sd / scale, inter_sd=inter_sd / scale,
                                                       items=population, paired=paired)
        truth = gap if estimand == "population" else gap + float(np.mean(own_left - own_right))
        low, high = _claim(rng, left, right, scored, population, estimand, paired).interval()
        covered.append(low <= truth <= high)
    return float(np.mean(covered))


@pytest.mark.slow
@pytest.mark.parametrize("design", list(DESIGNS))
def test_the_95_interval_covers_the_true_gap_about_the_population_of_items(design):
    """Coverage of the population's gap by the marginal 95 % interval over 1,500 simulated claims per design: 94-98 %
    (Monte-Carlo error of a 95 % rate over 1,500 draws: 0.6 point). A percentile bootstrap over three seeds covered
    87 % (3 vs 3) and 78 % (3 vs 1) where seed noise dominates; counting the seed x item interaction twice made the
    interaction-dominated intervals about 1.4 times too wide (measured: coverage 99.3-99.8 %)."""
    rate = _coverage(design, "population of items, 150 scored")
    assert 0.94 <= rate <= 0.98, f"{design}: coverage {rate:.3f}"


@pytest.mark.slow
@pytest.mark.parametrize("case", ["this test set, all 150 scored", "this test set, 150 of 400 scored"])
@pytest.mark.parametrize("design", ["3 vs 3, item noise dominates (BSC's MSE vs BSC: seed SE 0.29, item SE 0.57)",
                                    "3 vs 1 untouched, item noise dominates", "3 vs 3, interaction dominates",
                                    "3 vs 3, seed noise dominates"])
def test_the_95_interval_covers_the_true_gap_on_this_test_set(design, case):
    """A claim about this test set: the truth is the gap on all of its items (the items fixed, the seeds random).
    Scored whole, the item term is 0 and the seeds' spread alone carries the interval; scored 150 of 400, the
    item term is 1 − 150/400 of the population's. Both cover 94-98 % (issue 42's referee measured the population
    interval at 99.6-100 % on this truth where items dominate: far too wide)."""
    rate = _coverage(design, case)
    assert 0.94 <= rate <= 0.98, f"{design}, {case}: coverage {rate:.3f}"


@pytest.mark.slow
def test_two_rows_with_correlated_item_effects_are_covered():
    """Two methods that fail on the same items (their item effects correlated 0.8): paired over items, the
    difference's item variance is small, and the interval still covers 94-98 %."""
    rng = np.random.default_rng(3)
    covered = []
    for _ in range(1500):
        (left, right), _ = _scores(rng, (1.0, 0.0), (3, 3), (True, True), seed_sd=0.3, item_sd=0.57, inter_sd=0.05,
                                   items=150, rho=0.8)
        low, high = _claim(rng, left, right, 150, 150, "population", False).interval()
        covered.append(low <= 1.0 <= high)
    assert 0.94 <= np.mean(covered) <= 0.98, np.mean(covered)


@pytest.mark.slow
def test_the_interaction_is_counted_once():
    """Where the seed x item interaction dominates, the seeds' spread of full-set values already holds it: the
    item resamples' variance of the seed mean holds it again. The estimated SE² matches the variance of delta over
    simulated replications within 15 %, and the old double count (the interaction added back) overstates it
    about 1.9 times (issue 42's referee)."""
    rng = np.random.default_rng(17)
    deltas, se2, doubled = [], [], []
    for _ in range(1500):
        (left, right), _ = _scores(rng, (0.0, 0.0), (3, 3), (True, True), seed_sd=0.05, item_sd=0.1, inter_sd=1.0, items=150)
        d = _claim(rng, left, right, 150, 150, "population", False)
        deltas.append(d.delta)
        se2.append(d.se ** 2)
        doubled.append(d.se ** 2 + d.interaction)
    truth = np.var(deltas)
    assert np.mean(se2) == pytest.approx(truth, rel=0.15)
    assert 1.6 <= np.mean(doubled) / truth <= 2.2


@pytest.mark.slow
@pytest.mark.parametrize("design", ["3 vs 3, seed noise dominates", "5 vs 5, seed noise dominates",
                                    "3 vs 3, item noise dominates (BSC's MSE vs BSC: seed SE 0.29, item SE 0.57)"])
def test_a_true_gap_of_the_true_detectable_effect_is_found_at_least_70_percent_of_the_time(design):
    """Power: the design's minimum detectable effect from its true seed and item variances and the degrees of
    freedom its claims get (the seeds' Welch df: its mean over 300 null claims; the items' 149), set as the true
    gap: the test at 0.05 rejects at least 70 % of 1,000 simulated claims (80 % stated; measured 74-78 %: the seed
    variance's upper bound in the df makes the test a little conservative at three seeds). A claim states the same
    formula on its estimated variances, which at three seeds are themselves uncertain: hence its ``mde_high``."""
    from sentcl.evaluation.significance import Difference

    left_seeds, right_seeds, trained, paired, seed_sd, item_sd, inter_sd = DESIGNS[design]
    rng = np.random.default_rng(7)

    def one(gap):
        (left, right), _ = _scores(rng, (gap, 0.0), (left_seeds, right_seeds), (True, trained), seed_sd=seed_sd,
                                   item_sd=item_sd, inter_sd=inter_sd, items=150, paired=paired)
        return _claim(rng, left, right, 150, 150, "population", paired)

    seed_df = float(np.mean([one(0.0).seed_df for _ in range(300)]))
    seed_var = (seed_sd**2 + inter_sd**2) * (1 / left_seeds + 1 / right_seeds)
    gap = Difference(0.0, seed_var, seed_df, item_sd**2, 149.0, False).mde()
    found = np.mean([one(gap).p < 0.05 for _ in range(1000)])
    assert 0.70 <= found <= 0.90, f"{design}: power {found:.3f} at the true detectable gap {gap:.3f}"


@pytest.mark.slow
def test_holm_keeps_the_family_wise_error_when_claims_share_rows():
    """Four rows with no true difference and every pairwise claim (6, each row in three): the claims are
    correlated through the rows they share, and Holm at 0.05 decides any of them in at most 5 % of 1,000
    simulated families (Monte-Carlo error 0.7 point); the family's simultaneous (Bonferroni) intervals cover
    all six true gaps (0) together at least 95 % of the time."""
    from sentcl.evaluation.significance import difference_interval, holm

    rng = np.random.default_rng(23)
    any_decided, all_covered = [], []
    for _ in range(1000):
        rows, _ = _scores(rng, (0.0,) * 4, (3,) * 4, (True,) * 4, seed_sd=0.5, item_sd=0.3, inter_sd=0.1, items=150)
        rs = rng.integers(0, 150, (200, 150))
        family = []
        for i, j in combinations(range(4), 2):
            lf, rf = rows[i].mean(axis=1), rows[j].mean(axis=1)
            family.append(difference_interval(_mean_metric(rows[i], rs), _mean_metric(rows[j], rs), lf, rf,
                                              paired_seeds=False, items=150))
        any_decided.append(bool((holm([d.p for d in family]) < 0.05).any()))
        all_covered.append(all(lo <= 0 <= hi for lo, hi in (d.interval(0.05 / len(family)) for d in family)))
    assert np.mean(any_decided) <= 0.05 + 0.014 and np.mean(all_covered) >= 0.95 - 0.014, (np.mean(any_decided), np.mean(all_covered))


@pytest.mark.slow
def test_a_family_of_166_claims_decides_a_gap_of_several_standard_errors():
    """BSC's paper profile tests 166 claims. In the item-dominated design of BSC's MSE vs BSC (seed SE 0.29,
    item SE 0.57) with five seeds a side (the paper's five runs, every one scored) and one true gap of 7
    standard errors among 165 null claims, Holm at 0.05 finds the gap in at least 18 of 20 simulated
    families (Holm's first step, at 0.05 / 166, needs 3.9-4.6 SE at this design's df; its minimum
    detectable effect is 4.7-5.5 SE) and keeps the family-wise error (at most 2 families of 20 with a
    null claim decided). A resample-count floor of 1/2,001 would have kept every adjusted p above 0.08.
    With three seeds a side the seeds' df (2-4) make Holm's first step need 4.6-12 SE."""
    from sentcl.evaluation.significance import holm, holm_levels

    rng = np.random.default_rng(11)
    seed_sd, item_sd = 0.29 * math.sqrt(2.5), 0.57
    se = math.sqrt(0.29**2 + item_sd**2)
    found, false = 0, 0
    for _ in range(20):
        family = []
        for k in range(166):
            (left, right), _ = _scores(rng, (7 * se if k == 0 else 0.0, 0.0), (5, 5), (True, True), seed_sd=seed_sd,
                                       item_sd=item_sd, inter_sd=0.05, items=150)
            family.append(_claim(rng, left, right, 150, 150, "population", False, resamples=100))
        p = np.array([d.p for d in family])
        decided = holm(p) < 0.05
        found += bool(decided[0])
        false += bool(decided[1:].any())
        low = family[0].interval(holm_levels(p)[0])[0]
        assert (low > 0) == decided[0]  # the interval the verdict rests on excludes 0 exactly when it is decided
    assert found >= 18 and false <= 2, (found, false)
