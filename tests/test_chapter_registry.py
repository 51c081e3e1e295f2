"""One package per chapter, one registry (sentcl.chapters): the book's generic modules never name a chapter.

The rule, read from the source of every generic book module (``lib/sentcl/book/**/*.py``, every floor) with ``ast``:

- **mnrl_sbert, bsc, rcl, ifcl** may not appear as a word of an identifier (a variable, function, argument,
  attribute or imported name: ``_bsc``, ``k_rcl``, ``rcl_stages``) nor of a string literal that is code
  (``RECORDS["rcl"]``, ``p["rcl_entropy_models"]``, ``"bsc_gpu_h100.json"``), a word being delimited by anything
  but a letter or a digit (so ``_`` delimits, and ``"BSC"``, the paper's method, is another word: case counts).
- **geometry** is also the name of a kind of measurement (``sentcl.evaluation.geometry``, ``book/output/geometry_files.py``,
  ``ChapterRun.record_geometry``), so only a string literal that *is* ``"geometry"`` counts (``chapter ==
  "geometry"``), and ``book/output/layout.py``, which names every path of the output folder, names the measurement's
  folder so.
- Docstrings (every string that stands alone as a statement) and comments are prose: they may mention a chapter
  as an example. A string that is code counts, f-strings' literal parts included.
- :data:`ALLOWED` names the few lines that name a chapter's *file* on purpose, each with why.

A chapter's package (``lib/sentcl/chapters/<name>/``) and the registry are where those names live.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from sentcl.book.chapter_spec import Chapter
from sentcl.chapters import CHAPTERS, chapter, discover
from sentcl.errors import ConfigError

BOOK = Path(__file__).resolve().parents[1] / "lib" / "sentcl" / "book"
WORD_NAMES = ("mnrl_sbert", "bsc", "rcl", "ifcl")
WORD = re.compile(rf"(?<![A-Za-z0-9])(?:{'|'.join(WORD_NAMES)})(?![A-Za-z0-9])")
MEASUREMENT = "geometry"
ALLOWED = {
    # the GPU-memory estimate is calibrated on one chapter's measured record and checked on another's: generic
    # arithmetic resting on two named measurements (sentcl.book.estimates.gpu_memory's docstring)
    ("gpu_memory.py", 'CALIBRATION = "bsc_gpu_h100.json"'),
    ("gpu_memory.py", 'ESTIMATE_CHECK = "ifcl_gpu_h100.json"'),
}


def _prose(tree: ast.AST) -> set[int]:
    """The ids of string constants that stand alone as statements (docstrings, attribute docstrings)."""
    return {id(node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword) and node.arg:
        return [node.arg]
    if isinstance(node, ast.alias):
        return [node.asname or node.name.split(".")[-1]]
    return []


def chapter_names_in(source: str, filename: str) -> list[tuple[int, str]]:
    """(line, what) for every chapter name the rule (module doc) finds in ``source``."""
    tree = ast.parse(source, filename=filename)
    prose, lines = _prose(tree), source.splitlines()
    found = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if line and (filename, lines[line - 1].strip()) in ALLOWED:
            continue
        for name in _identifiers(node):
            if WORD.search(name):
                found.append((line, f"identifier {name}"))
        code = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        if code and (WORD.search(node.value) or (node.value == MEASUREMENT and filename != "layout.py")):
            found.append((line, f"string {node.value!r}"))
    return sorted(set(found))


def test_no_generic_book_module_names_a_chapter():
    paths = sorted(BOOK.rglob("*.py"))
    assert len(paths) >= 25, f"the walk found {len(paths)} modules under {BOOK}: every floor's modules are read"
    offenders = [f"lib/sentcl/book/{path.relative_to(BOOK)}:{line}: {what}" for path in paths
                 for line, what in chapter_names_in(path.read_text(encoding="utf-8"), path.name)]
    assert not offenders, "chapter names in generic book modules (move them into lib/sentcl/chapters):\n" + "\n".join(offenders)


@pytest.mark.parametrize(("code", "expected"), [
    ('def rows(chapter):\n    if chapter == "bsc":\n        return 1\n', [(2, "string 'bsc'")]),
    ('RECORDS = {}\nx = RECORDS["rcl"]\n', [(2, "string 'rcl'")]),
    ("def _ifcl(p):\n    return p\n", [(1, "identifier _ifcl")]),
    ("from .cost import mnrl_sbert_stages\n", [(1, "identifier mnrl_sbert_stages")]),
    ('def f(state):\n    return state.chapter != "geometry"\n', [(2, "string 'geometry'")]),
    ('def f(p):\n    return f"{p}/rcl_gpu_h100.json"\n', [(2, "string '/rcl_gpu_h100.json'")]),
])
def test_the_rule_catches_a_chapter_named_in_code(code, expected):
    """An injected ``if chapter == "bsc"`` (and its kin) is caught, with its line."""
    assert chapter_names_in(code, "cost.py") == expected


def test_the_rule_leaves_prose_methods_and_the_geometry_measurement_alone():
    code = ('"""The geometry chapter; bsc, rcl and ifcl in a docstring."""\n'
            'from ..evaluation.geometry import evaluate_geometry\n'
            'NEWER = ("BSC", "RCL", "IFCL")  # rcl in a comment\n'
            'def record_geometry(geometry_pairs):\n    """mnrl_sbert in a docstring."""\n'
            '    return evaluate_geometry(geometry_pairs, "a geometry trajectory")\n')
    assert chapter_names_in(code, "chapter.py") == []
    assert chapter_names_in('FOLDER = "geometry"\n', "layout.py") == []  # the measurement's folder, in the layout


def test_the_registry_lists_every_chapter_in_book_order_with_its_notebook():
    assert list(CHAPTERS) == ["mnrl_sbert", "bsc", "rcl", "ifcl", "geometry"]
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    for name, spec in CHAPTERS.items():
        assert isinstance(spec, Chapter) and spec.name == name and (notebooks / f"{name}.ipynb").is_file()
        assert chapter(name) is spec
    assert [c.name for c in CHAPTERS.values() if c.own] == [c.name for c in CHAPTERS.values() if c.one_budget] == ["geometry"]


def test_an_unknown_chapter_is_an_error_naming_the_chapters():
    with pytest.raises(ConfigError, match="unknown chapter 'sbert'; chapters: mnrl_sbert, bsc, rcl, ifcl, geometry"):
        chapter("sbert")


def test_the_registry_finds_every_chapter_package_in_book_order_and_names_a_broken_one(tmp_path, monkeypatch):
    """No list names the chapters: a package with a ``CHAPTER`` is one, sorted by its ``order``; a module beside the
    packages is not a chapter; a package without its ``CHAPTER`` is an error naming it."""
    root = tmp_path / "toy_chapters"
    spec = "from sentcl.book.chapter_spec import Chapter\nCHAPTER = Chapter(name={name!r}, title='T', order={order}, memory=lambda p: [])\n"
    for name, order in (("later", 2), ("first", 1)):
        (root / name).mkdir(parents=True)
        (root / name / "__init__.py").write_text(spec.format(name=name, order=order))
    (root / "__init__.py").write_text("")
    (root / "helpers.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert list(discover("toy_chapters")) == ["first", "later"]
    (root / "broken").mkdir()
    (root / "broken" / "__init__.py").write_text("")
    with pytest.raises(ConfigError, match=r"toy_chapters\.broken: a chapter package defines CHAPTER, a Chapter named 'broken'"):
        discover("toy_chapters")
