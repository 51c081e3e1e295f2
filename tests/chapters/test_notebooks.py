"""The layout every chapter notebook shares: parameters cell, title, install cell, profile cell.

papermill injects values after the ``parameters`` cell, the book takes the page title from the
first markdown heading, and a reader on Colab runs the notebook top to bottom, so its install
cell must come before any ``import sentcl`` and the profile's values must be applied before the
first cell that uses a parameter.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from sentcl.book import install
from sentcl.book.parameters import notebook_parameters

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_chapter_notebooks():
    assert NOTEBOOKS, "notebooks/ holds one notebook per chapter"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_layout(path):
    nb = nbformat.read(path, as_version=4)
    first, title, setup, resolve = nb.cells[:4]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    assert title.cell_type == "markdown" and title.source.startswith("# ")
    # the install cell is the one sentcl.book.install writes, installing from the project's repository
    repository = install.project_urls(ROOT)["Repository"]
    assert setup.cell_type == "code" and setup.source == install.install_cell(install.git_source(repository))
    # the profile is applied right after it, by the chapter's own name
    assert resolve.cell_type == "code"
    assert re.search(rf'^globals\(\)\.update\(resolve_parameters\("{path.stem}", globals\(\)\)\)$', resolve.source, re.M)
    # sentcl is imported only after the install cell
    assert not re.search(r"^\s*(import|from) sentcl", first.source + setup.source, re.M)
    # committed without outputs: every number shown comes from a run
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_a_notebook_opened_without_parameters_runs_the_demo_into_runs_demo(path):
    """What the introduction promises a Colab reader: the demo profile by default, results under
    runs/<profile> (out_dir None), the data root from $SENTCL_DATA or the sample data."""
    defaults = notebook_parameters(path)
    assert defaults["profile"] == "demo" and defaults["out_dir"] is None and defaults["data_dir"] is None


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_cost_cells_read_the_records_shipped_with_sentcl(path):
    """A notebook outside a checkout finds the recorded benchmark results in the installed package."""
    code = "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code")
    assert "project_root" not in code and '"benchmarks/results/' not in code
    for name in re.findall(r'benchmark_result\("([^"]+)"\)', code):
        assert (ROOT / "benchmarks" / "results" / name).is_file(), name
