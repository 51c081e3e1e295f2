"""The package layout: every subpackage is installed, data/ ships as sentcl._data."""

from pathlib import Path

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


def test_wheel_ships_the_library_and_its_data(tmp_path):
    """A non-editable install (Colab: pip install from git) gets every module and data file."""
    import shutil
    import subprocess
    import sys
    import zipfile

    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        uv = shutil.which("uv")
    assert uv, "uv is installed in the project's environment by the Makefile"
    # build from a copy: setuptools writes build/ and *.egg-info next to the sources
    source = tmp_path / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    source.mkdir()
    for part in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / part, source / part)
    for part in ("lib", "data"):
        shutil.copytree(ROOT / part, source / part, ignore=ignore)
    subprocess.run([str(uv), "build", "--wheel", "-o", str(tmp_path), str(source)], check=True, capture_output=True)
    [wheel] = tmp_path.glob("sentcl-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    lib = ROOT / "lib"
    modules = {str(p.relative_to(lib)) for p in (lib / "sentcl").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - names == set()
    shipped = {"registry": "*.yaml", "papers": "*.csv", "tiny": "vocab.txt", "samples": "SAMPLE_DATA.md"}
    for folder, pattern in shipped.items():
        expected = {f"sentcl/_data/{p.relative_to(ROOT / 'data')}" for p in (ROOT / "data" / folder).glob(pattern)}
        assert expected and expected <= names, folder
    samples = [p for p in (ROOT / "data" / "samples").rglob("*") if p.is_file()]
    assert {f"sentcl/_data/{p.relative_to(ROOT / 'data')}" for p in samples} <= names
