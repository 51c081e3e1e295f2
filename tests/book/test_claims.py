"""The paper's orderings checked on our results (sentcl.book.claims)."""

from __future__ import annotations

import pandas as pd
import pytest

from sentcl.book.claims import orderings
from sentcl.book.report import compare
from sentcl.book.results import Result, load_results, save_results
from sentcl.errors import ConfigError

LABELS = ("entailment", "neutral", "contradiction")


def test_orderings_orient_pairs_as_the_paper_and_say_whether_ours_agree(tmp_path):
    values = {"MNRLSBERT": 70.0, "SBERT": 72.0, "BERT-whitening": 60.0}  # paper: 78.60, 74.89, 66.28
    cells = [Result(table="Table 2" if row != "BERT-whitening" else "Table 1", row=row, column="Average", value=v,
                    seeds=(0,), profile="demo", kind="reproduced", data="d") for row, v in values.items()]
    cells.append(Result(table="Table 2", row="SBERT-whitening", column="Average", value=71.0, seeds=(0,),
                        profile="demo", kind="reproduced", data="d"))
    save_results(tmp_path, "mnrl_sbert", cells, run_id="r")
    compared = compare("mnrl_sbert", load_results(tmp_path))
    found = {(o.higher, o.lower): o for o in orderings(compared, "Table 2")}
    # SBERT-whitening 77.00 > SBERT 74.89 in the paper; MNRLSBERT 78.60 above both; cited rows are left out
    assert set(found) == {("MNRLSBERT", "SBERT"), ("MNRLSBERT", "SBERT-whitening"), ("SBERT-whitening", "SBERT")}
    central = found[("MNRLSBERT", "SBERT")]
    assert (central.paper_higher, central.paper_lower, central.ours_higher, central.ours_lower) == (78.60, 74.89, 70.0, 72.0)
    assert not central.holds and "does NOT hold" in central.sentence() and "-2.00" in central.sentence()
    assert not found[("SBERT-whitening", "SBERT")].holds and not found[("MNRLSBERT", "SBERT-whitening")].holds
    assert orderings(compared, "Table 1") == []  # one computed row: no pair
    with pytest.raises(ConfigError, match="no cells"):
        orderings(compared, "Table 9")
    tie = pd.DataFrame({"table": ["T"] * 2, "row": ["a", "b"], "column": ["Average"] * 2, "paper_value": [1.0, 1.0],
                        "value": [2.0, 1.0], "status": ["reproduced"] * 2, "profile": ["demo"] * 2})
    assert orderings(tie, "T") == []


def test_table_orderings_cover_every_table_with_the_column_and_count_what_holds():
    from sentcl.book.claims import ordering_counts, table_orderings

    def cell(table, row, column, paper, ours, status="reproduced"):
        return {"table": table, "row": row, "column": column, "paper_value": paper, "value": ours,
                "status": status, "profile": "demo"}

    compared = pd.DataFrame([
        cell("T1", "a", "Average", 3.0, 30.0), cell("T1", "b", "Average", 2.0, 10.0), cell("T1", "c", "Average", 1.0, 20.0),
        cell("T1", "d", "Average", 0.5, float("nan"), status="cited"),
        cell("T1", "a", "STSb", 9.0, 0.0), cell("T1", "b", "STSb", 8.0, 1.0),  # a table with an Average: only that
        cell("T2", "a", "MRR", 0.9, 0.1), cell("T2", "b", "MRR", 0.8, 0.2),  # no Average: each column
        cell("T2", "a", "P@1", 0.5, 0.3), cell("T2", "b", "P@1", 0.4, 0.2),
        cell("T3", "a", "Average", 1.0, 5.0),  # one computed row: no pair
    ])
    found = table_orderings(compared)
    assert list(found) == ["T1", "T2", "T3"] and found["T3"] == []
    assert {(o.higher, o.lower, o.holds) for o in found["T1"]} == {("a", "b", True), ("a", "c", True), ("b", "c", False)}
    assert [(o.column, o.holds) for o in found["T2"]] == [("MRR", False), ("P@1", True)]
    assert ordering_counts(compared) == (5, 3)
    assert ordering_counts(compared, "MRR") == (1, 0)
    assert ordering_counts(compared, "Average") == (3, 2)
    assert ordering_counts(compared.iloc[0:0]) == (0, 0)  # a chapter that has not run
