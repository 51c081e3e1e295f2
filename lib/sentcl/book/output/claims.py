"""Claims, as data: does a paper's ordering of two rows (or one of ours) hold, beyond the noise?

A reproduction, a miniature one above all, may miss a paper's numbers and still confirm or refute what
the paper concludes from them: that one method beats another. A difference is a finding only when it
stands out from the noise of both the training seeds and the test items, so every claim is tested on
the rows' evidence (:mod:`sentcl.book.output.evidence`: per-item scores per seed, training health):

- ``delta`` = left − right (mean over seeds, all test items), in the table's units; for a paper's
  ordering, left is the row the paper puts above, and ``paper_gap`` = ``paper_left`` − ``paper_right``;
- ``family``: ``primary`` when the claim is one of the chapter's central claims (``central``: its key, "M1";
  :class:`Central`, declared by the chapter before anything runs), else ``secondary``; each family has its
  own Holm correction over ``family_m`` claims (``counted``: this claim is one of them): every claim the plan
  tests, whatever later happens to it.
  A claim the plan does not test (a row the profile or the data root leaves out: "not run"; a column
  declared untestable, such as a metric at its ceiling) is outside the count; a claim the plan tests but
  that cannot be decided after the run (a model that did not learn, a single training seed, seeds that
  gave identical values, an undefined metric, a row without per-item scores) counts as p = 1: the family
  never shrinks because a model failed;
- ``estimand``: what the claim is about (:data:`sentcl.evaluation.significance.ESTIMANDS`): ``test set``
  (the default, what each paper claims of its benchmarks: the item term times 1 − n/N, zero when every
  item is scored) or ``population`` (of such items: the item term whole);
- ``ci_low``, ``ci_high``: its marginal 95 % interval, delta ± t SE over training seeds and test items
  (:func:`sentcl.evaluation.significance.difference_interval`: the seeds' Welch t, the items' bootstrap
  variance without the seed x item interaction the seeds already hold, Satterthwaite's df; paired over
  items, and over seeds where the two rows' seed k share data order and initialisation: ``design``;
  paired rows whose seed lists differ fall back to Welch, and ``design`` says so); none when a trained
  row has a single seed (its seed noise is unmeasured);
- ``p``: the t p-value of "no difference", ``p_holm`` Holm-adjusted within the claim's family;
- ``adj_low``, ``adj_high``: the interval at the level Holm's procedure tests the claim at
  (:func:`sentcl.evaluation.significance.holm_levels`), the one the verdict rests on: it covers at that
  level, not jointly; ``direction reproduced`` (left above right: the claimed direction) or ``direction
  reversed`` (below) exactly when it excludes 0 (then ``p_holm`` < 0.05); ``undetermined`` otherwise, and
  whenever a trained row has a single seed or its seeds gave identical values; ``not tested`` when a row
  it rests on did not run, a model it rests on did not train or did not learn (health), the two rows
  were scored on different test items, a row has no per-item scores, its metric is undefined, or the
  column sits at a known ceiling -- ``reason`` says which;
- ``sim_low``, ``sim_high``: the simultaneous 95 % interval of the family (Bonferroni, at 0.05 / m): all
  of a family's simultaneous intervals cover their true gaps together 95 % of the time;
- ``mde``: the smallest gap the claim's design detects with 80 % power
  (:meth:`~sentcl.evaluation.significance.Difference.mde`) at Holm's first, strictest level 0.05 / m, in
  the table's units, and ``mde_high`` the same with the seed variance at its upper 90 % bound (a few
  seeds measure their spread loosely); :func:`detectable` says whether the paper's gap is at least
  ``mde``; ``seed_se`` and ``item_se`` are the two parts of its standard error (training seeds, test
  items), from which :func:`seeds_for_gap` tells how many seeds would bring ``mde`` down to the paper's
  gap, if any number can; ``df`` the degrees of freedom of its t (Satterthwaite's, module doc of
  :mod:`sentcl.evaluation.significance`).

``<out>/claims/<chapter>.csv`` holds one row per claim (:data:`CLAIM_COLUMNS`); the chapter pages, the
scorecard and the introduction count its verdicts, never the signs of differences.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...errors import ConfigError
from ...evaluation.significance import (
    ALPHA_CLAIMS,
    BOOTSTRAP_RESAMPLES,
    ESTIMAND,
    Difference,
    difference_interval,
    holm,
    holm_levels,
    item_resamples,
    item_share,
)
from ...io import atomic_write_text
from .evidence import Evidence
from .layout import Layout

REPRODUCED, REVERSED, UNDETERMINED, NOT_TESTED = "direction reproduced", "direction reversed", "undetermined", "not tested"
VERDICTS = (REPRODUCED, REVERSED, UNDETERMINED, NOT_TESTED)
"""A verdict is about the direction of a difference in this design, never "no difference"."""
DECIDED = (REPRODUCED, REVERSED)
TESTED = (REPRODUCED, REVERSED, UNDETERMINED)
FAMILIES = ("primary", "secondary")
CLAIM_COLUMNS = (
    "chapter", "table", "claim", "left", "right", "column", "delta", "ci_low", "ci_high", "p", "p_holm",
    "verdict", "reason", "design", "seeds_left", "seeds_right", "paper_left", "paper_right", "source",
    "paper_gap", "adj_low", "adj_high", "mde", "headline", "headline_row", "seed_se", "item_se",
    "family", "central", "family_m", "counted", "estimand", "sim_low", "sim_high", "mde_high", "df",
)


@dataclass(frozen=True)
class Claim:
    """What to test: ``left`` above ``right`` on ``column`` of ``table`` (``source``: "paper" for one of
    the paper's orderings, with its two values; "ours" for one of the chapter's own, e.g. "fine-tuning
    beats the untouched encoder"). ``paired_seeds``: the two rows' seed k share data order and
    initialisation (the difference is then paired over seeds too). ``untestable``: why the column's
    values cannot tell the rows apart (a metric at its bound, values with no per-item scores), or ""."""

    table: str
    column: str
    left: str
    right: str
    claim: str = ""
    source: str = "paper"
    paired_seeds: bool = False
    paper_left: float | None = None
    paper_right: float | None = None
    untestable: str = ""

    def __post_init__(self) -> None:
        if self.source not in ("paper", "ours"):
            raise ConfigError(f"a claim's source is 'paper' or 'ours', got {self.source!r}")
        if not self.claim:
            object.__setattr__(self, "claim", f"{self.left} above {self.right}")


@dataclass(frozen=True)
class Central:
    """One of a chapter's central claims, its primary family, declared before anything runs (a chapter's
    :attr:`~sentcl.book.chapter_spec.Chapter.central` of the profile's parameters): ``key`` ("M1"), ``words``
    (what the paper concludes), and the ``pairs`` of rows whose ordering it rests on, in either order, on
    ``table`` (None: every table where a claim compares the two rows)."""

    key: str
    words: str
    pairs: tuple[tuple[str, str], ...]
    table: str | None = None

    def __post_init__(self) -> None:
        if not self.pairs:
            raise ConfigError(f"central claim {self.key}: no pair of rows")

    def covers(self, claim: Claim) -> bool:
        """Whether ``claim`` compares one of the pairs (on :attr:`table`, when given)."""
        return (self.table is None or claim.table == self.table) and frozenset((claim.left, claim.right)) in {
            frozenset(p) for p in self.pairs}


def headline_columns(compared: pd.DataFrame, table: str) -> list[str]:
    """The columns a table's orderings are read on: its ``Average`` when it has one (the papers'
    summary of several tasks), else every column it has (one metric or task each), in order."""
    columns = list(dict.fromkeys(compared.loc[compared["table"] == table, "column"]))
    return ["Average"] if "Average" in columns else columns


def paper_orderings(
    compared: pd.DataFrame, rows: Iterable[tuple[str, str]], *, paired: Mapping[frozenset, bool] | None = None
) -> list[Claim]:
    """Every ordering of two rows the paper reports (its values differ) on each table's headline columns
    (:func:`headline_columns`), between the ``rows`` ((table, row) pairs: those this run recorded, or
    said it did not run), left = the row the paper puts above; ``paired`` says which pairs of rows share
    seeds."""
    rows, paired = set(rows), dict(paired or {})
    found = []
    for table in dict.fromkeys(compared["table"]):
        for column in headline_columns(compared, table):
            part = compared[(compared["table"] == table) & (compared["column"] == column) & compared["paper_value"].notna()]
            part = part[[(table, r) in rows for r in part["row"]]]
            for (_, a), (_, b) in combinations(part.iterrows(), 2):
                if math.isclose(a["paper_value"], b["paper_value"]):
                    continue
                hi, lo = (a, b) if a["paper_value"] > b["paper_value"] else (b, a)
                found.append(Claim(table, column, hi["row"], lo["row"], source="paper",
                                   paired_seeds=paired.get(frozenset((hi["row"], lo["row"])), False),
                                   paper_left=float(hi["paper_value"]), paper_right=float(lo["paper_value"])))
    return found


def evaluate_claims(
    chapter: str,
    claims: Iterable[Claim],
    evidence: Evidence,
    *,
    central: Iterable[Central] = (),
    estimand: str = ESTIMAND,
    resamples: int = BOOTSTRAP_RESAMPLES,
    alpha: float = ALPHA_CLAIMS,
) -> pd.DataFrame:
    """Test every claim on the rows' ``evidence`` (module doc); one row per claim, :data:`CLAIM_COLUMNS`. The
    claims that ``central`` covers are the primary family (a central pair no claim compares is added, not
    tested), the rest the secondary; Holm's correction runs within each family over the claims its plan tests."""
    central = list(central)
    found = list(claims)
    for c in central:
        for pair in c.pairs:
            if not any(_owner(claim, central) == c.key and {claim.left, claim.right} == set(pair) for claim in found):
                found.append(Claim(c.table or "not recorded", "", *pair, claim=f"{pair[0]} vs {pair[1]}",
                                   untestable="neither ordering is a claim of this build: a row this profile does not record"))
    matrices: dict[tuple[str, int], np.ndarray] = {}
    cache: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    out: list[dict] = []
    differences: dict[int, Difference] = {}
    counted: set[int] = set()  # claims the plan tests that could not be decided: p = 1 in their family
    for claim in found:
        key = _owner(claim, central)
        gap = claim.paper_left - claim.paper_right if claim.paper_left is not None and claim.paper_right is not None else None
        rec = {c: None for c in CLAIM_COLUMNS} | {
            "chapter": chapter, "table": claim.table, "claim": claim.claim, "left": claim.left, "right": claim.right,
            "column": claim.column, "source": claim.source, "paper_left": claim.paper_left, "paper_right": claim.paper_right,
            "paper_gap": gap if claim.source == "paper" else None, "estimand": estimand,
            "family": "primary" if key else "secondary", "central": key or None,
            "design": "paired over seeds and items" if claim.paired_seeds else "paired over items, unpaired over seeds",
        }
        planned, why = _not_testable(claim, evidence)
        if why:
            if planned:
                counted.add(len(out))
            out.append(rec | {"verdict": NOT_TESTED, "reason": why})
            continue
        left, right = _find(evidence, claim, claim.left), _find(evidence, claim, claim.right)
        assert left is not None and right is not None  # checked by _not_testable
        keys = left.column_tasks(claim.column)
        for task_key in keys:
            n = left.tasks[task_key]["n"]
            if (task_key, n) not in matrices:
                matrices[(task_key, n)] = item_resamples(n, resamples, seed=zlib.crc32(task_key.encode()))
        rs = {k: matrices[(k, left.tasks[k]["n"])] for k in keys}
        shares = {k: item_share(estimand, left.tasks[k]["n"], left.tasks[k].get("population")) for k in keys}
        if any(left.tasks[k].get("population") is None for k in keys) and estimand != "population":
            rec["estimand"] = f"{estimand} (its size unrecorded: the item term whole)"
        for side in (left, right):
            if (id(side), claim.column) not in cache:
                cache[(id(side), claim.column)] = side.column_values(claim.column, rs, shares)
        (lf, lr), (rf, rr) = cache[(id(left), claim.column)], cache[(id(right), claim.column)]
        seeds_left, seeds_right = left.seeds(claim.column), right.seeds(claim.column)
        rec |= {"seeds_left": len(seeds_left), "seeds_right": len(seeds_right)}
        undefined = [f"{side.row} seed {s}" for side, seeds, full in ((left, seeds_left, lf), (right, seeds_right, rf))
                     for s, v in zip(seeds, full, strict=True) if not math.isfinite(v)]
        if undefined:
            counted.add(len(out))
            out.append(rec | {"verdict": NOT_TESTED, "reason": f"the metric is undefined (NaN) for {', '.join(undefined)}"})
            continue
        paired, note = claim.paired_seeds, ""
        if paired and seeds_left != seeds_right:
            paired, note = False, (f"; paired over seeds, but the rows have seeds {seeds_left} and {seeds_right}: "
                                   "unpaired over seeds (Welch)")
            rec["design"] = "paired over items, unpaired over seeds (the seed lists differ)"
        shared = _shared(claim, left, right) + note
        unmeasured = _seed_noise_unmeasured(claim.column, (left, seeds_left, lf), (right, seeds_right, rf))
        if unmeasured:
            counted.add(len(out))
            out.append(rec | {"verdict": UNDETERMINED, "reason": unmeasured + shared})
            continue
        diff = difference_interval(lr, rr, list(lf), list(rf), paired_seeds=paired, items=min(left.tasks[k]["n"] for k in keys))
        low, high = diff.interval(alpha)
        differences[len(out)] = diff
        out.append(rec | {"delta": diff.delta, "ci_low": low, "ci_high": high, "p": diff.p, "reason": shared})
    frame = pd.DataFrame(out, columns=list(CLAIM_COLUMNS))
    for seeds in ("seeds_left", "seeds_right", "family_m"):
        frame[seeds] = frame[seeds].astype("Int64")
    for number in ("delta", "ci_low", "ci_high", "p", "p_holm", "paper_gap", "adj_low", "adj_high", "mde", "seed_se", "item_se",
                   "sim_low", "sim_high", "mde_high", "df"):
        frame[number] = frame[number].astype(float)
    for family in FAMILIES:
        members = [i for i in frame.index[frame["family"] == family] if i in differences or i in counted]
        frame.loc[frame["family"] == family, "family_m"] = len(members)
        frame.loc[frame["family"] == family, "counted"] = [i in members for i in frame.index[frame["family"] == family]]
        if not members:
            continue
        p = [differences[i].p if i in differences else 1.0 for i in members]
        adjusted, levels = holm(p), holm_levels(p, alpha)
        m = len(members)
        for i, p_holm, level in zip(members, adjusted, levels, strict=True):
            if i not in differences:
                continue
            diff = differences[i]
            low, high = diff.interval(float(level))
            decided = low > 0 or high < 0
            frame.loc[i, ["p_holm", "adj_low", "adj_high", "sim_low", "sim_high", "mde", "mde_high", "seed_se", "item_se", "df"]] = [
                p_holm, low, high, *diff.interval(alpha / m), diff.mde(alpha / m),
                diff.at_upper_seed_variance().mde(alpha / m), diff.seed_se, diff.item_se, diff.df]
            frame.loc[i, "verdict"] = (REPRODUCED if diff.delta > 0 else REVERSED) if decided else UNDETERMINED
            frame.loc[i, "reason"] = f"Holm-adjusted p {p_holm:.2g} ({family} family of {m})" + (
                "" if decided else ": the difference does not stand out from the noise of seeds and test items") + frame.loc[i, "reason"]
    return frame


def _owner(claim: Claim, central: Sequence[Central]) -> str:
    """The key of the central claim ``claim`` belongs to ("": none, the secondary family): the first that names
    the claim's table and covers it, else the first of any table that covers it."""
    for named in (True, False):
        for c in central:
            if (c.table is not None) == named and c.covers(claim):
                return c.key
    return ""


def _seed_noise_unmeasured(column: str, *sides: tuple[Any, list[int], np.ndarray]) -> str:
    """Why the seed-to-seed spread of a trained side is not measured ("" when every trained side's is): one
    training seed, or seeds whose values are identical (the seed did not reach the model: a wiring slip, or
    a model the seed does not change)."""
    why = []
    for side, seeds, full in sides:
        if not side.trained(column):
            continue
        if len(seeds) < 2:
            why.append(f"one training seed of {side.row}: the seed-to-seed spread is not measured, so no interval")
        elif np.ptp(full) == 0:
            why.append(f"the {len(seeds)} seeds of {side.row} gave identical values ({full[0]:.4g}): the seed did not "
                       "change the trained model, so its spread is not measured")
    return "; ".join(why)


def _shared(claim: Claim, *rows) -> str:
    """"; ..." naming the models whose seeds share a trained component (its variability is not in the
    interval), or ""."""
    shared = list(dict.fromkeys(name for row in rows for name in row.shared(claim.column)))
    return (f"; every seed shares {', '.join(shared)} (trained once): their training variability is not in the interval"
            if shared else "")


def mark_headlines(frame: pd.DataFrame, headlines: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    """Mark a chapter's headline claims, the ones the introduction's answer reads (:mod:`sentcl.book.pages.answer`):
    ``headlines`` maps a kind ("baseline": the method against its paper's baseline; "untouched": against the
    untouched encoder) to (the method's row, the other row); the first claim between those two rows, in either
    order, gets ``headline`` = the kind and ``headline_row`` = the method's row. A pair no claim compares is an
    error naming it (a headline that silently vanished would leave the answer's cell empty)."""
    frame = frame.copy()
    for column in ("headline", "headline_row"):
        if column not in frame.columns:
            frame[column] = None
        frame[column] = frame[column].astype(object)
    for kind, (method, other) in headlines.items():
        found = frame.index[((frame["left"] == method) & (frame["right"] == other))
                            | ((frame["left"] == other) & (frame["right"] == method))]
        if not len(found):
            raise ConfigError(f"headline {kind!r}: no claim compares {method!r} with {other!r} "
                              f"(the claims compare {sorted(set(zip(frame['left'], frame['right'], strict=True)))[:8]} ...)")
        frame.loc[found[0], ["headline", "headline_row"]] = [kind, method]
    return frame


def _find(evidence: Evidence, claim: Claim, row: str):
    """The evidence of ``row`` for ``claim``: a claim of ours may rest on the row recorded under another table
    (its own table is "our claims"); a paper's only on the row of the table it is about."""
    return evidence.find(claim.table, row, elsewhere=claim.source == "ours", column=claim.column)


def _not_testable(claim: Claim, evidence: Evidence) -> tuple[bool, str]:
    """Why ``claim`` cannot be tested ("" when it can), and whether the plan tests it: a row not run (the
    profile or the data root leaves it out) or a column declared untestable is known before anything
    trains, and outside its family's count; any other reason arises in the run, and counts as p = 1."""
    if not claim.column:  # a central pair no claim of this build compares (evaluate_claims): its reason alone
        return False, claim.untestable
    reasons, planned = [], True
    for name in (claim.left, claim.right):
        row = _find(evidence, claim, name)
        if row is None:
            reasons.append(f"{name} has no per-item scores in this run")
        elif row.not_run_for(claim.column):
            reasons.append(f"{name} not run: {row.not_run_for(claim.column)}")
            planned = False
        elif claim.column not in row.columns:
            reasons.append(f"{name} has no per-item scores for {claim.column}")
        elif row.inactive(claim.column):
            reasons.append(f"{name} rests on a model that did not train or did not learn, {row.inactive(claim.column)}")
    if claim.untestable:  # the column's own reason (a metric at its ceiling, fold means), said beside the rows'
        reasons.append(claim.untestable)
        planned = False
    if reasons:
        return planned, "; ".join(reasons)
    left, right = _find(evidence, claim, claim.left), _find(evidence, claim, claim.right)
    assert left is not None and right is not None
    for key in left.column_tasks(claim.column):
        if key not in right.tasks or left.tasks[key]["fingerprint"] != right.tasks[key]["fingerprint"]:
            return True, f"{claim.left} and {claim.right} were not scored on the same {key} test items"
    return True, ""


def write_claims(out_dir: str | os.PathLike, chapter: str, frame: pd.DataFrame) -> Path:
    """Write a chapter's claims (:func:`evaluate_claims`) to ``<out>/claims/<chapter>.csv``, atomically (a column
    the frame lacks, such as ``headline`` of a chapter that marks none, is written empty)."""
    return atomic_write_text(Layout(out_dir).claims(chapter), frame.reindex(columns=list(CLAIM_COLUMNS)).to_csv(index=False))


def read_claims(out_dir: str | os.PathLike, chapter: str) -> pd.DataFrame:
    """A chapter's claims file (an empty frame when there is none)."""
    path = Layout(out_dir).claims(chapter)
    if not path.is_file():
        return pd.DataFrame(columns=list(CLAIM_COLUMNS))
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    missing = set(CLAIM_COLUMNS) - set(frame.columns)
    if missing:
        from ...errors import DataFormatError

        raise DataFormatError(path, 1, f"the claims columns {', '.join(CLAIM_COLUMNS)}", f"missing {sorted(missing)}")
    return frame


def verdict_counts(frame: pd.DataFrame) -> dict[str, int]:
    """How many claims have each verdict, in :data:`VERDICTS` order."""
    return {v: int((frame["verdict"] == v).sum()) for v in VERDICTS} if len(frame) else dict.fromkeys(VERDICTS, 0)


def counts_text(frame: pd.DataFrame) -> str:
    """E.g. "2 direction reproduced, 0 direction reversed, 9 undetermined, 3 not tested" (of the claims in ``frame``)."""
    return ", ".join(f"{n} {verdict}" for verdict, n in verdict_counts(frame).items())


def detectable(claim: Mapping) -> bool | None:
    """Whether the claim's design could detect a gap the size the paper reports (|paper_gap| >= mde);
    None when either is missing (a claim of our own, or one not tested)."""
    if not (finite(claim.get("paper_gap")) and finite(claim.get("mde"))):
        return None
    return bool(abs(claim["paper_gap"]) >= claim["mde"])


def seeds_for_gap(claim: Mapping) -> float | None:
    """How many training seeds per trained row would bring the claim's detectable gap (``mde``) down to the
    paper's gap: with S seeds today, the seed part of the variance shrinks as S / S' and the items' part stays
    (the test set is the task's), the multiplier mde / se held at today's (its df grow with seeds: this
    errs towards more seeds). ``math.inf`` when the items' noise alone hides the paper's gap (no number of seeds
    can); None when the claim has no paper gap or no measured detectable gap; today's S when it is detectable."""
    needed: list[Any] = [claim.get(k) for k in ("paper_gap", "mde", "seed_se", "item_se")]
    if not all(finite(v) for v in needed):
        return None
    gap, mde, seed_se, item_se = (float(v) for v in needed)
    seeds = max(int(claim["seeds_left"]), int(claim["seeds_right"]))
    if abs(gap) >= mde:
        return float(seeds)
    within = (abs(gap) * math.hypot(seed_se, item_se) / mde) ** 2  # the variance at which mde = |gap|
    if within <= item_se ** 2 or seed_se == 0:
        return math.inf
    return float(math.ceil(seeds * seed_se ** 2 / (within - item_se ** 2)))


POWER_SHORT = "under 80 % power at the paper's gap"
"""What an undetermined claim's design is said to have when the paper's gap is below its detectable gap: a
statement about power, not that the gap is invisible (the detectable gap, from a few seeds, is itself uncertain)."""


def sentence(claim: Mapping) -> str:
    """One claim as a sentence: what it says, its family, the paper's gap (for its orderings), ours with its
    95 % interval, the interval at Holm's step its verdict rests on and the family's simultaneous one, the gap
    its design detects with 80 % power (and at the seeds' upper variance), the verdict and why; an
    undetermined claim whose design has under 80 % power at the paper's gap says so."""
    family = claim.get("family")
    central = f"{claim['central']}, " if isinstance(claim.get("central"), str) and claim["central"] else ""
    text = f"{claim['claim']} ({central}{claim['table']}, {claim['column']}" + (f"; {family} family" if isinstance(family, str) else "") + ")"
    if claim["source"] == "paper" and finite(claim["paper_left"]) and finite(claim["paper_right"]):
        text += (f": paper {claim['paper_left']:.2f} vs {claim['paper_right']:.2f} "
                 f"({claim['paper_left'] - claim['paper_right']:+.2f})")
    if finite(claim["delta"]):
        text += f"; ours {claim['delta']:+.2f}, 95% interval [{claim['ci_low']:+.2f}, {claim['ci_high']:+.2f}]"
    if finite(claim.get("adj_low")):
        text += (f", at Holm's step (the verdict's interval) [{claim['adj_low']:+.2f}, {claim['adj_high']:+.2f}]")
        if finite(claim.get("sim_low")):
            text += f", simultaneous over the family [{claim['sim_low']:+.2f}, {claim['sim_high']:+.2f}]"
        text += f"; detectable gap (80% power) {claim['mde']:.2f}"
        if finite(claim.get("mde_high")):
            text += f" (up to {claim['mde_high']:.2f} were the seeds' spread at its upper bound)"
    text = f"{text}: **{claim['verdict']}** ({claim['reason']})"
    if claim["verdict"] == UNDETERMINED and detectable(claim) is False:
        text += f"; {POWER_SHORT}"
    return text + "."


def finite(value) -> bool:
    """Whether ``value`` is a finite number (a claims file's empty cell reads as NaN or None)."""
    return value is not None and isinstance(value, (int, float, np.floating)) and math.isfinite(value)


__all__ = [
    "CLAIM_COLUMNS",
    "DECIDED",
    "FAMILIES",
    "NOT_TESTED",
    "POWER_SHORT",
    "REPRODUCED",
    "REVERSED",
    "TESTED",
    "UNDETERMINED",
    "VERDICTS",
    "Central",
    "Claim",
    "counts_text",
    "detectable",
    "finite",
    "headline_columns",
    "mark_headlines",
    "paper_orderings",
    "read_claims",
    "seeds_for_gap",
    "sentence",
    "evaluate_claims",
    "verdict_counts",
    "write_claims",
]
