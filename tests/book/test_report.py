"""Comparison tables and figures (sentcl.book.pages.report) and the notebook helper (sentcl.book.notebook.chapter_run)."""

from __future__ import annotations

import json
import math
import re
import warnings
from html.parser import HTMLParser

import pandas as pd
import pytest

from sentcl.book import profiles as P
from sentcl.book.notebook import chapter_run as C
from sentcl.book.output import results as R
from sentcl.book.pages import report
from sentcl.errors import ConfigError

PAPER = pd.DataFrame(
    [
        # table, row, column, value, scale, source
        ("T1", "Baseline", "A", 50.0, 100.0, "[#] Someone (2020)"),
        ("T1", "Baseline", "B", 60.0, 100.0, "[#] Someone (2020)"),
        ("T1", "Ours-paper", "A", 70.0, 100.0, ""),
        ("T1", "Ours-paper", "B", 80.0, 100.0, ""),
        ("T2", "Ranker", "MRR", 0.800, 1.0, ""),
        ("T2", "Ranker", "P@1", 0.700, 1.0, ""),
    ],
    columns=list(R.PAPER_COLUMNS),
)


def results(*cells, profile: str = "paper", data: str = "some data", note: str = "") -> pd.DataFrame:
    """A results frame as load_results returns it, from (table, row, column, value, kind[, std, seeds]);
    ``profile``: the run's profile (paper: the paper's models and data, whose agreement is judged)."""
    rows = []
    for c in cells:
        table, row, column, value, kind, *rest = c
        std, seeds = [*rest, math.nan, (1,)][:2] if rest else (math.nan, (1,))
        rows.append(dict(chapter="x", table=table, row=row, column=column, value=value, std=std, seeds=seeds,
                         paper_value=math.nan, profile=profile, kind=kind, data=data, run_id="r", note=note))
    return pd.DataFrame(rows, columns=list(R.RESULT_COLUMNS))


def test_agreement_thresholds():
    assert [report.agreement(p) for p in (0, -1.0, 1.01, -3.0, 3.2)] == ["agrees", "agrees", "close", "close", "differs"]
    assert report.agreement(2.0, thresholds=(0.5, 2.0)) == "close"
    assert report.agreement(float("nan")) is None
    with pytest.raises(ConfigError, match="thresholds must satisfy"):
        report.agreement(1.0, thresholds=(3, 1))


def test_compare_computes_delta_in_the_papers_units_and_points():
    res = results(("T1", "Ours-paper", "A", 71.5, "reproduced"), ("T2", "Ranker", "MRR", 0.775, "reproduced"),
                  ("T2", "Ranker", "P@1", 0.705, "reproduced"))
    cmp = report.compare("x", res, paper=PAPER).set_index(["table", "row", "column"])
    a = cmp.loc[("T1", "Ours-paper", "A")]
    assert a.delta == pytest.approx(1.5) and a.points == pytest.approx(1.5)
    assert (a.agreement, a.status) == ("close", "reproduced")
    mrr = cmp.loc[("T2", "Ranker", "MRR")]
    # 0.775 vs 0.800 on a [0, 1] metric is 2.5 points: close, not "agrees" as a raw 0.025 would suggest
    assert mrr.delta == pytest.approx(-0.025) and mrr.points == pytest.approx(-2.5) and mrr.agreement == "close"
    assert cmp.loc[("T2", "Ranker", "P@1")].agreement == "agrees"
    base = cmp.loc[("T1", "Baseline", "A")]
    assert base.status == "cited" and pd.isna(base.agreement) and math.isnan(base.value)


def test_compare_keeps_the_papers_order_and_appends_our_own_rows():
    res = results(("T2", "Ranker", "P@1", 0.7, "reproduced"), ("T1", "Extra", "B", 1.0, "reproduced"),
                  ("T1", "Extra", "A", 2.0, "reproduced"), ("T3", "New", "X", 3.0, "reproduced"))
    cmp = report.compare("x", res, paper=PAPER)
    assert report.tables(cmp) == ["T1", "T2", "T3"]
    t1 = cmp[cmp.table == "T1"]
    assert list(dict.fromkeys(t1.row)) == ["Baseline", "Ours-paper", "Extra"]
    assert list(t1[t1.row == "Extra"].column) == ["A", "B"]  # the paper's column order, not ours
    extra = t1[t1.row == "Extra"].iloc[0]
    assert math.isnan(extra.paper_value) and extra.status == "reproduced" and pd.isna(extra.agreement)
    assert report.summary(cmp) == {"paper cells": 6, "computed": 1, "judged": 1, "agrees": 1, "close": 0, "differs": 0,
                                   "miniature": 0, "cited": 5, "ours only": 3}


def test_sample_data_is_never_judged():
    res = results(("T1", "Ours-paper", "A", 10.0, "sample-data"))
    cell = report.compare("x", res, paper=PAPER).set_index(["table", "row", "column"]).loc[("T1", "Ours-paper", "A")]
    assert cell.status == "sample-data" and pd.isna(cell.agreement) and cell.delta == -60.0 and not cell.judged


@pytest.mark.parametrize(("profile", "kind"), [("demo", "reproduced"), ("smoke", "sample-data"), ("demo", "sample-data"),
                                           ("paper", "sample-data")])
def test_a_miniature_is_neither_coloured_nor_counted_as_agreement(profile, kind):
    """A demo row (all-MiniLM-L6-v2 standing in for bert-base) that lands within 0.3 points of the
    paper agrees by coincidence: no colour, no "agrees" in the counts, and the legend says why."""
    res = results(("T1", "Ours-paper", "A", 70.3, kind), ("T1", "Ours-paper", "B", 79.9, kind), profile=profile)
    cmp = report.compare("x", res, paper=PAPER)
    done = cmp[cmp.status != "cited"]
    assert len(done) == 2 and not done.judged.any() and done.agreement.isna().all()
    assert report.summary(cmp) == {"paper cells": 6, "computed": 2, "judged": 0, "agrees": 0, "close": 0, "differs": 0,
                                   "miniature": 2, "cited": 4, "ours only": 0}
    table = report.comparison_table(cmp, "T1")
    html = table.to_html()
    assert "background-color" not in html and not any(colour in html for colour in report.COLOURS.values())
    assert _Cells(table.styler.to_html()).rows[3:] == [["Δ", "+0.30", "−0.10"]]  # Δ still shown, uncoloured
    assert coloured_cells(html) == {}
    legend = " ".join(table.legend)
    assert "green" not in legend and "not coloured" in legend
    if kind == "reproduced":
        assert "ours · demo: a miniature run" in legend and "coincidence" in legend


def test_only_a_paper_profile_run_on_real_data_is_judged():
    assert report.judged("paper", "reproduced")
    assert not any(report.judged(p, k) for p in ("demo", "smoke", None) for k in ("reproduced", "sample-data"))
    assert not report.judged("paper", "sample-data") and not report.judged("paper", "cited")
    res = results(("T1", "Ours-paper", "A", 70.3, "reproduced"), ("T1", "Ours-paper", "B", 85.0, "reproduced"))
    table = report.comparison_table(report.compare("x", res, paper=PAPER), "T1")
    html = table.to_html()
    # the ours and Δ lines (rows 2 and 3) of A (|Δ| 0.3) agree, of B (|Δ| 5) differ
    assert coloured_cells(html) == {report.COLOURS["agrees"]: {(2, 0), (3, 0)}, report.COLOURS["differs"]: {(2, 1), (3, 1)}}
    assert any(item.startswith("Agreement (paper-profile runs") and "green |Δ| ≤ 1" in item for item in table.legend)
    assert not any("miniature" in item for item in table.legend)


def test_comparison_frame_has_paper_ours_delta_lines_only_where_they_exist():
    res = results(("T1", "Ours-paper", "A", 71.0, "reproduced"), ("T1", "Ours-paper", "B", 79.0, "reproduced"))
    frame = report.comparison_frame(report.compare("x", res, paper=PAPER), "T1")
    assert list(frame.index) == [("Baseline", "paper"), ("Ours-paper", "paper"), ("Ours-paper", "ours"), ("Ours-paper", "Δ")]
    assert list(frame.columns) == ["A", "B"]
    assert frame.loc[("Ours-paper", "Δ")].tolist() == [1.0, -1.0]
    with pytest.raises(ConfigError, match=r"no table 'T9'; tables: \['T1'"):
        report.comparison_frame(report.compare("x", res, paper=PAPER), "T9")


def coloured_cells(html: str) -> dict[str, set[tuple[int, int]]]:
    """Background colour -> the (row, column) body cells a comparison table's CSS gives it."""
    found: dict[str, set[tuple[int, int]]] = {}
    for selectors, colour in re.findall(r"([^{}]+)\{[^}]*background-color:\s*(#[0-9a-fA-F]+)[^}]*\}", html):
        for row, col in re.findall(r"_row(\d+)_col(\d+)", selectors):
            found.setdefault(colour, set()).add((int(row), int(col)))
    return found


class _Cells(HTMLParser):
    """The text of the th/td cells of each body row of an HTML table."""

    def __init__(self, html: str):
        super().__init__()
        self.rows: list[list[str]] = []
        self._in_body = self._in_cell = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        if tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.rows.append([])
        elif tag in ("th", "td") and self._in_body:
            self._in_cell = True
            self.rows[-1].append("")

    def handle_endtag(self, tag):
        if tag in ("th", "td"):
            self._in_cell = False

    def handle_data(self, data):
        if self._in_cell:
            self.rows[-1][-1] += data.strip()


def test_comparison_table_labels_cited_rows_and_colours_ours():
    res = results(("T1", "Ours-paper", "A", 74.0, "reproduced", 0.25, (1, 2, 3)), ("T1", "Ours-paper", "B", 80.5, "reproduced"),
                  ("T1", "Extra", "A", 1.0, "sample-data"))
    table = report.comparison_table(report.compare("x", res, paper=PAPER), "T1", caption="Table 1 of x")
    html = table.to_html()
    assert _Cells(table.styler.to_html()).rows == [
        ["Baseline", "paper [#] (cited)", "50.00", "60.00"],
        ["Ours-paper", "paper", "70.00", "80.00"],
        ["ours · paper · 3 seeds", "74.00± 0.25", "80.50"],  # the spread on a line of its own
        ["Δ", "+4.00", "+0.50"],
        ["Extra", "ours · sample data", "1.00", ""],
    ]
    assert report.COLOURS["differs"] in html and report.COLOURS["agrees"] in html
    assert report.COLOURS["close"] not in html
    # the paper-profile row's ours and Δ lines; not the sample-data row (row 4)
    assert coloured_cells(html) == {report.COLOURS["agrees"]: {(2, 1), (3, 1)}, report.COLOURS["differs"]: {(2, 0), (3, 0)}}
    assert "Table 1 of x" in html and "Cited by the paper: [#] Someone (2020)." in html and "Data: some data." in html


def test_comparison_table_labels_the_papers_own_rows_not_run():
    """A row the paper reports as its own result, which this run did not compute, is not a citation."""
    rows = _Cells(report.comparison_table(report.compare("x", results(), paper=PAPER), "T1").styler.to_html()).rows
    assert rows == [["Baseline", "paper [#] (cited)", "50.00", "60.00"], ["Ours-paper", "paper (not run)", "70.00", "80.00"]]


def test_comparison_table_shows_fractions_with_three_decimals():
    res = results(("T2", "Ranker", "MRR", 0.81, "reproduced"), profile="demo")
    rows = _Cells(report.comparison_table(report.compare("x", res, paper=PAPER), "T2").styler.to_html()).rows
    assert rows == [["Ranker", "paper", "0.800", "0.700"], ["ours · demo", "0.810", ""], ["Δ", "+0.010", ""]]


def test_no_local_path_reaches_a_table_legend():
    res = results(("T1", "Ours-paper", "A", 70.0, "reproduced"), profile="demo",
                  data="real data from /home/someone/shared/data; STS pairs scored: STS12 3,108",
                  note="read /tmp/x/cache/model.bin")
    html = report.comparison_table(report.compare("x", res, paper=PAPER), "T1").to_html()
    assert "/home/someone" not in html and "/tmp/x" not in html
    assert "Data: real data from …/data; STS pairs scored: STS12 3,108." in html and "read …/model.bin" in html


def test_averages_chart_and_save_figure(tmp_path, monkeypatch):
    monkeypatch.setenv(R.RUN_ID_ENV, "fig-run")
    res = results(("T1", "Ours-paper", "B", 79.0, "sample-data"))
    cmp = report.compare("x", res, paper=PAPER)
    fig = report.averages_chart(cmp, "T1", column="B")
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Baseline", "Ours-paper"]
    widths = sorted(round(p.get_width(), 6) for p in ax.patches)
    assert widths == [0.0, 60.0, 79.0, 80.0]  # two paper bars, our one bar (and an empty one for Baseline)
    png = report.save_figure(fig, tmp_path, "x", "fig-b", "B, paper vs ours")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.with_suffix(".svg").read_text().lstrip().startswith("<?xml")
    (info,) = report.figures(tmp_path, "x")
    assert (info["name"], info["caption"], info["run_id"]) == ("fig-b", "B, paper vs ours", "fig-run")
    with pytest.raises(ConfigError, match=r"T1 has no column 'Z'; its columns: \['A', 'B'\]"):
        report.averages_chart(cmp, "T1", column="Z")
    with pytest.raises(ConfigError, match=r"T1 has no rows \['Nobody'\] in 'B'; its rows: \["):
        report.averages_chart(cmp, "T1", column="B", rows=["Nobody"])
    with pytest.raises(ConfigError, match="figure name"):
        report.save_figure(fig, tmp_path, "x", "bad name", "")


# --------------------------------------------------------------------------- sentcl.book.notebook.chapter_run


def test_resolve_data_by_profile(tmp_path, monkeypatch):
    from sentcl.data import samples_root

    monkeypatch.delenv("SENTCL_DATA", raising=False)
    assert P.resolve_data("smoke", tmp_path) == P.DataChoice(samples_root(), True)
    fallback = P.resolve_data("demo")
    assert fallback.sample and fallback.root == samples_root() and "falls back" in fallback.warning
    assert P.resolve_data("demo", tmp_path) == P.DataChoice(tmp_path.resolve(), False)
    given_samples = P.resolve_data("demo", samples_root())  # what the runner passes after falling back
    assert given_samples.sample and "is the project's sample data" in given_samples.warning
    # the sample data stands in for the demo's real data, not for the smoke profile's own
    assert fallback.samples_stand_in and given_samples.samples_stand_in
    assert not P.resolve_data("smoke").samples_stand_in and not P.resolve_data("demo", tmp_path).samples_stand_in
    monkeypatch.setenv("SENTCL_DATA", str(tmp_path))
    assert P.resolve_data("paper").root == tmp_path.resolve()
    monkeypatch.delenv("SENTCL_DATA")
    with pytest.raises(ConfigError, match="paper profile needs the real data") as raised:
        P.resolve_data("paper")
    assert "notebook parameter data_dir" in str(raised.value) and "--data-dir" in str(raised.value)  # both ways to give it
    with pytest.raises(ConfigError, match="unknown profile"):
        P.resolve_data("fast")


def test_chapter_run_records_results_datasets_and_warns_on_sample_data(tmp_path, monkeypatch):
    monkeypatch.delenv("SENTCL_DATA", raising=False)
    monkeypatch.setenv(R.RUN_ID_ENV, "nb-run")
    with pytest.warns(P.SampleDataWarning, match="falls back"):
        run = C.ChapterRun("mnrl_sbert", profile="demo", data_dir=None, out_dir=tmp_path)
    assert run.kind == "sample-data"

    class Fake:
        split, sample, dropped = "test", True, {"no_score": 2}

        def __len__(self):
            return 5

    monkeypatch.setattr("sentcl.data.load", lambda name, split, data_dir, **kw: Fake())
    run.load("sts12")
    used = json.loads((tmp_path / "data_used" / "mnrl_sbert.json").read_text())
    assert used["run_id"] == "nb-run" and used["datasets"] == [
        {"name": "sts12", "split": "test", "records": 5, "sample": True, "dropped": {"no_score": 2}}
    ]
    run.add_result("Table 2", "SBERT", {"STS12": 70.0, "STS13": 77.0}, seeds=[1, 2], std={"STS12": 0.2})
    df = run.results()
    assert list(zip(df.column, df.kind, df.run_id, strict=True)) == [("STS12", "sample-data", "nb-run"), ("STS13", "sample-data", "nb-run")]
    assert df.iloc[0]["std"] == 0.2 and math.isnan(df.iloc[1]["std"]) and df.iloc[0].data == "sample data (data/samples)"
    assert "ours · sample data · 2 seeds" in run.table("Table 2").to_html()
    with pytest.raises(ConfigError, match="std given for columns without a value"):
        run.add_result("Table 2", "SBERT", {"STS12": 70.0}, seeds=[1, 2], std={"STS14": 0.1})


def test_chapter_run_on_real_data_does_not_warn(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        run = C.ChapterRun("mnrl_sbert", profile="demo", data_dir=tmp_path, out_dir=tmp_path / "out")
    assert run.kind == "reproduced" and run.data.describe().startswith("real data")
    with pytest.raises(ConfigError, match="unknown chapter"):
        C.ChapterRun("mnrl", profile="demo", data_dir=tmp_path, out_dir=tmp_path)
