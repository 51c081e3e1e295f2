"""The layout every chapter notebook shares: parameters cell, title, Colab install cell.

papermill injects a profile's values after the ``parameters`` cell, the book takes the
page title from the first markdown heading, and a reader on Colab runs the notebook top
to bottom, so its install cell must come before any ``import sentcl``.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def test_there_are_chapter_notebooks():
    assert NOTEBOOKS, "notebooks/ holds one notebook per chapter"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_layout(path):
    nb = nbformat.read(path, as_version=4)
    first, title, setup = nb.cells[:3]
    assert first.cell_type == "code" and "parameters" in first.metadata.get("tags", [])
    assert title.cell_type == "markdown" and title.source.startswith("# ")
    assert setup.cell_type == "code" and 'if "google.colab" in sys.modules:' in setup.source
    # the install comes from the repository the book's launch buttons point at
    repository = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    [url] = re.findall(r'%pip install -q "sentcl @ git\+(\S+)"', setup.source)
    assert url == repository
    # sentcl is imported only after the install cell
    assert not re.search(r"^\s*(import|from) sentcl", first.source + setup.source, re.M)
    # committed without outputs: every number shown comes from a run
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")
