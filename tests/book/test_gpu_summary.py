"""The notebooks' GPU cell (:func:`sentcl.book.estimates.gpu_memory.gpu_summary`): on the GPU it runs on, the
precision `auto` picks and whether each paper-profile run fits, half precision on a T4."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest
import torch

from sentcl import precision as precision_module
from sentcl.book.estimates import gpu_memory
from sentcl.chapters import chapter


@pytest.fixture
def t4(monkeypatch):
    """A CUDA device that looks like Colab's T4: 15 GiB, no bf16."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda _: SimpleNamespace(name="Tesla T4", total_memory=15 * 2**30))
    monkeypatch.setattr(precision_module, "cuda_supports_bf16", lambda _=None: False)
    monkeypatch.setattr(precision_module, "_cuda_name", lambda _=None: "Tesla T4")
    monkeypatch.setattr(precision_module, "_capability", lambda _=None: "7.5")


def test_on_a_t4_auto_is_fp16_and_every_run_is_judged_against_its_memory(t4):
    text = gpu_memory.gpu_summary(chapter("rcl"), "auto")
    assert text.splitlines()[0] == "GPU: Tesla T4, 15.0 GiB; precision 'auto' trains in fp16 here with a gradient scaler"
    runs = [line for line in text.splitlines() if re.match(r"^  RoBERTa-base, .+, batch 64: [\d.]+ GiB in fp16 ", line)]
    assert len(runs) == len(gpu_memory.chapter_rows(chapter("rcl"))) and all("fits Tesla T4" in line for line in runs)


def test_bf16_on_a_t4_is_the_one_line_error_of_the_precision_check(t4):
    assert "has no native bf16" in gpu_memory.gpu_summary(chapter("bsc"), "bf16")


def test_mnrl_sbert_says_why_it_is_fp32_and_how_to_train_in_fp16_on_a_t4(t4):
    text = gpu_memory.gpu_summary(chapter("mnrl_sbert"), "fp32")
    assert "trains in fp32 here" in text and "precision fp16" in text and "use_amp off" in text
    assert re.search(r"MNRL, batch 12: [\d.]+ GiB in fp32 \(estimate\), fits Tesla T4", text)


def test_half_precision_shrinks_an_fp32_peak_by_bscs_measured_ratio():
    row = next(r for r in gpu_memory.chapter_rows(chapter("bsc")) if r.precision == "fp32" and r.batch == 50)
    assert gpu_memory.half_precision_gib(row) == pytest.approx(gpu_memory._calibration_largest_batch_peak("bf16"))  # calibrated on it
    smaller = next(r for r in gpu_memory.chapter_rows(chapter("ifcl")) if "large" in r.run)
    assert gpu_memory.fixed_gib("bert-large") < gpu_memory.half_precision_gib(smaller) < smaller.peak_gib


def test_without_a_gpu_it_says_what_a_t4_would_do(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    text = gpu_memory.gpu_summary(chapter("ifcl"), "auto")
    assert text.startswith("No GPU here: precision 'auto' trains in fp32 on this CPU") and "fp16 with a gradient scaler:" in text
    assert "IFCL-BERT-large, batch 64" in text and "a T4" in text
