"""What a paper run fills on a data root (sentcl.book.estimates.coverage)."""

from __future__ import annotations

import pytest

from sentcl.book.estimates.coverage import (
    COVERAGE,
    chapter_needs,
    missing_files,
    paper_coverage,
    read_coverage,
    write_coverage,
)
from sentcl.book.output.layout import Layout
from sentcl.book.pages.fragments import coverage_text
from sentcl.chapters import CHAPTERS, chapter
from sentcl.data.registry import info
from sentcl.errors import ConfigError, DataFormatError


def test_rows_run_need_absent_data_or_are_cited(tmp_path):
    dev = info("snli").splits["dev"].files
    for f in dev:
        path = tmp_path / info("snli").folder / f
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    needs = {"MNRLSBERT": ["snli/train", "multinli/train"], "BERT-whitening": ["snli/dev"]}
    table = paper_coverage("mnrl_sbert", needs, tmp_path).set_index(["table", "row"])
    assert table.loc[("Table 1", "BERT-whitening"), "coverage"] == "runs"
    absent = table.loc[("Table 1", "MNRLSBERT")]
    assert absent["coverage"] == "needs absent data"
    for name in ("snli/train", "multinli/train"):
        assert name in absent["detail"] and info(name.split("/")[0]).source in absent["detail"]
    assert all(f"{info('snli').folder}/{f}" in absent["detail"] for f in info("snli").splits["train"].files)
    assert (table.loc[("Table 2", "MNRLSBERT"), "coverage"]) == "needs absent data"  # every table the row is in
    cited = table.loc[("Table 1", "Avg. GloVe embeddings")]
    assert cited["coverage"] == "cited" and cited["detail"].startswith("cited from [")
    assert set(table["coverage"]) == {"runs", "needs absent data", "cited"}
    assert missing_files("snli/dev", tmp_path) == [] and missing_files("snli/train", tmp_path)


def test_unknown_rows_and_splits_are_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"no rows \['MNRL-SBERT'\]"):
        paper_coverage("mnrl_sbert", {"MNRL-SBERT": ["snli/train"]}, tmp_path)
    with pytest.raises(ConfigError, match="snli has no split 'validation'"):
        missing_files("snli/validation", tmp_path)


def test_a_table_and_row_key_wins_over_the_rows(tmp_path):
    """A row in several tables may need different data in each (BSC's MSE: one task per table)."""
    needs = {"MNRLSBERT": ["snli/dev"], ("Table 2", "MNRLSBERT"): ["snli/train"]}
    for f in info("snli").splits["dev"].files:
        (tmp_path / info("snli").folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / info("snli").folder / f).write_text("")
    table = paper_coverage("mnrl_sbert", needs, tmp_path).set_index(["table", "row"])
    assert table.loc[("Table 1", "MNRLSBERT"), "coverage"] == "runs"
    assert table.loc[("Table 2", "MNRLSBERT"), "coverage"] == "needs absent data"
    with pytest.raises(ConfigError, match=r"no rows \[\('Table 9', 'MNRLSBERT'\)\]"):
        paper_coverage("mnrl_sbert", {("Table 9", "MNRLSBERT"): ["snli/dev"]}, tmp_path)


@pytest.mark.parametrize("chapter", sorted(c for c, spec in CHAPTERS.items() if spec.needs))
def test_each_chapters_needs_come_from_its_paper_profile(chapter, tmp_path):
    """Every row the paper profile computes needs registered data, and an empty data root fills none of them."""
    needs = chapter_needs(CHAPTERS[chapter])
    assert needs and all(need for need in needs.values())
    table = paper_coverage(chapter, needs, tmp_path)
    computed = table[table["coverage"] != "cited"]
    assert len(computed) and (computed["coverage"] == "needs absent data").all()


def test_what_each_chapter_needs_where_the_papers_say():
    bsc = chapter_needs(chapter("bsc"))
    assert bsc[("Table 5", "MSE")] == ["stsbenchmark/train", "stsbenchmark/dev", "stsbenchmark/test"]
    assert bsc[("Table 5", "SimCSE (unsup.)")] == ["stsbenchmark/test"]  # zero-shot: no training data
    assert {"semeval2016_cqa_a/train or semeval2016_cqa_a/train_part2", "semeval2016_cqa_b/train"} <= set(bsc[("Table 2", "BSC")])
    rcl = chapter_needs(chapter("rcl"))
    assert rcl[("Table 2a", "RCL")] == ["faqir/faq_pairs"] and rcl[("Table 2b", "RCL")] == ["cough/faq_pairs"]
    assert "snli/train" in rcl[("Table 3", "RCL")] and "snli/train" not in rcl[("Table 3", "SRoBERTa-base")]
    ifcl = chapter_needs(chapter("ifcl"))
    assert ifcl[("Chinese STS", "BERT")] == ["cnsd_stsb/test", "simclue/test"]
    assert ("English STS", "IFCL-BERT-base w/o TL") not in ifcl  # not a row of the slides' English table
    mnrl = chapter_needs(chapter("mnrl_sbert"))
    assert "multinli/train" in mnrl["SBERT-whitening"] and "multinli/train" in mnrl["BERT-whitening"]
    assert "snli/train" not in mnrl["BERT (first-last avg.)"]
    with pytest.raises(ConfigError, match="geometry: no paper tables"):
        chapter_needs(chapter("geometry"))


def test_the_coverage_file_round_trips_and_a_bad_one_is_named(tmp_path):
    frame = write_coverage(tmp_path, chapter("rcl"), tmp_path / "empty")
    assert read_coverage(tmp_path, "rcl").equals(frame)
    assert read_coverage(tmp_path, "bsc") is None
    Layout(tmp_path).coverage("bsc").write_text("table,row\nTable 1,MSE\n")
    with pytest.raises(DataFormatError, match=r"bsc\.csv:1: expected the header table,row,coverage,detail"):
        read_coverage(tmp_path, "bsc")
    Layout(tmp_path).coverage("bsc").write_text("table,row,coverage,detail\nTable 1,MSE,runs\n")
    with pytest.raises(DataFormatError, match=r"bsc\.csv:2: expected 4 fields"):
        read_coverage(tmp_path, "bsc")
    text = coverage_text(frame)
    assert f"0 runs, {len(frame)} needs absent data, 0 cited" in text and "faqir/FAQIRv1.0.xml" in text


def test_every_paper_chapter_of_the_smoke_book_shows_what_a_paper_run_fills(smoke_book):
    """Each chapter with paper tables writes its coverage file, and its page shows it."""
    _, out, status, output = smoke_book
    assert status == 0, output
    for name in (c for c, spec in CHAPTERS.items() if spec.needs):
        frame = read_coverage(out, name)
        assert frame is not None and len(frame) and set(frame["coverage"]) <= set(COVERAGE), name
        page = (out / "book_source" / "book" / "_generated" / name / "results.md").read_text(encoding="utf-8")
        assert "What a paper-profile run fills on this run's data root" in page, name


def test_a_fallback_runs_where_the_first_choice_is_absent_and_says_so(tmp_path):
    """BSC's CQA-A trains on train part 2 where part 1 is absent: "a or b" reads b then, and the line says so."""
    for f in info("snli").splits["dev"].files:
        (tmp_path / info("snli").folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / info("snli").folder / f).write_text("")
    table = paper_coverage("mnrl_sbert", {"MNRLSBERT": ["snli/train or snli/dev"]}, tmp_path).set_index(["table", "row"])
    assert table.loc[("Table 1", "MNRLSBERT"), "coverage"] == "runs"
    assert table.loc[("Table 1", "MNRLSBERT"), "detail"] == "snli/dev (instead of snli/train, absent)"
    neither = paper_coverage("mnrl_sbert", {"MNRLSBERT": ["multinli/train or snli/train"]}, tmp_path).set_index(["table", "row"])
    assert neither.loc[("Table 1", "MNRLSBERT"), "detail"].startswith("multinli/train: ")  # the first choice is named
    assert chapter_needs(chapter("bsc"))[("Table 2", "BSC")][0] == "semeval2016_cqa_a/train or semeval2016_cqa_a/train_part2"
