"""The introduction's answer to the book's question, "do contrastive sentence embeddings really work?",
generated from every chapter's claims (:mod:`sentcl.book.output.claims`), in one table: each method against its
paper's baseline and against the untouched encoder it started from (the claims its chapter marks as its
headline ones: column ``headline`` says which, ``headline_row`` names the method's row), and, where the geometry chapter ran, against plain MNRL under one budget.
Each cell is a verdict on the direction of the claim (the paper's, or ours: the method above the other),
which of the chapter's two Holm families it was tested in, the difference (method − the other, whatever order
the claim was stated in) and its 95 % interval. Verdicts are never pooled across families or chapters. Under the table: the limits of the run in one sentence, and the build's state (which chapters
completed, were interrupted, failed or did not run: :func:`sentcl.book.pages.findings.chapter_status`).
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ..markdown import md, md_table
from ..output.claims import DECIDED, NOT_TESTED
from ..profiles import PROFILES
from .findings import STATUSES, chapter_status, reason_kind

BASELINE = "MNRL"
NEWER = ("BSC", "RCL", "IFCL")
BASE_ROW = "base (untouched)"
HEADLINES = {"baseline": "against its paper's baseline", "untouched": "against the untouched encoder"}
"""The headline claims a paper chapter marks in its claims file (``headline`` column) -> the answer's column."""
EQUAL_BUDGET = "one budget, against MNRL (geometry)"


def method_name(state: Any) -> str:
    """A chapter's method as the answer names it: its title up to the colon ("BSC", "MNRL-SBERT")."""
    return state.title.split(":")[0].strip()


def cell(claim: pd.Series | None, method_row: str) -> str:
    """One answer cell: the verdict on the claim's direction (where decided, whether the method came out above or
    below), its family, the difference oriented method − other and its 95 % interval."""
    if claim is None:
        return "not in this build's claims"
    other = claim["right"] if claim["left"] == method_row else claim["left"]
    if claim["verdict"] == NOT_TESTED:
        return f"vs {md(other)}: *not tested* ({md(reason_kind(claim))})"
    sign = 1.0 if claim["left"] == method_row else -1.0
    delta, low, high = (sign * float(claim[c]) for c in ("delta", "ci_low", "ci_high"))
    low, high = min(low, high), max(low, high)
    side = f", {md(method_row)} {'above' if delta > 0 else 'below'}" if claim["verdict"] in DECIDED else ""
    family = f" ({claim['family']})" if isinstance(claim.get("family"), str) else ""
    numbers = f"{delta:+.2f} [{low:+.2f}, {high:+.2f}]" if all(map(math.isfinite, (delta, low, high))) else ""
    return f"vs {md(other)}: **{claim['verdict']}**{side}{family} {numbers}".rstrip()


def headline(frame: pd.DataFrame, kind: str) -> pd.Series | None:
    """The chapter's claim marked ``kind`` (None when its claims file marks none)."""
    if "headline" not in frame.columns:
        return None
    found = frame[frame["headline"] == kind]
    return None if found.empty else found.iloc[0]


def _equal_budget(one_budget: Any, method: str) -> str:
    """The answer's last cell: ``method`` against MNRL in the claims of the chapter that compares them under one
    budget (``one_budget``, its state; None where no chapter does), with its cost in MNRL's."""
    if one_budget is None or not one_budget.ran or one_budget.claims.empty:
        return "not run in this build"
    if method == BASELINE:
        return "the reference"
    frame = one_budget.claims
    found = frame[(frame["left"] == method) & (frame["right"] == BASELINE) & (frame["column"] == "Average")]
    costs = one_budget.compared[one_budget.compared["column"] == "cost × MNRL"].set_index("row")["value"]
    cost = f"; costs {costs[method]:.2f} × MNRL" if method in costs.index else ""
    return (cell(found.iloc[0], method) if len(found) else "not in this build's claims") + cost


def answer(states) -> str:
    """MyST markdown: the answer table, the run's limits, the build's state (``states``:
    :func:`sentcl.book.pages.fragments.chapter_states`)."""
    one_budget = next((s for s in states if s.spec.one_budget), None)
    papers = [s for s in states if not s.spec.one_budget]
    rows = []
    for state in papers:
        method = method_name(state)
        status = chapter_status(state)
        marked = {kind: headline(state.claims, kind) for kind in HEADLINES}
        if status == "not run":
            cells = ["not run in this build"] * len(HEADLINES)
        else:
            cells = [cell(c, str(c["headline_row"])) if c is not None else
                     ("not in this build's claims" if status == "complete" else f"{status} before its claims")
                     for c in marked.values()]
        rows.append([f"[{md(method)}]({state.chapter}.md)" + ("" if status == "complete" else f" ({status})"),
                     *cells, _equal_budget(one_budget, state.spec.one_budget_row or method)])
    profiles = sorted({p for s in states if s.ran for p in s.profiles})
    profile = (PROFILES[profiles[0]].words if profiles[0] in PROFILES else profiles[0] + " profile") if len(profiles) == 1 else (
        "profiles " + ", ".join(profiles) if profiles else "no profile (nothing ran)")
    head = (f"**In {profile}**: each method against its paper's baseline and against the untouched encoder, in its "
            "own chapter, and against plain MNRL under one budget (the geometry chapter); each cell the verdict, the "
            "difference (method − the other) and its 95 % interval over training seeds and test items. A verdict is "
            "about the direction of the claim in this design (*direction reproduced*, *direction reversed* or "
            "*undetermined*), Holm-corrected within its chapter's family (primary: the chapter's central claims; "
            "secondary: the rest), never pooled across families or chapters.")
    parts = [head, "", md_table(["method", *HEADLINES.values(), EQUAL_BUDGET], rows, css_class="sentcl-answer"), limits(states), state_line(states)]
    if any(s.ran and s.sample for s in states):
        parts.append("*This build ran on the project's sample data: it tests the code, not the methods.*\n")
    return "\n".join(parts)


def limits(states) -> str:
    """The run's limits in one sentence: the encoders, the optimizer steps of the trained models, the seeds and
    the test items, read from the chapters' results and training health."""
    steps = sorted({h["trained_steps"] for s in states for ev in s.evidence.values() for column in ev.columns
                    for h in ev.health(column) if h is not None})
    encoders = sorted({str(n).split(" stands in for")[0] for s in states for n in s.compared["note"].dropna()
                       if "stands in for" in str(n)})
    seeds = sorted({int(n) for s in states for n in s.claims.get("seeds_left", pd.Series(dtype=float)).dropna()})
    sizes = sorted({t["n"] for s in states for ev in s.evidence.values() for t in ev.tasks.values()})
    if not steps and not encoders:
        return "*Limits:* nothing was trained in this build.\n"
    said = []
    if encoders:
        said.append(f"the encoder is a stand-in ({md('; '.join(encoders[:2]))})")
    if steps:
        said.append(f"each model trained {steps[0]}–{steps[-1]} optimizer steps" if len(steps) > 1
                    else f"each model trained {steps[0]} optimizer steps")
    if seeds:
        said.append(f"with at most {seeds[-1]} seeds a row")
    if sizes:
        said.append(f"scored on {sizes[0]:,}–{sizes[-1]:,} test items a task" if len(sizes) > 1 else f"scored on {sizes[0]:,} test items a task")
    return "*Limits:* " + ", ".join(said) + ": a verdict says what this run could tell apart, not what the papers' models do.\n"


def state_line(states) -> str:
    """Which chapters completed, were interrupted, failed or did not run in this build."""
    status = {s.chapter: chapter_status(s) for s in states}
    groups = {kind: [c for c, v in status.items() if v == kind] for kind in STATUSES}
    said = "; ".join(f"{kind}: {', '.join(names)}" for kind, names in groups.items() if names)
    return f"*This build:* {said}.\n" if said else ""


__all__ = ["answer", "cell", "headline", "limits", "method_name", "state_line"]
