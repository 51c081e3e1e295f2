"""The RCL chapter in the smoke book (the session's ``smoke_book`` fixture): its tables with our rows beside
the paper's (the control among ours), the rows it cannot compute marked "not run" with the reason, the
anisotropy figure, the claims (no per-cell t-test marks), the entropy models' health, and the GPU cost table."""

from __future__ import annotations

import html
import json

import pytest

from sentcl.book.output.claims import read_claims
from sentcl.book.output.results import load_results
from sentcl.training.cross_validation import FINAL, INITIAL, UNTOUCHED

STS = ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R", "Average"]
CONTROL = "Eq. 3, 4 regulators from the untouched base (control)"


def test_the_rcl_chapter_regenerates_its_tables_figure_and_conclusions(smoke_book):
    _, out, status, output = smoke_book
    assert status == 0, output
    mine = load_results(out, ["rcl"])
    computed = {
        "Table 1a": {"SRoBERTa-base", "Attention dropout (p=0.1)"},
        "Table 1b": {"SRoBERTa-base", "DropHead (p=0.1)"},
        "Table 3": {"SRoBERTa-base", "DropHead (p=0.1)", "Attention dropout (p=0.1)", "RCL", "Eq. 1 fine-tuning (no regulators)",
                    CONTROL},
        "Table 5": {"Entropy model (phi = 0.01)", "Entropy model (phi = 0.02)", "RCL", "Eq. 1 fine-tuning (no regulators)",
                    CONTROL},
    }
    for table, rows in computed.items():
        part = mine[mine["table"] == table]
        assert set(part["row"]) == rows, table
        for row in rows:
            cells = part[part["row"] == row].set_index("column")["value"]
            assert list(cells.index) == STS
            assert cells["Average"] == pytest.approx(cells.drop("Average").mean())
    rcl = mine[(mine["table"] == "Table 3") & (mine["row"] == "RCL")]
    assert {tuple(s) for s in rcl["seeds"]} == {(0, 1)}  # the mean over the smoke profile's two seeds
    table4 = set(mine[mine["table"] == "Table 4"]["row"])
    assert table4 == {"0 regulators", "0 regulators, Eq. 1 fine-tuned (ours)", "2 regulators (phi = 0.01)",
                      "4 regulators (phi = 0.01, 0.02)", "4 regulators from the untouched base (control, ours)"}
    assert not len(mine[mine["table"] == "Table 2a"])  # FAQIR is not in the sample data: not run, never filled in
    # Table 2b: the 5-fold protocol on the sample COUGH bank (2 folds in smoke); each cell the mean over the folds
    faq = json.loads((out / "rcl" / "faq_folds.json").read_text())["Table 2b"]
    names = {UNTOUCHED: "SRoBERTa-base", INITIAL: "Eq. 1 fine-tuning (no regulators)", FINAL: "RCL"}  # model -> row
    table2 = mine[mine["table"] == "Table 2b"]
    assert set(table2["row"]) == {"SRoBERTa-base", "Eq. 1 fine-tuning (no regulators)", "Attention dropout (p=0.1)",
                                  "DropHead (p=0.1)", "RCL"}
    assert [f["seed"] for f in faq["folds"]] == [0, 1] and sum(f["test"] for f in faq["folds"]) == 48
    for row, folds in faq["per_fold"].items():
        cells = table2[table2["row"] == names.get(row, row)].set_index("column")
        assert list(cells.index) == ["Acc@1", "Acc@3", "Acc@5", "MAP"] and len(folds) == 2
        for column in cells.index:
            values = [fold[column] for fold in folds]
            assert cells.loc[column, "value"] == pytest.approx(sum(values) / 2)
            assert cells.loc[column, "std"] == pytest.approx(abs(values[0] - values[1]) / 2 ** 0.5)
            assert tuple(cells.loc[column, "seeds"]) == (0, 1)
    anisotropy = mine[mine["table"] == "Anisotropy (ours)"]
    assert set(anisotropy["column"]) == {"mean cosine", "largest dim"} and "RCL" in set(anisotropy["row"])
    assert (out / "figures" / "rcl" / "anisotropy.png").is_file()
    assert not (out / "rcl" / "significance.json").exists()  # no per-cell t-test: the claims test the orderings
    claims = read_claims(out, "rcl").set_index("claim")
    for claim in ("RCL above Eq. 1 fine-tuning (what the regulators add)",
                  "RCL above the control (what the entropy models add to regulators)"):
        assert claims.loc[claim, "design"] == "paired over seeds and items", claim
    table3 = claims[claims["table"] == "Table 3"]  # the paper's orderings: a one-seed trained row is never a constant
    against_drophead = table3[table3["right"] == "DropHead (p=0.1)"]
    assert len(against_drophead) and against_drophead["verdict"].isin(["undetermined", "not tested"]).all()
    page = html.unescape((out / "_build" / "html" / "book" / "rcl.html").read_text())
    assert "Assumptions and deviations" in page and "Table 3: paper vs ours" in page
    notebook = html.unescape((out / "_build" / "html" / "notebooks" / "rcl.html").read_text())
    assert "RCL above Eq. 1 fine-tuning (what the regulators add)" in notebook and "<strong>Table 3:</strong> of" in notebook
    assert "cosine to its start" in notebook and "phi * entropy: first -> last window" in notebook  # the entropy models
    assert "Table 2a: not run: faqir data absent (faqir/FAQIRv1.0.xml not in the data root)" in notebook
    assert "Table 2b: COUGH, accuracy and MAP (%), mean over 2 folds" in notebook
    assert "Table 1a, not run in the smoke profile" in notebook
    assert "rcl_gpu_h100.json" in notebook  # the GPU cost table, or the line saying it was not measured
    assert "Traceback" not in notebook


def test_the_nli_trained_base_is_made_and_its_data_read_once_per_run(smoke_book):
    """The smoke profile makes its base by Eq. 1 on the NLI entailment pairs (base_nli_epochs, the path issue 46's
    "S-mini" takes): one training record, and each NLI split read twice in the run (the triplets, the base's pairs),
    not once per model that starts from the base."""
    _, out, status, output = smoke_book
    assert status == 0, output
    used = json.loads((out / "data_used" / "rcl.json").read_text())["datasets"]
    assert sorted((d["name"], d["split"]) for d in used if d["name"] == "snli") == [("snli", "dev")] * 2 + [("snli", "test")] * 2
    assert len(list((out / "records").glob("training-base (NLI)-*.json"))) == 1
