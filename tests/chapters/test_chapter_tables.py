"""What the chapter modules say about their tables, which the notebooks import instead of typing it in a cell:
BSC's columns, captions and compared column per task, RCL's routing of a row to its tables, the geometry
chapter's equal-budget columns (fast: no notebook runs)."""

from __future__ import annotations

import pytest

from sentcl.book.output.results import paper_values
from sentcl.chapters import bsc, geometry, mnrl_sbert, rcl


def test_bsc_columns_are_the_paper_tables_columns():
    values = paper_values("bsc")
    for name, (table, _) in bsc.TABLES.items():
        columns = bsc.task_columns(name, f"{name}-scored")
        assert set(columns) <= set(values.loc[values["table"] == table, "column"]), name
        assert {scored for scored, _ in columns.values()} == {f"{name}-scored"}
    assert bsc.task_columns("CQA-A", "CQA-A-2016") == {"CQA-A MAP": ("CQA-A-2016", "MAP"), "CQA-A MRR": ("CQA-A-2016", "MRR")}


def test_bsc_claims_compare_each_task_on_its_tables_first_column():
    assert bsc.MAIN == {"Antique": "MRR", "CQA-A": "CQA-A MAP", "CQA-B": "CQA-B MAP", "PFCC-S": "HP@1",
                        "MRPC": "MRPC (F1)", "QQP": "QQP (F1)", "STSb": "STSb"}
    assert all(bsc.MAIN[name] == next(iter(bsc.task_columns(name, "t"))) for name in bsc.TABLES)


def test_bsc_shows_every_table_once_with_its_tasks():
    assert list(bsc.CAPTIONS) == list(dict.fromkeys(table for table, _ in bsc.TABLES.values()))
    assert bsc.TASKS_OF["Table 2"] == ["CQA-A", "CQA-B"] and bsc.TASKS_OF["Table 4"] == ["MRPC", "QQP"]
    assert sorted(n for tasks in bsc.TASKS_OF.values() for n in tasks) == sorted(bsc.TABLES)


def paper_tables(row: str) -> list[str]:
    values = paper_values("rcl")
    return list(dict.fromkeys(values.loc[values["row"] == row, "table"]))


@pytest.mark.parametrize(("row", "tables"), [
    ("RCL", ["Table 3", "Table 5"]),  # the paper's Tables 2a and 2b are the FAQ folds', recorded apart
    ("Attention dropout (p=0.1)", ["Table 1a", "Table 3"]),
    ("Entropy model (phi = 0.01)", ["Table 5"]),
    ("Eq. 1 fine-tuning (no regulators)", ["Table 3", "Table 5"]),  # ours: the paper lists it nowhere
])
def test_an_rcl_row_goes_under_the_papers_sts_tables_with_every_column(row, tables):
    assert rcl.sts_tables(row, paper_tables(row)) == (tables, None)


@pytest.mark.parametrize("row", ["2 regulators (phi = 0.01)", "0 regulators", "0 regulators, Eq. 1 fine-tuned (ours)",
                                 "4 regulators from the untouched base (control, ours)"])
def test_an_rcl_row_named_by_its_regulators_is_table_4s_average_alone(row):
    tables, columns = rcl.sts_tables(row, paper_tables(row))
    assert tables == ["Table 4"] and columns is not None and list(columns) == ["Average"]


def test_the_chapters_captions_name_tables_of_their_papers():
    for chapter in (bsc, rcl, mnrl_sbert):
        assert set(chapter.CAPTIONS) <= set(paper_values(chapter.NAME)["table"]), chapter.NAME
    assert {table for table, _ in mnrl_sbert.FIGURES.values()} <= set(mnrl_sbert.CAPTIONS)


def test_the_geometry_tables_columns_follow_the_parameters():
    columns = geometry.equal_budget_columns(["STS12", "STSb"], "CQA-A-2016")
    assert list(columns) == [geometry.STS_TABLE, geometry.RETRIEVAL_TABLE]
    assert list(columns[geometry.STS_TABLE]) == ["STS12", "STSb", "Average"]
    assert columns[geometry.STS_TABLE]["STSb"] == ("STSb", "Spearman")
    assert columns[geometry.RETRIEVAL_TABLE] == {"CQA-A-2016 MAP": ("CQA-A-2016", "MAP"),
                                                 "CQA-A-2016 MRR": ("CQA-A-2016", "MRR")}
