"""The generated pages of the book, as MyST markdown: each chapter's results fragment (run
status, every paper table beside ours, the orderings), the scorecard, the datasets appendix,
the environment page and the timings, all read from an output folder's results files, figures
and run records (:func:`chapter_states`). :mod:`sentcl.book.publishing.site` writes them into the staged
book sources.

No page names a path of the machine that built it: the data roots, the output folder and the
checkout are shown by name (``$SENTCL_DATA``, ``<out>``, ``data/samples``), and any other
absolute path is cut to its last part (:mod:`sentcl.book.redaction`). Agreement
colours and counts appear only for runs of the paper's profile
(:func:`sentcl.book.pages.report.judged`); for a miniature the scorecard counts the paper's
orderings that hold (:mod:`sentcl.book.output.claims`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...chapters import CHAPTERS
from ...chapters import chapter as chapter_named
from ...io import read_json
from ...training.health import learning_judged
from ..chapter_spec import Chapter
from ..estimates.coverage import COVERAGE, read_coverage
from ..markdown import WIDE_PAGE, duration, full_width, md, md_table, raw_html
from ..output import claims
from ..output.evidence import load_evidence
from ..output.layout import Layout
from ..output.results import load_results
from ..output.run_records import RunRecord, read_run_records
from ..profiles import PROFILES
from ..redaction import DATA_ROOT_LABEL, data_root_label, public_text
from . import report
from .findings import build_banner

GENERATED = Path("book") / "_generated"
REHEARSAL = ("the paper profile's schedules, rows and tables on a tiny random stand-in encoder and capped data: it "
             "tests whether every stage of the paper's schedule trains; its numbers and claims say nothing about the papers")
"""The rehearsal note of the generated pages, written once (the hand-written one: ``book/_shared/rehearsal.md``)."""
ORDERINGS_ON = "Average column, or on each column of a table without one"  # claims.headline_columns
CLAIMS_RULE = (
    "each tested against the noise of its training seeds and test items together (the seeds' Welch t, the items' "
    "bootstrap variance without the seed x item interaction the seeds already hold, about the scored test set), "
    "Holm-corrected within its chapter's family (primary: the chapter's central claims, declared before the run; "
    "secondary: the rest; a claim the plan tests that a failed model leaves undecided counts at p = 1): "
    "*direction reproduced* or *direction reversed* only when the interval at Holm's step excludes 0, "
    "*undetermined* when it does not (or a trained row has one seed), *not tested* when a row did not run, rests "
    "on a model that did not train or did not learn, or sits at a metric's ceiling (the method: statistics.md)"
)


@dataclass
class ChapterState:
    """What an output folder holds for one chapter."""

    chapter: str
    title: str
    has_notebook: bool  # notebooks/<chapter>.ipynb exists in the checkout
    executed: Path | None  # the executed notebook in the output folder
    record: RunRecord | None  # its latest notebook run record
    compared: pd.DataFrame  # paper values beside results (sentcl.book.pages.report.compare)
    figures: list[dict] = field(default_factory=list)
    data_used: dict | None = None
    claims: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(claims.CLAIM_COLUMNS)))
    evidence: dict = field(default_factory=dict)  # (table, row) -> the RowEvidence of the chapter's run (sentcl.book.output.evidence)
    coverage: pd.DataFrame | None = None  # what a paper-profile run fills on the run's data root (sentcl.book.estimates.coverage)

    @property
    def spec(self) -> Chapter:
        """The chapter's object (:class:`sentcl.book.chapter_spec.Chapter`)."""
        return chapter_named(self.chapter)

    @property
    def ran(self) -> bool:
        """Whether this output folder has a run of the chapter (a run record or results)."""
        return self.record is not None or self.compared["run_id"].notna().any()

    @property
    def sample(self) -> bool:
        ran_on_samples = bool(self.record and self.record.config.get("sample"))
        return ran_on_samples or bool((self.compared["status"] == "sample-data").any())

    @property
    def profiles(self) -> list[str]:
        """The profiles of this chapter's results (else of its run record)."""
        found = sorted(set(self.compared["profile"].dropna()))
        return found or ([self.record.profile] if self.record and self.record.profile else [])

    @property
    def miniature(self) -> bool:
        """Whether this chapter's results come from a miniature (not the paper's model and data),
        whose agreement with the paper's numbers is not judged."""
        done = self.compared[self.compared["status"] != "cited"]
        if len(done):
            return not bool(done["judged"].astype(bool).all())
        return bool(self.ran and (self.sample or (self.record and not report.judged(self.record.profile, "reproduced"))))

    @property
    def rehearsal(self) -> bool:
        """Whether this chapter's results come from the rehearsal profile alone (a tiny stand-in on the paper's
        schedules: its numbers and claims test the code, not the paper)."""
        return self.ran and bool(self.profiles) and all(PROFILES[p].stand_in for p in self.profiles if p in PROFILES)

    def data_roots(self) -> list[Path]:
        """The data roots this chapter's run read (its data_used file and run record)."""
        roots = []
        if self.data_used and self.data_used.get("data_root"):
            roots.append(Path(self.data_used["data_root"]))
        if self.record and self.record.config.get("data_root"):
            roots.append(Path(self.record.config["data_root"]))
        return list(dict.fromkeys(roots))


def chapter_states(root: Path, out: Path) -> list[ChapterState]:
    records = [r for r in read_run_records(Layout(out).records) if r.kind == "notebook"]
    results = load_results(out)
    states = []
    for chapter, spec in CHAPTERS.items():
        mine = [r for r in records if r.chapter == chapter]
        record = mine[-1] if mine else None
        executed = Layout(out).notebook(chapter)
        compared = report.compare(chapter, results)
        run_ids = set(compared["run_id"].dropna()) | ({record.run_id} if record else set())
        used = Layout(out).data_used(chapter)
        states.append(
            ChapterState(
                chapter=chapter,
                title=spec.title,
                has_notebook=(root / "notebooks" / f"{chapter}.ipynb").is_file(),
                executed=executed if executed.is_file() else None,
                record=record,
                compared=compared,
                figures=[f for f in report.figures(out, chapter) if f.get("run_id") in run_ids],
                data_used=read_json(used, "a data-used log") if used.is_file() else None,
                claims=claims.read_claims(out, chapter),
                evidence=load_evidence(out, chapter, run_ids),
                coverage=read_coverage(out, chapter),
            )
        )
    return states


# --------------------------------------------------------------------------- pages


def announcement(states: list[ChapterState]) -> str | None:
    """The banner on every page when chapters ran on the project's sample data, or in the rehearsal profile,
    and when the build is partial (:func:`sentcl.book.pages.findings.build_banner`)."""
    said = [s for s in (_profile_banner(states), build_banner(states)) if s]
    return " ".join(said) or None


def _profile_banner(states: list[ChapterState]) -> str | None:
    on_samples = [s for s in states if s.ran and s.sample]
    rehearsed = [s.chapter for s in states if s.rehearsal]
    if rehearsed and not on_samples:
        return f"Rehearsal build ({', '.join(rehearsed)}): {REHEARSAL}"
    if not on_samples:
        return None
    profiles = {s.record.profile for s in on_samples if s.record}
    names = ", ".join(s.chapter for s in on_samples)
    if profiles and all(PROFILES[p].data == "samples" for p in profiles if p in PROFILES):
        return f"Smoke build ({names}): a tiny model on the project's sample data. It tests the machinery; its numbers say nothing about the papers."
    return f"Sample data: {names} ran on the project's sample data, not on a real data root, so their numbers say nothing about the papers."


def notebook_placeholder(state: ChapterState) -> str:
    why = (
        f"was not run into this build's output folder (run `sentcl reproduce --only {state.chapter}`)"
        if state.has_notebook
        else "is not written yet"
    )
    return (
        f"# Notebook: {state.chapter}\n\n"
        f"The chapter's notebook, `notebooks/{state.chapter}.ipynb`, {why}. "
        f"When it runs, its executed copy, with every output, appears on this page.\n"
    )


def chapter_results(state: ChapterState, known: dict[str, str] | None = None) -> str:
    """The fragment a chapter page includes: run status, the paper's orderings this run
    checked, the tables, the figures (``known``: local paths and their labels)."""
    parts = [_run_status(state, known)]
    if state.compared.empty:
        parts.append(
            "A chapter of our own (no paper's values to compare with), and no results were written.\n"
            if state.spec.own else
            f"The paper's reported values are not typed in yet (`data/papers/{state.chapter}.csv`) "
            "and no results were written.\n"
        )
    compared = _public_compared(state.compared, known)
    if state.ran:  # the claims open the page (sentcl.book.pages.findings); here, what they rest on
        parts.append(health_table(state))
    if state.coverage is not None:
        parts.append(coverage_text(state.coverage, known))
    for table in report.tables(compared):
        parts.append(raw_html(report.comparison_table(compared, table).to_html()))
    for fig in state.figures:
        path = f"/{GENERATED.as_posix()}/figures/{state.chapter}/{fig['name']}"
        svg = f" ({{download}}`SVG <{path}.svg>`)" if Path(fig["svg"]).is_file() else ""
        caption = md(public_text(fig["caption"], known))
        parts.append(f":::{{figure}} {path}.png\n:alt: {caption}\n:width: 100%\n\n{caption}{svg}\n:::\n")
    return "\n".join(parts)


def _public_compared(compared: pd.DataFrame, known: dict[str, str] | None) -> pd.DataFrame:
    """The comparison with local paths replaced in the text shown under the tables."""
    out = compared.copy()
    for col in ("data", "note"):
        out[col] = [v if not isinstance(v, str) else public_text(v, known) for v in out[col]]
    return out


def claims_text(state: ChapterState) -> str:
    """The chapter's verdicts, per table, from its claims file (:mod:`sentcl.book.output.claims`): counts of
    verdicts, never of signs."""
    frame = state.claims
    if frame.empty:
        return ("**Claims**: this run tested no claim (its claims file, `claims/<chapter>.csv`, is absent or empty), so nothing here is a "
                "verdict; the tables show the numbers only.\n")
    per_family = "; ".join(f"{family} family: {claims.counts_text(frame[frame['family'] == family])}"
                           for family in claims.FAMILIES if (frame["family"] == family).any())
    why = (" On the sample data they test the code, not the paper." if state.sample
           else " In a rehearsal they test the code on the data's shapes, not the paper." if state.rehearsal
           else " A miniature cannot match the paper's numbers; claims are what it can test." if state.miniature else "")
    return (
        f"**Claims** ({len(frame)}: the paper's orderings of two rows on the {ORDERINGS_ON}, and our own; "
        f"{CLAIMS_RULE}; the executed notebook states each with its interval): {per_family}.{why}\n"
    )


def coverage_text(frame: pd.DataFrame, known: dict[str, str] | None = None) -> str:
    """"What a paper-profile run fills on this data root": each row of the paper's tables, runs / needs absent
    data (the files, from where) / cited (:mod:`sentcl.book.estimates.coverage`), under its counts."""
    counts = ", ".join(f"{int((frame['coverage'] == c).sum())} {c}" for c in COVERAGE)
    rows = [[md(r.table), md(r.row), md(r.coverage), md(public_text(r.detail, known))] for r in frame.itertuples()]
    return (f"**What a paper-profile run fills on this run's data root**, row by row of the paper's tables "
            f"({counts}), read from the paper profile's parameters and the data root's files:\n\n"
            + md_table(["table", "row", "a paper run", "data it needs (the missing files and their source)"], rows))


def health_table(state: ChapterState) -> str:
    """"Did it train?": every model the chapter's recorded rows rest on, with its health
    (:mod:`sentcl.training.health`); an inactive one is flagged, and the claims resting on it are not tested."""
    seen: dict[str, dict] = {}
    for ev in state.evidence.values():
        for column in ev.columns:
            for h in ev.health(column):
                if h is not None:
                    seen.setdefault(h.get("name", ev.row), h)
    if not seen:
        return ""
    rows = []
    for name, h in seen.items():
        start, end = h.get("loss_start") or {}, h.get("loss_end") or {}
        terms = [k for k in start if k not in ("step", "loss")]
        loss = f"{_num(start.get('loss'))} → {_num(end.get('loss'))}" + "".join(
            f"<br>{md(t)}: {_num(start.get(t))} → {_num(end.get(t))}" for t in terms)
        stopped = " (stopped early)" if h["trained_steps"] < h["planned_steps"] else ""
        rows.append([md(name), f"{h['trained_steps']} of {h['planned_steps']}{stopped}", f"{h['peak_lr']:.2g}",
                     f"{h['steps_at_half_peak']} ({h['share_at_half_peak']:.0%})", loss,
                     "—" if h.get("start_cosine") is None else f"{h['start_cosine']:.4f}",
                     "yes" if h.get("active") else f"**no**: {md(h.get('reason', ''))}", _learned(h)])
    inactive = sum(not h.get("active") or h.get("learned") is False for h in seen.values())
    head = (f"**Did it train?** {len(seen)} trained models, {inactive} inactive or not learning"
            + (" (the claims resting on them are *not tested*)" if inactive else "") + ": optimizer steps taken of "
            "those planned, the peak learning rate, the steps at half of it or more (their share of the planned), the "
            "training loss (and each term of the objective) in the first and the last logged window, the "
            "mean cosine of its embeddings to its starting model's on a fixed probe of sentences, and whether it "
            "learned: its loss fell beyond its window-to-window noise and did not end at chance.\n")
    return head + md_table(["model", "steps", "peak lr", "≥ ½ peak", "loss: first → last", "cosine to start", "active",
                            "learned"], rows)


def _learned(health: dict) -> str:
    """Whether the model learned (its loss fell beyond its noise and did not end at chance:
    :func:`sentcl.training.health.learning`), "—" for a record written before sentcl judged it."""
    if "learned" not in health:
        return "—"
    if health["learned"]:
        return "yes"
    return f"**{'no' if learning_judged(health) else 'not judged'}**: {md(health.get('learned_reason', ''))}"


def _num(value: Any) -> str:
    return "—" if value is None else f"{value:.4g}"


def _run_status(state: ChapterState, known: dict[str, str] | None = None) -> str:
    r = state.record
    nb_link = f"{{doc}}`executed notebook </notebooks/{state.chapter}>`"
    if not state.ran:
        why = "its notebook is not written yet" if not state.has_notebook else "it was not run into this build's output folder"
        return f":::{{note}}\nNo results in this build: {why}. The tables show the paper's values only.\n:::\n"
    lines = []
    if r is not None:
        lines.append(
            f"Last run: {r.started[:16].replace('T', ' ')} UTC, profile **{r.profile}**, "
            f"{duration(r.wall_time_s)} on {md(r.device)} (run `{r.run_id}`); see the {nb_link}."
        )
    else:
        lines.append("Results written by a notebook run outside `sentcl reproduce` (no run record).")
    kind = "note"
    if r is not None and r.status == "failed":
        kind = "error"
        error = md(public_text(r.error or "", known))
        lines.append(f"**This run failed**: {error}. Rows it did not reach show the paper's values only.")
    if state.sample:
        kind = "warning" if kind == "note" else kind
        lines.append(
            "**Sample data**: this chapter ran on the project's sample data, so its numbers (Δ not "
            "coloured) test the machinery and say nothing about the paper."
        )
    elif state.rehearsal:
        lines.append(
            f"**A rehearsal**: {REHEARSAL} (the \"did it train?\" table)."
        )
    elif state.miniature:
        profiles = ", ".join(state.profiles) or "this"
        lines.append(
            f"**A miniature** ({profiles} profile): a smaller stand-in encoder, already trained on other data "
            "(see the notes under the tables), fine-tuned on a fraction of the paper's training data. How close its "
            "numbers come to the paper's is coincidence, so its Δ are not coloured or counted as agreement; "
            "what it can test is the paper's ordering of its rows."
        )
    return f":::{{{kind}}}\n" + "\n\n".join(lines) + "\n:::\n"


def scorecard(states: list[ChapterState], known: dict[str, str] | None = None) -> str:
    """The scorecard: per chapter what its run can say -- agreement with the paper's numbers
    for a paper-profile run, the verdicts of its claims for any run -- then every table."""
    good, fair = report.THRESHOLDS
    parts = [
        WIDE_PAGE + "# Reproducibility scorecard\n",
        "Every cell of every table of the four papers: the paper's value, ours where this build "
        "computed it, and the difference Δ = ours − paper. A row we do not recompute shows the "
        "paper's value, labelled *cited*. Generated from the results files of this build.\n",
        "Agreement is judged only for runs of the **paper** profile, the paper's models on the paper's "
        f"data: green |Δ| ≤ {good:g} point, amber ≤ {fair:g}, red beyond, on a 0–100 scale. A "
        "**miniature** -- the demo profile (a small stand-in encoder, sentcl's own pretrained sentcl-mini or "
        "the sentence-trained all-MiniLM-L6-v2, fine-tuned on a subset), the smoke profile or any run on "
        "the project's sample data -- cannot match the paper's numbers except by coincidence, so its Δ "
        "are shown uncoloured and not counted. What a miniature can test is **claims**: the paper's "
        f"orderings of two rows it computed (on the {ORDERINGS_ON}) and claims of our own, {CLAIMS_RULE}.\n",
        "## Summary\n",
    ]
    header = ["chapter", "run", "paper cells", "computed", "cited", "ours only", "claims",
              "reproduced / reversed / undetermined / not tested (primary; secondary)", "agrees / close / differs"]
    rows = []
    for s in states:
        counts = report.summary(s.compared)
        by_family = [claims.verdict_counts(s.claims[s.claims["family"] == f]) for f in claims.FAMILIES]
        judged = counts["judged"] > 0
        rows.append([
            f"[{s.chapter}](../{s.chapter}.md)", _run_label(s), str(counts["paper cells"]), str(counts["computed"]),
            str(counts["cited"]), str(counts["ours only"]), str(len(s.claims)) if s.ran else "—",
            "; ".join(" / ".join(str(v[k]) for k in claims.VERDICTS) for v in by_family) if s.ran else "—",
            " / ".join(str(counts[a]) for a in report.AGREEMENT) if judged else "—",
        ])
    parts.append(md_table(header, rows, full_width=True))
    parts.append(
        "*run*: the profile of the chapter's results (*miniature*: not judged against the paper's "
        "numbers; *sample data*: the project's sample data, which tests the code); *computed*: the "
        "paper's cells this run computed; *claims* and their verdicts: from the chapter's claims file; "
        "*agrees / close / differs*: paper-profile runs only "
        "(— for a miniature or a chapter that has not run).\n"
    )
    for s in states:
        parts.append(f"## [{md(s.title)}](../{s.chapter}.md)\n")
        if s.compared.empty:
            parts.append("A chapter of our own, not run in this build: no results.\n" if s.spec.own
                         else f"No paper values typed in yet (`data/papers/{s.chapter}.csv`) and no results.\n")
        elif not s.ran:
            parts.append("Not run in this build: the tables show the paper's values only.\n")
        else:
            parts.append(claims_text(s))
        compared = _public_compared(s.compared, known)
        for table in report.tables(compared):
            table_html = report.comparison_table(compared, table, caption=f"{s.chapter}: {table}").to_html()
            parts.append(full_width(raw_html(table_html)))
    return "\n".join(parts)


def _run_label(state: ChapterState) -> str:
    """The scorecard's word for a chapter's run: its profile, and whether it is a miniature."""
    if not state.ran:
        return "not run"
    profiles = ", ".join(state.profiles) or "?"
    if state.sample:
        return f"{profiles} (sample data)"
    return f"{profiles} (miniature)" if state.miniature else profiles


def datasets(states: list[ChapterState], root: Path | None = None) -> str:
    """The datasets appendix: the registry, and what this build read. A data root is named,
    never shown by its local path (:func:`data_root_label`)."""
    from ...data import registry

    roots = sorted({r for s in states for r in s.data_roots()})
    labels = {r: data_root_label(r, root) for r in roots}
    parts = [
        WIDE_PAGE + "# Datasets\n",
        "Every dataset the chapters use, from the project's registry (`data/registry/*.yaml`): "
        "where it comes from, its licence, the records each split must give, and what this build read.\n",
        "Data roots of this build: " + (", ".join(dict.fromkeys(labels.values())) or "none (nothing was run)") + ". "
        f"`{DATA_ROOT_LABEL}` is the data root a run was given (`--data-dir`, else `$SENTCL_DATA`); "
        "its location on the machine that built this book is not published.\n",
    ]
    loaded: dict[str, list[str]] = {}
    for s in states:
        for d in (s.data_used or {}).get("datasets", []):
            note = f"{s.chapter}: {d['split']}, {d['records']} records" + (" (sample data)" if d.get("sample") else "")
            if d.get("dropped"):
                note += ", dropped " + ", ".join(f"{k} {v}" for k, v in d["dropped"].items())
            loaded.setdefault(d["name"], []).append(note)
    entries = registry()
    if not entries:
        parts.append("No dataset is registered yet.\n")
    else:
        parts.append(
            md_table(
                ["dataset", "title", "chapters", "read by this build"],
                [[f"`{n}`", md(i.title), ", ".join(i.papers) or "—", "yes" if n in loaded else "no"] for n, i in entries.items()],
                full_width=True,
            )
        )
    for name, info in entries.items():
        chapters = ", ".join(f"[{c}](../{c}.md)" if c in CHAPTERS else c for c in info.papers) or "—"
        splits = "; ".join(
            f"{split}: {sp.count if sp.count is not None else '?'} records"
            + (" (dropped: " + ", ".join(f"{k} {v}" for k, v in sp.dropped.items()) + ")" if sp.dropped else "")
            for split, sp in info.splits.items()
        )
        present = []
        for data_root in roots:
            have = [sp for sp, si in info.splits.items() if all((data_root / info.folder / f).exists() for f in si.files)]
            present.append(f"{labels[data_root]}: " + (", ".join(have) if have else "absent"))
        parts.append(
            f"## {md(info.title)}\n\n"
            f"- Name: `{name}` ({info.kind}); chapters: {chapters}\n"
            f"- Source: {md(info.source)}\n"
            f"- Licence: {md(info.licence)}\n"
            + (f"- Citation: {md(info.citation)}\n" if info.citation else "")
            + f"- Splits: {splits}\n"
            + (f"- Splits present in this build's data roots: {'; '.join(present)}\n" if present else "")
            + f"- Read by this build: {'; '.join(loaded.get(name, [])) or 'no'}\n"
            + (f"\n{md(info.notes)}\n" if info.notes else "")
        )
    return "\n".join(parts)
