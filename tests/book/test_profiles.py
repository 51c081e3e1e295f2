"""The profiles and their policy in one place (sentcl.book.profiles): every check of a profile goes through it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from sentcl.book.profiles import NAMES, PROFILES, policy
from sentcl.errors import ConfigError

BOOK = Path(__file__).resolve().parents[2] / "lib" / "sentcl" / "book"


def test_the_four_profiles_and_their_policy():
    assert NAMES == ("smoke", "demo", "rehearsal", "paper")
    assert [p.data for p in PROFILES.values()] == ["samples", "optional", "optional", "required"]
    assert [name for name, p in PROFILES.items() if p.judged] == ["paper"]
    assert [name for name, p in PROFILES.items() if p.stand_in] == ["rehearsal"]
    assert {name: p.geometry_pairs for name, p in PROFILES.items()} == {"smoke": 0, "demo": 500, "rehearsal": 200, "paper": 0}


def test_an_unknown_profile_is_one_error_naming_the_profiles_and_where():
    with pytest.raises(ConfigError, match=r"^run record: unknown profile 'fast'; valid: smoke, demo, rehearsal, paper$"):
        policy("fast", "run record")
    assert policy("demo") is PROFILES["demo"]


def test_no_other_book_module_spells_out_a_profile_list():
    """A tuple, list or set of two or more profile names outside profiles.py would be a second copy of the policy."""
    found = []
    for path in sorted(BOOK.glob("*.py")):
        if path.name == "profiles.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Tuple | ast.List | ast.Set | ast.Dict):
                items = node.keys if isinstance(node, ast.Dict) else node.elts
                names = [i.value for i in items if isinstance(i, ast.Constant) and i.value in NAMES]
                if len(names) >= 2:
                    found.append(f"{path.name}:{node.lineno}: {names}")
    assert found == []
