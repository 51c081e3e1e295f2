"""The book: its sources assembled from an output folder, then built with Jupyter Book.

The checkout holds the hand-written pages (``_config.yml``, ``_toc.yml``, ``book/*.md``);
everything that depends on a run is generated. :func:`stage` assembles the book's
sources in ``<out>/book_source/`` (never in the checkout, so a test or a smoke run
cannot overwrite the pages of the user's demo book), mirroring the repository layout so
that the Colab launch buttons point at the repository's notebooks:

- ``_config.yml`` (an announcement bar is added when a chapter ran on sample data; the Colab
  buttons' repository is ``[project.urls] Repository`` of ``pyproject.toml``, and while that is
  the placeholder the buttons are left out and a warning says so: :mod:`sentcl.book.publishing.install`),
  ``_toc.yml`` and ``book/`` copied from the checkout; ``book/_vendor`` (MathJax) linked;
- ``book/_static/sentcl-<version>-py3-none-any.whl``: sentcl's wheel, built from the checkout,
  which Sphinx copies into the HTML's ``_static/``: a reader installs it with no repository;
- ``notebooks/<chapter>.ipynb``: the executed notebook, or a placeholder page saying why
  there is none. The staged copy reads as a page (:func:`stage_notebook`): its title cell
  comes first, then the parameters cell, collapsed (``hide-input``), then papermill's
  injected parameters as a collapsed note; the install cell and the imports cell (tagged
  :data:`IMPORTS_TAG`) are collapsed too; local paths in its outputs and metadata are
  replaced, and its install cell installs from :func:`sentcl.book.publishing.install.book_source` (the
  notebook in ``notebooks/`` keeps its layout for Colab: parameters first);
- ``book/_generated/``: per chapter ``<chapter>/findings.md`` (what the chapter's claims found, which
  the chapter page shows first: :mod:`sentcl.book.pages.findings`), ``<chapter>/results.md`` (run status, every paper
  table beside ours, the run's figures; the chapter page includes it), the scorecard,
  the datasets appendix, the environment page, ``timings.md`` and ``install.md`` (the
  introduction includes them), ``worked_claim.md`` (the statistics page includes it:
  :mod:`sentcl.book.pages.statistics`) and per chapter ``<chapter>/gpu_memory.md`` (the paper profile's
  recorded peak GPU memory beside a T4's, :mod:`sentcl.book.estimates.gpu_memory`) and ``<chapter>/measured.md``
  (a hand-run benchmark the chapter's demo rests on) and ``<chapter>/rate_rule.md`` (how its demo's learning rate was
  chosen, empty where it was not: :mod:`sentcl.book.estimates.benchmarks`) and, for a chapter with a primary family,
  ``<chapter>/sensitivity.md`` (how many of its primary verdicts change in other demo settings), all read from the
  results files, figures and run records in ``<out>`` and the recorded benchmark results.

:func:`build` runs ``jupyter-book build`` on those sources without executing anything
(``execute_notebooks: off``), treating warnings -- broken cross-references included
(nitpicky) -- as errors.

No page names a path of the machine that built it: the data roots, the output folder and
the checkout are shown by name (``$SENTCL_DATA``, ``<out>``, ``data/samples``), and any
other absolute path in a results file, run record or notebook output is cut to its last
part (:mod:`sentcl.book.redaction`). Agreement colours and counts appear only for
runs of the paper's profile (:func:`sentcl.book.pages.report.judged`); for a miniature the
scorecard counts the paper's orderings that hold (:mod:`sentcl.book.output.claims`). Pages with
wide tables (the scorecard, the appendices) have no right-hand contents panel, and
``book/_static/sentcl.css`` lays the tables out.
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import yaml

from ...chapters import CHAPTERS
from ...errors import ConfigError, SentclError
from ..estimates import benchmarks, gpu_memory
from ..output.layout import Layout
from ..output.run_records import read_run_records
from ..pages.answer import answer
from ..pages.environment import environment_page, timings
from ..pages.findings import findings_section
from ..pages.fragments import (
    GENERATED,
    announcement,
    chapter_results,
    chapter_states,
    datasets,
    notebook_placeholder,
    scorecard,
)
from ..pages.statistics import worked_claim
from ..redaction import DATA_ROOT_LABEL, OUT_LABEL, local_paths, public_json, public_output, public_text
from . import install

MATHJAX = Path("book") / "_vendor" / "mathjax" / "tex-mml-chtml.js"
MEASURED_RECORDS = Path("book") / "run_records"  # run records measured elsewhere (e.g. a paper run on a GPU), committed


# --------------------------------------------------------------------------- staging


CHAPTERS_CAPTION = "Chapters"
"""The part of ``_toc.yml`` whose chapters the registry gives (:func:`table_of_contents`)."""


def table_of_contents(toc: dict, chapters: Iterable[str]) -> dict:
    """``_toc.yml`` with its part captioned :data:`CHAPTERS_CAPTION` listing ``chapters`` in order, each its page
    ``book/<chapter>`` with its executed notebook under it: the registry (:data:`sentcl.chapters.CHAPTERS`) says which
    chapters the book has, so a new chapter needs no line here. A ``_toc.yml`` without that part is a ConfigError."""
    parts = [dict(part) for part in toc.get("parts", [])]
    found = [part for part in parts if part.get("caption") == CHAPTERS_CAPTION]
    if len(found) != 1:
        raise ConfigError(f"_toc.yml: expected one part captioned {CHAPTERS_CAPTION!r}, found {len(found)}")
    found[0]["chapters"] = [{"file": f"book/{name}", "sections": [{"file": f"notebooks/{name}"}]} for name in chapters]
    return {**toc, "parts": parts}


def stage(root: Path, out: Path) -> Path:
    """Assemble the book's sources for the output folder ``out``; returns their folder."""
    if not (root / MATHJAX).is_file():
        raise ConfigError(
            f"MathJax is missing ({root / MATHJAX}); the book serves it offline: run "
            "`python3 scripts/fetch_mathjax.py` (make setup does)"
        )
    src = Layout(out).book_source
    if src.exists():
        shutil.rmtree(src)
    src.mkdir(parents=True)
    states = chapter_states(root, out)

    tree = install.source_tree(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    banner = announcement(states)
    if banner:
        config.setdefault("html", {})["announcement"] = banner
    repository = install.repository_url(tree)
    if repository:
        config.setdefault("repository", {})["url"] = repository
    else:  # no buttons that would open a repository that does not exist
        print(f"sentcl: WARNING: {install.placeholder_warning(tree)}", file=sys.stderr)
        config.pop("repository", None)
        config.pop("launch_buttons", None)
    (src / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    toc = table_of_contents(yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8")), CHAPTERS)
    (src / "_toc.yml").write_text(yaml.safe_dump(toc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    shutil.copytree(
        root / "book", src / "book", ignore=shutil.ignore_patterns("_vendor", "_generated", ".ipynb_checkpoints")
    )
    (src / "book" / "_vendor").symlink_to((root / "book" / "_vendor").resolve(), target_is_directory=True)
    install.build_wheel(tree, src / "book" / install.WHEEL_FOLDER)

    known = local_paths(root, out, [r for s in states for r in s.data_roots()])
    (src / "notebooks").mkdir()
    source = install.book_source(tree)
    for state in states:
        if state.executed:
            stage_notebook(state.executed, src / "notebooks" / f"{state.chapter}.ipynb", known, install_source=source)
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
        (gen / state.chapter / "findings.md").write_text(findings_section(state), encoding="utf-8")
        (gen / state.chapter / "results.md").write_text(chapter_results(state, known), encoding="utf-8")
        (gen / state.chapter / "gpu_memory.md").write_text(gpu_memory.chapter_section(state.spec), encoding="utf-8")
        (gen / state.chapter / "measured.md").write_text(benchmarks.chapter_section(state.spec), encoding="utf-8")
        (gen / state.chapter / "rate_rule.md").write_text(benchmarks.rate_rule_section(state.spec), encoding="utf-8")
        if state.spec.central is not None:  # a chapter with a primary family: how its verdicts move with the setting
            (gen / state.chapter / "sensitivity.md").write_text(benchmarks.sensitivity_section(state.chapter, state.claims, state.profiles),
                                                               encoding="utf-8")
    measured = read_run_records(Layout(out).records, root / MEASURED_RECORDS)
    (gen / "timings.md").write_text(timings(measured), encoding="utf-8")
    (gen / "install.md").write_text(install.install_section(tree), encoding="utf-8")
    (gen / "answer.md").write_text(answer(states), encoding="utf-8")
    (gen / "worked_claim.md").write_text(worked_claim(states), encoding="utf-8")
    (gen / "scorecard.md").write_text(scorecard(states, known), encoding="utf-8")
    (gen / "datasets.md").write_text(datasets(states, root), encoding="utf-8")
    (gen / "environment.md").write_text(environment_page(read_run_records(Layout(out).records), known), encoding="utf-8")
    return src


INJECTED_TAG = "injected-parameters"  # papermill's tag on the cell it adds after the parameters cell
IMPORTS_TAG = "imports"
"""The tag of a chapter notebook's imports cell: the one code cell that imports what the chapter calls and opens
its ``ChapterRun`` (collapsed on the page: its output, the run's profile and data, stays shown)."""


def stage_notebook(executed: Path, target: Path, known: dict[str, str] | None = None, install_source: str | None = None) -> Path:
    """Copy an executed notebook into the book's sources, arranged to be read as a page.

    The reader meets the title and the story first: the title cell (the first ``# `` heading)
    moves to the top, the parameters cell follows it tagged ``hide-input`` (collapsed, one click
    shows it), papermill's injected-parameters cell becomes a collapsed note listing the
    values this run was given, the install cell and the imports cell (:data:`IMPORTS_TAG`) are
    collapsed and the profile cell's list of every parameter too. Local paths (``known``, then any absolute path) are replaced in
    the outputs, the injected values and the papermill metadata, so neither the page nor the
    notebook it offers for download names the build machine's folders. With ``install_source``
    the install cell installs from there (:func:`sentcl.book.publishing.install.book_source`). Only this copy
    changes: ``notebooks/<chapter>.ipynb`` keeps the parameters first, as papermill and Colab need.
    """
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    cells = list(nb.cells)
    params = next((c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    injected = next((c for c in cells if INJECTED_TAG in c.get("metadata", {}).get("tags", [])), None)
    title = next((c for c in cells if c.cell_type == "markdown" and c.source.lstrip().startswith("# ")), None)
    rest = [c for c in cells if c is not params and c is not injected and c is not title]
    head = [title] if title is not None else []
    if params is not None:
        _collapse(params, "hide-input", "Show the parameters cell (the notebook's defaults; it opens the notebook on Colab)",
                  "Hide the parameters cell")
        head.append(params)
    if injected is not None:
        head.append(_injected_note(injected, nb.metadata.get("papermill", {}), known))
    nb.cells = head + rest
    for cell in nb.cells:  # the install cell, the profile's resolution, the imports: collapsed, the story comes first
        if cell.cell_type == "code" and install.cell_source(cell.source) is not None:
            if install_source is not None:
                cell.source = install.with_source(cell.source, install_source)
            _collapse(cell, "hide-input", "Show the install cell (it installs sentcl where it is missing: Colab)",
                      "Hide the install cell")
        elif cell.cell_type == "code" and "resolve_parameters(" in cell.source:
            _collapse(cell, "hide-output", "Show every parameter this run used and where its value came from",
                      "Hide the parameters")
        elif cell.cell_type == "code" and IMPORTS_TAG in cell.metadata.get("tags", []):
            _collapse(cell, "hide-input", "Show the imports cell (what this chapter calls from sentcl, and its run)",
                      "Hide the imports cell")
    for cell in nb.cells:
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                public_output(output, known)
    if "papermill" in nb.metadata:
        nb.metadata["papermill"] = public_json(nb.metadata["papermill"], known)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, target)
    return target


def _collapse(cell, tag: str, show: str, hide: str) -> None:
    """Tag ``cell`` collapsed on the page (``hide-input`` / ``hide-output``) with its toggle's prompts."""
    tags = cell.setdefault("metadata", {}).setdefault("tags", [])
    if tag not in tags:
        tags.append(tag)
    cell["metadata"].setdefault("mystnb", {}).update(code_prompt_show=show, code_prompt_hide=hide)


def _injected_note(cell, papermill: dict, known: dict[str, str] | None):
    """A markdown cell: papermill's injected values, collapsed, local paths replaced."""
    import nbformat

    profile = (papermill.get("parameters") or {}).get("profile")
    lines = [line for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    code = public_text("\n".join(lines), known)
    fence = "`" * max(3, 1 + max((len(run) for run in _backtick_runs(code)), default=0))
    title = "The parameters of this run" + (f" (profile {profile})" if profile else "")
    text = (
        f":::{{admonition}} {title}\n:class: dropdown\n\n"
        "`sentcl reproduce` (papermill) set these values after the parameters cell above; every other "
        f"parameter kept its default. `{DATA_ROOT_LABEL}` stands for the data root and `{OUT_LABEL}` for "
        "the output folder of the run.\n\n"
        f"{fence}python\n{code}\n{fence}\n:::\n"
    )
    note = nbformat.v4.new_markdown_cell(text)
    note.metadata["tags"] = ["sentcl-injected-parameters"]
    return note


def _backtick_runs(text: str) -> list[str]:
    return re.findall(r"`+", text)


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
