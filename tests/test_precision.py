"""sentcl.precision: what "auto" means on CPUs and GPUs, bf16 where a device lacks it, and the tally of
what ran in which precision, checked against the dtypes the forward passes actually computed in."""

from __future__ import annotations

import pytest
import torch

from sentcl import precision
from sentcl.artifacts import ArtifactCache
from sentcl.book.notebook.chapter_run import ChapterRun
from sentcl.book.output.run_records import read_run_records
from sentcl.data import TrainingData
from sentcl.data.registry import load, samples_root
from sentcl.embeddings import encode
from sentcl.errors import ConfigError
from sentcl.losses import MultipleNegativesRankingLoss
from sentcl.models import tiny_model
from sentcl.precision import SlowPrecisionWarning, cpu_supports_bf16, resolve_precision
from sentcl.training import Trainer, TrainingConfig

pytestmark = pytest.mark.precision


@pytest.fixture(params=["native bf16", "no bf16"])
def cpu(request, monkeypatch):
    """Both kinds of CPU this project runs on: with avx512_bf16 and without (forced)."""
    monkeypatch.setenv(precision.CPU_BF16_ENV, "1" if request.param == "native bf16" else "0")
    precision._warn_emulated.cache_clear()
    return request.param


def test_auto_is_fp32_on_every_cpu(cpu):
    assert cpu_supports_bf16() == (cpu == "native bf16")
    assert resolve_precision("auto", "cpu") == "fp32"  # the same numbers whatever the processor
    assert resolve_precision("fp32", "cpu") == "fp32" and resolve_precision("fp16", "cpu") == "fp16"


def emulation_warnings(recwarn) -> int:
    """How many times bf16 emulated on a CPU without it was warned of (:class:`SlowPrecisionWarning`)."""
    return sum(issubclass(w.category, SlowPrecisionWarning) for w in recwarn)


def test_bf16_on_a_cpu_without_it_warns_once(cpu, recwarn):
    assert resolve_precision("bf16", "cpu") == "bf16"
    resolve_precision("bf16", "cpu")
    assert emulation_warnings(recwarn) == (0 if cpu == "native bf16" else 1)


def test_oneDNN_capped_below_bf16_counts_as_no_bf16(monkeypatch):
    monkeypatch.delenv(precision.CPU_BF16_ENV, raising=False)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    assert not cpu_supports_bf16()
    monkeypatch.setenv(precision.CPU_BF16_ENV, "yes")
    with pytest.raises(ConfigError, match="must be 0 or 1"):
        cpu_supports_bf16()


@pytest.mark.parametrize(("capability", "auto"), [((7, 5), "fp16"), ((7, 0), "fp16"), ((8, 0), "bf16"), ((9, 0), "bf16")])
def test_auto_on_a_gpu_is_bf16_where_it_is_native_else_fp16(monkeypatch, capability, auto):
    """T4 (7.5) and V100 (7.0): fp16 with a gradient scaler; A100 (8.0), H100 (9.0): bf16. Mocked capability."""
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert resolve_precision("auto", "cuda") == auto
    assert resolve_precision("fp16", "cuda") == "fp16" and resolve_precision("fp32", "cuda") == "fp32"
    if auto == "fp16":
        with pytest.raises(ConfigError, match=r"precision 'bf16' on .* no native bf16 \(compute capability \(7, \d\)"):
            resolve_precision("bf16", "cuda")
    else:
        assert resolve_precision("bf16", "cuda") == "bf16"


def _dtypes_of_linear_outputs(model, training_only=False):
    """Record the dtype of every nn.Linear output of ``model`` (what the forward pass computed in); with
    ``training_only``, of the passes in training mode only (not the health probe's fp32 encodings)."""
    seen = set()

    def look(module, _args, out):
        if module.training or not training_only:
            seen.add(out.dtype)

    hooks = [m.register_forward_hook(look) for m in model.modules() if isinstance(m, torch.nn.Linear)]
    return seen, hooks


@pytest.mark.parametrize(("asked", "ran"), [("auto", torch.float32), ("fp32", torch.float32), ("bf16", torch.bfloat16)])
def test_the_encoding_tally_says_the_precision_the_forward_pass_ran_in(cpu, asked, ran, recwarn):
    model = tiny_model(0)
    seen, hooks = _dtypes_of_linear_outputs(model)
    before = {(u["what"], u["precision"]): u["count"] for u in precision.uses()}
    try:
        encode(model, ["what ran", "in which precision", "what ran"], precision=asked, cache=False)
    finally:
        for h in hooks:
            h.remove()
    assert emulation_warnings(recwarn) == (asked == "bf16" and cpu == "no bf16")  # emulated bf16 is said, once
    assert seen == {ran}
    after = {(u["what"], u["precision"]): u["count"] for u in precision.uses()}
    used = {"float32": "fp32", "bfloat16": "bf16"}[str(ran).split(".")[1]]
    assert after[("texts encoded", used)] - before.get(("texts encoded", used), 0) == 2  # two distinct texts


@pytest.mark.slow
@pytest.mark.parametrize(("asked", "ran"), [("auto", torch.float32), ("bf16", torch.bfloat16)])
def test_a_training_record_says_the_precision_its_steps_ran_in(tmp_path, cpu, asked, ran, recwarn):
    """The run record's precision (requested, used) is the one the training steps computed in."""
    pairs = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)
    model = tiny_model(0)
    seen, hooks = _dtypes_of_linear_outputs(model, training_only=True)
    run = ChapterRun("mnrl_sbert", profile="smoke", data_dir=None, out_dir=tmp_path / "out")
    config = TrainingConfig(batch_size=8, max_steps=2, precision=asked)
    try:
        result = run.train(Trainer(model, MultipleNegativesRankingLoss, pairs, config, name="precision", show_progress=False),
                           cache=ArtifactCache(tmp_path / "cache"))
    finally:
        for h in hooks:
            h.remove()
    assert seen == {ran}
    assert emulation_warnings(recwarn) == (asked == "bf16" and cpu == "no bf16")
    used = "fp32" if ran == torch.float32 else "bf16"
    (record,) = read_run_records(tmp_path / "out" / "records")
    assert record.precision["requested"] == asked and record.precision["used"] == used == result.run["precision"]
    assert record.precision["cpu_native_bf16"] == (cpu == "native bf16")
    assert record.config["run"]["config"]["precision"] == used  # the resolved precision is in the run's key
