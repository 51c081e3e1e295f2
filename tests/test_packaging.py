"""The package layout: every subpackage is installed, data/ ships as sentcl._data."""

from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

import sentcl
from sentcl.book import versions
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


# --------------------------------------------------------------------------- the ranges sentcl is tested with

RUNTIME_KEPT = "torch"
"""The one dependency without a tested upper end: the runtime's own build (Colab's CUDA torch), kept as it is."""


def declared_ranges() -> dict[str, SpecifierSet]:
    """pyproject's direct dependencies and the ``offline`` extra (what a notebook run installs): name -> range."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in [*project["dependencies"], *project["optional-dependencies"]["offline"]]]
    return {canonicalize_name(r.name): r.specifier for r in requirements}


def test_every_range_is_closed_and_holds_the_lock():
    """``>=lowest,<=highest``, both ends written as the releases the environments of tests/chapters/test_colab_user.py
    install (so a range cannot widen without those tests installing and running its new end), the lock's version inside."""
    lock = versions.parse_lock((ROOT / "requirements" / "lock.txt").read_text())
    ranges = declared_ranges()
    assert set(ranges) - {RUNTIME_KEPT} == set(range_ends(ranges))
    for name, (low, high) in range_ends(ranges).items():
        assert Version(low) <= Version(lock[name]) <= Version(high), f"{name}: the lock's {lock[name]} is outside {ranges[name]}"
    torch = Version((ROOT / "requirements" / "torch.txt").read_text().strip().split("==")[1])
    assert [s.operator for s in ranges[RUNTIME_KEPT]] == [">="] and torch in ranges[RUNTIME_KEPT]
    with pytest.raises(ValueError, match=r"^pandas: expected a closed range >=lowest,<=highest, found '>=2.1'$"):
        range_ends({"pandas": SpecifierSet(">=2.1")})


def range_ends(ranges: dict[str, SpecifierSet]) -> dict[str, tuple[str, str]]:
    """name -> (lowest, highest) of every closed range (all but :data:`RUNTIME_KEPT`'s); a ValueError naming any other."""
    bounds = {}
    for name, spec in ranges.items():
        if name == RUNTIME_KEPT:
            continue
        ends = {s.operator: s.version for s in spec}
        if sorted(ends) != ["<=", ">="] or len(spec) != 2:
            raise ValueError(f"{name}: expected a closed range >=lowest,<=highest, found {str(spec)!r}")
        bounds[name] = (ends[">="], ends["<="])
    return bounds


@pytest.mark.slow
def test_the_wheel_admits_python_3_12_and_3_13(sentcl_wheel):
    import email
    import zipfile

    with zipfile.ZipFile(sentcl_wheel) as wheel:
        meta = email.message_from_bytes(wheel.read(f"sentcl-{sentcl.__version__}.dist-info/METADATA"))
    admitted = SpecifierSet(meta["Requires-Python"])
    assert all(python in admitted for python in ("3.10", "3.11", "3.12", "3.13"))
    assert {"Programming Language :: Python :: 3.12", "Programming Language :: Python :: 3.13"} <= set(meta.get_all("Classifier"))
