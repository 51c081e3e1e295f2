"""The method page's worked claim (``book/_generated/worked_claim.md``, included by ``book/statistics.md``): one
claim of this build with every number of its test, step by step, read from its chapter's claims file
(:mod:`sentcl.book.output.claims`), never typed by hand.

The claim shown is the first, in book order, of: a decided claim of a primary family, any decided claim, any
undetermined one with an interval (a build that decided nothing still shows how a verdict is reached).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from scipy import stats

from ...evaluation.significance import ALPHA_CLAIMS, POWER
from ..markdown import md
from ..output import claims


def pick(states: Sequence[Any]) -> Mapping | None:
    """The claim the page works through (module doc), with its chapter; None when no claim has an interval."""
    rows = [r for s in states for r in s.claims.to_dict("records")]
    rules = (lambda r: r["verdict"] in claims.DECIDED and r["family"] == "primary",
             lambda r: r["verdict"] in claims.DECIDED,
             lambda r: r["verdict"] == claims.UNDETERMINED and claims.finite(r.get("adj_low")))
    for rule in rules:
        found = [r for r in rows if rule(r)]
        if found:
            return found[0]
    return None


def step_level(claim: Mapping) -> float:
    """The level Holm's procedure tested the claim at, read back from its step interval: the half-width over the
    standard error is t_{1 − level/2, df}."""
    se = math.hypot(claim["seed_se"], claim["item_se"])
    half = (claim["adj_high"] - claim["adj_low"]) / 2
    return float(2 * stats.t.sf(half / se, claim["df"])) if se > 0 else math.nan


def worked_claim(states: Sequence[Any]) -> str:
    """MyST markdown: the worked claim (module doc), or a line saying this build has none."""
    c = pick(states)
    if c is None:
        return "*This build has no claim with an interval to work through (no chapter ran, or none could be tested).*\n"
    se = math.hypot(c["seed_se"], c["item_se"])
    df, m = float(c["df"]), int(c["family_m"])
    t95 = float(stats.t.isf(ALPHA_CLAIMS / 2, df))
    level = step_level(c)
    central = f", central claim {c['central']}" if isinstance(c.get("central"), str) and c["central"] else ""
    gap = float(c["paper_gap"]) if claims.finite(c.get("paper_gap")) else math.nan
    paper = (f" The paper reports {c['paper_left']:.2f} vs {c['paper_right']:.2f}, a gap of {gap:+.2f} (the paper's values)."
             if math.isfinite(gap) else " It is a claim of ours (no paper gap).")
    lines = [
        f"**The claim**: {md(c['claim'])} ({md(c['chapter'])}, {md(c['table'])}, {md(c['column'])}; {c['family']} family{central}), "
        f"{int(c['seeds_left'])} seed(s) against {int(c['seeds_right'])}, {c['design']}; about *{c['estimand']}*.{paper}",
        "",
        f"1. **The difference**: left − right, each the mean over its seeds on the scored items: Δ = {c['delta']:+.3f}.",
        f"2. **Its noise**: over training seeds, SE {c['seed_se']:.3f}; over test items (the bootstrap variance without the "
        f"seed × item interaction, times the estimand's factor), SE {c['item_se']:.3f}; together "
        f"SE = √({c['seed_se']:.3f}² + {c['item_se']:.3f}²) = {se:.3f}, with {df:.1f} degrees of freedom (Satterthwaite, "
        "the seeds' variance at its upper 90 % bound).",
        f"3. **Its 95 % interval**: Δ ± t × SE, t the 0.975 quantile of Student's t with {df:.1f} degrees of freedom: "
        f"{c['delta']:+.3f} ± {t95:.2f} × {se:.3f} = "
        f"[{c['ci_low']:+.3f}, {c['ci_high']:+.3f}]; p = {c['p']:.3g} for no difference.",
        f"4. **Its family**: {m} claims the plan tests ({c['family']}); Holm's adjusted p = {c['p_holm']:.3g}. Holm tested "
        f"this claim at level {level:.4g}: the interval at that level, [{c['adj_low']:+.3f}, {c['adj_high']:+.3f}], is the one "
        f"the verdict rests on (it covers at its own level, not jointly). The family's simultaneous interval "
        f"(Bonferroni, {ALPHA_CLAIMS:g} / {m}) is [{c['sim_low']:+.3f}, {c['sim_high']:+.3f}].",
        f"5. **The verdict**: *{c['verdict']}*: " + (
            "the step interval excludes 0, so the direction of the difference is decided in this design."
            if c["verdict"] in claims.DECIDED else "the step interval holds 0: the direction is not decided."),
        f"6. **Its power**: at level {ALPHA_CLAIMS:g} / {m}, this design detects a gap of {c['mde']:.3f} with "
        f"{POWER:.0%} power ({c['mde_high']:.3f} were the seeds' spread at its upper 90 % bound)" + (
            f"; the paper's gap, {abs(gap):.3f}, is " + ("within that." if claims.detectable(c) else f"below it: {claims.POWER_SHORT}.")
            if math.isfinite(gap) else "."),
    ]
    return "\n".join(lines) + "\n"


__all__ = ["pick", "step_level", "worked_claim"]
