"""docs/extending.md's "Add a chapter", followed to the letter: its blocks marked ``file=`` are written to their paths
and its blocks marked ``cell=`` make the notebook, in a copy of the project (its ``lib/`` first on the path, so the
copy's registry finds the new chapter); the chapter then runs in the smoke profile and its page is built. The guide
cannot go stale without this test failing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sentcl.book.publishing import install

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "extending.md"
FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=fence)$", re.M | re.S)
INSTALL_PLACEHOLDER = "# (the install cell"


def guide_blocks(text: str) -> list[tuple[str, dict[str, str], str]]:
    """Every fenced block of the guide as (language, {key: value} of its info string, body)."""
    blocks = []
    for match in FENCE.finditer(text):
        language, *options = match["info"].split()
        marks = dict(option.split("=", 1) if "=" in option else (option, "") for option in options)
        blocks.append((language, marks, match["body"]))
    return blocks


def follow_the_guide(project: Path, text: str) -> list[str]:
    """Write what the guide's "Add a chapter" says into ``project``; returns the paths it wrote."""
    written: list[str] = []
    notebooks: dict[str, list] = {}
    repository = install.project_urls(ROOT)["Repository"]
    for language, marks, body in guide_blocks(text):
        if "file" in marks:
            path = project / marks["file"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
            written.append(marks["file"])
        elif "cell" in marks:
            if "install" in marks:
                assert body.startswith(INSTALL_PLACEHOLDER), "the guide's install cell is a pointer to the real one"
                cell = nbformat.v4.new_code_cell(install.install_cell(install.git_source(repository)))
            elif language == "markdown":
                cell = nbformat.v4.new_markdown_cell(body.rstrip("\n"))
            else:
                cell = nbformat.v4.new_code_cell(body.rstrip("\n"))
            if marks.get("tags"):
                cell.metadata["tags"] = marks["tags"].split(",")
            notebooks.setdefault(marks["cell"], []).append(cell)
    for name, cells in notebooks.items():
        nb = nbformat.v4.new_notebook(cells=cells)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nbformat.write(nb, project / name)
        written.append(name)
    return written


def copy_of_the_project(target: Path) -> Path:
    """The checkout's sources (lib, notebooks, book, the recorded benchmarks, requirements, pyproject, the book's
    configuration; the data's folders linked, its paper values copied), with the packages an installed wheel maps (``sentcl._data``, ``_notebooks``,
    ``_benchmarks``, ``_requirements``) linked inside ``lib/sentcl`` as the wheel lays them out."""
    target.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "_vendor", "_generated", ".ipynb_checkpoints")
    for folder in ("lib", "notebooks", "book", "requirements"):
        shutil.copytree(ROOT / folder, target / folder, ignore=skip)
    shutil.copytree(ROOT / "benchmarks" / "results", target / "benchmarks" / "results", ignore=skip)
    (target / "book" / "_vendor").symlink_to(ROOT / "book" / "_vendor", target_is_directory=True)
    (target / "data").mkdir()
    for entry in (ROOT / "data").iterdir():  # the toy chapter adds its paper values: papers/ is the copy's own
        if entry.name == "papers":
            shutil.copytree(entry, target / "data" / "papers")
        elif entry.name != "__pycache__":
            (target / "data" / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
    for name in ("pyproject.toml", "_config.yml", "_toc.yml", "README.md"):
        shutil.copy2(ROOT / name, target / name)
    package = target / "lib" / "sentcl"
    for mapped, folder in (("_data", "data"), ("_notebooks", "notebooks"), ("_benchmarks", "benchmarks/results"),
                           ("_requirements", "requirements")):
        (package / mapped).symlink_to(target / folder, target_is_directory=True)
    return target


@pytest.mark.slow
def test_the_guide_builds_a_chapter_that_runs_in_the_smoke_profile_and_gets_its_page(tmp_path, mathjax):
    text = GUIDE.read_text(encoding="utf-8")
    project = copy_of_the_project(tmp_path / "project")
    written = follow_the_guide(project, text)
    assert written == ["lib/sentcl/chapters/toy/__init__.py", "data/papers/toy.csv",
                       "notebooks/toy.profiles.yaml", "book/toy.md", "notebooks/toy.ipynb"]
    pyproject = project / "pyproject.toml"  # step 6: the wheel ships the new package
    assert '    "sentcl.chapters.rcl",\n' in pyproject.read_text(encoding="utf-8")
    pyproject.write_text(pyproject.read_text(encoding="utf-8").replace(
        '    "sentcl.chapters.rcl",\n', '    "sentcl.chapters.rcl",\n    "sentcl.chapters.toy",\n'), encoding="utf-8")

    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("SENTCL_DATA", "PYTEST_CURRENT_TEST")}
    env.update(PYTHONPATH=str(project / "lib"), SENTCL_CACHE=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "sentcl", "reproduce", "--profile", "smoke", "--only", "toy",
                           "--out", str(out), "--book-dir", str(out)],
                          cwd=project, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-6000:]

    results = (out / "results" / "toy.csv").read_text(encoding="utf-8")
    assert re.search(r"^toy,Table 1,Untouched,STSb,-?\d", results, re.M), results  # the row, scored
    page = (out / "_build" / "html" / "book" / "toy.html").read_text(encoding="utf-8")
    assert "Toy: an untouched encoder on STS-B" in page and "Untouched" in page and "50.0" in page
    toc = (out / "_build" / "html" / "book" / "intro.html").read_text(encoding="utf-8")
    assert 'href="toy.html"' in toc  # the registry put it in the book's table of contents
    check = subprocess.run([sys.executable, "-m", "sentcl", "reproduce", "--check", "--profile", "demo", "--only", "toy"],
                           cwd=project, env=env, capture_output=True, text=True, timeout=300)
    assert check.returncode == 0 and "toy" in check.stdout, (check.stdout + check.stderr)[-3000:]


def test_the_guides_blocks_are_read_as_written():
    blocks = guide_blocks("````markdown file=a.md\n# A\n```{include} b.md\n```\n````\n\n"
                          "```python cell=n.ipynb tags=parameters\nx = 1\n```\n")
    assert blocks == [("markdown", {"file": "a.md"}, "# A\n```{include} b.md\n```\n"),
                      ("python", {"cell": "n.ipynb", "tags": "parameters"}, "x = 1\n")]
