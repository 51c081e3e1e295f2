"""The library's floor plan (README, "Layout"): infrastructure modules, science packages, the
book's generic modules and the chapters, with imports running one way. Read from the source (every
``import`` statement, also the ones inside functions), so a lazy import cannot slip past.

The chapters (``sentcl.chapters``: one package per chapter and the registry that finds them) stand on the
science and on the book's lower floors (``ground``, ``output``, ``estimates``: the chapter object, the output
folder, what a plan costs and needs), which take a chapter object and never import a chapter, not even when called.
A chapter's name becomes its object only on the floors above the chapters (``pages``, ``notebook``, ``publishing``: the
page builders, :class:`~sentcl.book.notebook.chapter_run.ChapterRun`, the runner and its executor), which a chapter
never imports at run time. So the import graph of ``sentcl.book`` and ``sentcl.chapters`` has no circle: a test
says so."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

LIB = Path(__file__).resolve().parents[1] / "lib" / "sentcl"

INFRASTRUCTURE = {"__init__", "__main__", "errors", "paths", "io", "hashing", "artifacts", "progress", "precision", "cli"}
SCIENCE = {"data", "models", "embeddings", "losses", "training", "evaluation", "whitening", "pretraining"}
BOOK = {"book"}
CHAPTERS = {"chapters"}
BELOW_THE_CHAPTERS = ("ground", "output", "estimates")
"""The book's floors the chapters stand on: they never import a chapter (the others are above the chapters)."""
LONG_MODULE_LINES = 500
LONG_MODULE_REASON = "Why this module is long:"


def room(module: str) -> str:
    """``sentcl.training.trainer`` -> ``training``; the top-level module or package a module is in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(LIB.rglob("*.py")):
        rel = path.relative_to(LIB).with_suffix("")
        parts = ["sentcl", *rel.parts]
        if parts[-1] == "__init__" and len(parts) > 2:
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of every node under an ``if TYPE_CHECKING:`` (imports for annotations only, never run)."""
    skipped = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skipped


def imports_of(module: str, path: Path, *, at_run_time: bool = False) -> set[str]:
    """Every sentcl module ``module`` imports, resolved (relative imports included); ``at_run_time``: leaving out
    the imports under ``if TYPE_CHECKING:``, which only annotations read."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    skipped = _type_checking_only(tree) if at_run_time else set()
    out = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names if alias.name.startswith("sentcl")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.startswith("sentcl"):
                out.add(target)
                out |= {f"{target}.{alias.name}" for alias in node.names if f"{target}.{alias.name}" in MODULES}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in MODULES:
            out.add(node.value)  # importlib.import_module("sentcl....") by name (the CLI's commands)
    return out


MODULES = modules()
IMPORTS = {module: imports_of(module, path) for module, path in MODULES.items()}
RUN_TIME_IMPORTS = {module: imports_of(module, path, at_run_time=True) for module, path in MODULES.items()}

FLOORS = ("ground", "output", "estimates", "pages", "notebook", "publishing")
"""The book package's floors, by when their code runs, lowest first; a module imports its own floor and the floors
below it, never one above. ``ground`` is the book package's own modules (the chapter object, the profiles and their
parameters, markdown and what a page may say: what every floor reads); ``output`` the output folder (its layout,
the results, records, evidence, claims and geometry files a run writes); ``estimates`` what a plan of runs will cost
and need (plan, cost, coverage, GPU memory, measured benchmarks); ``pages`` the pages written from the output
folder; ``notebook`` the one object a notebook reports through; ``publishing`` what runs the notebooks and builds the
book (runner, Ray executor, site, install)."""


def floor(module: str) -> str | None:
    """``sentcl.book.output.claims`` -> ``output``; a module of the book package itself -> ``ground``; None
    outside the book."""
    parts = module.split(".")
    if parts[:2] != ["sentcl", "book"]:
        return None
    return parts[2] if len(parts) > 2 and parts[2] in FLOORS else "ground"


def test_every_module_is_in_a_room():
    rooms = {room(m) for m in MODULES}
    known = INFRASTRUCTURE | SCIENCE | BOOK | CHAPTERS
    assert rooms <= known | {"_data"}, sorted(rooms - known)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) in SCIENCE))
def test_science_never_imports_the_book(module):
    assert not {m for m in IMPORTS[module] if room(m) in BOOK | CHAPTERS}, f"{module} imports the book or a chapter"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if floor(m) in BELOW_THE_CHAPTERS))
def test_the_floors_below_the_chapters_never_import_a_chapter(module):
    """A generic module takes a chapter object; a chapter's name becomes its object above the chapters."""
    chapters = sorted(m for m in IMPORTS[module] if room(m) in CHAPTERS)
    assert not chapters, f"{module} imports {chapters}: take a Chapter (names are resolved by the entry points)"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) in CHAPTERS))
def test_a_chapter_never_imports_the_floors_above_it_at_run_time(module):
    above = sorted(m for m in RUN_TIME_IMPORTS[module] if floor(m) is not None and floor(m) not in BELOW_THE_CHAPTERS)
    assert not above, f"{module} imports {above}: the runner, ChapterRun and the page builders stand above the chapters"


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph`` (module -> the modules it imports): every strongly connected set of more
    than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            node, targets = work[-1]
            step = next((t for t in targets if t in graph), None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = stack[stack.index(node):]
                del stack[stack.index(node):]
                if len(members) > 1:
                    found.append(sorted(members))
    return found


def test_the_book_and_the_chapters_import_in_no_circle():
    """Run-time imports, lazy ones included (an annotation under ``if TYPE_CHECKING:`` is never run)."""
    ours = {m for m in MODULES if room(m) in BOOK | CHAPTERS}
    graph = {m: {i for i in RUN_TIME_IMPORTS[m] if i in ours and i != m} for m in ours}
    assert circles(graph) == []


def test_the_circle_check_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_every_floor_of_the_book_has_its_modules():
    found = {floor(m) for m in MODULES if room(m) in BOOK}
    assert found == set(FLOORS), sorted(found ^ set(FLOORS))


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) in BOOK))
def test_a_book_module_imports_no_floor_above_its_own(module):
    """Run-time imports only: an annotation may name a class of a floor above (``if TYPE_CHECKING:``)."""
    own = FLOORS.index(floor(module))
    above = sorted(m for m in RUN_TIME_IMPORTS[module] if floor(m) is not None and FLOORS.index(floor(m)) > own)
    assert not above, f"{module} ({FLOORS[own]}) imports {above} from a floor above"


def test_the_floor_check_sees_an_import_upwards_and_lets_annotations_pass(tmp_path):
    path = tmp_path / "fake.py"
    path.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..notebook.chapter_run import ChapterRun\n"
                    "def f():\n    from ..publishing import runner\n")
    found = imports_of("sentcl.book.output.fake", path, at_run_time=True)
    assert "sentcl.book.publishing.runner" in found and "sentcl.book.notebook.chapter_run" not in found
    assert "sentcl.book.notebook.chapter_run" in imports_of("sentcl.book.output.fake", path)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if room(m) in INFRASTRUCTURE - {"cli", "__main__"}))
def test_infrastructure_imports_only_infrastructure(module):
    others = {m for m in IMPORTS[module] if room(m) not in INFRASTRUCTURE}
    assert not others, f"{module} imports {sorted(others)}"


def test_data_does_not_import_training():
    offenders = {m: sorted(i for i in IMPORTS[m] if room(i) == "training") for m in MODULES if room(m) == "data"}
    assert not {m: i for m, i in offenders.items() if i}


def test_the_checker_sees_lazy_and_relative_imports(tmp_path):
    """The walk would catch a science module importing the book inside a function."""
    path = tmp_path / "fake.py"
    path.write_text("def f():\n    from ..book.output import results\n    from sentcl.book.pages.report import compare\n")
    found = imports_of("sentcl.training.fake", path)
    assert {"sentcl.book.output", "sentcl.book.output.results", "sentcl.book.pages.report"} <= found


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_long_module_says_why(module):
    path = MODULES[module]
    lines = len(path.read_text(encoding="utf-8").splitlines())
    if lines > LONG_MODULE_LINES:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        assert LONG_MODULE_REASON in doc, f"{path.relative_to(LIB)} has {lines} lines and no '{LONG_MODULE_REASON}' in its docstring"
