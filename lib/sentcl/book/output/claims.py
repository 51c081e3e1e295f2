"""Claims, as data: does a paper's ordering of two rows (or one of ours) hold, beyond the noise?

A reproduction, a miniature one above all, may miss a paper's numbers and still confirm or refute what
the paper concludes from them: that one method beats another. A difference is a finding only when it
stands out from the noise of both the training seeds and the test items, so every claim is tested on
the rows' evidence (:mod:`sentcl.book.output.evidence`: per-item scores per seed, training health):

- ``delta`` = left − right (mean over seeds, all test items), in the table's units; for a paper's
  ordering, left is the row the paper puts above, and ``paper_gap`` = ``paper_left`` − ``paper_right``;
- ``ci_low``, ``ci_high``: its marginal 95 % interval, delta ± t SE over training seeds and test items
  (:func:`sentcl.evaluation.significance.difference_interval`: the seeds' Welch t, the items' bootstrap
  variance, Satterthwaite's df; paired over items, and over seeds where the two rows' seed k share data
  order and initialisation: ``design``);
- ``p``: the t p-value of "no difference", ``p_holm`` Holm-adjusted over the chapter's tested claims;
- ``adj_low``, ``adj_high``: the interval at the level Holm's procedure tests the claim at
  (:func:`sentcl.evaluation.significance.holm_levels`), the one the verdict rests on: ``holds`` (left
  above right) or ``contradicted`` (below) exactly when it excludes 0 (then ``p_holm`` < 0.05);
  ``undetermined`` otherwise, and whenever a trained row has a single seed (its seed-to-seed spread is
  then unmeasured: no adjusted interval, no detectable effect); ``not tested`` when a row it rests on
  did not run, a model it rests on did not train or did not learn (health), the two rows were scored
  on different test items, a row has no per-item scores, or the column sits at a known ceiling --
  ``reason`` says which;
- ``mde``: the minimum detectable effect of the claim's design at 80 % power
  (:meth:`~sentcl.evaluation.significance.Difference.mde`) at Holm's first, strictest level 0.05 / m (m
  the tested claims: conservative for every later step), in the table's units; :func:`detectable` says
  whether the paper's gap is at least that large; ``seed_se`` and ``item_se`` are the two parts of its
  standard error (training seeds, test items), from which :func:`seeds_for_gap` tells how many seeds
  would bring ``mde`` down to the paper's gap, if any number can.

``<out>/claims/<chapter>.csv`` holds one row per claim (:data:`CLAIM_COLUMNS`); the chapter pages, the
scorecard and the introduction count its verdicts, never the signs of differences.
"""

from __future__ import annotations

import math
import os
import zlib
from collections.abc import Iterable, Mapping
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
    Difference,
    difference_interval,
    holm,
    holm_levels,
    item_resamples,
)
from ...io import atomic_write_text
from .evidence import Evidence
from .layout import Layout

VERDICTS = ("holds", "contradicted", "undetermined", "not tested")
CLAIM_COLUMNS = (
    "chapter", "table", "claim", "left", "right", "column", "delta", "ci_low", "ci_high", "p", "p_holm",
    "verdict", "reason", "design", "seeds_left", "seeds_right", "paper_left", "paper_right", "source",
    "paper_gap", "adj_low", "adj_high", "mde", "headline", "headline_row", "seed_se", "item_se",
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
    resamples: int = BOOTSTRAP_RESAMPLES,
    alpha: float = ALPHA_CLAIMS,
) -> pd.DataFrame:
    """Test every claim on the rows' ``evidence`` (module doc); one row per claim, :data:`CLAIM_COLUMNS`,
    with Holm's correction over the claims that could be tested."""
    matrices: dict[tuple[str, int], np.ndarray] = {}
    cache: dict[tuple[int, str], tuple[np.ndarray, np.ndarray]] = {}
    out: list[dict] = []
    differences: dict[int, Difference] = {}
    for claim in claims:
        gap = claim.paper_left - claim.paper_right if claim.paper_left is not None and claim.paper_right is not None else None
        rec = {c: None for c in CLAIM_COLUMNS} | {
            "chapter": chapter, "table": claim.table, "claim": claim.claim, "left": claim.left, "right": claim.right,
            "column": claim.column, "source": claim.source, "paper_left": claim.paper_left, "paper_right": claim.paper_right,
            "paper_gap": gap if claim.source == "paper" else None,
            "design": "paired over seeds and items" if claim.paired_seeds else "paired over items, unpaired over seeds",
        }
        why = _not_testable(claim, evidence)
        if why:
            out.append(rec | {"verdict": "not tested", "reason": why})
            continue
        left, right = _find(evidence, claim, claim.left), _find(evidence, claim, claim.right)
        assert left is not None and right is not None  # checked by _not_testable
        keys = left.column_tasks(claim.column)
        for key in keys:
            n = left.tasks[key]["n"]
            if (key, n) not in matrices:
                matrices[(key, n)] = item_resamples(n, resamples, seed=zlib.crc32(key.encode()))
        rs = {key: matrices[(key, left.tasks[key]["n"])] for key in keys}
        for side in (left, right):
            if (id(side), claim.column) not in cache:
                cache[(id(side), claim.column)] = side.column_values(claim.column, rs)
        (lf, lr), (rf, rr) = cache[(id(left), claim.column)], cache[(id(right), claim.column)]
        seeds_left, seeds_right = left.seeds(claim.column), right.seeds(claim.column)
        if claim.paired_seeds and seeds_left != seeds_right:
            raise ConfigError(f"{claim.claim}: paired over seeds, but the rows have seeds {seeds_left} and {seeds_right}")
        diff = difference_interval(lr, rr, list(lf), list(rf), paired_seeds=claim.paired_seeds,
                                   items=min(left.tasks[k]["n"] for k in keys))
        single = [side.row for side, seeds in ((left, seeds_left), (right, seeds_right))
                  if side.trained(claim.column) and len(seeds) < 2]
        low, high = diff.interval(alpha)
        shared = _shared(claim, left, right)
        rec |= {"delta": diff.delta, "ci_low": low, "ci_high": high, "p": diff.p,
                "seeds_left": len(seeds_left), "seeds_right": len(seeds_right), "reason": shared}
        if single:
            rec |= {"verdict": "undetermined", "reason": f"one training seed of {' and '.join(single)}: the seed-to-seed "
                    "spread is not measured (the interval holds the test items' noise only)" + shared, "p": math.nan}
        else:
            differences[len(out)] = diff
        out.append(rec)
    frame = pd.DataFrame(out, columns=list(CLAIM_COLUMNS))
    for seeds in ("seeds_left", "seeds_right"):
        frame[seeds] = frame[seeds].astype("Int64")
    for number in ("paper_gap", "adj_low", "adj_high", "mde", "seed_se", "item_se"):
        frame[number] = frame[number].astype(float)
    tested = frame.index[frame["verdict"].isna()]
    p = frame.loc[tested, "p"].astype(float).to_numpy()
    frame.loc[tested, "p_holm"] = holm(p)
    levels = holm_levels(p, alpha)
    for i, level in zip(tested, levels, strict=True):
        tested_diff: Difference = differences[i]
        low, high = tested_diff.interval(float(level))
        found = low > 0 or high < 0
        frame.loc[i, ["adj_low", "adj_high", "mde", "seed_se", "item_se"]] = [
            low, high, tested_diff.mde(alpha / len(tested)), tested_diff.seed_se, tested_diff.item_se]
        frame.loc[i, "verdict"] = ("holds" if tested_diff.delta > 0 else "contradicted") if found else "undetermined"
        frame.loc[i, "reason"] = f"Holm-adjusted p {frame.loc[i, 'p_holm']:.2g}" + (
            "" if found else ": the difference does not stand out from the noise of seeds and test items") + frame.loc[i, "reason"]
    return frame


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
    return evidence.find(claim.table, row, elsewhere=claim.source == "ours")


def _not_testable(claim: Claim, evidence: Evidence) -> str:
    """Why ``claim`` cannot be tested ("" when it can)."""
    reasons = []
    for name in (claim.left, claim.right):
        row = _find(evidence, claim, name)
        if row is None:
            reasons.append(f"{name} has no per-item scores in this run")
        elif row.not_run_for(claim.column):
            reasons.append(f"{name} not run: {row.not_run_for(claim.column)}")
        elif claim.column not in row.columns:
            reasons.append(f"{name} has no per-item scores for {claim.column}")
        elif row.inactive(claim.column):
            reasons.append(f"{name} rests on a model that did not train or did not learn, {row.inactive(claim.column)}")
    if claim.untestable:  # the column's own reason (a metric at its ceiling, fold means), said beside the rows'
        reasons.append(claim.untestable)
    if reasons:
        return "; ".join(reasons)
    left, right = _find(evidence, claim, claim.left), _find(evidence, claim, claim.right)
    assert left is not None and right is not None
    for key in left.column_tasks(claim.column):
        if key not in right.tasks or left.tasks[key]["fingerprint"] != right.tasks[key]["fingerprint"]:
            return f"{claim.left} and {claim.right} were not scored on the same {key} test items"
    return ""


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
    """E.g. "2 hold, 0 contradicted, 9 undetermined, 3 not tested" (of the claims in ``frame``)."""
    n = verdict_counts(frame)
    return (f"{n['holds']} hold, {n['contradicted']} contradicted, {n['undetermined']} undetermined, "
            f"{n['not tested']} not tested")


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


def sentence(claim: Mapping) -> str:
    """One claim as a sentence: what it says, the paper's gap (for its orderings), ours with its 95 %
    interval and the Holm-level interval its verdict rests on, the gap its design could detect, the
    verdict and why; an undetermined claim whose design cannot see the paper's gap says so."""
    text = f"{claim['claim']} ({claim['table']}, {claim['column']})"
    if claim["source"] == "paper" and finite(claim["paper_left"]) and finite(claim["paper_right"]):
        text += (f": paper {claim['paper_left']:.2f} vs {claim['paper_right']:.2f} "
                 f"({claim['paper_left'] - claim['paper_right']:+.2f})")
    if finite(claim["delta"]):
        text += f"; ours {claim['delta']:+.2f}, 95% interval [{claim['ci_low']:+.2f}, {claim['ci_high']:+.2f}]"
    if finite(claim.get("adj_low")):
        text += (f", Holm-adjusted interval (the verdict's) [{claim['adj_low']:+.2f}, {claim['adj_high']:+.2f}]; "
                 f"smallest gap this design detects (80% power) {claim['mde']:.2f}")
    text = f"{text}: **{claim['verdict']}** ({claim['reason']})"
    if claim["verdict"] == "undetermined" and detectable(claim) is False:
        text += "; this design cannot see a gap the size the paper reports"
    return text + "."


def finite(value) -> bool:
    """Whether ``value`` is a finite number (a claims file's empty cell reads as NaN or None)."""
    return value is not None and isinstance(value, (int, float, np.floating)) and math.isfinite(value)


__all__ = [
    "CLAIM_COLUMNS",
    "VERDICTS",
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
