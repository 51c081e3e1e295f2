"""The book: generated pages, the offline build, the smoke profile end to end, and a
check of the rendered pages in headless Chromium (sentcl.book.site, sentcl reproduce)."""

from __future__ import annotations

import functools
import html
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from sentcl.book import site
from sentcl.book.chapter import CHAPTERS
from sentcl.book.records import read_run_records
from sentcl.book.results import load_results
from sentcl.errors import SentclError

ROOT = Path(__file__).resolve().parents[2]


def needs_mathjax():
    if not (ROOT / site.MATHJAX).is_file():
        pytest.fail(f"MathJax is missing ({ROOT / site.MATHJAX}): run `python3 scripts/fetch_mathjax.py` (make setup does)")


def copy_project(target: Path) -> Path:
    """A copy of the checkout's book sources, notebooks and recorded benchmark results (which
    chapters show), MathJax linked."""
    target.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, target / name)
    shutil.copytree(ROOT / "book", target / "book", ignore=shutil.ignore_patterns("_vendor", "_generated", ".ipynb_checkpoints"))
    (target / "book" / "_vendor").symlink_to(ROOT / "book" / "_vendor", target_is_directory=True)
    shutil.copytree(ROOT / "notebooks", target / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    shutil.copytree(ROOT / "benchmarks" / "results", target / "benchmarks" / "results")
    return target


# --------------------------------------------------------------------------- sources


def test_toc_lists_every_chapter_and_its_notebook():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    chapters = [c for part in toc["parts"] for c in part["chapters"]]
    listed = [(c["file"], [s["file"] for s in c.get("sections", [])]) for c in chapters]
    assert listed[: len(CHAPTERS)] == [(f"book/{c}", [f"notebooks/{c}"]) for c in CHAPTERS]
    assert [f for f, _ in listed[len(CHAPTERS):]] == [f"book/_generated/{p}" for p in ("scorecard", "datasets", "environment")]
    for chapter in CHAPTERS:
        page = (ROOT / "book" / f"{chapter}.md").read_text()
        assert f"_generated/{chapter}/results.md" in page, f"book/{chapter}.md must include its generated results"


def test_config_reads_offline_and_never_executes():
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert config["execute"]["execute_notebooks"] == "off"
    sphinx = config["sphinx"]["config"]
    assert not sphinx["mathjax_path"].startswith(("http:", "https:", "//"))
    assert sphinx["html_static_path"] == ["book/_vendor"] and "_static" not in sphinx["html_static_path"][0]
    assert config["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert config["repository"]["url"].startswith("https://github.com/")


def test_stage_without_any_run(tmp_path):
    needs_mathjax()
    src = site.stage(ROOT, tmp_path)
    for chapter in CHAPTERS:
        has_notebook = (ROOT / "notebooks" / f"{chapter}.ipynb").is_file()
        placeholder = (src / "notebooks" / f"{chapter}.md").read_text()
        assert ("was not run" if has_notebook else "is not written yet") in placeholder
        results = (src / site.GENERATED / chapter / "results.md").read_text()
        assert "No results in this build" in results
    mnrl = (src / site.GENERATED / "mnrl_sbert" / "results.md").read_text()
    assert "paper [#] (cited)" in mnrl and "MNRLSRoBERTa" in mnrl and "ours ·" not in mnrl
    assert "| [mnrl_sbert](../mnrl_sbert.md) | — | 208 | 0 |" in (src / site.GENERATED / "scorecard.md").read_text()
    assert "No chapter has run" in (src / site.GENERATED / "timings.md").read_text()
    assert "No run records" in (src / site.GENERATED / "environment.md").read_text()
    config = yaml.safe_load((src / "_config.yml").read_text())
    assert "announcement" not in config.get("html", {})
    assert (src / "book" / "_vendor").resolve() == (ROOT / "book" / "_vendor").resolve()


def _state(chapter: str, profile: str | None, sample: bool, ran: bool = True) -> site.ChapterState:
    from sentcl.book.records import RunRecord
    from sentcl.book.report import compare
    from sentcl.book.results import load_results

    record = RunRecord(kind="notebook", name=chapter, chapter=chapter, profile=profile, run_id="r", started="t",
                       config={"sample": sample}) if ran else None
    return site.ChapterState(chapter, CHAPTERS[chapter], True, None, record, compare(chapter, load_results("/nonexistent")))


def test_the_banner_says_when_chapters_ran_on_sample_data():
    assert site.announcement([_state("bsc", "demo", False), _state("rcl", None, True, ran=False)]) is None
    smoke = site.announcement([_state("bsc", "smoke", True), _state("rcl", "smoke", True)])
    assert smoke.startswith("Smoke build (bsc, rcl)")
    demo = site.announcement([_state("bsc", "demo", True), _state("rcl", "demo", False)])
    assert demo.startswith("Sample data: bsc ran on the project's sample data")


def test_a_broken_cross_reference_fails_the_build(tmp_path):
    needs_mathjax()
    src = site.stage(ROOT, tmp_path)
    intro = src / "book" / "intro.md"
    intro.write_text(intro.read_text() + "\nSee [a page that does not exist](no_such_page.md).\n")
    with pytest.raises(SentclError, match="the book build failed"):
        site.build(src, tmp_path / "book")


# --------------------------------------------------------------------------- the smoke book


@pytest.fixture(scope="module")
def smoke_book(tmp_path_factory):
    """`sentcl reproduce --profile smoke` on a copy of the project (its real notebooks),
    built outside the checkout. Returns (project, out, status, output)."""
    needs_mathjax()
    base = tmp_path_factory.mktemp("smoke-book")
    project = copy_project(base / "project")
    assert (project / "notebooks" / "mnrl_sbert.ipynb").is_file(), "the MNRL-SBERT chapter's notebook is missing"
    out = base / "out"
    env = {k: v for k, v in os.environ.items() if k != "SENTCL_DATA"}
    proc = subprocess.run(
        [sys.executable, "-m", "sentcl", "reproduce", "--profile", "smoke", "--out", str(out), "--book-dir", str(out)],
        capture_output=True, text=True, timeout=600, cwd=project, env=env,
    )
    return project, out, proc.returncode, proc.stdout + proc.stderr


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
    for chapter in run:  # the executed notebook, with its Colab launch button
        page = (html_root / "notebooks" / f"{chapter}.html").read_text()
        assert f"https://colab.research.google.com/github/OWNER/sentcl/blob/main/notebooks/{chapter}.ipynb" in page


def test_the_mnrl_sbert_chapter_regenerates_its_tables_figures_and_conclusions(smoke_book):
    """Tables 1-2 with our computed rows beside the paper's (the rest cited), Figures 6-7 in two
    panels, the conclusions generated from the numbers and the cost estimate from its file."""
    project, out, status, output = smoke_book
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
    assert page.count("ours · sample data") == len(computed["Table 1"]) + len(computed["Table 2"])
    assert "paper [#] (cited)" in page and "SimCSE-RoBERTa" in page
    notebook = html.unescape((out / "_build" / "html" / "notebooks" / "mnrl_sbert.html").read_text())
    assert "Central claim, BERT (tiny, smoke profile):" in notebook and "orderings of two rows" in notebook
    assert "T4 time (h, estimate)" in notebook  # the cost table, read from benchmarks/results
    assert "Traceback" not in notebook


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
  const body = d.body.cloneNode(true);
  body.querySelectorAll('script, style, pre, code, .highlight, mjx-container').forEach(e => e.remove());
  const text = body.textContent;
  return {
    url, title: d.title, h1: (d.querySelector('h1') || {}).textContent || '',
    images: [...d.images].map(i => ({src: i.getAttribute('src'), width: i.naturalWidth})),
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

    def do_GET(self):  # noqa: N802 - http.server's name
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
    project, out, status, output = smoke_book
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
    by_url = {c["url"]: c for c in checked}
    for chapter in CHAPTERS:
        assert by_url[f"/book/{chapter}.html"]["math"] > 0  # every chapter page states its equation
    with_figures = {p.parent.name for p in (out / "figures").glob("*/*.png")}
    for chapter in with_figures:
        images = by_url[f"/book/{chapter}.html"]["images"]
        assert images and all(i["src"].startswith("../_images/") for i in images)
