"""The package layout: every subpackage is installed, data/ ships as sentcl._data."""

from pathlib import Path

import pytest
import tomllib

import sentcl
from sentcl.paths import resource

ROOT = Path(__file__).resolve().parents[1]


def test_every_subpackage_is_listed_in_pyproject():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    lib = ROOT / "lib"
    found = {
        ".".join(p.parent.relative_to(lib).parts)
        for p in (lib / "sentcl").rglob("__init__.py")
        if "__pycache__" not in p.parts
    }
    assert found - listed == set(), f"add these to [tool.setuptools] packages: {sorted(found - listed)}"
    assert "sentcl._data" in listed


def test_package_is_imported_from_lib():
    assert Path(sentcl.__file__).resolve().parent == ROOT / "lib" / "sentcl"


def test_data_folder_is_reachable_as_resource():
    assert resource().resolve() == (ROOT / "data").resolve()


@pytest.mark.slow
def test_wheel_ships_the_library_its_data_notebooks_and_benchmark_records(sentcl_wheel):
    """A non-editable install (Colab: pip install from git or from the book's wheel) gets every
    module, data file, chapter notebook with its profiles file and recorded benchmark result."""
    import zipfile

    names = set(zipfile.ZipFile(sentcl_wheel).namelist())
    lib = ROOT / "lib"
    modules = {str(p.relative_to(lib)) for p in (lib / "sentcl").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - names == set()
    shipped = {"registry": "*.yaml", "papers": "*.csv", "tiny": "vocab.txt", "samples": "SAMPLE_DATA.md"}
    for folder, pattern in shipped.items():
        expected = {f"sentcl/_data/{p.relative_to(ROOT / 'data')}" for p in (ROOT / "data" / folder).glob(pattern)}
        assert expected and expected <= names, folder
    samples = [p for p in (ROOT / "data" / "samples").rglob("*") if p.is_file()]
    assert {f"sentcl/_data/{p.relative_to(ROOT / 'data')}" for p in samples} <= names
    notebooks = {f"sentcl/_notebooks/{p.name}" for p in (ROOT / "notebooks").glob("*") if p.suffix in (".ipynb", ".yaml")}
    assert notebooks and notebooks <= names
    records = {f"sentcl/_benchmarks/{p.name}" for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    assert records and records <= names
    assert not [n for n in names if n.startswith("sentcl/_benchmarks/") and n.endswith(".py") and "__init__" not in n]


def test_notebooks_and_benchmark_records_are_reachable_as_resources():
    from sentcl.paths import benchmark_result, notebook_file

    assert notebook_file("bsc.ipynb").resolve() == (ROOT / "notebooks" / "bsc.ipynb").resolve()
    assert benchmark_result("ifcl_gpu_h100.json").resolve() == (ROOT / "benchmarks" / "results" / "ifcl_gpu_h100.json").resolve()
