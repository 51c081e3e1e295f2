"""tests/README.md lists every slow test with its measured time: a test marked ``slow`` (the function, or its
module's ``pytestmark``) or reading the smoke book that the list lacks, or a listed one that is gone, fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROW = re.compile(r"^\| `(tests/[^`]+::test_\w+)` \| (\d+\.\d) \|", re.M)


def slow_tests(root: Path = TESTS) -> set[str]:
    """``path::function`` of every test function that is slow: marked ``@pytest.mark.slow``, in a module whose
    ``pytestmark`` holds ``slow``, or asking for the ``smoke_book`` fixture (which ``tests/conftest.py`` marks)."""
    found = set()
    for path in sorted(root.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        module_slow = any(isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets)
                          and "slow" in ast.unparse(node.value) for node in tree.body)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                marked = any("mark.slow" in ast.unparse(d) for d in node.decorator_list)
                smoke = "smoke_book" in [a.arg for a in node.args.args]
                if module_slow or marked or smoke:
                    found.add(f"{path.relative_to(root.parent).as_posix()}::{node.name}")
    return found


def test_the_readme_lists_every_slow_test_with_its_time():
    listed = ROW.findall((TESTS / "README.md").read_text(encoding="utf-8"))
    names = [name for name, _ in listed]
    assert len(names) == len(set(names)), "a test is listed twice"
    slow = slow_tests()
    assert not slow - set(names), f"slow tests missing from tests/README.md: {sorted(slow - set(names))}"
    assert not set(names) - slow, f"listed but not slow (or gone): {sorted(set(names) - slow)}"


def test_the_finder_sees_each_way_a_test_is_slow(tmp_path):
    folder = tmp_path / "tests"
    folder.mkdir()
    (folder / "test_a.py").write_text("import pytest\n@pytest.mark.slow\ndef test_marked(): pass\n"
                                      "def test_reads(smoke_book): pass\ndef test_quick(): pass\n")
    (folder / "test_b.py").write_text("import pytest\npytestmark = [pytest.mark.slow]\ndef test_all(): pass\n")
    assert slow_tests(folder) == {"tests/test_a.py::test_marked", "tests/test_a.py::test_reads", "tests/test_b.py::test_all"}
