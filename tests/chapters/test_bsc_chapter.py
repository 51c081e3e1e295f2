"""The BSC chapter in the smoke book: Tables 1-5 with our computed rows beside the paper's, rows
without data said so, the generated sentences and the cost files' sections (``smoke_book`` in
``tests/conftest.py`` runs the book once per session)."""

from __future__ import annotations

import html
from types import SimpleNamespace

import pytest

from sentcl.book.output.claims import read_claims
from sentcl.book.output.results import load_results
from sentcl.book.parameters import shipped_parameters
from sentcl.chapters import bsc
from sentcl.chapters.bsc.variants import VARIANTS


def test_the_bsc_chapter_regenerates_its_tables_and_says_what_is_not_run(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    mine = load_results(out, ["bsc"])
    ours = {"Table 2": {"MSE", "BSC", "BSC - clusters shuffle", "BSC - random shuffle", "BSC - w/o shuffle",
                        "Combo BSC + MSE", "Triplet loss", "tiny zero-shot (ours)"},
            "Table 4": {"MSE", "BSC", "Combo BSC + MSE", "tiny zero-shot (ours)"},
            "Table 5": {"MSE", "BSC", "Combo BSC + MSE", "Fine-tuning MSE with BSC", "Fine-tuning BSC with MSE",
                        "tiny zero-shot (ours)"}}
    for table, rows in ours.items():
        part = mine[mine["table"] == table]
        assert set(part["row"]) == rows, table
    columns = {"Table 2": ["CQA-A MAP", "CQA-A MRR"], "Table 4": ["MRPC (F1)"], "Table 5": ["STSb"]}
    for table, expected in columns.items():
        part = mine[mine["table"] == table]
        for row in ours[table]:
            assert list(part[part["row"] == row]["column"]) == expected
    assert set(mine["table"]) == set(ours)  # Antique (Table 1) and PFCC-S (Table 3): no sample data
    # the smoke profile summarises two seeds as the demo does three: every trained row is the mean
    # over both with its standard deviation; the untrained zero-shot row is one run, without one
    trained = ~mine["row"].str.endswith("zero-shot (ours)")
    assert set(mine.loc[trained, "seeds"]) == {(0, 1)} and mine.loc[trained, "std"].notna().all()
    assert set(mine.loc[~trained, "seeds"]) == {(0,)} and mine.loc[~trained, "std"].isna().all()
    assert mine.loc[trained, "note"].str.contains("mean ± std over seeds [0, 1]", regex=False).all()
    assert (mine["kind"] == "sample-data").all()
    page = html.unescape((out / "_build" / "html" / "book" / "bsc.html").read_text())
    assert "Assumptions and deviations" in page
    for table in ("Table 1", "Table 2", "Table 3", "Table 4", "Table 5"):
        assert f"{table}: paper vs ours" in page  # every table, those without our rows too
    assert "background-color" not in page.split("Assumptions and deviations")[0]  # a miniature: nothing coloured
    assert "paper [cited] (cited)" in page and "Thakur et al. (2021) (augmented SBERT)" in page
    notebook = html.unescape((out / "_build" / "html" / "notebooks" / "bsc.html").read_text())
    assert "Antique: not run: data absent" in notebook and "PFCC-S: not run: data absent" in notebook
    assert "What the paper profile costs" in notebook
    claims = read_claims(out, "bsc")  # verdicts with intervals; a row whose data are absent: not tested, and why
    assert "<strong>Table 2:</strong> of" in notebook and set(claims["verdict"]) <= {"direction reproduced", "direction reversed", "undetermined", "not tested"}
    assert claims["reason"].str.contains("BSC not run: Antique: data absent").any()
    assert "Traceback" not in notebook


@pytest.mark.parametrize("profile", ["paper", "rehearsal", "demo", "smoke"])
def test_the_builder_builds_every_planned_stage_by_its_args(profile, monkeypatch):
    """Every stage of each profile's plan names (task, row, seed) by its ``args``, the stage itself; ``build`` trains
    that row's one seed under it, and a fine-tuning row's after loading the runs its upstream stages name (seed k's,
    or every seed's under "best on dev"), from which it starts."""
    p = shipped_parameters("bsc", profile)
    calls: list[tuple] = []

    def train_row(run, data, row, *, seeds=None, starts_from=None, save_to=None, score=None):
        calls.append((data.name, row, tuple(seeds), starts_from, save_to))
        return SimpleNamespace(saved={s: f"saved {row} {s}" for s in seeds})

    monkeypatch.setattr(bsc, "task_data", lambda run, name: SimpleNamespace(name=name))
    monkeypatch.setattr(bsc, "train_row", train_row)
    run = SimpleNamespace(parameters=p)
    for stage in bsc.plan(p):
        task, row, seed = stage.args
        assert stage.name == bsc.training_stage(task, row, seed) and stage.alone
        calls.clear()
        bsc.build(run, stage)
        start = VARIANTS[row].starts_from
        assert calls[-1][:3] == (task, row, (seed,)) and calls[-1][4] is None
        if start is None:
            assert len(calls) == 1 and calls[0][3] is None
            continue
        (name, started, seeds, _, folder), _ = calls
        assert (name, started) == (task, start) and folder is not None
        assert tuple(bsc.training_stage(task, start, s) for s in seeds) == stage.upstream
        assert calls[-1][3] == {s: f"saved {start} {s}" for s in seeds}


def test_a_task_whose_data_are_absent_builds_nothing(monkeypatch):
    """As the notebook does not run a task whose data the data root lacks, its stages build nothing."""
    from sentcl.errors import DataMissingError

    def absent(run, name):
        raise DataMissingError(name)

    monkeypatch.setattr(bsc, "task_data", absent)
    monkeypatch.setattr(bsc, "train_row", lambda *a, **k: pytest.fail("trained"))
    p = shipped_parameters("bsc", "smoke")
    bsc.build(SimpleNamespace(parameters=p), next(iter(bsc.plan(p))))


def test_the_rows_a_profile_leaves_out_are_the_computable_rows_it_does_not_list():
    """A table's rows the chapter can compute (a training variant, the zero-shot row) but the profile's rows omit: each
    is recorded as not run; a row the paper cites from elsewhere is never one."""
    from sentcl.chapters.bsc import rows_left_out

    paper = ["MSE", "BSC", "Triplet loss", "Thakur et al. (2021)", "SimCSE (unsup.)"]
    assert rows_left_out(paper, ["MSE", "SimCSE (unsup.)"]) == ["BSC", "Triplet loss"]
    assert rows_left_out(paper, ()) == ["MSE", "BSC", "Triplet loss", "SimCSE (unsup.)"]
    assert rows_left_out(paper, paper) == []
