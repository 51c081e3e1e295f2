"""The chapter helper's bookkeeping (sentcl.book.notebook.chapter_run.ChapterRun): a row under every paper
table that lists it, the stand-in and training-subset notes a profile implies, the data text,
and the run record written around a training run."""

from __future__ import annotations

import json
import warnings

import pytest

from sentcl.book.notebook.chapter_run import ChapterRun
from sentcl.book.output.run_records import read_run_records
from sentcl.data import TrainingData, load, samples_root
from sentcl.errors import ConfigError
from sentcl.losses import MultipleNegativesRankingLoss
from sentcl.models import tiny_model
from sentcl.training import Trainer, TrainingConfig

PAPER = {"BERT": "bert-base-uncased", "RoBERTa": "roberta-base"}


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ChapterRun(
            "mnrl_sbert", profile="smoke", data_dir=None, out_dir=tmp_path / "out",
            models={"BERT": "tiny"}, paper_models=PAPER,
        )


def test_a_row_is_recorded_under_every_table_of_the_paper_that_lists_it(run):
    assert run.paper_tables("MNRLSBERT") == ["Table 1", "Table 2"]
    assert run.paper_tables("SBERT") == ["Table 2"]
    run.record("MNRLSBERT", {"STS12": 70.0, "Average": 71.0}, seeds=[0])
    cells = run.results()
    assert sorted(set(cells["table"])) == ["Table 1", "Table 2"]
    assert len(cells) == 4 and set(cells["row"]) == {"MNRLSBERT"}


def test_a_row_of_our_own_names_its_tables(run):
    with pytest.raises(ConfigError, match="no row 'tiny untouched'"):
        run.record("tiny untouched", {"STS12": 1.0}, seeds=[0])
    run.record("tiny untouched", {"STS12": 1.0}, seeds=[0], tables=["Table 1"])
    assert list(run.results()["table"]) == ["Table 1"]


def test_notes_say_which_encoder_stands_in_and_what_it_was_trained_on(run):
    assert run.stand_in("BERT") == "tiny stands in for bert-base-uncased"
    with pytest.raises(ConfigError, match="no model family 'RoBERTa'"):
        run.stand_in("RoBERTa")
    run.record("SBERT", {"STS12": 1.0}, seeds=[0], family="BERT", trained_on="snli/train (96 of 480, seed 0)")
    (note,) = set(run.results()["note"])
    assert note == "tiny stands in for bert-base-uncased; trained on snli/train (96 of 480, seed 0)"


def test_the_papers_own_encoder_needs_no_note(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = ChapterRun("mnrl_sbert", profile="smoke", data_dir=None, out_dir=tmp_path, models=PAPER, paper_models=PAPER)
    assert run.stand_in("RoBERTa") == ""
    with pytest.raises(ConfigError, match="no paper model"):
        ChapterRun("mnrl_sbert", profile="smoke", data_dir=None, out_dir=tmp_path, models={"XLNet": "x"}, paper_models=PAPER)


@pytest.mark.parametrize("chapter", ["mnrl_sbert", "bsc", "rcl", "ifcl", "geometry"])
def test_a_run_given_its_parameters_takes_its_encoders_and_the_papers_from_the_chapter(chapter, tmp_path, monkeypatch):
    """What the notebook's one-line ``ChapterRun(chapter, ..., parameters=globals())`` gives: the smoke profile's
    encoders (the chapter module's ``encoders``), each family's paper encoder (its ``PAPER_MODELS``), and the stand-in
    notes they make."""
    from sentcl.book.parameters import shipped_parameters
    from sentcl.chapters import CHAPTERS

    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    smoke = shipped_parameters(chapter, "smoke")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = ChapterRun(chapter, profile="smoke", data_dir=None, out_dir=tmp_path / "out", parameters=smoke)
    assert run.models and set(run.models.values()) == {"tiny"}  # the smoke profile's stand-in, every family
    assert run.paper_models == dict(CHAPTERS[chapter].paper_models) and set(run.models) <= set(run.paper_models)
    family = next(iter(run.models))
    assert run.stand_in(family) == f"tiny stands in for {run.paper_models[family]}"


@pytest.mark.parametrize("chapter", ["mnrl_sbert", "bsc", "rcl", "ifcl", "geometry"])
def test_the_papers_encoders_are_the_paper_profiles(chapter):
    """A chapter's PAPER_MODELS is what its paper profile trains (RCL's names the checkpoint it assumes for the
    paper's SRoBERTa-base): one cannot drift from the other."""
    from sentcl.book.parameters import shipped_parameters
    from sentcl.chapters import CHAPTERS

    spec = CHAPTERS[chapter]
    paper = spec.models(shipped_parameters(chapter))
    assert set(paper) == set(spec.paper_models)
    for family, model in paper.items():
        assert model == spec.paper_models[family] or model.split("/")[-1] in spec.paper_models[family], family


def test_every_row_carries_what_it_was_scored_on(run):
    sts12 = run.load("sts12")
    text = run.describe_evaluation({"STS12": sts12.take(range(10)), "STSb": run.load("stsbenchmark", "test")},
                                   limit=10, seed=3)
    assert text == f"{run.data.describe()}; STS pairs scored: STS12 10, STSb 36 (at most 10 per task, seed 3)"
    run.record("MNRLSBERT", {"STS12": 1.0}, seeds=[0])
    assert set(run.results()["data"]) == {text}


@pytest.mark.slow
def test_train_records_a_training_run_once_and_not_when_it_only_loads(run):
    pairs = load("snli", "train", samples_root()).with_label("entailment")
    data = TrainingData.from_record(pairs, labels=False).take(range(16))
    config = TrainingConfig(batch_size=8, seed=0)

    def trainer():
        model = tiny_model(0)
        return Trainer(model, MultipleNegativesRankingLoss(model), data, config, name="mnrl", show_progress=False)

    first = run.train(trainer())
    assert first.trained and first.global_step == 2
    (record,) = read_run_records(run.out_dir / "records")
    assert (record.kind, record.name, record.chapter, record.profile, record.status) == ("training", "mnrl", "mnrl_sbert", "smoke", "ok")
    assert record.config["steps"] == 2 and record.config["pairs_per_s"] > 0 and record.wall_time_s > 0
    assert record.config["run"]["data"]["rows"] == 16 and record.peak_memory_mb > 0
    assert record.config["resumed_from_step"] is None  # what "resumed run X from step N" reads
    assert record.config["checkpoints"]["count"] == 1 and record.config["checkpoints"]["bytes"] > 0  # the end's
    assert record.config["checkpoints"]["seconds"] >= 0 and record.config["best_weights"]["count"] == 0
    again = run.train(trainer())
    assert not again.trained and again.global_step == 2
    assert len(read_run_records(run.out_dir / "records")) == 1


def test_a_failed_training_run_is_recorded_as_failed(run):
    class Broken(MultipleNegativesRankingLoss):
        def compute_loss_from_embeddings(self, embeddings, labels=None):
            raise RuntimeError("boom")

    data = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)
    model = tiny_model(0)
    trainer = Trainer(model, Broken(model), data.take(range(8)), TrainingConfig(batch_size=4), name="broken",
                      show_progress=False)
    with pytest.raises(RuntimeError, match="boom"):
        run.train(trainer)
    (record,) = read_run_records(run.out_dir / "records")
    assert record.status == "failed" and record.error == "RuntimeError: boom"


def test_paper_rows_and_the_claims_summary(run):
    """Rows recorded without per-item scores: their ordering is a claim the run cannot test, whatever
    the sign of the gap (a sign-only count would call this one contradicted)."""
    rows = run.paper_rows("Table 2")
    assert rows[0] == "InferSent-Glove" and rows.index("SBERT") < rows.index("MNRLSBERT")
    assert len(rows) == len(set(rows)) and run.paper_rows("Table 9") == []
    run.record("MNRLSBERT", {"Average": 70.0}, seeds=[0], tables=["Table 2"])
    run.record("SBERT", {"Average": 71.0}, seeds=[0])
    lines = run.claims_summary(run.write_claims())
    assert lines[0] == "**Table 2:** of 1 claims, 0 direction reproduced, 0 direction reversed, 0 undetermined, 1 not tested."
    assert lines[1].startswith("- MNRLSBERT above SBERT (Table 2, Average; secondary family): paper 78.60 vs 74.89 (+3.71): **not tested**")
    assert "MNRLSBERT has no per-item scores in this run" in lines[1]
    assert lines[-1].startswith("*This run read the project's sample data")


def test_paper_cells_read_one_row_or_one_column_of_a_paper_table(run):
    averages = run.paper_cells("Table 2", column="Average")
    assert averages["SBERT"] == 74.89 and averages["MNRLSBERT"] == 78.6
    assert list(averages.index) == [r for r in run.paper_rows("Table 2") if r in averages.index]
    sbert = run.paper_cells("Table 2", row="SBERT")
    assert sbert["STS12"] == 70.97 and sbert["Average"] == 74.89 and sbert.index[0] == "STS12"
    assert run.paper_cells("Table 2", row="a row the paper does not have").empty
    for bad in ({}, {"row": "SBERT", "column": "Average"}):
        with pytest.raises(ConfigError, match="either row= or column="):
            run.paper_cells("Table 2", **bad)


def test_load_tasks_reads_through_the_run_and_describes_the_evaluation(run):
    sts = run.load_tasks(["STS12", "STSb"], max_pairs=5, seed=1)
    assert [len(r) for r in sts.values()] == [5, 5] and sts["STSb"].name == "stsbenchmark"
    used = run.out_dir / "data_used" / "mnrl_sbert.json"
    assert [d["name"] for d in json.loads(used.read_text())["datasets"]] == ["sts12", "stsbenchmark"]
    run.record("MNRLSBERT", {"STS12": 1.0}, seeds=[0])
    assert set(run.results()["data"]) == {f"{run.data.describe()}; STS pairs scored: STS12 5, STSb 5 (at most 5 per task, seed 1)"}


def test_a_run_quiets_what_the_notebook_should_not_show(tmp_path, monkeypatch):
    """Constructing a run is what each notebook's imports cell did by hand: transformers' per-model loading bar off
    (:func:`sentcl.book.notebook.chapter_run.quiet_progress`)."""
    from transformers.utils import logging as transformers_logging

    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    before = transformers_logging.is_progress_bar_enabled()
    transformers_logging.enable_progress_bar()
    try:
        ChapterRun("mnrl_sbert", profile="smoke", data_dir=None, out_dir=tmp_path / "out")
        assert not transformers_logging.is_progress_bar_enabled()
    finally:
        (transformers_logging.enable_progress_bar if before else transformers_logging.disable_progress_bar)()


@pytest.mark.parametrize("first", ["", "import sentcl.book.notebook\n"])
def test_the_notebook_import_quiets_tqdms_ipywidgets_warning_before_the_imports_after_it(first):
    """tqdm.auto warns once, when first imported in a kernel without ipywidgets; sentence-transformers imports it
    in the imports cell, before any run exists: importing the notebook's package first (the cell's first sentcl
    import) quiets it. Without that import the warning shows (the check can fail)."""
    import subprocess
    import sys

    code = first + "import warnings\nfrom tqdm import TqdmWarning\nwarnings.warn('IProgress not found', TqdmWarning)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert ("IProgress not found" in proc.stderr) == (not first)
