"""The geometry files (every chapter's models on the hypersphere, trajectories included), their figures,
and the introduction's answer generated from the equal-budget table."""

from __future__ import annotations

import math

import matplotlib
import pytest
from matplotlib.text import Text

from sentcl.book.output.geometry_files import (
    alignment_uniformity_figure,
    anisotropy_figure,
    distinct_models,
    load_geometry,
    read_geometry,
    save_geometry,
    score_figure,
)
from sentcl.book.output.layout import Layout
from sentcl.errors import ConfigError, DataFormatError

matplotlib.use("Agg")


def point(model, kind="final", step=None, **measures):
    values = {"alignment": 0.3, "uniformity": -2.0, "anisotropy": 0.1, "top_variance_share": 0.05,
              "largest_dimension": 0.07 if kind == "final" else None} | measures
    return {"model": model, "point": kind, "step": step, "seed": 0, "profile": "demo", "kind": "reproduced",
            "data": "STS-B test", "note": ""} | values


def test_round_trip_and_replacement_rules(tmp_path):
    save_geometry(tmp_path, "rcl", [point("RCL"), point("RCL", "trajectory", 0), point("RCL", "trajectory", 8)], run_id="a")
    save_geometry(tmp_path, "rcl", [point("base")], run_id="a")
    frame = read_geometry(Layout(tmp_path).geometry("rcl"))
    assert list(frame["model"]) == ["RCL", "RCL", "RCL", "base"]
    assert list(frame["step"].astype("float").fillna(-1)) == [-1, 0, 8, -1]
    assert frame["largest_dimension"].isna().tolist() == [False, True, True, False]
    save_geometry(tmp_path, "rcl", [point("RCL", alignment=0.25)], run_id="a")  # same run and model: replaced
    frame = read_geometry(Layout(tmp_path).geometry("rcl"))
    assert sorted(frame["model"]) == ["RCL", "base"] and frame.set_index("model").loc["RCL", "alignment"] == 0.25
    save_geometry(tmp_path, "rcl", [point("entropy model")], run_id="b")  # a new run drops the old one's rows
    assert list(read_geometry(Layout(tmp_path).geometry("rcl"))["model"]) == ["entropy model"]
    save_geometry(tmp_path, "geometry", [point("MNRL")], run_id="c")
    assert sorted(load_geometry(tmp_path)["chapter"]) == ["geometry", "rcl"]
    assert list(load_geometry(tmp_path, ["geometry"])["model"]) == ["MNRL"]
    assert load_geometry(tmp_path / "nothing").empty


def test_bad_points_and_bad_files_are_named(tmp_path):
    for bad in (point(""), point("x", kind="middle"), point("x", "trajectory", None), point("x", alignment=math.nan),
                point("x", uniformity="low"), point("x") | {"colour": "red"}):
        with pytest.raises(ConfigError):
            save_geometry(tmp_path, "rcl", [bad], run_id="a")
    path = save_geometry(tmp_path, "rcl", [point("RCL")], run_id="a")
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[1].replace("0.3", "oops", 1)]) + "\n")
    with pytest.raises(DataFormatError, match=r"rcl\.csv:2: .*alignment"):
        read_geometry(path)


def test_figures_draw_every_final_point_and_trajectory(tmp_path):
    points = [point("base"), point("MNRL", alignment=0.2), point("MNRL", "trajectory", 0),
              point("MNRL", "trajectory", 4, alignment=0.25, uniformity=-2.2)]
    save_geometry(tmp_path, "geometry", points, run_id="a")
    frame = load_geometry(tmp_path)
    fig = alignment_uniformity_figure(frame)
    ax = fig.axes[0]
    assert len(ax.collections) == 1 and len(ax.collections[0].get_offsets()) == 2  # the two final models
    assert any(list(line.get_xdata()) == [-2.0, -2.2] for line in ax.lines)  # the trajectory, in step order
    assert "lower-left is better" in ax.get_title()
    bars = anisotropy_figure(frame)
    assert [len(a.patches) for a in bars.axes] == [2, 2]
    with pytest.raises(ConfigError):
        anisotropy_figure(frame[frame["point"] == "trajectory"])


MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_a_model_measured_by_several_chapters_is_one_point_named_by_its_checkpoint(tmp_path):
    """The untouched MiniLM, measured by five chapters under five names (the RCL chapter calls it "SRoBERTa-base"),
    is one point labelled "all-MiniLM-L6-v2 (untouched)"; a row whose run is another row's (the same measures) is
    one point with both names; seeds after the first are not drawn; trained models keep their names."""
    same = {"alignment": 0.31, "uniformity": -2.5, "anisotropy": 0.12}
    for chapter, name in (("mnrl_sbert", "SBERT-base"), ("bsc", "BERT-base"), ("rcl", "SRoBERTa-base"),
                          ("geometry", "base (untouched)")):
        save_geometry(tmp_path, chapter, [point(name, encoder=MINILM, untouched=chapter in ("rcl", "geometry"), **same)],
                      run_id="a")
    save_geometry(tmp_path, "rcl", [point("Eq. 1 fine-tuning", alignment=0.2, encoder=MINILM),
                                    point("Attention dropout (p=0.1)", alignment=0.2, encoder=MINILM),
                                    point("RCL", alignment=0.25, encoder=MINILM),
                                    point("RCL", alignment=0.1) | {"seed": 1}], run_id="a")
    frame = load_geometry(tmp_path)
    drawn = distinct_models(frame)
    assert sorted(drawn["label"]) == ["Eq. 1 fine-tuning = Attention dropout (p=0.1)", "RCL", "all-MiniLM-L6-v2 (untouched)"]
    base = drawn[drawn["label"] == "all-MiniLM-L6-v2 (untouched)"].iloc[0]
    assert base["chapters"] == ["bsc", "geometry", "mnrl_sbert", "rcl"] and drawn.set_index("label").loc["RCL", "alignment"] == 0.25
    fig = alignment_uniformity_figure(frame)
    texts = " ".join(t.get_text() for t in fig.texts)
    assert "SRoBERTa-base" not in texts and "all-MiniLM-L6-v2 (untouched) [bsc, geometry, mnrl_sbert, rcl]" in texts
    labels = [t.get_text() for t in anisotropy_figure(frame).axes[0].get_yticklabels()]
    assert len(labels) == 3 and not any("SRoBERTa" in label for label in labels)


def test_numbered_labels_never_overprint(tmp_path):
    """Twelve models crowded into a corner of the plane: every number beside a point keeps clear of the others."""
    points = [point(f"model {k}", alignment=0.3 + 0.001 * (k % 4), uniformity=-2.0 - 0.001 * (k // 4)) for k in range(12)]
    save_geometry(tmp_path, "geometry", points, run_id="a")
    fig = alignment_uniformity_figure(load_geometry(tmp_path))
    ax = fig.axes[0]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    numbers = [t for t in ax.texts if t.get_text().isdigit()]
    assert sorted(int(t.get_text()) for t in numbers) == list(range(1, 13))
    boxes = [t.get_window_extent(renderer) for t in numbers]
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_a_label_placed_away_from_its_point_has_a_leader_line(tmp_path):
    """Eighteen of twenty models on almost one spot: the numbers that cannot sit beside it are drawn further out, each with a line
    to its point, and still none overprints another."""
    points = [point(f"model {k}", alignment=0.3 + 1e-5 * k, uniformity=-2.0) for k in range(18)]
    points += [point("far 1", alignment=0.1, uniformity=-3.0), point("far 2", alignment=0.6, uniformity=-1.0)]
    save_geometry(tmp_path, "geometry", points, run_id="a")
    fig = alignment_uniformity_figure(load_geometry(tmp_path))
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    numbers = [t for t in fig.axes[0].texts if t.get_text().isdigit()]
    assert len(numbers) == 20 and any(t.arrow_patch is not None for t in numbers)
    boxes = [Text.get_window_extent(t, renderer) for t in numbers]  # the text alone, not its leader line
    assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def test_the_variance_panel_marks_the_isotropic_reference(tmp_path):
    save_geometry(tmp_path, "geometry", [point("base", dimension=384), point("MNRL", alignment=0.2, dimension=384)], run_id="a")
    fig = anisotropy_figure(load_geometry(tmp_path))
    lines = [line for line in fig.axes[1].lines if line.get_linestyle() == "--"]
    assert len(lines) == 1 and lines[0].get_xdata()[0] == pytest.approx(10 / 384)
    assert "isotropic: 10/d = 0.026 (d = 384)" in [t.get_text() for t in fig.axes[1].get_legend().get_texts()]


def test_the_score_figure_draws_one_point_per_model_and_states_rho_and_n():
    models = [{"alignment": a, "uniformity": -a, "STS average": 80 - a, "model": m} for a, m in ((0.1, "x"), (0.2, "y"), (0.3, "y"))]
    fig = score_figure(models, "STS average", [{"measure": "alignment", "rho": -1.0, "p": 0.0, "n": 3},
                                                {"measure": "uniformity", "rho": 1.0, "p": 0.0, "n": 3}])
    assert [a.get_title() for a in fig.axes] == ["alignment: Spearman rho -1.00 (n = 3)", "uniformity: Spearman rho +1.00 (n = 3)"]
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == 3


@pytest.mark.slow
def test_the_answer_reads_the_equal_budget_claims_against_mnrl_and_the_base(tmp_path, fake):
    """The introduction's answer table: with only the geometry chapter run, its equal-budget column says each method
    against MNRL (verdict and interval) and the cost, the chapters' own columns say they did not run, and the
    run's limits are said under it."""
    from sentcl.book.notebook.chapter_run import ChapterRun
    from sentcl.book.output.claims import Claim
    from sentcl.book.pages.answer import answer
    from sentcl.book.pages.fragments import chapter_states
    from sentcl.book.profiles import SampleDataWarning

    with pytest.warns(SampleDataWarning):
        run = ChapterRun("geometry", profile="demo", data_dir=None, out_dir=tmp_path)
    quality = {"base (untouched)": 0.5, "MNRL": 0.3, "BSC": 0.3, "RCL": 0.05, "IFCL": 0.8}  # noise: lower is better
    costs = {"MNRL": 1.0, "BSC": 1.2, "RCL": 3.0, "IFCL": 1.5}
    for row, noise in quality.items():
        seeds = [0] if row == "base (untouched)" else [0, 1, 2]
        runs = False if row == "base (untouched)" else {s: fake.done(True, f"{row} seed {s}", steps=60) for s in seeds}
        run.record_scores(row, {s: fake.scored(noise, s, keys=("STSb", "SICK-R")) for s in seeds}, trained=runs,
                          tables=["Equal budget: STS"])
        if row in costs:
            run.record(row, {"cost × MNRL": costs[row]}, seeds=seeds, tables=["Equal budget: retrieval, test, cost"])
    own = [Claim("Equal budget: STS", "Average", m, against, source="ours")
           for m in costs for against in ("base (untouched)", "MNRL") if m != against]
    run.write_claims(own)
    text = answer(chapter_states(tmp_path, tmp_path))
    assert "**In the demo profile (a miniature)**" in text
    rows = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| [")}
    assert "vs MNRL: **direction reproduced**, RCL above" in rows["[RCL](rcl.md) (not run)"] and "costs 3.00 × MNRL" in rows["[RCL](rcl.md) (not run)"]
    assert "vs MNRL: **direction reversed**, IFCL below" in rows["[IFCL](ifcl.md) (not run)"]
    assert "vs MNRL: **undetermined** (secondary) " in rows["[BSC](bsc.md) (not run)"]
    assert "the reference" in rows["[MNRL-SBERT](mnrl_sbert.md) (not run)"]
    assert "*Limits:*" in text and "each model trained 60 optimizer steps" in text and "300 test items" in text
    assert "sample data" in text  # this run read the sample data: the answer says it tests the code


def test_record_geometry_writes_the_final_point_and_the_runs_trajectory(tmp_path):
    import json
    from types import SimpleNamespace

    import numpy as np

    from sentcl.book.notebook.chapter_run import ChapterRun
    from sentcl.evaluation.geometry import evaluate_geometry

    run = ChapterRun("rcl", profile="smoke", data_dir=None, out_dir=tmp_path / "out")

    def embed(texts):
        return np.array([[len(t), t.count("a") + 1.0, t.count("e") + 1.0] for t in texts])

    trained = tmp_path / "run"
    trained.mkdir()
    history = [{"step": 0, "alignment": 0.5, "uniformity": -1.0, "anisotropy": 0.3, "top_variance_share": 0.9,
                "seconds": 0.1}, {"step": 4, "alignment": 0.4, "uniformity": -1.2, "anisotropy": 0.2,
                                  "top_variance_share": 0.8, "seconds": 0.1}]
    (trained / "geometry.json").write_text(json.dumps(history))
    measured = run.record_geometry("RCL", embed, seed=0, trained=SimpleNamespace(output_dir=trained))
    assert measured["trajectory_points"] == 2
    expected = evaluate_geometry(run.geometry_pairs(), embed)
    frame = load_geometry(tmp_path / "out")
    final = frame[frame["point"] == "final"].iloc[0]
    assert final["alignment"] == pytest.approx(expected["alignment"]) and final["chapter"] == "rcl"
    assert list(frame[frame["point"] == "trajectory"]["step"]) == [0, 4]
    assert list(frame[frame["point"] == "trajectory"]["uniformity"]) == [-1.0, -1.2]
    assert run.record_geometry("base", embed)["trajectory_points"] == 0  # no run: the final point only
    assert sorted(load_geometry(tmp_path / "out")["model"].unique()) == ["RCL", "base"]
    # the encoder it is or was trained from, whether it is that encoder untouched, and the embedding size
    demo = ChapterRun("rcl", profile="smoke", data_dir=None, out_dir=tmp_path / "demo",
                      models={"SRoBERTa": MINILM}, paper_models={"SRoBERTa": "SRoBERTa-base"})
    demo.record_geometry("SRoBERTa-base", embed, family="SRoBERTa", untouched=True)
    row = load_geometry(tmp_path / "demo").iloc[0]
    assert row["encoder"] == MINILM and row["untouched"] and row["dimension"] == 3
    assert f"{MINILM} stands in for SRoBERTa-base" in row["note"]
