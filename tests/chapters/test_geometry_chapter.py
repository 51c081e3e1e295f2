"""The geometry chapter's smoke run (the session's ``smoke_book``): the equal-budget table with every
method, the paired test and the cost ratio; the geometry files of every chapter, trajectories included;
the two figures; and the book's introduction answering its question from these results. And, without a run, the
builder the Ray executor's tasks call: every planned stage goes by its ``args`` to the chapter function that builds
it under its own name."""

from __future__ import annotations

import html
from types import SimpleNamespace

import pytest

from sentcl.book.output.claims import read_claims
from sentcl.book.output.geometry_files import load_geometry
from sentcl.book.output.results import load_results
from sentcl.book.parameters import shipped_parameters
from sentcl.chapters import geometry

METHODS = ["MNRL", "BSC", "RCL", "IFCL"]
CONTROL = ["base (untouched) (random init)", "MNRL (random init)"]
"""The smoke profile's control (``control_models``): sentcl-mini's architecture at random initialisation, MNRL alone."""
STS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R"]


def test_the_geometry_chapter_compares_the_four_methods_on_one_budget(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    mine = load_results(out, ["geometry"])
    table = mine[mine["table"].str.startswith("Equal budget")]
    assert set(mine["table"]) == {"Equal budget: STS", "Equal budget: retrieval, test, cost", "Geometry and the STS average (ours)"}
    correlation = mine[mine["table"] == "Geometry and the STS average (ours)"].set_index(["row", "column"])["value"]
    # the base and every method's model of both seeds: the control is no equal-budget model
    assert correlation[("uniformity", "models (n)")] == 1 + 4 * 2
    assert -1 <= correlation[("uniformity", "Spearman rho")] <= 1
    assert set(table["row"]) == {"base (untouched)", *METHODS, *CONTROL}
    control = table[table["row"] == "MNRL (random init)"].set_index("column")
    assert set(control["seeds"]) == {(0, 1)} and "control: sentcl-mini-random" in control.loc["Average", "note"]
    claims = read_claims(out, "geometry")
    brings = claims[claims["claim"] == "MNRL above MNRL (random init) (what pretraining brings)"]
    assert set(brings["column"]) == {"Average", "CQA-A-2016 MAP"} and (brings["design"] == "paired over seeds and items").all()
    for method in METHODS:
        cells = table[table["row"] == method].set_index("column")
        assert set(STS) | {"Average", "CQA-A-2016 MAP", "CQA-A-2016 MRR", "cost × MNRL"} <= set(cells.index)
        assert cells.loc["Average", "value"] == pytest.approx(cells.loc[STS, "value"].mean())
        assert set(cells["seeds"]) == {(0, 1)} and pd_notna(cells.loc["Average", "std"])
        assert "p vs MNRL" not in cells.index  # a claim with its interval now (claims/geometry.csv)
        assert cells.loc["cost × MNRL", "value"] > 0
    mnrl = table[(table["row"] == "MNRL") & (table["column"] == "cost × MNRL")]["value"].item()
    assert mnrl == pytest.approx(1.0)
    rcl = table[(table["row"] == "RCL") & (table["column"] == "cost × MNRL")]["value"].item()
    assert rcl > 1.0  # entropy models and stores on top of a training run of the same length


def pd_notna(value) -> bool:
    return value == value and value is not None


def test_every_chapter_writes_its_geometry_and_the_trajectories_are_readable(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    geometry = load_geometry(out)
    finals = geometry[geometry["point"] == "final"]
    assert {"mnrl_sbert", "bsc", "rcl", "ifcl", "geometry"} <= set(finals["chapter"])
    assert ((finals["alignment"] >= 0) & (finals["alignment"] <= 4)).all()
    assert ((finals["uniformity"] <= 0) & (finals["uniformity"] >= -4)).all()
    paths = geometry[geometry["point"] == "trajectory"]
    assert set(paths[paths["chapter"] == "geometry"]["model"]) == {*METHODS, "MNRL (random init)"}
    control = finals[(finals["chapter"] == "geometry") & (finals["model"] == "base (untouched) (random init)")]
    assert set(control["encoder"]) == {"sentcl-mini-random"} and control["untouched"].all()
    for _, path in paths.groupby("model"):
        assert path["step"].min() == 0 and path["step"].is_monotonic_increasing and len(path) >= 2
    assert sorted(p.stem for p in (out / "figures" / "geometry").glob("*.png")) == [
        "alignment-uniformity", "anisotropy", "geometry-vs-sts", "trajectories"]
    assert set(finals[finals["chapter"] == "geometry"]["seed"].dropna()) == {0, 1}  # every seed's model measured
    assert finals[(finals["chapter"] == "rcl") & finals["untouched"]]["model"].tolist() == ["SRoBERTa-base"]
    page = html.unescape((out / "_build" / "html" / "book" / "geometry.html").read_text())
    assert "Assumptions and deviations" in page and "Equal budget: STS" in page
    for chapter in ("mnrl_sbert", "bsc", "rcl", "ifcl"):  # the sensitivity runs are demo runs: nothing to compare
        other = html.unescape((out / "_build" / "html" / "book" / f"{chapter}.html").read_text())
        assert "How the verdicts move with the setting" in other and "this build ran smoke" in other
    notebook = html.unescape((out / "_build" / "html" / "notebooks" / "geometry.html").read_text())
    assert "BSC above MNRL" in notebook and "above the untouched base" in notebook and "Traceback" not in notebook


def test_the_introduction_answers_the_title_question_from_the_results(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    intro = html.unescape((out / "_build" / "html" / "book" / "intro.html").read_text())
    assert "do contrastive sentence embeddings really work?" in intro
    assert "smoke profile" in intro and "paper profile" in intro
    assert "MNRL" in intro and "× MNRL" in intro
    # one answer table: each method against its paper's baseline, the untouched encoder and (equal budget) MNRL,
    # each cell a verdict with its interval; the run's limits and the build's state under it
    assert "sentcl-answer" in intro and "against its paper\u2019s baseline" in intro and "against the untouched encoder" in intro
    for chapter in ("mnrl_sbert", "bsc", "rcl", "ifcl"):
        assert f'href="{chapter}.html"' in intro
    assert "Limits:" in intro and "test items a task" in intro and "This build:" in intro and "complete:" in intro


@pytest.mark.parametrize("profile", ["smoke", "rehearsal", "paper"])
def test_the_builder_builds_every_planned_stage_alone_under_its_name(monkeypatch, profile):
    """Each planned stage is built alone (no stage left to the notebook) by the function its ``args`` name, from the
    first family of its encoder (the rehearsal's two families of one encoder: one run), under the stage's own name."""
    p = shipped_parameters("geometry", profile)
    plan = geometry.plan(p)
    assert [s.name for s in plan.alone()] == plan.names
    built: list[str] = []
    monkeypatch.setattr(geometry, "training_pairs", lambda run: "pairs")
    monkeypatch.setattr(geometry, "train", lambda run, pairs, method, family, seed: built.append(
        geometry.training_stage(method, geometry.encoder(run.parameters, family), seed)))
    monkeypatch.setattr(geometry, "entropy_model", lambda run, pairs, family, phi: built.append(
        geometry.entropy_stage(geometry.encoder(run.parameters, family), phi)))
    monkeypatch.setattr(geometry, "store", lambda run, pairs, family, phi: built.append(
        geometry.store_stage(geometry.encoder(run.parameters, family), phi)))
    run = SimpleNamespace(parameters=p)
    for stage in plan:
        geometry.build(run, stage)
    assert built == plan.names
    first = geometry.trained_families(p)
    assert {s.args[1] for s in plan} == set(first.values())
