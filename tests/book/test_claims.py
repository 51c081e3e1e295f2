"""Claims as data (sentcl.book.output.claims, sentcl.book.output.evidence): the paper's orderings oriented as the paper,
verdicts from intervals over seeds and test items (never from signs), Holm within each family over the claims the plan
tests (a failed model's claim at p = 1, never out of the count), "not tested" for rows that did not run, models that
did not train and different test items, and each degenerate case (one seed, identical seeds, NaN, unequal paired
seeds, "trained" unsaid) caught."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.book.notebook.chapter_run import ChapterRun
from sentcl.book.output.claims import (
    CLAIM_COLUMNS,
    NOT_TESTED,
    REPRODUCED,
    REVERSED,
    UNDETERMINED,
    Central,
    Claim,
    paper_orderings,
    read_claims,
    verdict_counts,
)
from sentcl.book.output.evidence import load_evidence
from sentcl.errors import ConfigError
from sentcl.evaluation.per_item import ItemTerms


@pytest.fixture
def run(tmp_path):
    return ChapterRun("mnrl_sbert", profile="demo", data_dir=tmp_path, out_dir=tmp_path / "out")


@pytest.fixture
def record(run, fake):
    def record(row, noises, *, active=True, n=fake.n, trained=True, tables=("Table 1",)):
        per_seed = {seed: fake.scored(noise, seed, n=n) for seed, noise in enumerate(noises)}
        runs = {seed: fake.done(active, f"{row} seed {seed}") for seed in per_seed} if trained else False
        run.record_scores(row, per_seed, columns={"STSb": ("STSb", "Spearman")}, trained=runs, tables=list(tables))

    return record


def test_paper_orderings_are_oriented_as_the_paper(run, record):
    for row, noise in (("MNRLSBERT", 0.1), ("SBERT", 0.3), ("SBERT-whitening", 0.2)):
        record(row, [noise], tables=("Table 2",))
    found = {(c.left, c.right): c for c in paper_orderings(run.compare(), [("Table 2", r) for r in ("MNRLSBERT", "SBERT", "SBERT-whitening")])}
    # paper, Table 2 Average: MNRLSBERT 78.60, SBERT-whitening 77.00, SBERT 74.89; cited rows left out
    assert set(found) == {("MNRLSBERT", "SBERT"), ("MNRLSBERT", "SBERT-whitening"), ("SBERT-whitening", "SBERT")}
    assert (found[("MNRLSBERT", "SBERT")].paper_left, found[("MNRLSBERT", "SBERT")].paper_right) == (78.60, 74.89)
    assert all(c.source == "paper" and c.column == "Average" for c in found.values())


@pytest.mark.slow
def test_verdicts_come_from_intervals_over_seeds_and_items_never_from_signs(run, record):
    """A clear gap reproduces its direction (and, stated reversed, reverses it); a tiny one is undetermined
    whatever its sign; a model that did not move is not tested; one seed of a trained row is undetermined,
    with no interval; a row that did not run is not tested; rows scored on other items are not tested. The
    family counts every claim the plan tests: 7 of the 8 (the row not run is outside it), the two that a
    failed model or a single seed leaves undecided at p = 1."""
    record("good", [0.05, 0.06, 0.055])
    record("bad", [0.6, 0.62, 0.58])
    record("good twin", [0.0501, 0.0601, 0.0551])  # within a hair of "good": a sign, not a finding
    record("still", [0.05, 0.06, 0.055], active=False)
    record("one seed", [0.05])
    record("fewer items", [0.05, 0.06, 0.055], n=200)
    record("untouched", [0.4], trained=False)  # no training: its one "seed" is all there is
    run.not_run("absent", "its training data are not in this data root", tables=["Table 1"])
    claims = [Claim("Table 1", "STSb", *pair, source="ours") for pair in (
        ("good", "bad"), ("bad", "good"), ("good twin", "good"), ("still", "bad"), ("one seed", "bad"),
        ("absent", "bad"), ("fewer items", "bad"), ("good", "untouched"))]
    frame = run.write_claims(own=claims)
    written = read_claims(run.out_dir, "mnrl_sbert")
    assert list(frame.columns) == list(written.columns) == list(CLAIM_COLUMNS)
    assert list(written["verdict"]) == list(frame["verdict"]) and np.allclose(written["delta"], frame["delta"], equal_nan=True)
    got = {(r["left"], r["right"]): r for r in frame.to_dict("records")}
    assert got[("good", "bad")]["verdict"] == REPRODUCED and got[("bad", "good")]["verdict"] == REVERSED
    twin = got[("good twin", "good")]
    assert twin["verdict"] == "undetermined" and twin["delta"] != 0  # it has a sign; a sign-only count would call it
    assert got[("still", "bad")]["verdict"] == "not tested" and "did not train" in got[("still", "bad")]["reason"]
    assert got[("one seed", "bad")]["verdict"] == "undetermined" and "one training seed" in got[("one seed", "bad")]["reason"]
    assert np.isnan(got[("one seed", "bad")]["ci_low"]) and np.isnan(got[("one seed", "bad")]["p"])  # no "95 %" without seeds
    assert got[("absent", "bad")]["verdict"] == "not tested" and "not in this data root" in got[("absent", "bad")]["reason"]
    assert got[("fewer items", "bad")]["verdict"] == "not tested" and "same STSb test items" in got[("fewer items", "bad")]["reason"]
    assert got[("good", "untouched")]["verdict"] == REPRODUCED  # an untrained row needs no seeds
    # the invariant the book relies on: no finding whose interval contains 0
    found = frame[frame["verdict"].isin([REPRODUCED, REVERSED])]
    assert ((found["ci_low"] > 0) | (found["ci_high"] < 0)).all() and (found["p_holm"] < 0.05).all()
    assert verdict_counts(frame) == {REPRODUCED: 2, REVERSED: 1, UNDETERMINED: 2, NOT_TESTED: 3}
    assert set(frame["family"]) == {"secondary"} and set(frame["family_m"]) == {7}
    assert [k for k, r in got.items() if not r["counted"]] == [("absent", "bad")]


@pytest.mark.slow
def test_holm_is_over_the_chapters_tested_claims(run, record):
    """With many claims, one whose own p is below 0.05 but above 0.05 / m is undetermined."""
    record("a", [0.30, 0.31, 0.29])
    record("b", [0.33, 0.34, 0.32])
    one = run.write_claims(own=[Claim("Table 1", "STSb", "a", "b", source="ours")])
    p = float(one.iloc[0]["p"])
    family = run.write_claims(own=[Claim("Table 1", "STSb", "a", "b", source="ours")] * 40)
    assert (family["p_holm"] >= np.minimum(1.0, family["p"] * 1)).all()
    assert family["p_holm"].max() == pytest.approx(min(1.0, p * 40), rel=1e-9)


def test_evidence_round_trips_and_the_average_column_is_the_mean_of_the_sts_columns(run, fake):
    per_seed = {0: fake.scored(0.1, 0, keys=("STSb", "SICK-R"))}
    run.record_scores("MNRLSBERT", per_seed, trained={0: fake.done()})
    ev = load_evidence(run.out_dir, "mnrl_sbert").find("Table 1", "MNRLSBERT")
    assert set(ev.columns) == {"STSb", "SICK-R", "Average"} and ev.seeds("Average") == [0] and ev.trained("STSb")
    full, resampled = ev.column_values("Average", {k: np.arange(fake.n)[None] for k in ("STSb", "SICK-R")})
    cells = run.results().set_index(["table", "column"])["value"]
    assert full[0] == pytest.approx(cells[("Table 1", "Average")]) == pytest.approx(resampled[0, 0])
    assert cells[("Table 1", "Average")] == pytest.approx(np.mean([per_seed[0][k].values["Spearman"] for k in ("STSb", "SICK-R")]))


def test_a_table_row_gathers_the_columns_of_several_tasks_each_with_its_own_runs(run, fake):
    """BSC's Table 2 row "BSC" has CQA-A's columns and CQA-B's, each scored by its own models: a model that
    did not train for one task leaves the other task's claims testable."""
    for key, active in (("STSb", True), ("SICK-R", False)):
        run.record_scores("BSC", {s: fake.scored(0.1, s, keys=(key,)) for s in range(2)}, columns={key: (key, "Spearman")},
                          tables=["Table 1"], trained={s: fake.done(active, f"BSC {key} seed {s}") for s in range(2)})
        run.record_scores("MSE", {s: fake.scored(0.6, s, keys=(key,)) for s in range(2)}, columns={key: (key, "Spearman")},
                          tables=["Table 1"], trained={s: fake.done(True, f"MSE {key} seed {s}") for s in range(2)})
    ev = load_evidence(run.out_dir, "mnrl_sbert").find("Table 1", "BSC")
    assert set(ev.columns) == {"STSb", "SICK-R"} and ev.seeds("STSb") == [0, 1]
    frame = run.write_claims(own=[Claim("Table 1", k, "BSC", "MSE", source="ours") for k in ("STSb", "SICK-R")])
    assert frame["verdict"].iloc[0] != NOT_TESTED and np.isfinite(frame["p"].iloc[0])
    assert frame["verdict"].iloc[1] == NOT_TESTED and "BSC SICK-R seed 0" in frame["reason"].iloc[1]
    assert list(frame["family_m"]) == [2, 2]  # the failed model's claim stays in the count, at p = 1
    assert frame["p_holm"].iloc[0] == pytest.approx(min(1.0, 2 * frame["p"].iloc[0]))


def test_a_paper_claim_rests_on_its_own_tables_row_never_on_a_namesake_elsewhere(run, record):
    """IFCL's "IFCL-BERT" is a row of the Chinese table (not run in the demo) and of Table 4 (computed, without
    per-item scores): a Table 4 claim must not borrow the Chinese row's evidence or its reason; a claim of ours
    may rest on the one row of that name wherever it was recorded."""
    record("MNRLSBERT", [0.05, 0.06, 0.055], tables=("Table 1",))
    record("SBERT", [0.6, 0.62, 0.58], tables=("Table 2",))
    paper = Claim("Table 2", "STSb", "MNRLSBERT", "SBERT", source="paper")
    ours = Claim("our claims", "STSb", "MNRLSBERT", "SBERT", source="ours")
    frame = run.write_claims(own=[paper, ours]).set_index("source")
    assert frame.loc["paper", "verdict"] == "not tested"
    assert frame.loc["paper", "reason"] == "MNRLSBERT has no per-item scores in this run"
    assert frame.loc["ours", "verdict"] == REPRODUCED


def test_the_verdict_rests_on_the_holm_level_interval_and_states_the_detectable_effect(run, record):
    """Every tested claim has its Holm-level interval (the verdict's) and its minimum detectable effect: the
    verdict holds or is contradicted exactly when that interval excludes 0 (and p_holm < 0.05), and it is never
    narrower than the marginal 95 % one; the paper's
    gap is paper_left - paper_right; an undetermined claim whose paper gap is below its detectable effect says
    this design cannot see it."""
    from sentcl.book.output.claims import detectable, sentence

    record("good", [0.05, 0.06, 0.055])
    record("bad", [0.6, 0.62, 0.58])
    record("good twin", [0.0501, 0.0601, 0.0551])
    claims = [Claim("Table 1", "STSb", "good", "bad", source="ours"), Claim("Table 1", "STSb", "bad", "good", source="ours"),
              Claim("Table 1", "STSb", "good twin", "good", source="paper", paper_left=80.0, paper_right=79.9)]
    frame = run.write_claims(own=claims)
    assert list(frame.columns[-17:]) == ["paper_gap", "adj_low", "adj_high", "mde", "headline", "headline_row", "seed_se",
                                         "item_se", "family", "central", "family_m", "counted", "estimand", "sim_low", "sim_high",
                                         "mde_high", "df"]
    assert (frame["mde"] / frame["seed_se"].combine(frame["item_se"], lambda a, b: (a * a + b * b) ** 0.5) > 2).all()
    decided = frame["verdict"].isin([REPRODUCED, REVERSED])
    excludes = (frame["adj_low"] > 0) | (frame["adj_high"] < 0)
    assert list(decided) == list(excludes) == list(frame["p_holm"] < 0.05) == [True, True, False]
    assert ((frame["adj_low"] <= frame["ci_low"]) & (frame["adj_high"] >= frame["ci_high"])).all()
    # the simultaneous (Bonferroni, 0.05 / 3) interval is at least as wide as Holm's step interval
    assert ((frame["sim_low"] <= frame["adj_low"] + 1e-12) & (frame["sim_high"] >= frame["adj_high"] - 1e-12)).all()
    assert (frame["mde_high"] >= frame["mde"]).all()
    assert (frame["mde"] > 0).all() and frame["paper_gap"].iloc[2] == pytest.approx(0.1) and frame["paper_gap"].iloc[:2].isna().all()
    twin = frame.iloc[2].to_dict()
    assert twin["verdict"] == "undetermined" and detectable(twin) is (0.1 >= twin["mde"])
    assert detectable(frame.iloc[0].to_dict()) is None  # a claim of ours: no paper gap
    text = sentence(twin)
    assert "95% interval [" in text and "at Holm's step (the verdict's interval) [" in text
    assert "simultaneous over the family [" in text and "detectable gap (80% power)" in text
    assert ("under 80 % power at the paper's gap" in text) == (detectable(twin) is False)
    assert "cannot see" not in text and "no difference" not in text
    hand = twin | {"paper_gap": 3.0, "mde": 2.0}
    assert detectable(hand) is True and "under 80 %" not in sentence(hand)
    assert detectable(twin | {"paper_gap": -0.5, "mde": 2.0}) is False
    assert detectable(twin | {"mde": float("nan")}) is None


def test_a_model_that_moved_but_did_not_learn_is_not_tested(run, fake):
    """MNRL on a stand-in that had already solved its objective: it moved (active) but its loss rose."""
    for row, noise, learned in (("MNRLSBERT", 0.05, False), ("SBERT", 0.6, True)):
        run.record_scores(row, {s: fake.scored(noise, s) for s in range(3)}, columns={"STSb": ("STSb", "Spearman")},
                          trained={s: fake.done(True, f"{row} seed {s}", learned=learned) for s in range(3)}, tables=["Table 1"])
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "MNRLSBERT", "SBERT", source="ours")])
    reason = frame["reason"].iloc[0]
    assert frame["verdict"].iloc[0] == "not tested" and "MNRLSBERT seed 0 moved but did not learn: its loss rose" in reason
    assert np.isnan(frame["mde"].iloc[0]) and np.isnan(frame["adj_low"].iloc[0])


def test_a_health_record_that_does_not_judge_learning_is_not_evidence(run, fake):
    """A cached run whose health predates the learned fields, and a run with too few logged windows to judge
    (the smoke profile's): not tested, and each says why without calling it a failure to learn."""
    old = fake.done(True, "old seed 0")
    del old.health["learned"]
    short = fake.done(True, "short seed 1", learned=False)
    short.health |= {"fell": {"loss": None}, "at_chance": None,
                     "learned_reason": "only 1 logged loss window: too few to judge whether its loss fell (at least 4)"}
    run.record_scores("MNRLSBERT", {0: fake.scored(0.05, 0), 1: fake.scored(0.06, 1)}, columns={"STSb": ("STSb", "Spearman")},
                      trained={0: old, 1: short}, tables=["Table 1"])
    run.record_scores("SBERT", {0: fake.scored(0.6, 0)}, columns={"STSb": ("STSb", "Spearman")}, tables=["Table 1"], trained=False)
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "MNRLSBERT", "SBERT", source="ours")])
    reason = frame["reason"].iloc[0]
    assert frame["verdict"].iloc[0] == "not tested" and "old seed 0: its health record does not say whether its loss fell" in reason
    assert "short seed 1 moved, but only 1 logged loss window: too few to judge" in reason and "moved but did not learn" not in reason


def test_each_task_of_a_row_keeps_its_own_not_run_reason(run, fake):
    """BSC's Table 2 row "BSC" gathers CQA-A and CQA-B: a reason given for one task's columns names that task
    in its claims only; a task declared not run after the other was scored leaves the scored one's evidence."""
    from sentcl.book.output.evidence import record_not_run

    for row in ("BSC", "MSE"):
        for task in ("CQA-A", "CQA-B"):
            record_not_run(run.out_dir, run.chapter, row, f"{task}: data absent", tables=["Table 2"], run_id=run.run_id,
                           columns=[f"{task} MAP"])
    claims = [Claim("Table 2", f"{t} MAP", "BSC", "MSE", source="ours") for t in ("CQA-A", "CQA-B")]
    frame = run.write_claims(own=claims).set_index("column")
    assert "CQA-A: data absent" in frame.loc["CQA-A MAP", "reason"] and "CQA-B" not in frame.loc["CQA-A MAP", "reason"]
    assert "CQA-B: data absent" in frame.loc["CQA-B MAP", "reason"] and "CQA-A" not in frame.loc["CQA-B MAP", "reason"]
    # STSb scored, then SICK-R declared not run for the whole row (no columns): the STSb evidence stays
    for row, noise in (("good", 0.05), ("bad", 0.6)):
        run.record_scores(row, {s: fake.scored(noise, s) for s in range(2)}, columns={"STSb": ("STSb", "Spearman")},
                          trained={s: fake.done(True, f"{row} seed {s}") for s in range(2)}, tables=["Table 1"])
        run.not_run(row, "SICK-R: data absent", tables=["Table 1"])
    frame = run.write_claims(own=[Claim("Table 1", c, "good", "bad", source="ours") for c in ("STSb", "SICK-R")])
    assert list(frame["verdict"]) == [REPRODUCED, NOT_TESTED] and "SICK-R: data absent" in frame["reason"].iloc[1]
    assert list(frame["family_m"]) == [1, 1]  # a row the plan does not run is outside the count


def test_a_model_every_seed_shares_is_named_in_the_reason(run, fake):
    """RCL's entropy models are trained once and every seed's final model rests on them: their training
    variability is not in the seeds' spread, and the claim says so."""
    for row, noise in (("RCL", 0.05), ("Eq. 1", 0.6)):
        shared = [fake.done(True, "entropy model phi = 0.01")] if row == "RCL" else []
        run.record_scores(row, {s: fake.scored(noise, s) for s in range(3)}, columns={"STSb": ("STSb", "Spearman")},
                          trained={s: [fake.done(True, f"{row} seed {s}"), *shared] for s in range(3)}, tables=["Table 1"])
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "RCL", "Eq. 1", source="ours")])
    assert "every seed shares entropy model phi = 0.01 (trained once)" in frame["reason"].iloc[0]
    assert "RCL seed 0" not in frame["reason"].iloc[0]


def test_a_column_over_several_tasks_shares_no_model_that_one_seed_trained():
    """``Average`` rests on every STS task, each listing seed k's own model: seen once per task, it is still one
    seed's model (a bug named every fine-tuned model "shared by every seed" on the MNRL-SBERT demo's Average)."""
    from sentcl.book.output.evidence import RowEvidence

    health = {str(s): [{"name": f"SBERT seed {s}"}, {"name": "entropy model"}] for s in range(3)}
    tasks = {key: {"n": 10, "fingerprint": "x", "seeds": [0, 1, 2], "health": health} for key in ("STS12", "STSb", "SICK-R")}
    row = RowEvidence("x", "SBERT", "run", ["Table 1"], {"Average": ["Average", ""], "STSb": ["STSb", "Spearman"]}, tasks)
    assert row.shared("Average") == row.shared("STSb") == ["entropy model"]


# ------------------------------------------------------------------ families fixed by the plan, degenerate cases

def test_a_model_gated_out_leaves_the_other_verdicts_and_the_family_unchanged(run, record, fake):
    """The health gate is post-treatment: gating one model out turns its claims to "not tested" at p = 1, the
    family's m stays the plan's (3, not what health left: 1), and the other claim keeps its verdict; its Holm step
    can only get stricter (at m = 1 it would have been tested at 0.05, not 0.05 / 3)."""
    def claims_with(active):
        for row, noises in (("good", [0.05, 0.06, 0.055]), ("mid", [0.3, 0.31, 0.29]), ("bad", [0.6, 0.62, 0.58])):
            run.record_scores(row, {s: fake.scored(n, s) for s, n in enumerate(noises)}, columns={"STSb": ("STSb", "Spearman")},
                              trained={s: fake.done(active or row != "mid", f"{row} seed {s}") for s in range(3)},
                              tables=["Table 1"])
        return run.write_claims(own=[Claim("Table 1", "STSb", *pair, source="ours")
                                     for pair in (("good", "bad"), ("mid", "bad"), ("good", "mid"))])
    learned, gated = claims_with(True), claims_with(False)
    assert list(gated["verdict"].iloc[1:]) == [NOT_TESTED, NOT_TESTED] and set(gated["family_m"]) == set(learned["family_m"]) == {3}
    assert gated["verdict"].iloc[0] == learned["verdict"].iloc[0] == REPRODUCED and gated["p"].iloc[0] == learned["p"].iloc[0]
    # a failure never buys power: with two claims at p = 1, good-bad is tested at Holm's strictest step, 0.05 / 3
    assert gated["p_holm"].iloc[0] == pytest.approx(min(1.0, 3 * gated["p"].iloc[0]))
    assert gated["p_holm"].iloc[0] >= learned["p_holm"].iloc[0]


def test_the_primary_family_has_its_own_holm_and_a_central_pair_never_recorded_stays_in_view(run, record):
    """Central claims are the primary family, Holm-corrected on their own; a central pair no claim compares is
    listed, not tested, outside the count; the rest are the secondary family."""
    from sentcl.book.output.claims import evaluate_claims

    for row, noises in (("good", [0.05, 0.06, 0.055]), ("bad", [0.6, 0.62, 0.58]), ("mid", [0.3, 0.31, 0.29])):
        record(row, noises)
    evidence = load_evidence(run.out_dir, "mnrl_sbert")
    own = [Claim("Table 1", "STSb", *pair, source="ours") for pair in (("good", "bad"), ("mid", "bad"), ("good", "mid"))]
    central = [Central("M1", "good above bad", (("bad", "good"),)), Central("M2", "a row never recorded", (("x", "y"),))]
    frame = evaluate_claims("mnrl_sbert", own, evidence, central=central)
    assert list(frame["family"]) == ["primary", "secondary", "secondary", "primary"]
    assert list(frame["central"].fillna("")) == ["M1", "", "", "M2"]
    assert list(frame["family_m"]) == [1, 2, 2, 1]
    assert frame["p_holm"].iloc[0] == pytest.approx(frame["p"].iloc[0])  # a family of one: no correction
    assert frame["verdict"].iloc[3] == NOT_TESTED and not frame["counted"].iloc[3]
    assert frame["reason"].iloc[3] == "neither ordering is a claim of this build: a row this profile does not record"
    assert "(primary family of 1)" in frame["reason"].iloc[0] and "(secondary family of 2)" in frame["reason"].iloc[1]


def test_identical_seed_values_are_flagged_not_taken_as_exact(run, fake):
    """A trained row whose seeds gave the same scores (the seed never reached the model): its spread is not
    measured, so the claim is undetermined with no interval, and counts at p = 1."""
    same = fake.scored(0.05, 0)
    run.record_scores("stuck", {s: same for s in range(3)}, columns={"STSb": ("STSb", "Spearman")},
                      trained={s: fake.done(True, f"stuck seed {s}") for s in range(3)}, tables=["Table 1"])
    run.record_scores("bad", {s: fake.scored(0.6, s) for s in range(3)}, columns={"STSb": ("STSb", "Spearman")},
                      trained={s: fake.done(True, f"bad seed {s}") for s in range(3)}, tables=["Table 1"])
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "stuck", "bad", source="ours")])
    row = frame.iloc[0]
    assert row["verdict"] == UNDETERMINED and "gave identical values" in row["reason"] and np.isnan(row["ci_low"])
    assert row["family_m"] == 1


def test_an_undefined_metric_is_nan_never_p_one(run, record, monkeypatch):
    """A seed whose full-set value is NaN: the claim is not tested, its p NaN (it was 1.0: NaN read as "no
    difference"), and it still counts in its family."""
    from sentcl.book.output import evidence as ev

    record("good", [0.05, 0.06, 0.055])
    record("bad", [0.6, 0.62, 0.58])
    real = ev.RowEvidence.column_values

    def broken(self, column, resamples, shares=None):
        full, resampled = real(self, column, resamples, shares)
        if self.row == "good":
            full = full.copy()
            full[1] = np.nan
        return full, resampled

    monkeypatch.setattr(ev.RowEvidence, "column_values", broken)
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "good", "bad", source="ours")])
    assert frame["verdict"].iloc[0] == NOT_TESTED and "undefined (NaN) for good seed 1" in frame["reason"].iloc[0]
    assert np.isnan(frame["p"].iloc[0]) and frame["family_m"].iloc[0] == 1


def test_paired_rows_with_different_seeds_fall_back_to_welch_with_a_note(run, record):
    record("good", [0.05, 0.06, 0.055])
    record("bad", [0.6, 0.62])
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "good", "bad", source="ours", paired_seeds=True)])
    row = frame.iloc[0]
    assert row["verdict"] != NOT_TESTED and np.isfinite(row["p"]) and "unpaired over seeds (Welch)" in row["reason"]
    assert row["design"] == "paired over items, unpaired over seeds (the seed lists differ)"


def test_trained_is_said_never_inferred(run, fake):
    """record_scores has no default for ``trained``: a row of seeds is trained (every scored seed's runs) or
    explicitly not (False); None, a missing seed, or health on an untrained row are errors."""
    from sentcl.errors import ConfigError

    per_seed = {s: fake.scored(0.1, s) for s in range(2)}
    with pytest.raises(TypeError, match="trained"):
        run.record_scores("x", per_seed, tables=["Table 1"])  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match="or False for a row that trains nothing"):
        run.record_scores("x", per_seed, tables=["Table 1"], trained=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"seeds \[1\] have none"):
        run.record_scores("x", per_seed, tables=["Table 1"], trained={0: fake.done()})
    run.record_scores("x", {0: per_seed[0]}, tables=["Table 1"], trained=False)
    assert not load_evidence(run.out_dir, "mnrl_sbert").find("Table 1", "x").trained("STSb")


def test_the_estimand_sets_the_item_term(tmp_path, fake):
    """About the test set: every item scored leaves no item term (the seeds' variance alone), 120 of 300 scored
    keeps 1 − 120/300 = 0.6 of it; about the population of items, the item term is whole."""
    from sentcl.book.output.claims import evaluate_claims
    from sentcl.data.records import subset

    item_se = {}
    for label, n in (("whole", 300), ("part", 120)):
        run = ChapterRun("mnrl_sbert", profile="demo", data_dir=tmp_path, out_dir=tmp_path / label)
        record = subset(fake.record(), n, seed=0, what="pairs")
        assert record.population == (300 if n < 300 else None)
        run._populations["STSb"] = record.population or len(record)
        for row, noise in (("good", 0.05), ("bad", 0.6)):
            run.record_scores(row, {s: fake.scored(noise + 0.01 * s, s, n=n) for s in range(3)},
                              columns={"STSb": ("STSb", "Spearman")}, trained={s: fake.done(True, f"{row} {s}") for s in range(3)},
                              tables=["Table 1"])
        evidence = load_evidence(run.out_dir, "mnrl_sbert")
        for estimand in ("test set", "population"):
            frame = evaluate_claims("mnrl_sbert", [Claim("Table 1", "STSb", "good", "bad", source="ours")], evidence, estimand=estimand)
            item_se[label, estimand] = frame["item_se"].iloc[0]
            assert frame["estimand"].iloc[0] == estimand
    assert item_se["whole", "test set"] == 0 and item_se["whole", "population"] > 0
    assert item_se["part", "test set"] ** 2 == pytest.approx(0.6 * item_se["part", "population"] ** 2, rel=1e-9)


def test_a_measure_of_the_embeddings_is_tested_on_its_resampled_terms(run, fake):
    """Rows recorded by record_measures (RCL's anisotropy, IFCL's mutual information): the cell is the mean over
    seeds of each seed's terms, a claim's interval resamples the terms (paired items) with the seeds; a gap inside
    the items' noise is undetermined; a model that did not learn leaves its claims not tested; rows measured on
    other items are not compared."""
    rng = np.random.default_rng(0)
    base = rng.normal(0.3, 0.1, 400)

    def measure(row, shift, *, learned=True, fingerprint="the same 400 sentences"):
        per_seed = {s: {"mean cosine": ItemTerms({"mean cosine": base + shift + rng.normal(0, 0.1, 400)})} for s in range(3)}
        run.record_measures(row, per_seed, trained={s: fake.done(True, f"{row} seed {s}", learned=learned) for s in range(3)},
                            tables=["Anisotropy (ours)"], fingerprints={"mean cosine": fingerprint}, populations={"mean cosine": 4000})
        return per_seed

    measured = {row: measure(row, shift) for row, shift in (("Eq. 1", 0.05), ("RCL", 0.0), ("close", 0.002))}
    for row, noise in (("Eq. 1", 0.3), ("RCL", 0.05)):  # the same rows' STS scores, recorded apart
        run.record_scores(row, {s: fake.scored(noise, s) for s in range(3)}, columns={"STSb": ("STSb", "Spearman")},
                          trained={s: fake.done(True, f"{row} seed {s}") for s in range(3)}, tables=["Table 1"])
    measure("failed", 0.0, learned=False)
    measure("elsewhere", 0.0, fingerprint="other sentences")
    cells = run.results().set_index(["table", "row", "column"])["value"]
    assert cells[("Anisotropy (ours)", "Eq. 1", "mean cosine")] == pytest.approx(
        np.mean([m["mean cosine"].values["mean cosine"].mean() for m in measured["Eq. 1"].values()]))
    own = [Claim("Anisotropy (ours)", "mean cosine", left, "RCL", source="ours", paired_seeds=True)
           for left in ("Eq. 1", "close", "failed", "elsewhere")]
    sts = Claim("our claims", "STSb", "RCL", "Eq. 1", source="ours", paired_seeds=True)  # each side has two rows: the STSb one
    frame = run.write_claims(own=[*own, sts])
    assert frame.iloc[-1]["verdict"] == REPRODUCED
    frame = frame.iloc[:-1].set_index("left")
    assert frame.loc["Eq. 1", "verdict"] == REPRODUCED and frame.loc["Eq. 1", "delta"] == pytest.approx(0.05, abs=0.01)
    assert frame.loc["Eq. 1", "item_se"] > 0
    assert frame.loc["close", "verdict"] == UNDETERMINED
    assert frame.loc["failed", "verdict"] == NOT_TESTED and "did not learn" in frame.loc["failed", "reason"]
    assert frame.loc["elsewhere", "verdict"] == NOT_TESTED
    with pytest.raises(ConfigError, match="ItemTerms of that one measure"):
        run.record_measures("bad", {0: {"mean cosine": ItemTerms({"other": base})}}, trained=False,
                            tables=["Anisotropy (ours)"], fingerprints={})


def test_write_claims_shows_its_summary_when_asked_the_notebooks_one_call(run, record, monkeypatch):
    """``show=True`` displays :meth:`ChapterRun.claims_summary` of the claims it wrote, as Markdown; by default
    nothing is displayed."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    record("a", [0.30, 0.31, 0.29])
    record("b", [0.33, 0.34, 0.32])
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "a", "b", source="ours")])
    assert shown == []
    frame = run.write_claims(own=[Claim("Table 1", "STSb", "a", "b", source="ours")], show=True)
    assert len(shown) == 1 and isinstance(shown[0], IPython.display.Markdown)
    assert shown[0].data == "\n\n".join(run.claims_summary(frame))
