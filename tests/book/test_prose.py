"""No measured number in hand-written page prose.

A sentence such as "at 240 steps BSC rises above the untouched encoder, cosine 0.996" typed into a chapter
page goes stale at the next run of its benchmark. Measured numbers reach the pages only through generated
fragments (``book/_generated``), read from results files. This test reads every hand-written page
(``book/*.md``) and fails on a number that one of the project's recorded results holds
(``benchmarks/results/*.json``, ``book/run_records``) or on a decimal duration (a measurement by its nature),
unless it is one of the papers' own values (``data/papers/*.csv``, or a gap between two of them in one table
column), a parameter of a chapter notebook (its parameters cell or profiles file), or a section, equation or
table number.
"""

from __future__ import annotations

import csv
import json
import re
from itertools import combinations
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NUMBER = re.compile(r"(?<![\w.§])[+−-]?(\d+)\.(\d+)(?![\w.]*\d)")
REFERENCE = re.compile(r"(§|Eqs?\.|Tables?|Appendix|Algorithm|Figure|version|v)\s*$")
DURATION = re.compile(r"^\s*(-|\s)?(s|min|minutes?|hours?|GPU hours|h)\b")
SECONDS = re.compile(r"(?<![\w.,])\d+(?:[–-]\d+)? s\b")  # "75 s", "28-29 s": timings (budgets are said in minutes)


def _leaves(value, key=""):
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _leaves(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _leaves(v, key)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield key, float(value)


def measured_values() -> list[tuple[str, str, float]]:
    """(file, key, value) of every number in the project's recorded results; a value in seconds also in minutes
    and hours, as prose would say it."""
    found = []
    for path in [*sorted((ROOT / "benchmarks" / "results").glob("*.json")), *sorted((ROOT / "book" / "run_records").glob("*.json"))]:
        for key, value in _leaves(json.loads(path.read_text(encoding="utf-8"))):
            found.append((path.name, key, value))
            if key.endswith("_s") or key.endswith("seconds"):
                found += [(path.name, f"{key} / 60", value / 60), (path.name, f"{key} / 3600", value / 3600)]
    return found


def allowed_values() -> set[float]:
    """The papers' values and their gaps within a table column, and every number of the notebooks' parameters."""
    allowed: set[float] = set()
    for path in (ROOT / "data" / "papers").glob("*.csv"):
        by_cell: dict[tuple[str, str], list[float]] = {}
        for row in csv.DictReader(path.open(encoding="utf-8")):
            try:
                value = float(row["value"])
            except (KeyError, ValueError):
                continue
            allowed.add(value)
            by_cell.setdefault((row.get("table", ""), row.get("column", "")), []).append(value)
        for values in by_cell.values():
            allowed.update(round(abs(a - b), 2) for a, b in combinations(values, 2))
    for path in (ROOT / "notebooks").glob("*.profiles.yaml"):  # the values, not the comments (which may say anything)
        allowed.update(v for _, v in _leaves(yaml.safe_load(path.read_text(encoding="utf-8"))))
    for path in (ROOT / "notebooks").glob("*.ipynb"):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if "parameters" in cell.get("metadata", {}).get("tags", []):
                code = "\n".join(line.split("#")[0] for line in "".join(cell["source"]).splitlines())
                allowed.update(float(m.group(0)) for m in re.finditer(r"\d+\.\d+(?:e-?\d+)?", code))
    return allowed


def prose(text: str) -> str:
    """A page's prose: code blocks, directives, inline code and maths taken out."""
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r":::.*?:::", " ", text, flags=re.S)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)
    text = re.sub(r"\$[^$\n]*\$", " ", text)
    return re.sub(r"`[^`\n]*`", " ", text)


def measured_in_prose(text: str, measured: list[tuple[str, str, float]], allowed: set[float]) -> list[str]:
    """Each number of ``text``'s prose that a recorded result holds (or a decimal duration), with its context."""
    text = prose(text)
    found = []
    for m in NUMBER.finditer(text):
        integer, decimals = m.group(1), m.group(2)
        value = float(f"{integer}.{decimals}")
        if REFERENCE.search(text[max(0, m.start() - 12):m.start()]):
            continue
        significant = len((integer + decimals).lstrip("0"))
        hits = ["a duration"] if DURATION.match(text[m.end():m.end() + 12]) else []
        if significant >= 2 and value not in allowed:
            hits += [f"{name}: {key}" for name, key, v in measured if round(v, len(decimals)) == value]
        if hits:
            context = " ".join(text[max(0, m.start() - 60):m.end() + 30].split())
            found.append(f"{m.group(0)} ({hits[0]}): ...{context}...")
    found += [f"{m.group(0)} (a duration): ...{' '.join(text[max(0, m.start() - 60):m.end() + 30].split())}..."
              for m in SECONDS.finditer(text)]
    return found


def test_the_scanner_finds_a_measured_number_and_lets_a_papers_value_and_a_parameter_through():
    measured = [("bench.json", "start_cosine", 0.99612), ("bench.json", "wall_s", 546.0)]
    allowed = {80.74, 0.05}
    assert measured_in_prose("every model ends at a cosine of 0.996 or more", measured, allowed)
    assert measured_in_prose("the notebook took 9.1 min", measured, allowed)  # 546 s, in minutes
    assert measured_in_prose("a step took 1.7 s here", measured, allowed)  # a decimal duration: measured by nature
    assert measured_in_prose("a run took 75 s", measured, allowed)
    assert not measured_in_prose("the paper reports 80.74 (Table 5), τ = 0.05", measured, allowed)
    assert not measured_in_prose("as §3.2 says; see `cosine = 0.996` in code; $0.996$", measured, allowed)
    assert not measured_in_prose("rate 0.5 and margin 0.6", measured, allowed)  # one significant digit: too common to tell


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "book").glob("*.md")))
def test_no_measured_number_in_hand_written_prose(page):
    found = measured_in_prose((ROOT / "book" / page).read_text(encoding="utf-8"), measured_values(), allowed_values())
    assert not found, f"book/{page} states measured numbers by hand (generate them from their results file):\n" + "\n".join(found)
