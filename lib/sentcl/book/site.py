"""The book: its sources assembled from an output folder, then built with Jupyter Book.

The checkout holds the hand-written pages (``_config.yml``, ``_toc.yml``, ``book/*.md``);
everything that depends on a run is generated. :func:`stage` assembles the book's
sources in ``<out>/book_source/`` (never in the checkout, so a test or a smoke run
cannot overwrite the pages of the user's demo book), mirroring the repository layout so
that the Colab launch buttons point at the repository's notebooks:

- ``_config.yml`` (an announcement bar is added when a chapter ran on sample data),
  ``_toc.yml`` and ``book/`` copied from the checkout; ``book/_vendor`` (MathJax) linked;
- ``notebooks/<chapter>.ipynb``: the executed notebook, or a placeholder page saying why
  there is none;
- ``book/_generated/``: per chapter ``<chapter>/results.md`` (run status, every paper
  table beside ours, the run's figures; the chapter page includes it), the scorecard,
  the datasets appendix, the environment page and ``timings.md`` (the introduction
  includes it), all read from the results files, figures and run records in ``<out>``.

:func:`build` runs ``jupyter-book build`` on those sources without executing anything
(``execute_notebooks: off``), treating warnings -- broken cross-references included
(nitpicky) -- as errors.
"""

from __future__ import annotations

import html
import importlib.util
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ..errors import ConfigError, SentclError
from . import report
from .chapter import CHAPTERS
from .records import RunRecord, read_run_records
from .results import load_results

GENERATED = Path("book") / "_generated"
MATHJAX = Path("book") / "_vendor" / "mathjax" / "tex-mml-chtml.js"
MEASURED_RECORDS = Path("book") / "run_records"  # run records measured elsewhere (e.g. a paper run on a GPU), committed


@dataclass
class ChapterState:
    """What an output folder holds for one chapter."""

    chapter: str
    title: str
    has_notebook: bool  # notebooks/<chapter>.ipynb exists in the checkout
    executed: Path | None  # the executed notebook in the output folder
    record: RunRecord | None  # its latest notebook run record
    compared: pd.DataFrame  # paper values beside results (sentcl.book.report.compare)
    figures: list[dict] = field(default_factory=list)
    data_used: dict | None = None

    @property
    def ran(self) -> bool:
        """Whether this output folder has a run of the chapter (a run record or results)."""
        return self.record is not None or self.compared["run_id"].notna().any()

    @property
    def sample(self) -> bool:
        ran_on_samples = bool(self.record and self.record.config.get("sample"))
        return ran_on_samples or bool((self.compared["status"] == "sample-data").any())


def chapter_states(root: Path, out: Path) -> list[ChapterState]:
    records = [r for r in read_run_records(out / "records") if r.kind == "notebook"]
    results = load_results(out)
    states = []
    for chapter, title in CHAPTERS.items():
        mine = [r for r in records if r.chapter == chapter]
        record = mine[-1] if mine else None
        executed = out / "notebooks" / f"{chapter}.ipynb"
        compared = report.compare(chapter, results)
        run_ids = set(compared["run_id"].dropna()) | ({record.run_id} if record else set())
        used = out / "data_used" / f"{chapter}.json"
        states.append(
            ChapterState(
                chapter=chapter,
                title=title,
                has_notebook=(root / "notebooks" / f"{chapter}.ipynb").is_file(),
                executed=executed if executed.is_file() else None,
                record=record,
                compared=compared,
                figures=[f for f in report.figures(out, chapter) if f.get("run_id") in run_ids],
                data_used=json.loads(used.read_text(encoding="utf-8")) if used.is_file() else None,
            )
        )
    return states


# --------------------------------------------------------------------------- staging


def stage(root: Path, out: Path) -> Path:
    """Assemble the book's sources for the output folder ``out``; returns their folder."""
    if not (root / MATHJAX).is_file():
        raise ConfigError(
            f"MathJax is missing ({root / MATHJAX}); the book serves it offline: run "
            "`python3 scripts/fetch_mathjax.py` (make setup does)"
        )
    src = out / "book_source"
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    states = chapter_states(root, out)

    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    banner = announcement(states)
    if banner:
        config.setdefault("html", {})["announcement"] = banner
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    shutil.copy2(root / "_toc.yml", src / "_toc.yml")
    shutil.copytree(
        root / "book", src / "book", ignore=shutil.ignore_patterns("_vendor", "_generated", ".ipynb_checkpoints")
    )
    (src / "book" / "_vendor").symlink_to((root / "book" / "_vendor").resolve(), target_is_directory=True)

    (src / "notebooks").mkdir()
    for state in states:
        if state.executed:
            shutil.copy2(state.executed, src / "notebooks" / f"{state.chapter}.ipynb")
        else:
            (src / "notebooks" / f"{state.chapter}.md").write_text(notebook_placeholder(state), encoding="utf-8")

    gen = src / GENERATED
    gen.mkdir(parents=True)
    for state in states:
        (gen / state.chapter).mkdir()
        for fig in state.figures:
            target = gen / "figures" / state.chapter
            target.mkdir(parents=True, exist_ok=True)
            for ext in ("png", "svg"):
                if Path(fig[ext]).is_file():
                    shutil.copy2(fig[ext], target / f"{fig['name']}.{ext}")
        (gen / state.chapter / "results.md").write_text(chapter_results(state), encoding="utf-8")
    measured = read_run_records(out / "records", root / MEASURED_RECORDS)
    (gen / "timings.md").write_text(timings(measured), encoding="utf-8")
    (gen / "scorecard.md").write_text(scorecard(states), encoding="utf-8")
    (gen / "datasets.md").write_text(datasets(states), encoding="utf-8")
    (gen / "environment.md").write_text(environment_page(read_run_records(out / "records")), encoding="utf-8")
    return src


def build(src: Path, book_dir: Path) -> Path:
    """Build the HTML book from staged sources into ``<book_dir>/_build/html``.

    Nothing is executed (``execute_notebooks: off`` in ``_config.yml``); any Sphinx
    warning, broken cross-references included (nitpicky), fails the build.
    """
    if importlib.util.find_spec("jupyter_book") is None:
        raise ConfigError("jupyter-book is not installed: pip install 'sentcl[book]' (make setup does)")
    cmd = [
        sys.executable, "-c", "from jupyter_book.cli.main import main; main()",
        "build", str(src), "--path-output", str(book_dir),
        "--warningiserror", "--nitpick", "--keep-going", "--all", "--quiet",
    ]
    proc = subprocess.run(cmd, check=False)
    if proc.returncode != 0:
        raise SentclError(f"the book build failed (warnings count as errors, see above); sources in {src}")
    return book_dir / "_build" / "html"


# --------------------------------------------------------------------------- pages


def announcement(states: list[ChapterState]) -> str | None:
    """The banner on every page when chapters ran on the project's sample data."""
    on_samples = [s for s in states if s.ran and s.sample]
    if not on_samples:
        return None
    profiles = {s.record.profile for s in on_samples if s.record}
    names = ", ".join(s.chapter for s in on_samples)
    if profiles == {"smoke"}:
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


def chapter_results(state: ChapterState) -> str:
    """The fragment a chapter page includes: run status, the tables, the figures."""
    parts = [_run_status(state)]
    if state.compared.empty:
        parts.append(
            f"The paper's reported values are not typed in yet (`data/papers/{state.chapter}.csv`) "
            "and no results were written.\n"
        )
    for table in report.tables(state.compared):
        parts.append(_raw_html(report.comparison_table(state.compared, table).to_html()))
    for fig in state.figures:
        path = f"/{GENERATED.as_posix()}/figures/{state.chapter}/{fig['name']}"
        svg = f" ({{download}}`SVG <{path}.svg>`)" if Path(fig["svg"]).is_file() else ""
        parts.append(
            f":::{{figure}} {path}.png\n:alt: {_md(fig['caption'])}\n:width: 100%\n\n{_md(fig['caption'])}{svg}\n:::\n"
        )
    return "\n".join(parts)


def _run_status(state: ChapterState) -> str:
    r = state.record
    nb_link = f"{{doc}}`executed notebook </notebooks/{state.chapter}>`"
    if not state.ran:
        why = "its notebook is not written yet" if not state.has_notebook else "it was not run into this build's output folder"
        return f":::{{note}}\nNo results in this build: {why}. The tables show the paper's values only.\n:::\n"
    lines = []
    if r is not None:
        lines.append(
            f"Last run: {r.started[:16].replace('T', ' ')} UTC, profile **{r.profile}**, "
            f"{duration(r.wall_time_s)} on {_md(r.device)} (run `{r.run_id}`); see the {nb_link}."
        )
    else:
        lines.append("Results written by a notebook run outside `sentcl reproduce` (no run record).")
    kind = "note"
    if r is not None and r.status == "failed":
        kind = "error"
        lines.append(f"**This run failed**: {_md(r.error or '')}. Rows it did not reach show the paper's values only.")
    if state.sample:
        kind = "warning" if kind == "note" else kind
        lines.append(
            "**Sample data**: this chapter ran on the project's sample data, so its numbers (grey) "
            "test the machinery and say nothing about the paper."
        )
    return f":::{{{kind}}}\n" + "\n\n".join(lines) + "\n:::\n"


def scorecard(states: list[ChapterState]) -> str:
    parts = [
        "# Reproducibility scorecard\n",
        "Every cell of every table of the four papers: the paper's value, ours where this build "
        "reproduced it, and the difference Δ = ours − paper, coloured by agreement "
        f"(green |Δ| ≤ {report.THRESHOLDS[0]:g} point, amber ≤ {report.THRESHOLDS[1]:g}, red beyond, "
        "on a 0–100 scale; grey: sample data, not comparable). A row we do not recompute shows "
        "the paper's value, labelled *cited*. Generated from the results files of this build.\n",
        "## Summary\n",
    ]
    header = ["chapter", "profile", "paper cells", "reproduced", "agrees", "close", "differs", "sample data", "cited", "ours only"]
    rows = []
    for s in states:
        counts = report.summary(s.compared)
        profiles = ", ".join(sorted(set(s.compared["profile"].dropna()))) or "—"
        rows.append([f"[{s.chapter}](../{s.chapter}.md)", profiles, *(str(counts[h]) for h in header[2:])])
    parts.append(_md_table(header, rows))
    for s in states:
        parts.append(f"## [{_md(s.title)}](../{s.chapter}.md)\n")
        if s.compared.empty:
            parts.append(f"No paper values typed in yet (`data/papers/{s.chapter}.csv`) and no results.\n")
        for table in report.tables(s.compared):
            parts.append(_raw_html(report.comparison_table(s.compared, table, caption=f"{s.chapter}: {table}").to_html()))
    return "\n".join(parts)


def datasets(states: list[ChapterState]) -> str:
    """The datasets appendix: the registry, and what this build read."""
    from ..data import registry

    roots = {Path(s.data_used["data_root"]) for s in states if s.data_used}
    roots |= {Path(s.record.config["data_root"]) for s in states if s.record and s.record.config.get("data_root")}
    parts = [
        "# Datasets\n",
        "Every dataset the chapters use, from the project's registry (`data/registry/*.yaml`): "
        "where it comes from, its licence, the records each split must give, and what this build read.\n",
        "Data roots of this build: " + (", ".join(f"`{r}`" for r in sorted(roots)) or "none (nothing was run)") + ".\n",
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
            _md_table(
                ["dataset", "title", "chapters", "read by this build"],
                [[f"`{n}`", _md(i.title), ", ".join(i.papers) or "—", "yes" if n in loaded else "no"] for n, i in entries.items()],
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
        for root in sorted(roots):
            have = [sp for sp, si in info.splits.items() if all((root / info.folder / f).exists() for f in si.files)]
            present.append(f"`{root}`: " + (", ".join(have) if have else "absent"))
        parts.append(
            f"## {_md(info.title)}\n\n"
            f"- Name: `{name}` ({info.kind}); chapters: {chapters}\n"
            f"- Source: {_md(info.source)}\n"
            f"- Licence: {_md(info.licence)}\n"
            + (f"- Citation: {_md(info.citation)}\n" if info.citation else "")
            + f"- Splits: {splits}\n"
            + (f"- Splits present in this build's data roots: {'; '.join(present)}\n" if present else "")
            + f"- Read by this build: {'; '.join(loaded.get(name, [])) or 'no'}\n"
            + (f"\n{_md(info.notes)}\n" if info.notes else "")
        )
    return "\n".join(parts)


def environment_page(records: list[RunRecord]) -> str:
    from importlib import metadata

    parts = [
        "# Environment\n",
        "Generated from the run records of this build (`records/` in the output folder): the versions "
        "and the machine each run used, and what it cost. "
        f"Book built {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC with jupyter-book "
        f"{_version(metadata, 'jupyter-book')}.\n",
    ]
    if not records:
        parts.append("No run records: nothing was run into this build's output folder.\n")
        return "\n".join(parts)
    packages = list(records[-1].versions)
    parts.append("## Versions and devices\n")
    combos: dict[tuple, list[str]] = {}
    for r in records:
        combos.setdefault((r.device, *(r.versions.get(p, "?") for p in packages)), []).append(r.name)
    parts.append(_md_table(["device", *packages, "runs"], [[*k, ", ".join(dict.fromkeys(v))] for k, v in combos.items()]))
    parts.append("## Runs\n")
    rows = [
        [r.started[:16].replace("T", " "), r.kind, r.name, r.profile or "—", r.status, duration(r.wall_time_s),
         "—" if r.peak_memory_mb is None else f"{r.peak_memory_mb:.0f} MiB",
         "—" if r.peak_gpu_memory_mb is None else f"{r.peak_gpu_memory_mb:.0f} MiB", f"`{r.run_id}`"]
        for r in records
    ]
    parts.append(_md_table(["started (UTC)", "kind", "name", "profile", "status", "wall time", "peak memory", "peak GPU memory", "run id"], rows))
    failed = [r for r in records if r.status == "failed"]
    for r in failed:
        parts.append(f"- `{r.run_id}` ({r.name}) failed: {_md(r.error or '')}")
    return "\n".join(parts) + "\n"


def timings(records: list[RunRecord]) -> str:
    """The introduction's table: how long each chapter took, where: the latest successful
    notebook run per chapter, profile and device (``records`` oldest first)."""
    latest = {(r.chapter, r.profile, r.device): r for r in records if r.kind == "notebook" and r.status == "ok"}
    done = list(latest.values())
    if not done:
        return "No chapter has run into this build yet, so there are no measured times to show.\n"
    rows = [
        [f"[{r.chapter}]({r.chapter}.md)" if r.chapter in CHAPTERS else (r.chapter or r.name), r.profile or "—",
         _md(r.device), duration(r.wall_time_s), "—" if r.peak_memory_mb is None else f"{r.peak_memory_mb:.0f} MiB",
         r.started[:10]]
        for r in done
    ]
    return _md_table(["chapter", "profile", "device", "wall time", "peak memory", "measured"], rows)


# --------------------------------------------------------------------------- helpers


def _raw_html(fragment: str) -> str:
    lines = [line for line in fragment.splitlines() if line.strip()]
    return "```{raw} html\n" + "\n".join(lines) + "\n```\n"


def _md(text: Any) -> str:
    """Plain text made safe inside MyST markdown (no math, no table breaks)."""
    return html.escape(str(text), quote=False).replace("$", r"\$").replace("|", r"\|").replace("\n", " ").strip()


def _md_table(header: list[str], rows: list[list[str]]) -> str:
    """A markdown table as wide as the page (the theme's full-width class)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return ":::{div} full-width\n\n" + "\n".join(lines) + "\n:::\n"


def duration(seconds: float | None) -> str:
    """Seconds as '42 s', '3 min 05 s' or '2 h 10 min'."""
    if seconds is None:
        return "—"
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {sec:02d} s" if minutes else f"{seconds:.0f} s"


def _version(metadata, name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"
