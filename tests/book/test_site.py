"""The book: generated pages, the offline build, the smoke profile end to end, and a
check of the rendered pages in headless Chromium (sentcl.book.publishing.site, sentcl reproduce)."""

from __future__ import annotations

import functools
import html
import json
import re
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pandas as pd
import pytest
import yaml

from sentcl.book import redaction as public
from sentcl.book.output.claims import read_claims
from sentcl.book.output.results import load_results, paper_values
from sentcl.book.output.run_records import read_run_records
from sentcl.book.pages import environment
from sentcl.book.pages import fragments as pages
from sentcl.book.pages.findings import findings_section
from sentcl.book.publishing import install, site
from sentcl.chapters import CHAPTERS
from sentcl.errors import ConfigError, SentclError

ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- sources


def test_toc_lists_every_chapter_and_its_notebook():
    """The staged ``_toc.yml``: the registry's chapters in book order, each its page with its notebook under it,
    then the appendices; the checkout's leaves the chapters to the registry."""
    checkout = yaml.safe_load((ROOT / "_toc.yml").read_text())
    assert [p["chapters"] for p in checkout["parts"] if p["caption"] == site.CHAPTERS_CAPTION] == [[]]
    toc = site.table_of_contents(checkout, CHAPTERS)
    chapters = [c for part in toc["parts"] for c in part["chapters"]]
    listed = [(c["file"], [s["file"] for s in c.get("sections", [])]) for c in chapters]
    assert listed[: len(CHAPTERS)] == [(f"book/{c}", [f"notebooks/{c}"]) for c in CHAPTERS]
    assert [f for f, _ in listed[len(CHAPTERS):]] == ["book/statistics", *(f"book/_generated/{p}" for p in ("scorecard", "datasets", "environment"))]
    assert toc["root"] == "book/intro" and toc["parts"][0]["numbered"] is True
    assert "_generated/worked_claim.md" in (ROOT / "book" / "statistics.md").read_text()
    for chapter in CHAPTERS:
        page = (ROOT / "book" / f"{chapter}.md").read_text()
        assert f"_generated/{chapter}/results.md" in page, f"book/{chapter}.md must include its generated results"
    with pytest.raises(ConfigError, match=r"_toc\.yml: expected one part captioned 'Chapters', found 0"):
        site.table_of_contents({"parts": [{"caption": "Appendices", "chapters": []}]}, CHAPTERS)


def test_config_reads_offline_and_never_executes():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"
    sphinx = config["sphinx"]["config"]
    assert not sphinx["mathjax_path"].startswith(("http:", "https:", "//"))
    assert sphinx["html_static_path"] == ["book/_vendor", "book/_static"]  # MathJax, then the book's stylesheet
    assert sphinx["html_css_files"] == ["sentcl.css"] and (ROOT / "book" / "_static" / "sentcl.css").is_file()
    css = (ROOT / "book" / "_static" / "sentcl.css").read_text()
    assert not re.search(r"url\(|@import", css)  # nothing fetched from elsewhere
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert "url" not in config["repository"]  # written in at build time from pyproject's [project.urls] Repository


@pytest.mark.slow
def test_stage_without_any_run(mathjax, tmp_path):
    src = site.stage(ROOT, tmp_path)
    for chapter in CHAPTERS:
        has_notebook = (ROOT / "notebooks" / f"{chapter}.ipynb").is_file()
        placeholder = (src / "notebooks" / f"{chapter}.md").read_text()
        assert ("was not run" if has_notebook else "is not written yet") in placeholder
        results = (src / site.GENERATED / chapter / "results.md").read_text()
        assert "No results in this build" in results
    mnrl = (src / site.GENERATED / "mnrl_sbert" / "results.md").read_text()
    assert "paper [#] (cited)" in mnrl and "MNRLSRoBERTa" in mnrl and "ours ·" not in mnrl
    scorecard = (src / site.GENERATED / "scorecard.md").read_text()
    for chapter in CHAPTERS:  # every paper cell listed, none computed: all of them the paper's (cited)
        cells = len(paper_values(chapter))
        assert (cells == 0) == CHAPTERS[chapter].own
        assert f"| [{chapter}](../{chapter}.md) | not run | {cells} | 0 | {cells} | 0 | — | — | — |" in scorecard
    assert "A chapter of our own, not run in this build" in scorecard
    assert len(paper_values("mnrl_sbert")) == 208
    assert "No chapter has run" in (src / site.GENERATED / "timings.md").read_text()
    assert "No run records" in (src / site.GENERATED / "environment.md").read_text()
    config = yaml.safe_load((src / "_config.yml").read_text())
    assert "announcement" not in config.get("html", {})
    assert (src / "book" / "_vendor").resolve() == (ROOT / "book" / "_vendor").resolve()


def _state(chapter: str, profile: str | None, sample: bool, ran: bool = True) -> pages.ChapterState:
    from sentcl.book.output.results import load_results
    from sentcl.book.output.run_records import RunRecord
    from sentcl.book.pages.report import compare

    record = RunRecord(kind="notebook", name=chapter, chapter=chapter, profile=profile, run_id="r", started="t",
                       config={"sample": sample}) if ran else None
    return pages.ChapterState(chapter, CHAPTERS[chapter].title, True, None, record, compare(chapter, load_results("/nonexistent")))


FAKE_DATA = "/nonexistent-sentcl/someone/shared/data"  # a real data root on "the build machine"


def demo_output(out: Path, profile: str = "demo", values: dict | None = None) -> Path:
    """An output folder as a demo run on real data leaves it: results within a few tenths of the
    paper's (by coincidence), a notebook run record and a data_used file naming the data root."""
    from sentcl.book.output.claims import write_claims
    from sentcl.book.output.results import Result, save_results
    from sentcl.book.output.run_records import RunRecord, write_run_record

    values = values or {("Table 2", "MNRLSBERT"): 78.5, ("Table 2", "SBERT"): 74.9, ("Table 1", "MNRLSBERT"): 78.5}
    data = f"real data from {FAKE_DATA}; STS pairs scored: STSb 1,379"
    save_results(out, "mnrl_sbert", [
        Result(table=t, row=r, column="Average", value=v, seeds=(0,), profile=profile, kind="reproduced", data=data,
               note=f"all-MiniLM-L6-v2 stands in for bert-base-uncased; cache {out}/cache")
        for (t, r), v in values.items()
    ], run_id="run-1")
    write_run_record(out, RunRecord(kind="notebook", name="mnrl_sbert", chapter="mnrl_sbert", profile=profile,
                                    run_id="run-1", started="2026-01-01T00:00:00+00:00", wall_time_s=60.0,
                                    config={"data_root": FAKE_DATA, "sample": False, "executed": str(out / "x.ipynb")}))
    write_claims(out, "mnrl_sbert", pd.DataFrame([{
        "chapter": "mnrl_sbert", "table": "Table 2", "claim": "MNRLSBERT above SBERT", "left": "MNRLSBERT", "right": "SBERT",
        "column": "Average", "delta": 3.6, "ci_low": 1.2, "ci_high": 6.0, "p": 0.002, "p_holm": 0.002, "verdict": "direction reproduced",
        "reason": "Holm-adjusted p 0.002", "design": "paired over items, unpaired over seeds", "seeds_left": 3,
        "seeds_right": 3, "paper_left": 78.6, "paper_right": 74.89, "source": "paper", "paper_gap": 3.71, "adj_low": 1.2,
        "adj_high": 6.0, "mde": 3.4, "family": "primary", "central": "M1", "family_m": 1}]))
    (out / "data_used").mkdir(parents=True, exist_ok=True)
    (out / "data_used" / "mnrl_sbert.json").write_text(json.dumps(
        {"chapter": "mnrl_sbert", "run_id": "run-1", "profile": profile, "data_root": FAKE_DATA, "sample": False,
         "datasets": [{"name": "stsbenchmark", "split": "test", "records": 1379, "sample": False, "dropped": {}}]}))
    return out


def executed_notebook(path: Path, out: Path) -> Path:
    """A small notebook as papermill leaves it: parameters, the injected cell with local paths,
    the title, and outputs that print the paths."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell('profile = "paper"\ndata_dir = None\nout_dir = "runs/paper"\nseed = 0')
    params.metadata["tags"] = ["parameters"]
    injected = nbformat.v4.new_code_cell(
        f'# Parameters\nprofile = "demo"\ndata_dir = "{FAKE_DATA}"\nout_dir = "{out}"\nbase_models = {{"BERT": "m"}}\n')
    injected.metadata["tags"] = ["injected-parameters"]
    code = nbformat.v4.new_code_cell("print(run.data.describe())")
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text=f"profile demo: real data from {FAKE_DATA}\n"),
        nbformat.v4.new_output("stream", name="stderr", text=f"{out}/cache/x.py:3: UserWarning: careful\n"),
        nbformat.v4.new_output("display_data", data={
            "text/html": f'<div class="sentcl-table full-width"><ul><li>Data: real data from {FAKE_DATA}.</li></ul></div>',
            "text/plain": f"<table from {FAKE_DATA}>"}),
    ]
    nb.cells = [params, injected, nbformat.v4.new_markdown_cell("# A small chapter\n\nIts story comes first."), code]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.metadata["papermill"] = {"parameters": {"profile": "demo", "data_dir": FAKE_DATA, "out_dir": str(out)},
                                "input_path": "notebooks/mnrl_sbert.ipynb", "output_path": str(path)}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    return path


def test_the_staged_notebook_opens_with_its_title_and_names_no_local_path(tmp_path):
    import nbformat

    out = tmp_path / "out"
    executed = executed_notebook(out / "notebooks" / "mnrl_sbert.ipynb", out)
    known = {str(out): public.OUT_LABEL, FAKE_DATA: public.DATA_ROOT_LABEL}
    staged = nbformat.read(site.stage_notebook(executed, tmp_path / "staged.ipynb", known), as_version=4)
    title, params, note, code = staged.cells
    assert title.cell_type == "markdown" and title.source.startswith("# A small chapter")
    assert "parameters" in params.metadata["tags"] and "hide-input" in params.metadata["tags"]  # collapsed, one click away
    assert params.metadata["mystnb"]["code_prompt_show"].startswith("Show the parameters cell")
    assert note.cell_type == "markdown" and ":class: dropdown" in note.source
    assert "profile demo" in note.source and 'data_dir = "$SENTCL_DATA"' in note.source and 'out_dir = "<out>"' in note.source
    assert 'base_models = {"BERT": "m"}' in note.source
    text = json.dumps(staged)
    assert FAKE_DATA not in text and str(tmp_path) not in text and "nonexistent-sentcl" not in text
    assert code.outputs[0]["text"] == "profile demo: real data from $SENTCL_DATA\n"
    assert code.outputs[1]["text"].startswith("<out>/cache/x.py:3")
    assert 'class="sentcl-table"' in code.outputs[2]["data"]["text/html"]  # an old full-width table: not under the panel
    assert staged.metadata["papermill"]["parameters"] == {"profile": "demo", "data_dir": "$SENTCL_DATA", "out_dir": "<out>"}
    original = nbformat.read(executed, as_version=4)  # the executed notebook itself is untouched
    assert "parameters" in original.cells[0].metadata["tags"] and FAKE_DATA in original.cells[1].source


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_each_notebook_has_one_imports_cell_and_its_page_collapses_it(chapter, tmp_path):
    """The imports cell is the one code cell tagged ``imports``: the one that imports from sentcl and opens the
    chapter's ``ChapterRun``. On the page its code is collapsed as the parameters cell's is."""
    import nbformat

    path = ROOT / "notebooks" / f"{chapter}.ipynb"
    cells = nbformat.read(path, as_version=4).cells
    tagged = [i for i, c in enumerate(cells) if site.IMPORTS_TAG in c.metadata.get("tags", [])]
    opens_run = [i for i, c in enumerate(cells) if c.cell_type == "code" and re.search(r"^run = ChapterRun\(", c.source, re.M)]
    assert len(tagged) == 1 and tagged == opens_run, f"{chapter}: tagged {tagged}, opening the run {opens_run}"
    assert re.search(r"^from sentcl\.book\.notebook import \(?[^)]*\bChapterRun\b", cells[tagged[0]].source, re.M)
    staged = nbformat.read(site.stage_notebook(path, tmp_path / path.name), as_version=4).cells
    [imports] = [c for c in staged if site.IMPORTS_TAG in c.metadata.get("tags", [])]
    assert "hide-input" in imports.metadata["tags"] and imports.source == cells[tagged[0]].source
    assert imports.metadata["mystnb"]["code_prompt_show"].startswith("Show the imports cell")


def test_a_demo_run_is_a_miniature_not_judged_against_the_papers_numbers(tmp_path):
    from sentcl.book.pages.report import COLOURS

    out = demo_output(tmp_path / "out")
    (mnrl,) = [s for s in pages.chapter_states(ROOT, out) if s.chapter == "mnrl_sbert"]
    assert mnrl.ran and mnrl.miniature and not mnrl.sample and mnrl.profiles == ["demo"]
    scorecard = pages.scorecard(pages.chapter_states(ROOT, out))
    # 3 cells computed, one claim (the MNRLSBERT-above-SBERT ordering of Table 2) holding; no agreement counted
    assert "| [mnrl_sbert](../mnrl_sbert.md) | demo (miniature) | 208 | 3 | 205 | 0 | 1 | 1 / 0 / 0 / 0; 0 / 0 / 0 / 0 | — |" in scorecard
    results = pages.chapter_results(mnrl)
    assert "**A miniature** (demo profile)" in results
    findings = findings_section(mnrl)  # the claims open the page: the verdicts with their intervals, not counts
    assert ("**primary** (1 claim, Holm over the 1 the plan tests): 1 direction reproduced, 0 direction reversed, "
            "0 undetermined, 0 not tested") in findings and "+3.60 [+1.20, +6.00]" in findings
    assert "Table 2: 1 hold" not in results  # counted once, at the top of the page
    for page in (scorecard, results, findings):
        assert not any(colour in page for colour in COLOURS.values()) and "background-color" not in page
    # the same numbers from a paper-profile run are judged: they agree
    paper = demo_output(tmp_path / "paper", profile="paper")
    (judged,) = [s for s in pages.chapter_states(ROOT, paper) if s.chapter == "mnrl_sbert"]
    assert not judged.miniature
    assert "| [mnrl_sbert](../mnrl_sbert.md) | paper | 208 | 3 | 205 | 0 | 1 | 1 / 0 / 0 / 0; 0 / 0 / 0 / 0 | 3 / 0 / 0 |" in pages.scorecard([judged])
    assert COLOURS["agrees"] in pages.chapter_results(judged) and "A miniature" not in pages.chapter_results(judged)
    # a rehearsal run: the paper's schedules on a tiny stand-in, neither judged nor a miniature of the paper
    rehearsal = demo_output(tmp_path / "rehearsal", profile="rehearsal")
    (rehearsed,) = [s for s in pages.chapter_states(ROOT, rehearsal) if s.chapter == "mnrl_sbert"]
    shown = pages.chapter_results(rehearsed)
    assert rehearsed.miniature and "**A rehearsal**" in shown and "A miniature" not in shown
    assert not any(colour in shown for colour in COLOURS.values())


def test_pages_name_the_data_root_not_its_local_path(tmp_path):
    out = demo_output(tmp_path / "out")
    failed = json.loads(next((out / "records").glob("*.json")).read_text())
    failed.update(status="failed", error=f"FileNotFoundError: {FAKE_DATA}/snli/train.jsonl")
    (out / "records" / "notebook-mnrl_sbert-run-1.json").write_text(json.dumps(failed))
    states = pages.chapter_states(ROOT, out)
    known = public.local_paths(ROOT, out, [r for s in states for r in s.data_roots()])
    built = {
        "datasets": pages.datasets(states, ROOT),
        "results": pages.chapter_results(states[0], known),
        "scorecard": pages.scorecard(states, known),
        "environment": environment.environment_page(read_run_records(out / "records"), known),
    }
    for name, page in built.items():
        assert "nonexistent-sentcl" not in page and str(tmp_path) not in page, name
    assert "`$SENTCL_DATA` (the real data root, a folder named `data`)" in built["datasets"]
    assert r"real data from \$SENTCL_DATA" in built["results"] or "real data from $SENTCL_DATA" in built["results"]
    assert r"\$SENTCL_DATA/snli/train.jsonl" in built["results"] and r"\$SENTCL_DATA/snli" in built["environment"]
    assert "cache &lt;out&gt;/cache" in built["results"]  # in the legend (HTML)


@pytest.mark.slow
def test_a_demo_book_built_in_tmp_reads_title_first_names_no_local_path_and_colours_nothing(mathjax, tmp_path):
    """The whole book from a demo-profile output folder with a small executed notebook: the
    notebook's page opens with its title (the parameters collapsed under it, the injected values
    in a closed note), no published file names the data root's or the output folder's local path,
    and the miniature's cells, close to the paper's by coincidence, are not coloured anywhere."""
    from sentcl.book.pages.report import COLOURS

    out = demo_output(tmp_path / "out")
    executed_notebook(out / "notebooks" / "mnrl_sbert.ipynb", out)
    html_root = site.build(site.stage(ROOT, out), tmp_path / "book")
    published = [p for p in html_root.rglob("*") if p.is_file() and p.suffix in (".html", ".md", ".ipynb", ".txt")]
    assert published
    for path in published:
        text = path.read_text(errors="replace")
        assert "nonexistent-sentcl" not in text and str(tmp_path) not in text, path.relative_to(html_root)
    notebook = (html_root / "notebooks" / "mnrl_sbert.html").read_text()
    article = notebook[notebook.index('<article class="bd-article"'):]
    assert article.index("<h1") < article.index('class="cell') and "A small chapter" in article[: article.index('class="cell')]
    assert "tag_hide-input" in article and "The parameters of this run (profile demo)" in article and "dropdown" in article
    assert "Show the parameters cell" in article
    assert "$SENTCL_DATA" in article and "real data from $SENTCL_DATA" in html.unescape(article)
    for page in ("book/mnrl_sbert.html", "book/_generated/scorecard.html", "notebooks/mnrl_sbert.html"):
        text = (html_root / page).read_text()
        assert not any(colour in text for colour in COLOURS.values()), page
    scorecard = html.unescape((html_root / "book" / "_generated" / "scorecard.html").read_text())
    assert "demo (miniature)" in scorecard and "primary family: 1 direction reproduced, 0 direction reversed, 0 undetermined, 0 not tested" in scorecard
    assert 'href="../../_static/sentcl.css' in scorecard and (html_root / "_static" / "sentcl.css").is_file()
    assert "bd-sidebar-secondary" not in scorecard  # the wide page has no contents panel
    assert "bd-sidebar-secondary" in (html_root / "book" / "mnrl_sbert.html").read_text()


def test_the_banner_says_when_chapters_ran_on_sample_data():
    assert pages.announcement([_state("bsc", "demo", False), _state("rcl", "demo", False)]) is None
    partial = pages.announcement([_state("bsc", "demo", False), _state("rcl", None, True, ran=False)])
    assert partial.startswith("Partial build (complete: bsc; not run: rcl)")
    smoke = pages.announcement([_state("bsc", "smoke", True), _state("rcl", "smoke", True)])
    assert smoke.startswith("Smoke build (bsc, rcl)")
    demo = pages.announcement([_state("bsc", "demo", True), _state("rcl", "demo", False)])
    assert demo.startswith("Sample data: bsc ran on the project's sample data")
    rehearsal = pages.announcement([_state("bsc", "rehearsal", False), _state("rcl", "demo", False)])
    assert rehearsal.startswith("Rehearsal build (bsc): the paper profile's schedules, rows and tables on a tiny random stand-in")


@pytest.mark.slow
def test_a_broken_cross_reference_fails_the_build(mathjax, tmp_path):
    src = site.stage(ROOT, tmp_path)
    intro = src / "book" / "intro.md"
    intro.write_text(intro.read_text() + "\nSee [a page that does not exist](no_such_page.md).\n")
    with pytest.raises(SentclError, match="the book build failed"):
        site.build(src, tmp_path / "book")


# --------------------------------------------------------------------------- the smoke book


def test_smoke_profile_end_to_end(smoke_book):
    project, out, status, output = smoke_book
    assert status == 0, output
    run = sorted(c for c in CHAPTERS if (project / "notebooks" / f"{c}.ipynb").is_file())
    assert run, "no chapter notebook ran"
    records = {r.chapter: r for r in read_run_records(out / "records")}
    assert sorted(records) == run and all(r.status == "ok" and r.profile == "smoke" for r in records.values())
    assert re.search(r"chapter\s+status\s+wall time\s+peak memory\s+executed notebook", output)
    html_root = out / "_build" / "html"
    for chapter in CHAPTERS:
        assert (html_root / "book" / f"{chapter}.html").is_file()
        assert (html_root / "notebooks" / f"{chapter}.html").is_file()
    for page in ("scorecard", "datasets", "environment"):
        assert (html_root / "book" / "_generated" / f"{page}.html").is_file()
    results = load_results(out)
    assert set(results["kind"]) <= {"sample-data"} and set(results["profile"]) <= {"smoke"}
    assert "Smoke build" in (html_root / "book" / "intro.html").read_text()  # the banner on every page
    scorecard = (html_root / "book" / "_generated" / "scorecard.html").read_text()
    for chapter in results["chapter"].unique():
        page = (html_root / "book" / f"{chapter}.html").read_text()
        assert "ours · sample data" in page and "ours · sample data" in scorecard
        assert "executed notebook" in page
    environment = (html_root / "book" / "_generated" / "environment.html").read_text()
    assert all(r.run_id in environment for r in records.values())
    # the repository's address is the placeholder: no Colab button, said on the terminal; the wheel beside the pages
    assert re.search(r"^sentcl: WARNING: .*Repository is the placeholder", output, re.M)
    for chapter in run:
        page = (html_root / "notebooks" / f"{chapter}.html").read_text()
        assert "colab.research.google.com" not in page
        assert "IProgress not found" not in page  # tqdm's ipywidgets warning, quieted by the notebook's first import
    wheel = html_root / "_static" / install.wheel_name(ROOT)
    assert wheel.is_file() and f'href="../_static/{wheel.name}"' in (html_root / "book" / "intro.html").read_text()


def test_no_page_cell_or_button_of_the_built_book_points_at_the_placeholder(smoke_book):
    """The pages, the notebooks offered for download and their install cells: no OWNER address; the
    offered notebooks install from the wheel beside the pages (there is no repository)."""
    import nbformat

    _project, out, status, output = smoke_book
    assert status == 0, output
    html_root = out / "_build" / "html"
    files = [p for p in html_root.rglob("*") if p.is_file() and p.suffix in (".html", ".ipynb", ".md", ".txt", ".js")]
    assert files and not [str(p.relative_to(html_root)) for p in files if "github.com/OWNER" in p.read_text(errors="replace")]
    offered = sorted((html_root / "_sources" / "notebooks").glob("*.ipynb"))
    assert offered
    for path in offered:
        nb = nbformat.read(path, as_version=4)
        cell = install.install_cell_of(nb, path)
        assert install.cell_source(cell.source) == install.wheel_name(ROOT), path.name
        assert "hide-input" in cell.metadata["tags"]  # collapsed on the page: the story comes first
        [resolve] = [c for c in nb.cells if "resolve_parameters(" in c.source]
        assert "hide-output" in resolve.metadata["tags"] and "profile smoke" in resolve.outputs[0]["text"]
        [imports] = [c for c in nb.cells if site.IMPORTS_TAG in c.metadata.get("tags", [])]
        assert "hide-input" in imports.metadata["tags"]  # its code collapsed, its output (the run's profile) shown
        assert any("profile smoke" in o.get("text", "") for o in imports.outputs)


def test_the_mnrl_sbert_chapter_regenerates_its_tables_figures_and_conclusions(smoke_book):
    """Tables 1-2 with our computed rows beside the paper's (the rest cited), Figures 6-7 in two
    panels, the conclusions generated from the numbers and the cost estimate from its file."""
    _, out, status, output = smoke_book
    assert status == 0, output
    mine = load_results(out, ["mnrl_sbert"])
    computed = {"Table 1": {"BERT (first-last avg.)", "BERT-whitening", "MNRLSBERT", "tiny untouched (mean pooling)"},
                "Table 2": {"SBERT", "SBERT-whitening", "MNRLSBERT"}}
    for table, rows in computed.items():
        part = mine[mine["table"] == table]
        assert set(part["row"]) == rows
        for row in rows:  # the seven tasks and their average, the average being their mean
            cells = part[part["row"] == row].set_index("column")["value"]
            assert list(cells.index) == ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Average"]
            assert cells["Average"] == pytest.approx(cells.drop("Average").mean())
    assert sorted(p.stem for p in (out / "figures" / "mnrl_sbert").glob("*.png")) == ["figure-6a", "figure-6b", "figure-7a", "figure-7b"]
    page = html.unescape((out / "_build" / "html" / "book" / "mnrl_sbert.html").read_text())
    assert "Assumptions and deviations" in page and "Table 1: paper vs ours" in page and "Table 2: paper vs ours" in page
    # the trained rows are the mean over the smoke profile's two seeds, and say so
    assert len(re.findall(r"ours · sample data(?: · 2 seeds)?</th>", page)) == len(computed["Table 1"]) + len(computed["Table 2"])
    assert page.count("ours · sample data · 2 seeds</th>") == 4  # MNRLSBERT twice, SBERT, SBERT-whitening
    assert "background-color" not in page.split("Assumptions and deviations")[0]  # a miniature: nothing coloured
    assert "paper [#] (cited)" in page and "SimCSE-RoBERTa" in page
    notebook = html.unescape((out / "_build" / "html" / "notebooks" / "mnrl_sbert.html").read_text())
    assert "MNRLSBERT above SBERT (M1, Table 2, Average; primary family): paper 78.60 vs 74.89 (+3.71)" in notebook
    assert "MNRLSBERT (fine-tuned) above the untouched encoder" in notebook and "<strong>not tested</strong>" in notebook
    assert "T4 time (h, estimate)" in notebook  # the cost table, read from benchmarks/results
    assert "Traceback" not in notebook


def test_no_built_page_names_a_local_path(smoke_book):
    """The published files (pages, the sources and notebooks offered for download) never name the
    checkout, the output folder or the sample data by their local paths; the executed notebook's
    page opens with its title, its parameters collapsed below it."""
    from sentcl.data import samples_root

    project, out, status, output = smoke_book
    assert status == 0, output
    html_root = out / "_build" / "html"
    local = {str(project), str(out), str(ROOT), str(samples_root()), str(Path.home())} - {"/"}
    files = [p for p in html_root.rglob("*") if p.suffix in (".html", ".md", ".ipynb", ".txt", ".js") and p.is_file()]
    files = [p for p in files if "_static" not in p.parts]
    leaks = {str(p.relative_to(html_root)): sorted(d for d in local if d in p.read_text(errors="replace")) for p in files}
    assert not {k: v for k, v in leaks.items() if v}
    for chapter in CHAPTERS:
        if (out / "notebooks" / f"{chapter}.ipynb").is_file():
            page = (html_root / "notebooks" / f"{chapter}.html").read_text()
            article = page[page.index('<article class="bd-article"'):]
            assert article.index("<h1") < article.index('class="cell')  # the title before any code
            assert "tag_hide-input" in article and "The parameters of this run (profile smoke)" in article


def test_the_built_pages_need_nothing_from_the_network(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    html_root = out / "_build" / "html"
    remote = re.compile(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=[\"'](?:https?:)?//", re.I)
    pages = list(html_root.rglob("*.html"))
    assert pages
    offenders = {str(p.relative_to(html_root)): m.group(0) for p in pages for m in [remote.search(p.read_text())] if m}
    assert not offenders
    css_remote = re.compile(r"url\(\s*[\"']?(?:https?:)?//|@import\s+[\"'](?:https?:)?//", re.I)
    css = [p for p in (html_root / "_static").rglob("*.css")]
    assert not [str(p) for p in css if css_remote.search(p.read_text(errors="replace"))]
    intro = (html_root / "book" / "intro.html").read_text()
    assert 'src="../_static/mathjax/tex-mml-chtml.js' in intro or "mathjax" not in intro.lower()


# --------------------------------------------------------------------------- headless Chromium

# The iframe's load event comes after every image of the page has loaded (or failed), so an
# image's naturalWidth is known then; awaiting img.decode() as well raced the decoder threads
# (real time) against Chromium's virtual clock and timed out at random on pages with figures.
CHECKER = """<!doctype html><html><body><pre id="result"></pre><iframe id="f" width="1280" height="1000"></iframe>
<script>
const pages = PAGES;
const wait = ms => new Promise(r => setTimeout(r, ms));
async function check(url) {
  const f = document.getElementById('f');
  await new Promise(res => { f.onload = res; f.src = url; });
  const w = f.contentWindow, d = f.contentDocument;
  const maths = [...d.querySelectorAll('.math')];
  for (let i = 0; maths.length && i < 200 && !(w.MathJax && w.MathJax.startup && w.MathJax.startup.promise); i++) await wait(50);
  if (w.MathJax && w.MathJax.startup && w.MathJax.startup.promise) await w.MathJax.startup.promise;
  const side = d.querySelector('.bd-sidebar-secondary');
  const sideLeft = side && side.getClientRects().length ? side.getBoundingClientRect().left : null;
  const tables = [...d.querySelectorAll('.sentcl-table, .sentcl-wide')].map(e => {
    const r = e.getBoundingClientRect();
    const t = e.querySelector('table');
    return {caption: ((e.querySelector('caption, th') || {}).textContent || '').trim().slice(0, 60),
            table: t ? Math.round(t.getBoundingClientRect().width) : 0, box: e.clientWidth,
            left: Math.round(r.left), right: Math.round(r.right),
            cols: t && t.rows.length > 2 ? [...t.rows[2].cells].map(c => Math.round(c.getBoundingClientRect().width)) : []};
  });
  const body = d.body.cloneNode(true);
  body.querySelectorAll('script, style, pre, code, .highlight, mjx-container').forEach(e => e.remove());
  const text = body.textContent;
  return {
    url, title: d.title, h1: (d.querySelector('h1') || {}).textContent || '',
    width: w.innerWidth, sidebar: sideLeft, tables,
    first: (() => { const a = d.querySelector('article.bd-article'); const f = a && [...a.querySelectorAll('h1, .cell, p')].find(e => e.getClientRects().length); return f ? f.tagName + ' ' + f.className : ''; })(),
    images: [...d.images].map(i => ({src: i.getAttribute('src'), width: i.naturalWidth})),
    findings: (() => { const t = d.querySelector('.sentcl-findings table, .sentcl-answer table'); return t ? Math.round(t.getBoundingClientRect().top + w.scrollY) : null; })(),
    article: (d.querySelector('article.bd-article') || {}).innerText || '',
    math: maths.length, typeset: maths.filter(m => m.querySelector('mjx-container')).length,
    raw: ['\\\\(', '\\\\['].filter(s => text.includes(s)),
    foreign: w.performance.getEntriesByType('resource').map(e => e.name).filter(n => !n.startsWith(location.origin)),
  };
}
(async () => {
  const out = [];
  for (const p of pages) {
    const late = wait(30000).then(() => ({url: p, error: 'not loaded and typeset within 30 s'}));
    try { out.push(await Promise.race([check(p), late])); } catch (e) { out.push({url: p, error: String(e)}); }
    document.getElementById('result').textContent = JSON.stringify(out);
  }
})();
</script></body></html>"""


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("headless Chromium is not installed (`make browser`, or apt-get install chromium): browser checks not run")


class _Handler(SimpleHTTPRequestHandler):
    checker = b""

    def do_GET(self):
        if self.path.startswith("/__check__.html"):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(self.checker)
        else:
            super().do_GET()

    def log_message(self, *args):
        pass


def browse(html_root: Path, pages: list[str], tmp: Path) -> list[dict]:
    """Load each page in headless Chromium (served over HTTP from the build), wait for
    MathJax and the images, and return what the page holds."""
    browser = chromium()
    handler = type("Handler", (_Handler,), {"checker": CHECKER.replace("PAGES", json.dumps(pages)).encode()})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(html_root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        proc = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--no-first-run", f"--user-data-dir={tmp / 'profile'}",
             "--virtual-time-budget=600000", "--dump-dom", f"http://127.0.0.1:{server.server_port}/__check__.html"],
            capture_output=True, text=True, timeout=180,
        )
    finally:
        server.shutdown()
    found = re.search(r'<pre id="result">(.*?)</pre>', proc.stdout, re.S)
    checked = json.loads(html.unescape(found.group(1))) if found and found.group(1) else []
    assert len(checked) == len(pages), f"the checker stopped after {[c['url'] for c in checked]}: {proc.stderr[-1500:]}"
    return checked


@pytest.mark.browser
def test_pages_render_in_headless_chromium(smoke_book, tmp_path):
    _, out, status, output = smoke_book
    assert status == 0, output
    chapters = [f"book/{c}.html" for c in CHAPTERS] + [f"notebooks/{c}.html" for c in CHAPTERS]
    pages = ["book/intro.html", *chapters, *(f"book/_generated/{p}.html" for p in ("scorecard", "datasets", "environment"))]
    checked = browse(out / "_build" / "html", ["/" + p for p in pages], tmp_path)
    assert [c["url"] for c in checked] == ["/" + p for p in pages]
    for page in checked:
        assert "error" not in page, page
        assert page["h1"].strip() and page["title"], f"{page['url']} did not load"
        assert all(img["width"] > 0 for img in page["images"]), f"{page['url']}: broken images {page['images']}"
        assert page["typeset"] == page["math"], f"{page['url']}: {page['math'] - page['typeset']} formulas not typeset"
        assert not page["raw"], f"{page['url']}: raw TeX delimiters {page['raw']} left in the text"
        assert not page["foreign"], f"{page['url']} loaded resources from elsewhere: {page['foreign']}"
        assert page["width"] == 1280
        for table in page["tables"]:  # at 1280 px: the whole table (its Average column) shows, no sideways scroll
            assert table["table"] <= table["box"] + 1, f"{page['url']}: {table['caption']!r} is cut at the right edge: {table}"
            assert page["sidebar"] is None or table["right"] <= page["sidebar"] + 1, (
                f"{page['url']}: {table['caption']!r} runs under the contents panel at x={page['sidebar']}: {table}")
            assert table["right"] <= page["width"], f"{page['url']}: {table['caption']!r} is wider than the window"
    by_url = {c["url"]: c for c in checked}
    first_screen = 800  # 1280 x 800: what a reader sees before scrolling
    assert by_url["/book/intro.html"]["findings"] is not None and by_url["/book/intro.html"]["findings"] < first_screen, (
        "the introduction's answer table is not on its first screen")
    for chapter in CHAPTERS:
        page = by_url[f"/book/{chapter}.html"]
        tested = read_claims(out, chapter).query("verdict != 'not tested'")
        if len(tested):  # the findings table on the first screen, every claim with a verdict on it
            assert page["findings"] is not None and page["findings"] < first_screen, f"{chapter}: findings at {page['findings']} px"
            missing = [c for c in tested["claim"] if c not in page["article"]]
            assert not missing, f"{chapter}: claims with a verdict missing from the page: {missing}"
    assert sum(len(read_claims(out, c).query("verdict != 'not tested'")) for c in CHAPTERS) > 0  # the check checked something
    for chapter in CHAPTERS:
        assert by_url[f"/book/{chapter}.html"]["math"] > 0  # every chapter page states its equation
        assert by_url[f"/notebooks/{chapter}.html"]["first"].startswith("H1")  # the title first, then the code
    scorecard = by_url["/book/_generated/scorecard.html"]
    assert scorecard["sidebar"] is None and len(scorecard["tables"]) >= 1  # no contents panel over the summary
    assert by_url["/book/mnrl_sbert.html"]["tables"], "the chapter's tables were not found"
    with_figures = {p.parent.name for p in (out / "figures").glob("*/*.png")}
    for chapter in with_figures:
        images = by_url[f"/book/{chapter}.html"]["images"]
        assert images and all(i["src"].startswith("../_images/") for i in images)
