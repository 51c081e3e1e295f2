"""Each chapter's cost cell, ``show(paper_cost())``: what the chapter module's ``paper_cost`` returns is the recorded
measurement on the counts of the paper profile's plan, and says "not measured" where this sentcl has no record."""

from __future__ import annotations

import importlib
from pathlib import Path

import pandas as pd
import pytest

from sentcl.book.estimates.cost import chapter_stages
from sentcl.book.estimates.gpu_memory import benchmark_record
from sentcl.chapters import CHAPTERS, chapter
from sentcl.chapters.ifcl import ifcl_paper_projection
from sentcl.chapters.rcl import rcl_paper_projection


def module(name: str):
    return importlib.import_module(f"sentcl.chapters.{name}")


@pytest.mark.parametrize("name", list(CHAPTERS))
def test_every_chapter_shows_its_paper_cost_as_text_and_tables(name):
    parts = module(name).paper_cost()
    assert parts and all(isinstance(p, (str, pd.DataFrame)) for p in parts), parts
    assert any(isinstance(p, pd.DataFrame) for p in parts), f"{name}: no table, so no record was read: {parts}"


def test_the_hours_shown_are_the_projections_of_the_paper_plan():
    rcl_text = next(p for p in module("rcl").paper_cost() if isinstance(p, str))
    assert f"**{rcl_paper_projection(benchmark_record('rcl_gpu_h100.json'))['hours']:.1f} GPU hours**" in rcl_text
    ifcl_text = [p for p in module("ifcl").paper_cost() if isinstance(p, str)][-1]
    assert f"about **{ifcl_paper_projection(benchmark_record('ifcl_gpu_h100.json'))['hours']:.1f} GPU hours**" in ifcl_text
    mnrl = module("mnrl_sbert").paper_cost()
    assert all(f"{s.runs} × {s.what} ({s.steps:,} steps)" in mnrl[-1] for s in chapter_stages(chapter("mnrl_sbert")))
    geometry = module("geometry").paper_cost()[0]
    assert list(geometry["runs"]) == [s.runs for s in chapter_stages(chapter("geometry"))]


@pytest.mark.parametrize("name", [n for n in CHAPTERS if n != "geometry"])  # geometry's is a count, from no record
def test_without_its_record_a_chapter_says_not_measured(name, monkeypatch, tmp_path):
    monkeypatch.setattr("sentcl.book.estimates.benchmarks.benchmark_result", lambda file: Path(tmp_path) / file)
    parts = module(name).paper_cost()
    texts = " ".join(p for p in parts if isinstance(p, str)).lower()
    assert "not measured" in texts or "no cost estimate" in texts, parts
    assert not any(isinstance(p, pd.DataFrame) for p in parts)
