"""The paper profile's peak GPU memory per chapter beside a T4's (sentcl.book.estimates.gpu_memory): the
recorded H100 numbers as recorded, the estimate where none is, the setting that fits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentcl.book.estimates import gpu_memory
from sentcl.chapters import CHAPTERS, chapter

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def record(name: str) -> dict:
    return json.loads((RESULTS / name).read_text())


def test_recorded_chapters_show_every_recorded_peak_as_recorded():
    ifcl = {r.run: r for r in gpu_memory.chapter_rows(chapter("ifcl"))}
    assert {row["model"]: row["peak_gpu_memory_gib"] for row in record("ifcl_gpu_h100.json")["table"]} == {
        run: r.peak_gib for run, r in ifcl.items()}
    assert all(r.measured and r.batch == 64 and r.precision == "fp32" for r in ifcl.values())
    bsc = gpu_memory.chapter_rows(chapter("bsc"))
    assert sorted((r.batch, r.precision, r.peak_gib) for r in bsc) == sorted(
        (m["batch"], m["precision"], m["peak_gpu_memory_gib"]) for m in record("bsc_gpu_h100.json")["measured"])
    assert {r.run for r in bsc if r.batch == 50} == {"BERT-base, Antique, QQP"}  # the paper's batch 50 tasks (§5.2)
    rcl = gpu_memory.chapter_rows(chapter("rcl"))
    assert sorted(r.peak_gib for r in rcl) == sorted(
        v["peak_gpu_memory_gib"] for v in record("rcl_gpu_h100.json")["results"].values() if "peak_gpu_memory_gib" in v)


def test_a_t4_keeps_a_reserve_and_bert_large_is_tight():
    large = next(r for r in gpu_memory.chapter_rows(chapter("ifcl")) if r.run == "IFCL-BERT-large")
    assert large.spare_gib == pytest.approx(15.0 - 1.0 - 13.677)
    assert large.setting() == "batch 64, no accumulation (the paper's) (tight: under 1 GiB to spare)"


def test_a_run_over_the_t4_gets_the_largest_halved_batch_that_fits():
    row = gpu_memory.MemoryRow("x", "bert-base", 64, "fp32", 20.0, "estimate")
    fixed = gpu_memory.fixed_gib("bert-base")
    # halving the batch halves the part above the weights and optimizer: 64 -> 32 gives fixed + (20 - fixed) / 2
    assert fixed + (20.0 - fixed) / 2 <= 14.0
    assert row.setting().startswith("batch 32 x 2 accumulation steps") and "32 rows' negatives, not 64" in row.setting()
    huge = gpu_memory.MemoryRow("x", "bert-base", 64, "fp32", 100.0, "estimate")
    assert huge.setting().startswith("batch 8 x 8")  # fixed + 98.4/8 = 13.9 GiB


def test_the_estimate_is_calibrated_on_bscs_record_and_scales_to_large():
    bsc = max((m for m in record("bsc_gpu_h100.json")["measured"] if m["precision"] == "fp32"), key=lambda m: m["batch"])
    texts = bsc["batch"] * 2
    assert gpu_memory.estimate_peak_gib("bert-base", texts, bsc["seq_len"]) == pytest.approx(bsc["peak_gpu_memory_gib"])
    base = gpu_memory.estimate_peak_gib("bert-base", 192, 32) - gpu_memory.fixed_gib("bert-base")
    large = gpu_memory.estimate_peak_gib("bert-large", 192, 32) - gpu_memory.fixed_gib("bert-large")
    assert large / base == pytest.approx(24 * 1024 / (12 * 768))


def test_chapters_without_a_record_are_labelled_estimates_from_their_paper_parameters():
    mnrl = gpu_memory.chapter_rows(chapter("mnrl_sbert"))
    assert {(r.batch, r.architecture) for r in mnrl} == {(12, "bert-base"), (16, "bert-base"), (12, "roberta-base"), (16, "roberta-base")}
    assert not any(r.measured for r in mnrl)
    geometry = gpu_memory.chapter_rows(chapter("geometry"))
    assert {r.batch for r in geometry} == {64} and not any(r.measured for r in geometry)
    section = gpu_memory.chapter_section(chapter("geometry"))
    assert "**estimates**" in section and "(estimate)" in section and "measured" in section  # the check against IFCL's
    assert "The nearest measurement" in section


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_every_chapter_page_states_its_gpu_memory_beside_a_t4(chapter):
    page = (ROOT / "book" / f"{chapter}.md").read_text()
    assert f"```{{include}} _generated/{chapter}/gpu_memory.md" in page
    section = gpu_memory.chapter_section(CHAPTERS[chapter])
    assert "a T4's 15 GiB" in section and "| setting that fits a T4 |" in section
    rows = gpu_memory.chapter_rows(CHAPTERS[chapter])
    assert rows and section.count("\n| ") == len(rows) + 1  # a header and one line per run
