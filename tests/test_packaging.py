"""The package layout: every subpackage is installed, data/ ships as sentcl._data."""

import tomllib
from pathlib import Path

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
