"""Findings first: what a chapter's claims say, as the first thing its page shows.

A reader opens a chapter to learn what was found. :func:`findings_section` turns the chapter's claims
file (:mod:`sentcl.book.output.claims`) into the fragment each chapter page includes right under its title
(``book/_generated/<chapter>/findings.md``):

- the build's state of the chapter (:func:`chapter_status`: complete, failed, interrupted, not run);
- which encoder stands in for the paper's where the run's differs (:func:`encoder_note`; sentcl-mini described
  from its card), and what a verdict is then about;
- one table per family of every claim with a verdict (direction reproduced, direction reversed,
  undetermined): first the primary family (the chapter's central claims, declared before the run), then
  the secondary (the rest), each Holm-corrected over its own claims; per claim its words, the paper's gap
  (for the paper's orderings), ours with its marginal 95 % interval, the verdict with the interval it rests
  on (at the level Holm's step tests it), and the smallest gap the design detects with 80 % power (after
  the family's correction); an undetermined claim whose paper gap is below that says "under 80 % power";
- one sentence on power (:func:`power_note`): could more seeds, within the chapter's budget, let its central
  claim see the paper's gap, and at what measured cost; or why no budget can;
- the claims not tested, folded: one line per table and reason ("Table 2: 83 claims — not run in the
  demo: ..."), each of which opens to list its claims.

:func:`build_banner` says, on every page, when a build is partial: which chapters ran, which were
interrupted or failed, and which did not run.
"""

from __future__ import annotations

import html
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..markdown import md, md_table, raw_html
from ..output import claims

STATUSES = ("complete", "failed", "interrupted", "not run")
"""A chapter's state in a build: its notebook finished (complete), raised (failed), stopped with no record of
its end, or by an interrupt (interrupted), or never started in this output folder (not run)."""

INTERRUPTS = ("KeyboardInterrupt", "SystemExit", "DeadKernelError", "CellTimeoutError")
"""Errors of a notebook run that mean it was stopped from outside, not that the chapter's code failed."""

ROW_REASONS = ("not run", "rests on", "has no")
"""How :mod:`sentcl.book.output.claims` starts a reason about one row, after the row's name."""

FINDINGS_CLASS = "sentcl-findings"
"""The findings table's box (the stylesheet, and the browser test that finds it on the first screen)."""

TESTED = claims.TESTED
COLUMNS = ["claim", "paper's gap", "ours [95 % interval]", "verdict [interval at Holm's step]", "detectable gap (80 % power)"]


def chapter_status(state: Any) -> str:
    """One of :data:`STATUSES` for a :class:`sentcl.book.pages.fragments.ChapterState`: its last notebook run record
    decides (ok: complete; an interrupt: interrupted; any other error: failed); without a record, an executed
    notebook or results in the output folder mean a run that started and never wrote its end: interrupted."""
    record = state.record
    if record is not None:
        if record.status == "ok":
            return "complete"
        return "interrupted" if any(name in (record.error or "") for name in INTERRUPTS) else "failed"
    if state.executed is not None or state.ran:
        return "interrupted"
    return "not run"


def build_banner(states: Sequence[Any]) -> str | None:
    """The sentence every page of a partial build carries: which chapters completed, which were interrupted or
    failed, and which did not run (None when every chapter with a notebook completed, or none ran)."""
    status = {s.chapter: chapter_status(s) for s in states if s.has_notebook}
    if all(v == "complete" for v in status.values()) or all(v == "not run" for v in status.values()):
        return None  # a whole build, or none at all (the pages say "not run" everywhere)
    groups = {kind: [c for c, v in status.items() if v == kind] for kind in STATUSES}
    said = [f"{kind}: {', '.join(names)}" for kind, names in groups.items() if names]
    return "Partial build (" + "; ".join(said) + "): a chapter that did not complete shows what it wrote, or nothing."


def _interval(low: Any, high: Any) -> str:
    return f"[{low:+.2f}, {high:+.2f}]" if claims.finite(low) and claims.finite(high) else ""


def finding_cells(row: Mapping) -> list[str]:
    """The findings table's cells (:data:`COLUMNS`) for one tested claim."""
    gap, delta, mde = row.get("paper_gap"), row.get("delta"), row.get("mde")
    ours = f"{delta:+.2f} {_interval(row.get('ci_low'), row.get('ci_high'))}".strip() if claims.finite(delta) else "—"
    adjusted = _interval(row.get("adj_low"), row.get("adj_high"))
    verdict = f"**{row['verdict']}**" + (f" {adjusted}" if adjusted else "")
    detectable = f"{mde:.2f}" if claims.finite(mde) else "—"
    if claims.finite(row.get("mde_high")):
        detectable += f" (≤ {row['mde_high']:.2f})"
    if row["verdict"] == claims.UNDETERMINED and claims.detectable(row) is False:
        detectable += f": {claims.POWER_SHORT}"
    if row["verdict"] == claims.UNDETERMINED and not claims.finite(delta) and isinstance(row.get("reason"), str):
        detectable = row["reason"]  # a trained row's seed spread unmeasured: no interval, and why
    where = f"{row['table']}, {row['column']}"
    if isinstance(row.get("central"), str) and row["central"]:
        where = f"{row['central']}; {where}"
    return [f"{md(row['claim'])} ({md(where)})", f"{gap:+.2f}" if claims.finite(gap) else "—", ours, verdict, md(detectable)]


def reason_kind(row: Mapping) -> str:
    """A not-tested claim's reason with its two rows' names and per-model details taken out, so that claims left
    out for the same cause share one line: "BSC not run: data absent" and "MSE not run: data absent" both read
    "not run: data absent"; "X rests on a model that did not train or did not learn, X seed 0 moved but did not
    learn: its loss rose: 0.04 -> 0.10 ...; X seed 1 ..." reads "rests on X's model that did not train or did not
    learn (its loss rose; ...)": the row and its seeds' causes without numbers (the "did it train?" table gives
    them)."""
    names = [re.escape(str(n)) for n in sorted({str(row["left"]), str(row["right"])}, key=len, reverse=True)]
    reason = str(row["reason"]) if isinstance(row.get("reason"), str) and row["reason"] else "no reason recorded"
    starts = f"(?:{'|'.join(names)}) (?={'|'.join(ROW_REASONS)})"
    parts = []
    for part in re.split(f"; (?={starts})", reason):
        named = re.match(f"^{starts}", part)
        part = re.sub(f"^{starts}", "", part).strip()
        if part.startswith("rests on a model"):
            head, _, details = part.partition(", ")
            causes = [_cause(d) for d in re.split(r"; (?=\S.*? seed \d+\b)", details) if d]
            part = head if named is None else head.replace("a model", named.group(0).strip() + "'s model", 1)
            part += f" ({'; '.join(dict.fromkeys(causes))})" if causes else ""
        parts.append(part)
    return "; ".join(sorted(set(parts)))


def _cause(detail: str) -> str:
    """"MNRLSBERT seed 1 moved but did not learn: its loss rose: 0.0414 -> 0.0957 (...)" -> "its loss rose"; the
    cause a model's health gives, without its seed and its numbers, so that seeds failing alike share a line."""
    cause = re.sub(r"^.*? seed \d+\b:? ?", "", detail).strip()
    cause = re.sub(r"^(moved but did not learn|moved, but): ?", "", cause)
    cause = re.split(r": | \(", cause)[0]
    return re.sub(r" -?\d[\d.,]*", "", cause).strip()


def not_tested_groups(frame: pd.DataFrame) -> list[tuple[str, str, list[str]]]:
    """``(table, reason, [claims])`` for every claim not tested, one group per table and :func:`reason_kind`,
    in the order the claims file lists them."""
    groups: dict[tuple[str, str], list[str]] = {}
    for row in frame[frame["verdict"] == "not tested"].to_dict("records"):
        groups.setdefault((str(row["table"]), reason_kind(row)), []).append(f"{row['claim']} ({row['column']})")
    return [(table, reason, found) for (table, reason), found in groups.items()]


def _folded(groups: list[tuple[str, str, list[str]]]) -> str:
    """The not-tested groups as one expandable line each (HTML details: a click lists the claims)."""
    lines = []
    for table, reason, found in groups:
        items = "".join(f"<li>{html.escape(c)}</li>" for c in found)
        summary = f"{table}: {len(found)} claim{'s' if len(found) != 1 else ''} not tested — {reason}"
        lines.append(f"<details class=\"sentcl-folded\"><summary>{html.escape(md(summary), quote=False)}</summary>"
                     f"<ul>{items}</ul></details>")
    return raw_html("\n".join(lines))


CHAPTER_BUDGET_MINUTES = 12
"""A chapter's demo budget on a 2-core laptop (DEVELOPERS.md)."""


def central_claim(frame: pd.DataFrame) -> Mapping | None:
    """The chapter's central claim: its method against its paper's baseline (``headline`` "baseline"), else its
    first headline claim; None when the claims mark none or it was not tested."""
    tested = frame[frame["verdict"].isin(TESTED) & frame["headline"].notna()]
    if tested.empty:
        return None
    first = tested[tested["headline"] == "baseline"]
    return (first if len(first) else tested).iloc[0].to_dict()


def trained_models(state: Any) -> set[str]:
    """The names of the models the chapter's run trained (from its rows' training health)."""
    return {str(record["name"]) for row in state.evidence.values() for task in row.tasks.values()
            for records in task.get("health", {}).values() for record in records if record and "name" in record}


def power_note(state: Any, budget_minutes: float = CHAPTER_BUDGET_MINUTES) -> str | None:
    """One sentence (issue 33, "spend the spare budget on power"): whether the central claim's design sees the
    paper's gap; if not, how many seeds per trained row would (:func:`sentcl.book.output.claims.seeds_for_gap`) and what
    they cost at this run's measured minutes per trained model (the chapter's wall time over its trained models),
    against the chapter's budget; or that no number of seeds can, the test items' noise alone hiding the gap.
    None without a central claim that has a paper gap and a detectable gap."""
    claim = central_claim(state.claims)
    needed = claims.seeds_for_gap(claim) if claim is not None else None
    if claim is None or needed is None:
        return None
    name = f"the central claim, {md(claim['claim'])} ({md(claim['table'])}, {md(claim['column'])})"
    head = f"**Power**: {name}, detects gaps of {claim['mde']:.2f} or more; the paper's gap is {abs(claim['paper_gap']):.2f}"
    if claims.detectable(claim):
        return head + ": this design has at least 80 % power at it.\n"
    if math.isinf(needed):
        return (head + f". The test items' noise alone (SE {claim['item_se']:.2f}) leaves a gap that size under 80 % power "
                "whatever the number of training seeds, so this profile keeps its seeds.\n")
    counts = [int(claim["seeds_left"]), int(claim["seeds_right"])]
    trained = sum(n > 1 for n in counts)  # a row with one seed here is an untouched encoder (a trained one has no mde)
    extra = (int(needed) - max(counts)) * trained
    models = trained_models(state)
    record = state.record
    if record is None or not record.wall_time_s or not models:
        return head + f": it would take about {int(needed)} seeds per trained row ({extra} more trainings).\n"
    per_model = record.wall_time_s / 60 / len(models)
    spare = budget_minutes - record.wall_time_s / 60
    verdict = "within" if extra * per_model <= spare else "beyond"
    return (head + f": about {int(needed)} seeds per trained row would see it, {extra} more trainings at about "
            f"{per_model:.1f} min each (this run: {record.wall_time_s / 60:.1f} min for {len(models)} trained models), "
            f"{extra * per_model:.0f} min, {verdict} the chapter's {budget_minutes:g}-minute budget"
            + (", so this profile keeps its seeds.\n" if verdict == "beyond" else ": the profile's seeds could rise to it.\n"))


def _about(frame: pd.DataFrame) -> str:
    """", about *test set*": what the claims are about (their ``estimand``), or nothing when the file does not say."""
    said = list(dict.fromkeys(e for e in frame["estimand"] if isinstance(e, str)))
    return f", about the {' / '.join(f'*{e}*' for e in said)}" if said else ""


def family_size(frame: pd.DataFrame, family: str) -> str:
    """E.g. "6 claims, Holm over the 4 the plan tests": a family's claims and its count (``family_m``: every claim
    the plan tests, a not-decided one at p = 1)."""
    part = frame[frame["family"] == family]
    m = part["family_m"].dropna()
    counted = int(m.iloc[0]) if len(m) else 0
    return f"{len(part)} claim{'s' if len(part) != 1 else ''}, Holm over the {counted} the plan tests"


def encoder_note(state: Any) -> str | None:
    """Which encoder each model family of the run starts from where it is not the paper's ("**The encoder.**
    BERT: sentcl-mini, a 4-layer BERT ... stands in for bert-base-uncased"), sentcl-mini described by its card
    (:func:`sentcl.pretraining.card.description`), and what a verdict is then about; None when the run's
    record names no parameters or every family runs the paper's encoder."""
    from ...models import MINI_NAMES
    from ...pretraining.card import description, read_card

    parameters = state.record.parameters if state.record is not None else None
    spec = state.spec if parameters else None
    if spec is None or spec.models is None:
        return None
    ours = spec.models(parameters)
    differ = {family: name for family, name in ours.items() if name != spec.paper_models.get(family, name)}
    if not differ:
        return None

    def named(name: str) -> str:
        return f"{name}, {description(read_card())}," if name in MINI_NAMES else name

    said = "; ".join(f"{family}: {named(name)} stands in for {spec.paper_models[family]}" for family, name in differ.items())
    return (f"**The encoder.** {said}. A verdict says which way a claim goes with this encoder at this scale, not "
            "the paper's numbers; the claims it cannot test are listed at the end of this section with why.\n")


def findings_section(state: Any) -> str:
    """The fragment a chapter page opens with (module doc)."""
    status = chapter_status(state)
    frame = state.claims
    profile = ", ".join(state.profiles) or "no"
    if status == "not run":
        return ("**Not run in this build**: this output folder has no run of the chapter, so nothing below is a "
                "finding; the tables show the paper's values only.\n")
    head = {"complete": f"In the {profile} profile", "failed": f"This chapter's run **failed** ({profile} profile); before it stopped",
            "interrupted": f"This chapter's run was **interrupted** ({profile} profile); before it stopped"}[status]
    if frame.empty:
        return head + " it tested no claim (its claims file, `claims/<chapter>.csv`, is absent or empty), so nothing here is a verdict.\n"
    order = {v: i for i, v in enumerate(TESTED)}
    families = [f for f in claims.FAMILIES if (frame["family"] == f).any()]
    parts = [f"{head}: " + "; ".join(f"**{family}** ({family_size(frame, family)}): {claims.counts_text(frame[frame['family'] == family])}"
                                     for family in families) + ".\n"]
    encoder = encoder_note(state)
    if encoder:
        parts.append(encoder)
    for family in families:
        tested = frame[(frame["family"] == family) & frame["verdict"].isin(TESTED)]
        tested = tested.assign(_order=tested["verdict"].map(order)).sort_values("_order", kind="stable")
        label = f"*{family.capitalize()} family*" + (" (the chapter's central claims)" if family == "primary" else "")
        if len(tested):
            parts.append(label + ":\n")
            parts.append(md_table(COLUMNS, [finding_cells(r) for r in tested.to_dict("records")], css_class=FINDINGS_CLASS))
        else:
            parts.append(label + ": no claim could be tested in this run.\n")
    parts.append("Each family has its own Holm correction, never pooled. A verdict is about the direction of a difference "
                 f"in this design{_about(frame)}. *Ours*: left − right with its 95 % interval over training seeds and test "
                 "items; the verdict rests on the interval at the level Holm's procedure tests the claim at within its family "
                 "(not a simultaneous interval: the claims file has those); the *detectable gap* is the smallest this design "
                 "finds with 80 % power, in brackets were the seeds' spread at its upper bound "
                 "([how a claim is tested](statistics.md)).\n")
    note = power_note(state)
    if note:
        parts.append(note)
    groups = not_tested_groups(frame)
    if groups:
        parts.append(f"{sum(len(g[2]) for g in groups)} claims not tested, by table and reason (click a line to list them):\n")
        parts.append(_folded(groups))
    return "\n".join(parts)


__all__ = ["CHAPTER_BUDGET_MINUTES", "COLUMNS", "STATUSES", "build_banner", "central_claim", "chapter_status", "family_size",
           "finding_cells", "findings_section",
           "not_tested_groups", "power_note", "reason_kind", "trained_models"]
