"""The paper profile's peak GPU memory per chapter, from the recorded H100 runs, beside a T4's.

A Colab T4 has 15 GiB (15,360 MiB, as ``nvidia-smi`` and torch report it). The recorded runs
(``benchmarks/results/<chapter>_gpu_h100.json``, shipped with sentcl) measured
``torch.cuda.max_memory_allocated`` over timed training steps of each paper's architecture at
its batch size: what the tensors need, whatever the GPU, since neither weights' values nor the
GPU's size change it. A run needs that plus the CUDA context and the allocator's cache, which
``max_memory_allocated`` does not count: :data:`T4_RESERVE_GIB` is kept for them, so a run fits
a T4 when its peak is at most ``T4_GIB - T4_RESERVE_GIB``.

A chapter without a GPU record (:attr:`~sentcl.book.chapter_spec.Chapter.memory_record` empty) has **estimates**
(:func:`estimate_peak_gib`): 16 bytes per parameter (fp32 weights, gradients and Adam's two
moments) plus, per token of every text a step encodes, the activation memory BERT-base needed
per token in BSC's fp32 batch-50 record, scaled by layers x hidden size. Every text is taken at
the chapter's ``max_seq_length`` (real batches pad only to their longest text, so a bound on the
tokens). The page prints what the same estimate gives for the IFCL records next to what was
measured, so a reader sees its error.

A contrastive loss sees the whole batch: where a run does not fit, a smaller batch with gradient
accumulation keeps the number of rows per optimizer step but gives each loss fewer in-batch
negatives (gradient caching, ``TrainingConfig.gradient_cache_chunk``, keeps them).
"""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import ConfigError
from ...paths import benchmark_result
from ..chapter_spec import Chapter
from ..parameters import shipped_parameters
from .benchmarks import recorded

T4_GIB = 15.0
"""A T4's memory: 15,360 MiB."""
T4_RESERVE_GIB = 1.0
"""Kept for the CUDA context (~0.3-0.5 GiB) and the caching allocator's slack, which a run's
``max_memory_allocated`` peak does not count (a judgement, not a measurement)."""
BYTES_PER_PARAMETER = 16
"""fp32 weights, gradients, Adam's first and second moments: 4 bytes each."""
PARAMETERS = {"bert-base": 110e6, "roberta-base": 125e6, "bert-large": 335e6}
"""Parameter counts (BERT: Devlin et al. 2019, 110M/340M as rounded there, 335M exactly; RoBERTa-base: Liu et al. 2019)."""
SHAPES = {"bert-base": (12, 768), "roberta-base": (12, 768), "bert-large": (24, 1024)}
"""(layers, hidden size): activation memory per token scales with their product."""
CALIBRATION = "bsc_gpu_h100.json"
"""The record the estimate's activation memory per token comes from (BERT-base, fp32, batch 50 pairs at 90 tokens)."""
ESTIMATE_CHECK = "ifcl_gpu_h100.json"
"""The record the estimate is checked against on an estimated chapter's page (BERT-base and -large, fp32)."""


@dataclass(frozen=True)
class MemoryRow:
    """One training run of a chapter's paper profile: its peak GPU memory, measured or estimated."""

    run: str
    architecture: str  # a key of PARAMETERS
    batch: int
    precision: str
    peak_gib: float
    source: str  # the record's file name, or "estimate"

    @property
    def measured(self) -> bool:
        return self.source != "estimate"

    @property
    def spare_gib(self) -> float:
        """Memory left on a T4 after the run's peak and :data:`T4_RESERVE_GIB` (negative: over)."""
        return T4_GIB - T4_RESERVE_GIB - self.peak_gib

    def setting(self) -> str:
        """The batch x accumulation that fits a T4: the paper's when it fits, else the largest halving
        of the batch whose peak fits, estimated by shrinking the part of the peak above
        :func:`fixed_gib` in proportion to the batch, with as many accumulation steps."""
        if self.spare_gib >= 0:
            tight = " (tight: under 1 GiB to spare)" if self.spare_gib < 1.0 else ""
            return f"batch {self.batch}, no accumulation (the paper's){tight}"
        fixed, limit = fixed_gib(self.architecture), T4_GIB - T4_RESERVE_GIB
        batch, steps = self.batch, 1
        while batch > 1 and fixed + (self.peak_gib - fixed) * batch / self.batch > limit:
            batch, steps = batch // 2, steps * 2
        peak = fixed + (self.peak_gib - fixed) * batch / self.batch
        return (f"batch {batch} x {steps} accumulation steps (estimate {peak:.1f} GiB; each loss then sees "
                f"{batch} rows' negatives, not {self.batch})")


def activation_gib_per_token() -> float:
    """BERT-base's activation memory per token in fp32 training (GiB), from :data:`CALIBRATION`'s
    largest fp32 batch: its peak less the :data:`BYTES_PER_PARAMETER` part, per token encoded."""
    record = benchmark_record(CALIBRATION)
    runs = [m for m in record["measured"] if m["precision"] == "fp32"]
    if not runs:
        raise ConfigError(f"{CALIBRATION}: no fp32 measurement to calibrate the estimate on")
    run = max(runs, key=lambda m: m["batch"])
    tokens = run["batch"] * 2 * run["seq_len"]  # pairs: two texts per row
    return (run["peak_gpu_memory_gib"] - fixed_gib("bert-base")) / tokens


def fixed_gib(architecture: str) -> float:
    """The part of the peak that does not depend on the batch: weights, gradients, Adam's moments."""
    return PARAMETERS[architecture] * BYTES_PER_PARAMETER / 2**30


def estimate_peak_gib(architecture: str, texts_per_step: int, tokens_per_text: int) -> float:
    """Estimated peak training memory (GiB, fp32): :func:`fixed_gib` plus activations per token,
    scaled from BERT-base's by layers x hidden size."""
    layers, hidden = SHAPES[architecture]
    scale = layers * hidden / (SHAPES["bert-base"][0] * SHAPES["bert-base"][1])
    return fixed_gib(architecture) + texts_per_step * tokens_per_text * activation_gib_per_token() * scale


def architecture(model: str) -> str:
    """The architecture of a hub id (``bert-base-uncased`` -> ``bert-base``)."""
    for name in PARAMETERS:
        if name in model.lower():
            return name
    raise ConfigError(f"no memory estimate for {model!r}: known architectures {', '.join(PARAMETERS)}")


def chapter_rows(chapter: Chapter) -> list[MemoryRow]:
    """The paper profile's training runs of ``chapter`` with their peak memory (its
    :attr:`~sentcl.book.chapter_spec.Chapter.memory`): measured where a record exists, else estimated.
    Raises FileNotFoundError when the record is not shipped."""
    return chapter.memory(shipped_parameters(chapter.name))


def estimated(run: str, model: str, batch: int, texts_per_row: int, tokens: int) -> MemoryRow:
    """The :class:`MemoryRow` of a run of ``model`` at ``batch`` rows of ``texts_per_row`` texts of ``tokens``
    tokens, by :func:`estimate_peak_gib` in fp32."""
    kind = architecture(model)
    return MemoryRow(run, kind, batch, "fp32", estimate_peak_gib(kind, batch * texts_per_row, tokens), "estimate")


def estimate_check() -> list[tuple[str, float, float]]:
    """(run, estimated, measured) for the runs of :data:`ESTIMATE_CHECK`: what the estimate gives where a measurement exists."""
    record = benchmark_record(ESTIMATE_CHECK)
    tokens, batch = record["settings"]["max_length"], record["settings"]["batch"]
    return [(row["model"], estimate_peak_gib("bert-large" if "large" in row["model"] else "bert-base",
                                             batch * row["views"], tokens), row["peak_gpu_memory_gib"])
            for row in record["table"]]


def chapter_section(chapter: Chapter) -> str:
    """Markdown for a chapter page: each paper-profile run's peak memory beside a T4's 15 GiB and
    the batch setting that fits it, and the chapter's :attr:`~sentcl.book.chapter_spec.Chapter.memory_note`.
    Empty of rows (one sentence) where nothing is recorded."""
    try:
        rows = chapter_rows(chapter)
    except FileNotFoundError as exc:
        return f"No GPU memory record in this sentcl ({exc.filename}).\n"
    measured = all(r.measured for r in rows)
    head = ("Peak GPU memory of the paper profile's training runs, **measured** on an H100 "
            f"(`torch.cuda.max_memory_allocated`, recorded in `benchmarks/results/{chapter.memory_record}`)"
            if measured else
            "Peak GPU memory of the paper profile's training runs: **estimates** (no GPU run of this chapter is "
            f"recorded): 16 bytes per parameter plus, per token, BERT-base's activation memory in the fp32 batch-50 "
            f"record of BSC (`benchmarks/results/{CALIBRATION}`, {activation_gib_per_token() * 1024:.2f} MiB per token), "
            "scaled by layers x hidden size, every text at the chapter's `max_seq_length` tokens (a bound: batches "
            "pad only to their longest text)")
    lines = [head + f", beside a T4's {T4_GIB:g} GiB with {T4_RESERVE_GIB:g} GiB kept for the CUDA context and the "
             "allocator (a judgement):", "",
             "| run | batch | precision | peak (GiB) | fits a T4? | setting that fits a T4 |", "|---|---|---|---|---|---|"]
    for row in rows:
        verdict = f"yes, {row.spare_gib:.1f} GiB spare" if row.spare_gib >= 0 else f"no, {-row.spare_gib:.1f} GiB over"
        peak = f"{row.peak_gib:.2f}" + ("" if row.measured else " (estimate)")
        lines.append(f"| {row.run} | {row.batch} | {row.precision} | {peak} | {verdict} | {row.setting()} |")
    if not measured:
        checks = "; ".join(f"{run} {est:.2f} estimated, {meas:.2f} measured" for run, est, meas in estimate_check())
        lines += ["", f"The same estimate on the recorded IFCL runs (batch 64, 32 tokens, fp32): {checks}."]
    if chapter.memory_note is not None:
        lines += ["", chapter.memory_note()]
    lines += ["", "Mixed precision lowers the peak (BSC's record: bf16 batch 50 at "
              f"{_calibration_largest_batch_peak('bf16'):.2f} GiB against fp32's {_calibration_largest_batch_peak('fp32'):.2f}); a T4 has no bf16, so the `precision` "
              "parameter's `auto` gives it fp16 with a gradient scaler. A smaller batch with accumulation gives each "
              "contrastive loss fewer in-batch negatives than the paper's."]
    return "\n".join(lines) + "\n"


def _calibration_largest_batch_peak(precision: str) -> float:
    runs = [m for m in benchmark_record(CALIBRATION)["measured"] if m["precision"] == precision]
    return max(runs, key=lambda m: m["batch"])["peak_gpu_memory_gib"]


def benchmark_record(name: str) -> dict:
    """The GPU benchmark record ``benchmarks/results/<name>`` (shipped with sentcl) as a dict; a ConfigError where
    this sentcl has none (:func:`~sentcl.book.estimates.benchmarks.recorded` reads it)."""
    record = recorded(name)
    if record is None:
        raise ConfigError(f"{benchmark_result(name)}: no such benchmark record (run its script in benchmarks/)")
    return record


# --------------------------------------------------------------------------- in a notebook


def half_precision_gib(row: MemoryRow) -> float:
    """An **estimate** of ``row``'s peak trained in fp16 or bf16 mixed precision (both keep 2 bytes per
    activation and fp32 weights, gradients and Adam's moments): the batch-dependent part of an fp32 peak
    scaled by what bf16 left of it in BSC's record at its largest batch (:data:`CALIBRATION`); a row
    measured in half precision as it is."""
    if row.precision != "fp32":
        return row.peak_gib
    fixed = fixed_gib("bert-base")
    ratio = (_calibration_largest_batch_peak("bf16") - fixed) / (_calibration_largest_batch_peak("fp32") - fixed)
    return fixed_gib(row.architecture) + (row.peak_gib - fixed_gib(row.architecture)) * ratio


def gpu_summary(chapter: Chapter, precision: str, device: str | None = None) -> str:
    """What a chapter notebook's GPU cell prints: the GPU it runs on (``device``, default the first CUDA
    device; without one, what a Colab T4 would do), the training precision its ``precision`` parameter
    gives there, and per paper-profile run its peak memory in that precision beside the GPU's (a T4 has
    no bf16: ``auto`` gives it fp16 with a gradient scaler; half-precision peaks of fp32 records are
    estimates, :func:`half_precision_gib`)."""
    import torch

    from ...errors import ConfigError
    from ...precision import resolve_precision

    if device is None and torch.cuda.is_available():
        device = "cuda:0"
    if device is not None and torch.device(device).type == "cuda":
        props = torch.cuda.get_device_properties(torch.device(device))
        gpu, memory = props.name, props.total_memory / 2**30
        try:
            used = resolve_precision(precision, device)
        except ConfigError as exc:
            return f"{gpu}: {exc}"
        lines = [f"GPU: {gpu}, {memory:.1f} GiB; precision {precision!r} trains in {used} here"
                 + (" with a gradient scaler" if used == "fp16" else "")]
    else:
        gpu, memory = "a T4", T4_GIB
        used = "fp32" if precision == "fp32" else "fp16"
        lines = [f"No GPU here: precision {precision!r} trains in fp32 on this CPU; the paper profile needs a GPU "
                 "(Colab: Runtime > Change runtime type > T4 GPU). On a T4 (15 GiB, no bf16) it would train in "
                 + ("fp32" if used == "fp32" else "fp16 with a gradient scaler") + ":"]
    if precision == "fp32":
        lines.append("  this chapter's precision is fp32 (as the fit() of sentence-transformers the paper used trained in 2023: use_amp off); give "
                     "-p precision fp16 (papermill) or precision = \"fp16\" (the parameters cell) to train in fp16 on a T4, "
                     "\"auto\" for bf16 where the GPU has it")
    try:
        rows = chapter_rows(chapter)
    except FileNotFoundError as exc:
        return "\n".join([*lines, f"  no GPU memory record in this sentcl ({exc.filename})"])
    half = used != "fp32"
    chosen: dict[tuple[str, int], MemoryRow] = {}
    for row in rows:  # per run, the record in the precision used where there is one (BSC measured both)
        if (row.run, row.batch) not in chosen or (row.precision != "fp32") == half:
            chosen[(row.run, row.batch)] = row
    limit = memory - T4_RESERVE_GIB
    for row in chosen.values():
        peak = half_precision_gib(row) if half else row.peak_gib
        how = f"measured in {row.precision}" if row.measured and (row.precision != "fp32") == half else "estimate"
        fits = f"fits {gpu} ({limit - peak:.1f} GiB spare)" if peak <= limit else f"does not fit {gpu} ({peak - limit:.1f} GiB over)"
        lines.append(f"  {row.run}, batch {row.batch}: {peak:.1f} GiB in {used} ({how}), {fits}")
    lines.append(f"  ({T4_RESERVE_GIB:g} GiB kept for the CUDA context; the chapter's GPU memory table says which batch fits where one does not)")
    return "\n".join(lines)
