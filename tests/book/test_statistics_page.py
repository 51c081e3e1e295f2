"""The method page's worked claim (sentcl.book.pages.statistics): one claim of a build, its numbers from the claims
file, each step's arithmetic consistent with the next (the interval from the SE and df, Holm's level from the step
interval)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest
from scipy import stats

from sentcl.book.notebook.chapter_run import ChapterRun
from sentcl.book.output.claims import REPRODUCED, Claim
from sentcl.book.pages.statistics import pick, step_level, worked_claim


def test_the_worked_claim_is_a_decided_one_and_its_numbers_agree_with_each_other(tmp_path, fake):
    run = ChapterRun("mnrl_sbert", profile="demo", data_dir=tmp_path, out_dir=tmp_path / "out")
    for row, noise in (("good", 0.05), ("mid", 0.3), ("bad", 0.6)):
        run.record_scores(row, {s: fake.scored(noise + 0.005 * s, s) for s in range(3)}, columns={"STSb": ("STSb", "Spearman")},
                          trained={s: fake.done(True, f"{row} seed {s}") for s in range(3)}, tables=["Table 1"])
    frame = run.write_claims(own=[Claim("Table 1", "STSb", *pair, source="ours") for pair in (("mid", "bad"), ("good", "bad"))])
    chosen = pick([SimpleNamespace(claims=frame)])
    assert chosen is not None and chosen["verdict"] == REPRODUCED
    se = (chosen["seed_se"] ** 2 + chosen["item_se"] ** 2) ** 0.5
    assert chosen["ci_high"] - chosen["delta"] == pytest.approx(stats.t.isf(0.025, chosen["df"]) * se)
    level = step_level(chosen)
    assert any(level == pytest.approx(0.05 / k) for k in (1, 2))  # Holm's levels in a family of 2
    text = worked_claim([SimpleNamespace(claims=frame)])
    assert f"Δ = {chosen['delta']:+.3f}" in text and f"[{chosen['adj_low']:+.3f}, {chosen['adj_high']:+.3f}]" in text
    assert "secondary family" in text and "2 claims the plan tests" in text and "Bonferroni, 0.05 / 2" in text
    assert "3 seed(s) against 3," in text and f"± {stats.t.isf(0.025, chosen['df']):.2f} ×" in text
    empty = worked_claim([SimpleNamespace(claims=pd.DataFrame(columns=frame.columns))])
    assert empty.startswith("*This build has no claim with an interval")
