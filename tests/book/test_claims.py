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
