"""The introduction's answer to the book's question, "do contrastive sentence embeddings really work?",
generated from an output folder's results: the geometry chapter's equal-budget table (does each newer
method beat plain MNRL by more than the seed-to-seed noise, and at what cost?) and each paper chapter's
orderings that hold. One paragraph per profile; a profile without results says so.
"""

from __future__ import annotations

import math

import pandas as pd

from . import claims

EQUAL_BUDGET = "Equal budget"
"""The geometry chapter's tables whose names start with this (STS; retrieval, test and cost)."""
BASELINE = "MNRL"
NEWER = ("BSC", "RCL", "IFCL")
ALPHA = 0.05


def answer(states) -> str:
    """MyST markdown: per profile, the equal-budget verdicts and the papers' orderings that hold
    (``states``: :func:`sentcl.book.pages.chapter_states`)."""
    geometry = next((s for s in states if s.chapter == "geometry"), None)
    table = geometry.compared if geometry is not None else pd.DataFrame()
    table = table[table["table"].str.startswith(EQUAL_BUDGET) & table["value"].notna()] if len(table) else table
    parts = []
    for profile, words in (("demo", "the demo profile (a miniature)"), ("smoke", "the smoke profile (a test run)"),
                           ("paper", "the paper profile")):
        mine = table[table["profile"] == profile] if len(table) else table
        if len(mine):
            parts.append(_verdict(mine, words, states, profile))
        elif profile != "smoke":
            parts.append(f"**In {words}**: not run in this build, so no answer from it yet "
                         f"(`sentcl reproduce --profile {profile}` writes its results).\n")
    return "\n".join(parts)


def _verdict(table: pd.DataFrame, words: str, states, profile: str) -> str:
    cells = table.set_index(["row", "column"])
    seeds = len(cells.loc[(BASELINE, "Average"), "seeds"]) if (BASELINE, "Average") in cells.index else 0
    base_mean, base_std = _cell(cells, BASELINE, "Average")
    lines: list[str] = []
    better: list[str] = []
    worse: list[str] = []
    for method in NEWER:
        if (method, "Average") not in cells.index:
            continue
        mean, std = _cell(cells, method, "Average")
        p = cells["value"].get((method, "p vs MNRL"), math.nan)
        cost = cells["value"].get((method, "cost × MNRL"), math.nan)
        gap = mean - base_mean
        shown = math.isfinite(p) and p < ALPHA
        (better if shown and gap > 0 else worse if shown else []).append(method)
        verdict = ("better, beyond the seed noise" if shown and gap > 0 else "worse, beyond the seed noise" if shown
                   else "not distinguishable from MNRL")
        lines.append(f"- **{method}**: average STS Spearman {mean:.2f} ± {std:.2f} vs MNRL's {base_mean:.2f} ± "
                     f"{base_std:.2f} ({gap:+.2f} points, p = {_p(p)}): {verdict}; it costs {cost:.2f} × MNRL.")
    if better:
        head = f"{', '.join(better)} beat{'s' if len(better) == 1 else ''} plain MNRL by more than the seed-to-seed noise"
    else:
        head = "none of the three newer methods beats plain MNRL by more than the seed-to-seed noise"
    if worse:
        head += f"; {', '.join(worse)} {'is' if len(worse) == 1 else 'are'} worse"
    orderings = []
    for s in states:
        if s.chapter == "geometry" or profile not in s.profiles:
            continue
        checked, hold = claims.ordering_counts(s.compared)
        if checked:
            orderings.append(f"{s.chapter} {hold} of {checked}")
    if (table["kind"] == "sample-data").any():
        head += " (on the project's sample data: this tests the code, not the methods)"
    said = (f" Of the papers' own orderings of two rows that this build checked, these hold: {'; '.join(orderings)}."
            if orderings else "")
    return (f"**In {words}**, trained from one base model on the same pairs for the same steps with {seeds} seeds "
            f"(two-sided paired t-test against MNRL, p < {ALPHA:g}): {head}.{said}\n\n" + "\n".join(lines) + "\n")


def _cell(cells: pd.DataFrame, row: str, column: str) -> tuple[float, float]:
    if (row, column) not in cells.index:
        return math.nan, math.nan
    std = cells.loc[(row, column), "std"]
    return float(cells.loc[(row, column), "value"]), float(std) if pd.notna(std) else math.nan


def _p(p: float) -> str:
    return "n/a (one seed)" if not math.isfinite(p) else f"{p:.3f}"


__all__ = ["answer"]
