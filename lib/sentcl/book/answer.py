"""The introduction's answer to the book's question, "do contrastive sentence embeddings really work?",
generated from an output folder's claims (:mod:`sentcl.book.claims`): the geometry chapter's equal-budget
claims -- each newer method against plain MNRL *and* against the untouched base model it started from --
and each paper chapter's verdicts. It counts verdicts, never signs, and names the limits of the run it
reads (the encoder, the steps each model trained, the test items) inside the answer itself.
"""

from __future__ import annotations

import pandas as pd

from . import claims

BASELINE = "MNRL"
NEWER = ("BSC", "RCL", "IFCL")
BASE_ROW = "base (untouched)"
PROFILE_WORDS = {"demo": "the demo profile (a miniature)", "smoke": "the smoke profile (a test run)",
                 "rehearsal": "the rehearsal profile (the paper schedules on a tiny stand-in)", "paper": "the paper profile"}


def answer(states) -> str:
    """MyST markdown: the equal-budget verdicts of the geometry chapter's run and the papers' verdicts
    (``states``: :func:`sentcl.book.pages.chapter_states`)."""
    geometry = next((s for s in states if s.chapter == "geometry"), None)
    if geometry is None or not geometry.ran or geometry.claims.empty:
        return ("**No answer in this build**: the geometry chapter (the four methods under one budget) did not "
                "run into this output folder or wrote no claims (`sentcl reproduce --only geometry`).\n")
    profile = (geometry.profiles or ["?"])[0]
    frame = geometry.claims
    lines = []
    costs = geometry.compared[geometry.compared["column"] == "cost × MNRL"].set_index("row")["value"]
    for method in (BASELINE, *NEWER):
        said = [_verdict(frame, method, against) for against in ((BASE_ROW,) if method == BASELINE else (BASELINE, BASE_ROW))]
        if any(said):
            cost = f"; it costs {costs[method]:.2f} × MNRL" if method != BASELINE and method in costs.index else ""
            lines.append(f"- **{method}**: " + "; ".join(s for s in said if s) + cost + ".")
    papers = [f"{s.chapter}: {claims.counts_text(s.claims)}" for s in states
              if s.chapter != "geometry" and s.ran and not s.claims.empty]
    head = (f"**In {PROFILE_WORDS.get(profile, profile + ' profile')}**, every method trained from one base model on "
            f"the same pairs for the same steps and seeds, each difference tested against the noise of the seeds and "
            f"the test items together (95 % intervals, Holm-corrected):")
    parts = [head, "", *lines, "", _limits(geometry)]
    if papers:
        parts += ["", "The papers' own claims that this build tested (verdicts, each chapter's claims file): "
                  + "; ".join(papers) + "."]
    if geometry.sample:
        parts += ["", "*This build ran on the project's sample data: it tests the code, not the methods.*"]
    return "\n".join(parts) + "\n"


def _verdict(frame: pd.DataFrame, left: str, right: str) -> str:
    found = frame[(frame["left"] == left) & (frame["right"] == right) & (frame["column"] == "Average")]
    if found.empty:
        return ""
    c = found.iloc[0]
    against = "the untouched base" if right == BASE_ROW else right
    if c["verdict"] == "not tested":
        return f"against {against}: not tested ({c['reason']})"
    word = {"holds": "better", "contradicted": "worse", "undetermined": "not distinguishable"}[c["verdict"]]
    return (f"against {against} {word} (average STS Spearman {c['delta']:+.2f} points, 95 % interval "
            f"[{c['ci_low']:+.2f}, {c['ci_high']:+.2f}]: {c['verdict']})")


def _limits(geometry) -> str:
    """What the run this answer reads could and could not test: the encoder, steps per model, test items."""
    steps = sorted({h["trained_steps"] for ev in geometry.evidence.values() for column in ev.columns
                    for h in ev.health(column) if h is not None})
    sizes: dict[str, int] = {}
    for ev in geometry.evidence.values():
        for key, t in ev.tasks.items():
            sizes.setdefault(key, t["n"])
    encoders = sorted({str(n) for n in geometry.compared["note"].dropna() if "stands in for" in str(n)})
    stand_in = f"The encoder is a stand-in ({'; '.join(encoders[:1])}). " if encoders else ""
    if any("MiniLM" in e for e in encoders):
        stand_in += ("all-MiniLM-L6-v2 was already trained on over a billion sentence pairs, NLI among them: these "
                     "objectives can only nudge it, and its numbers test what it can still learn, not the papers' "
                     "models. ")
    trained = f"Each model trained {', '.join(map(str, steps))} optimizer steps. " if steps else ""
    items = ("Test items: " + ", ".join(f"{k} {n:,}" for k, n in sizes.items()) + ". ") if sizes else ""
    return f"*Limits of this run:* {stand_in}{trained}{items}".rstrip() + "\n"


__all__ = ["answer"]
