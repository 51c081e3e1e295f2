"""The IFCL chapter's smoke run (the session's ``smoke_book``): its three tables with our rows beside the
slides', the mutual-information figure, the conclusions generated from the numbers, the cost section; and its
builder's dispatch (each planned stage to the run of its row and seed)."""

from __future__ import annotations

import html
import math

import pytest

from sentcl.book.output.results import load_results
from sentcl.book.parameters import shipped_parameters
from sentcl.book.profiles import PROFILES
from sentcl.chapters import ifcl

ENGLISH = ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Average"]


def test_the_ifcl_chapter_regenerates_its_tables_figure_and_conclusions(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    mine = load_results(out, ["ifcl"])
    english = mine[mine["table"] == "English STS"]
    assert set(english["row"]) == {"BERT-base (first-last avg.)", "IFCL-BERT-base", "SimCSE-BERT-base", "IFCL-BERT-base w/o TL",
                                  "tiny untouched (mean pooling)"}
    for row in set(english["row"]):
        cells = english[english["row"] == row].set_index("column")["value"]
        assert list(cells.index) == ENGLISH
        assert cells["Average"] == pytest.approx(cells.drop("Average").mean())
    trained = english[english["row"] == "IFCL-BERT-base"]
    assert set(trained["seeds"]) == {(0, 1)} and trained["std"].notna().all()  # two seeds: mean and spread
    chinese = mine[mine["table"] == "Chinese STS"]
    assert set(chinese["row"]) == {"BERT", "SimCSE-BERT (◇)", "IFCL-BERT"}
    assert set(chinese["column"]) == {"Chinese STS-B", "SimCLUE"}
    mi = mine[mine["table"] == "Table 4"].set_index(["row", "column"])["value"]
    assert set(mi.index) == {("IFCL-BERT", "MI(h, h+)"), ("IFCL-BERT", "MI(h, h-)"), ("IFCL-BERT", "MI_task"),
                             ("IFCL-BERT w/o TL", "MI(h, h+)"), ("IFCL-BERT w/o TL", "MI(h, h-)"),
                             ("IFCL-BERT w/o TL", "MI_task"), ("SimCSE", "MI(h, h+)"), ("SimCSE", "MI_task")}
    assert (mi <= math.log(8) + 1e-6).all()  # the smoke profile's K = 8: the bound's ceiling
    assert sorted(p.stem for p in (out / "figures" / "ifcl").glob("*.png")) == ["mi-ceiling"]
    page = html.unescape((out / "_build" / "html" / "book" / "ifcl.html").read_text())
    assert "Assumptions and deviations" in page
    for table in ("English STS", "Chinese STS", "Table 4"):
        assert f"{table}: paper vs ours" in page
    assert "PT-BERT-base" in page and "cited" in page  # rows we do not compute, labelled
    notebook = html.unescape((out / "_build" / "html" / "notebooks" / "ifcl.html").read_text())
    # each ordering cites the slides' values of the rows it compares; ours are claims of our own
    assert "IFCL-BERT-base above SimCSE-BERT-base (I1, English STS, Average; primary family): paper 77.80 vs 76.25 (+1.55)" in notebook
    assert "the Twin loss helps (IFCL above IFCL w/o TL)" in notebook and "above the untouched encoder" in notebook
    assert "tiny untouched (mean pooling)" in set(mine["row"])
    assert "ifcl_gpu_h100.json" in notebook and ("not measured" in notebook or "Measured on" in notebook)
    assert "Traceback" not in notebook


@pytest.mark.parametrize("profile", PROFILES)
def test_the_builder_trains_each_planned_stage_as_the_notebook_does(monkeypatch, profile):
    """Every stage of each profile's plan is one row's run of one seed that a task builds alone: ``build`` trains that
    row and seed on its language's texts (English or Chinese), under the stage's own name."""
    p = shipped_parameters("ifcl", profile)
    built: list[tuple[str, int, bool]] = []
    monkeypatch.setattr(ifcl, "TrainingTexts", lambda run, chinese=False: chinese)
    monkeypatch.setattr(ifcl, "train", lambda run, chinese, row, seed: built.append((row, seed, chinese)))
    stages = list(ifcl.plan(p))
    assert stages and all(s.alone and not s.upstream for s in stages)
    for stage in stages:
        ifcl.build(None, stage)  # type: ignore[arg-type]  # the run is the fake train's, unused
        row, seed, chinese = built[-1]
        assert stage.name == ifcl.training_stage(row, seed, chinese) and seed in p["seeds"]
        assert row in (p["chinese_rows"] if chinese else p["english_rows"])
    assert len(set(built)) == len(stages)
