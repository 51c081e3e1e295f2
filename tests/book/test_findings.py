"""Findings first (sentcl.book.pages.findings) and the introduction's answer table (sentcl.book.pages.answer): generated from
the claims files, every tested claim shown with its intervals, the untested folded per table and reason, the
build's state said when it is partial."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from sentcl.book.output.claims import CLAIM_COLUMNS, REPRODUCED, mark_headlines, seeds_for_gap
from sentcl.book.pages.answer import answer, cell
from sentcl.book.pages.findings import (
    build_banner,
    chapter_status,
    finding_cells,
    findings_section,
    not_tested_groups,
    power_note,
    reason_kind,
)
from sentcl.chapters import CHAPTERS


def claim(left, right, verdict, *, table="Table 1", column="Average", delta=math.nan, low=math.nan, high=math.nan,
          reason="", **extra):
    row = dict.fromkeys(CLAIM_COLUMNS) | {"chapter": "x", "table": table, "claim": f"{left} above {right}", "left": left,
                                          "right": right, "column": column, "delta": delta, "ci_low": low, "ci_high": high,
                                          "verdict": verdict, "reason": reason, "source": "paper",
                                          "family": "secondary", "family_m": 1, "estimand": "test set"}
    return row | extra


def state(frame, *, status="ok", error=None, chapter="bsc", title="BSC: batch-softmax", profiles=("demo",), executed=None):
    record = None if status is None else SimpleNamespace(status=status, error=error, profile=profiles[0], parameters={})
    return SimpleNamespace(chapter=chapter, spec=CHAPTERS[chapter], title=title, claims=frame, record=record, has_notebook=True,
                           executed=executed, ran=record is not None or executed is not None, profiles=list(profiles),
                           sample=False, evidence={}, compared=pd.DataFrame({"note": [], "column": [], "row": [], "value": []}))


def test_a_tested_claim_shows_the_papers_gap_ours_with_both_intervals_and_the_detectable_gap():
    row = claim("BSC", "MSE", "undetermined", delta=0.4, low=-0.2, high=1.0, paper_left=80.0, paper_right=79.5,
                paper_gap=0.5, adj_low=-0.5, adj_high=1.3, mde=1.1)
    cells = finding_cells(row)
    assert cells[1] == "+0.50"  # the paper's gap
    assert cells[2] == "+0.40 [-0.20, +1.00]"
    assert cells[3] == "**undetermined** [-0.50, +1.30]"
    assert cells[4].startswith("1.10") and "under 80 % power at the paper's gap" in cells[4]  # 0.5 is below the 1.1
    assert "cannot see" not in cells[4]  # a statement about power, not that the gap is invisible
    bigger = finding_cells(row | {"paper_left": 82.0, "paper_gap": 2.0})
    assert "under 80 %" not in bigger[4]  # a paper gap of 2.0 the design could have detected


def test_the_verdict_cell_shows_the_adjusted_interval_it_rests_on():
    """A marginal interval that excludes 0 beside "undetermined": the adjusted one, shown with the verdict, does not."""
    row = claim("A", "B", "undetermined", delta=-0.30, low=-0.55, high=-0.04, adj_low=-0.71, adj_high=0.11, mde=0.6)
    assert finding_cells(row)[3] == "**undetermined** [-0.71, +0.11]"


def test_not_tested_claims_fold_one_line_per_table_and_reason_whatever_their_rows():
    frame = pd.DataFrame([
        claim("BSC", "MSE", "not tested", table="Table 2", reason="BSC not run: CQA-A: data absent (cqa/train.xml)"),
        claim("MSE", "Triplet", "not tested", table="Table 2",
              reason="MSE not run: CQA-A: data absent (cqa/train.xml); Triplet not run: CQA-A: data absent (cqa/train.xml)"),
        claim("BSC", "Triplet", "not tested", table="Table 2",
              reason="BSC rests on a model that did not train, BSC seed 0: barely moved; BSC seed 1: barely moved"),
        claim("BSC", "MSE", "not tested", table="Table 3", reason="BSC not run: CQA-A: data absent (cqa/train.xml)"),
        claim("BSC", "MSE", REPRODUCED, table="Table 5", delta=1.0, low=0.5, high=1.5),
    ])
    groups = not_tested_groups(frame)
    assert [(t, r, len(c)) for t, r, c in groups] == [
        ("Table 2", "not run: CQA-A: data absent (cqa/train.xml)", 2),
        ("Table 2", "rests on BSC's model that did not train (barely moved)", 1),
        ("Table 3", "not run: CQA-A: data absent (cqa/train.xml)", 1),
    ]
    assert reason_kind(claim("A", "B", "not tested", reason="B not run: x; A not run: y")) == "not run: x; not run: y"
    demo = ("MNRLSBERT rests on a model that did not train or did not learn, MNRLSBERT seed 0 moved but did not learn: "
            "its loss rose: 0.126 -> 0.1305 (fall -0.00447, 2 standard errors 0.0689); MNRLSBERT seed 1 moved but did not "
            "learn: its loss rose: 0.0414 -> 0.09572 (fall -0.0543); MNRLSBERT seed 2 moved but did not learn: its loss "
            "did not fall beyond its window-to-window noise: 0.09288 -> 0.07325 (fall +0.0196); SBERT rests on a model "
            "that did not train or did not learn, SBERT seed 0 moved but did not learn: its loss 1.088 ends at its "
            "chance level 1.099")
    assert reason_kind(claim("MNRLSBERT", "SBERT", "not tested", reason=demo)) == (
        "rests on MNRLSBERT's model that did not train or did not learn (its loss rose; its loss did not fall beyond "
        "its window-to-window noise); rests on SBERT's model that did not train or did not learn (its loss ends at "
        "its chance level)")


def test_the_findings_section_lists_every_verdict_and_folds_the_rest():
    frame = pd.DataFrame([
        claim("BSC", "MSE", "undetermined", delta=0.1, low=-0.3, high=0.5),
        claim("MSE", "BSC", REPRODUCED, table="Table 5", delta=1.9, low=0.7, high=3.4, family="primary", central="B1"),
        *[claim(f"R{i}", "MSE", "not tested", table="Table 2", reason=f"R{i} not run: data absent") for i in range(83)],
    ])
    text = findings_section(state(frame))
    assert text.startswith("In the demo profile: **primary** (1 claim, Holm over the 1 the plan tests): 1 direction "
                           "reproduced, 0 direction reversed, 0 undetermined, 0 not tested; **secondary** (84 claims, Holm "
                           "over the 1 the plan tests): 0 direction reproduced, 0 direction reversed, 1 undetermined, 83 not "
                           "tested.")
    assert "A verdict is about the direction of a difference in this design, about the *test set*." in text
    assert text.index("BSC above MSE") < text.index("never pooled")  # the tables first, the method after them
    assert text.index("*Primary family* (the chapter's central claims)") < text.index("MSE above BSC (B1; Table 5, Average)")
    assert text.index("MSE above BSC") < text.index("*Secondary family*") < text.index("BSC above MSE")
    assert "Table 2: 83 claims not tested — not run: data absent" in text
    assert text.count("<details") == 1 and text.count("<li>") == 83


def test_the_findings_say_which_encoder_stands_in_for_the_papers_described_by_its_card():
    from sentcl.book.parameters import shipped_parameters
    from sentcl.chapters import CHAPTERS
    from sentcl.pretraining.card import read_card

    frame = pd.DataFrame([claim("MNRLSBERT", "SBERT", REPRODUCED, delta=1.0, low=0.5, high=1.5)])
    card = read_card()
    for profile, said in (("demo", True), ("paper", False)):
        s = state(frame, chapter="mnrl_sbert", profiles=(profile,))
        s.record.parameters, s.spec = shipped_parameters("mnrl_sbert", profile), CHAPTERS["mnrl_sbert"]
        text = findings_section(s)
        assert ("**The encoder.** BERT: sentcl-mini, a 4-layer BERT (hidden 256" in text) is said, profile
        if said:  # the card's numbers, and what a verdict is then about, under the counts and above the tables
            assert f"on {card['train_tokens']:,} tokens of the data root's non-test English text" in text
            assert "stands in for bert-base-uncased. A verdict says which way a claim goes with this encoder" in text
            assert text.index("**secondary**") < text.index("**The encoder.**") < text.index("*Secondary family*")


@pytest.mark.parametrize(("record", "error", "executed", "expected"), [
    ("ok", None, None, "complete"),
    ("failed", "ValueError: bad", None, "failed"),
    ("failed", "DeadKernelError: Kernel died", None, "interrupted"),
    (None, None, "notebooks/rcl.ipynb", "interrupted"),  # an executed notebook, no record of its end
    (None, None, None, "not run"),
])
def test_a_chapters_status_tells_interrupted_from_failed_and_not_run(record, error, executed, expected):
    assert chapter_status(state(pd.DataFrame(), status=record, error=error, executed=executed)) == expected


def test_a_partial_build_says_which_chapters_completed_were_interrupted_and_did_not_run():
    states = [state(pd.DataFrame(), chapter="mnrl_sbert"), state(pd.DataFrame(), chapter="bsc"),
              state(pd.DataFrame(), status=None, executed="x", chapter="rcl"),
              state(pd.DataFrame(), status=None, chapter="ifcl")]
    assert build_banner(states) == ("Partial build (complete: mnrl_sbert, bsc; interrupted: rcl; not run: ifcl): a "
                                    "chapter that did not complete shows what it wrote, or nothing.")
    assert build_banner(states[:2]) is None
    assert "This chapter's run was **interrupted**" in findings_section(states[2])


def test_headlines_are_marked_on_their_claim_in_either_order_and_a_missing_one_is_an_error():
    from sentcl.errors import ConfigError

    frame = pd.DataFrame([claim("MSE", "BSC", REPRODUCED), claim("BSC", "zero-shot", "undetermined")])
    marked = mark_headlines(frame, {"baseline": ("BSC", "MSE"), "untouched": ("BSC", "zero-shot")})
    assert marked["headline"].tolist() == ["baseline", "untouched"] and marked["headline_row"].tolist() == ["BSC", "BSC"]
    with pytest.raises(ConfigError, match="no claim compares 'BSC' with 'SimCSE'"):
        mark_headlines(frame, {"baseline": ("BSC", "SimCSE")})


def test_an_answer_cell_is_oriented_method_minus_the_other():
    """The paper says MSE above BSC and its direction is reproduced: for BSC against MSE the cell says so, that BSC
    came out below, its family, and the negated interval (never "better" or "worse": a verdict is about direction)."""
    said = pd.Series(claim("MSE", "BSC", REPRODUCED, delta=1.92, low=0.74, high=3.36))
    assert cell(said, "BSC") == "vs MSE: **direction reproduced**, BSC below (secondary) -1.92 [-3.36, -0.74]"
    assert cell(said, "MSE") == "vs BSC: **direction reproduced**, MSE above (secondary) +1.92 [+0.74, +3.36]"
    assert cell(pd.Series(claim("MSE", "BSC", "undetermined", delta=1.92, low=0.74, high=3.36)), "BSC") == "vs MSE: **undetermined** (secondary) -1.92 [-3.36, -0.74]"
    assert cell(pd.Series(claim("A", "B", "not tested", reason="B not run: absent")), "A") == "vs B: *not tested* (not run: absent)"


def test_the_answer_reads_every_chapters_headlines_also_without_geometry():
    bsc = mark_headlines(pd.DataFrame([claim("MSE", "BSC", REPRODUCED, delta=1.9, low=0.7, high=3.4),
                                       claim("BSC", "zero-shot", "undetermined", delta=0.2, low=-0.3, high=0.6)]),
                         {"baseline": ("BSC", "MSE"), "untouched": ("BSC", "zero-shot")})
    states = [state(bsc), state(pd.DataFrame(), status=None, executed="x", chapter="rcl", title="RCL: regularized"),
              state(pd.DataFrame(), status=None, chapter="geometry", title="Geometry: ours")]
    text = answer(states)
    assert ("| [BSC](bsc.md) | vs MSE: **direction reproduced**, BSC below (secondary) -1.90 [-3.40, -0.70] | vs zero-shot: "
            "**undetermined** (secondary) +0.20 [-0.30, +0.60] |") in text
    assert "never pooled across families or chapters" in text and "better" not in text and "worse" not in text
    assert "[RCL](rcl.md) (interrupted) | interrupted before its claims" in text
    assert "*This build:* complete: bsc; interrupted: rcl; not run: geometry." in text
    assert "not run in this build" in text  # the equal-budget column, geometry absent


def test_seeds_for_gap_on_a_hand_worked_example():
    """se = hypot(0.4, 0.1) = 0.4123, mde = 2.8 se = 1.1545 at 3 seeds; the paper's gap 0.5 needs a variance of
    (0.5 / 2.8)^2 = 0.03189, of which the items take 0.01: the seeds' 0.16 x 3 / S' <= 0.02189 at S' = 22 (21 gives
    an mde of 0.5075, 22 of 0.4995)."""
    row = {"paper_gap": -0.5, "mde": 2.8 * math.hypot(0.4, 0.1), "seed_se": 0.4, "item_se": 0.1, "seeds_left": 3,
           "seeds_right": 3}
    assert seeds_for_gap(row) == 22
    assert seeds_for_gap(row | {"item_se": 0.2, "mde": 2.8 * math.hypot(0.4, 0.2)}) == math.inf  # the items hide it
    assert seeds_for_gap(row | {"paper_gap": 2.0}) == 3  # detectable today
    assert seeds_for_gap(row | {"mde": math.nan}) is None and seeds_for_gap(row | {"paper_gap": None}) is None


def power_state(**extra):
    central = claim("BSC", "MSE", "undetermined", delta=0.2, low=-0.9, high=1.3, paper_gap=0.5, headline="baseline",
                    headline_row="BSC", mde=2.8 * math.hypot(0.4, 0.1), seed_se=0.4, item_se=0.1, seeds_left=3,
                    seeds_right=3) | extra
    other = claim("BSC", "untouched", REPRODUCED, delta=3.0, low=1.0, high=5.0, headline="untouched", headline_row="BSC")
    s = state(pd.DataFrame([other, central]))
    s.record.wall_time_s = 600.0
    names = [f"{row} seed {k}" for row in ("BSC", "MSE") for k in range(3)]
    s.evidence = {("Table 1", "BSC"): SimpleNamespace(tasks={"STSb": {"health": {k: [{"name": n}] for k, n in enumerate(names)}}})}
    return s


def test_the_power_note_prices_the_seeds_the_central_claim_needs_against_the_budget():
    note = power_note(power_state())
    # 22 seeds per row, 19 more for each of the two trained rows, at 10 min / 6 models each: 63 min > 12
    assert "BSC above MSE" in note and "1.15" in note and "0.50" in note
    assert "about 22 seeds per trained row" in note and "38 more trainings at about 1.7 min" in note
    assert "63 min, beyond the chapter's 12-minute budget" in note
    assert "within the chapter's 80-minute budget: the profile's seeds could rise" in power_note(power_state(), budget_minutes=80)
    hidden = power_note(power_state(item_se=0.2, mde=2.8 * math.hypot(0.4, 0.2)))
    assert "under 80 % power whatever the number of training seeds" in hidden and "SE 0.20" in hidden
    assert "this design has at least 80 % power at it" in power_note(power_state(paper_gap=2.0))
    assert power_note(power_state(paper_gap=None)) is None  # a claim of ours: no paper gap to reach
    assert "**Power**" in findings_section(power_state())
