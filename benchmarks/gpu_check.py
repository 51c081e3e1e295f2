"""One command for the next person with a GPU: is sentcl's training step keeping the GPU busy? (issue 30)

On a BERT of bert-base-uncased's architecture (random weights, as ``benchmarks/bsc_gpu.py``: a step's time
does not depend on them) with inputs of exactly 90 tokens, batches of 30 pairs, sentcl's Trainer:

1. **Step time and pairs/s** (CUDA-synchronised, the first steps left out) of BSC in bf16 autocast with fused
   AdamW and with ``UncorrectedAdam`` (multi-tensor; the BSC paper profile's optimizer for 5 of its 7 tasks),
   BSC in fp32 (AdamW), MNRL in bf16 (AdamW), and BSC bf16 on texts of mixed lengths padded and unpadded
   (``TrainingConfig.unpadded``: what packing the real tokens buys, :data:`CONFIGS`); the **MFU** of each: the step's model FLOPs (3 × the forward's
   2 · non-embedding parameters · tokens + 4 · layers · 90 · hidden · tokens of attention) over the step time,
   over the GPU's dense bf16 peak (:data:`PEAK_BF16`; None for a GPU not listed there).
2. **Operations and host-device syncs per step** of BSC bf16 with each optimizer, over 10 steps that do not log:
   :class:`sentcl.training.dispatch.DispatchCounter` and ``torch.cuda.set_sync_debug_mode("warn")``'s warnings.
3. **A profiler trace of 20 bf16 steps** of BSC with ``UncorrectedAdam`` (``trace_bsc_bf16.json.gz``, for
   chrome://tracing or Perfetto) and the profiler's table of the top operations (``trace_bsc_bf16.txt``).
4. **Encoding** (what evaluations and re-encoding cost): sentences/s at batch 128, bf16, timed warm, three times.
5. **One checkpoint** of the bert-base run (weights and Adam's moments) written to the output folder's disk.

Results go to ``benchmarks/results/gpu_check_<device>.json`` (``--out-dir``), the device named inside. It needs
about 7 minutes on an H100 (``--seconds`` per timed configuration, 45 by default)::

    python benchmarks/gpu_check.py                   # on the GPU machine, from the repository root
    .venv/bin/python benchmarks/gpu_check.py --dry-run --out-dir /tmp/check   # CPU, tiny model, seconds (the test)

The target (issue 30): at least 3 × the 260 pairs/s recorded for the BSC bf16 step in
``benchmarks/results/bsc_gpu_h100.json``, or the trace that shows why not.
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import re
import statistics
import sys
import tempfile
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bsc_gpu  # noqa: E402  (benchmarks/bsc_gpu.py: the encoder, the texts, the step timer)

from sentcl.io import atomic_write_json  # noqa: E402

BATCH = 30
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L4": 121e12, "A10": 125e12}
"""Dense bf16 tensor-core peaks (FLOP/s) by GPU name, from the vendors' data sheets (SXM parts)."""
CONFIGS = {"BSC bf16, AdamW fused": ("bsc", "bf16", True, "full"),
           "BSC bf16, UncorrectedAdam foreach": ("bsc", "bf16", False, "full"),
           "BSC fp32, AdamW fused": ("bsc", "fp32", True, "full"), "MNRL bf16, AdamW fused": ("mnrl", "bf16", True, "full"),
           "BSC bf16, AdamW fused, mixed lengths": ("bsc", "bf16", True, "mixed"),
           "BSC bf16, AdamW fused, mixed lengths, unpadded": ("bsc", "bf16", True, "unpadded")}
"""Per timed configuration: loss, precision, Adam's bias correction (False: ``UncorrectedAdam``) and the inputs'
lengths: ``full`` every text 90 tokens; ``mixed`` 8 to 90 words (about half the padded tokens real, as in the papers'
training sets, 40-68 %), padded; ``unpadded`` the same texts with ``TrainingConfig.unpadded``."""
RECORDED_PAIRS_PER_S = 260
"""The BSC bf16 step's pairs/s in ``benchmarks/results/bsc_gpu_h100.json`` before issue 30."""


class Steps(bsc_gpu.StepTimer):
    """``bsc_gpu``'s step timer (every step's time, the device synchronised; stops after ``seconds``) that also
    stops after ``steps`` and runs ``hooks`` (step number -> function of the trainer) at the end of those steps."""

    name = "gpu-check-steps"

    def __init__(self, steps: int, seconds: float, sync, hooks=None) -> None:
        super().__init__(seconds, sync)
        self.steps, self.hooks = steps, hooks or {}

    def on_step_end(self, trainer) -> None:
        step = trainer.state.global_step
        if step in self.hooks:
            self.hooks[step](trainer)
        super().on_step_end(trainer)
        if step >= self.steps:
            raise bsc_gpu.TimeUp


def train(args, config: str, steps: int, seconds: float, hooks=None, keep=None):
    """Train ``config`` for ``steps`` steps or ``seconds``; returns the step timer and the config of the model."""
    from sentcl.data.records import TrainingData
    from sentcl.losses import BatchSoftmaxContrastiveLoss, MultipleNegativesRankingLoss
    from sentcl.training import RandomBatchSampler, Trainer, TrainingConfig

    loss_name, precision, corrected, lengths = CONFIGS[config]
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    with tempfile.TemporaryDirectory(dir=args.out_dir) as tmp:
        model, architecture = bsc_gpu.encoder(Path(tmp) / "model", args.dry_run, args.device)
        n = BATCH * args.batches
        mixed = lengths != "full"
        data = TrainingData(columns={"query": bsc_gpu.texts(n, 1, mixed), "answer": bsc_gpu.texts(n, 2, mixed)},
                            name="random words, " + ("8-90 words" if mixed else "90 tokens"))
        cfg = TrainingConfig(epochs=1000, batch_size=BATCH, learning_rate=2e-5, weight_decay=0.01, precision=precision,
                             adam_bias_correction=corrected, seed=0, log_steps=10**9, checkpoint_minutes=None,
                             unpadded=lengths == "unpadded")
        loss = (lambda m: BatchSoftmaxContrastiveLoss(m, 0.1)) if loss_name == "bsc" else MultipleNegativesRankingLoss
        timer = Steps(steps, seconds, sync, hooks)
        trainer = Trainer(model, loss, data, cfg, sampler=RandomBatchSampler(), callbacks=[timer], show_progress=False)
        with contextlib.suppress(bsc_gpu.TimeUp):
            trainer.train(Path(tmp) / "run")
        if keep is not None:
            keep(trainer, Path(tmp))
    return timer, architecture


def model_flops(architecture, batch: int, columns: int = 2) -> float:
    """A training step's model FLOPs: 3 × the forward (module doc)."""
    d, layers, ffn = architecture.hidden_size, architecture.num_hidden_layers, architecture.intermediate_size
    tokens = batch * columns * bsc_gpu.SEQ
    per_layer = 4 * d * d + 2 * d * ffn  # attention projections and the feed-forward block's weights
    return 3 * (2 * layers * per_layer * tokens + 4 * layers * bsc_gpu.SEQ * d * tokens)


def timed(args, device: str) -> dict:
    out = {}
    peak = next((v for k, v in PEAK_BF16.items() if k in device), None)
    for config in CONFIGS:
        timer, architecture = train(args, config, args.timed_steps, args.seconds)
        times = timer.times[args.warmup:]
        step = statistics.median(times)
        out[config] = {"steps_timed": len(times), "step_s_median": round(step, 5), "pairs_per_s": round(BATCH / step, 1)}
        if CONFIGS[config][3] == "full":  # mixed lengths: the tokens a step computes vary, no one FLOP count
            flops = model_flops(architecture, BATCH)
            out[config] |= {"model_tflop_per_step": round(flops / 1e12, 4), "achieved_tflop_per_s": round(flops / step / 1e12, 2),
                            "mfu_of_bf16_peak": round(flops / step / peak, 4) if peak else None}
        print(config, out[config], flush=True)
    return out


class SyncWindow:
    """Counts operations and syncs (:class:`~sentcl.training.dispatch.DispatchCounter`, and on a GPU CUDA's sync
    warnings) between the steps where :meth:`start` and :meth:`stop` run."""

    def __init__(self, cuda: bool) -> None:
        from sentcl.training.dispatch import DispatchCounter

        self.cuda, self.counter, self.marks = cuda, DispatchCounter(), {}
        self.catcher = warnings.catch_warnings(record=True)
        self.caught: list = []

    def start(self, trainer) -> None:
        self.caught = self.catcher.__enter__() or []
        warnings.simplefilter("always")
        if self.cuda:
            torch.cuda.set_sync_debug_mode("warn")
        self.counter.__enter__()
        self.marks["start"] = self.counter.snapshot()

    def stop(self, trainer) -> None:
        self.marks["stop"] = self.counter.snapshot()
        self.counter.__exit__(None, None, None)
        if self.cuda:
            torch.cuda.set_sync_debug_mode("default")
        self.catcher.__exit__(None, None, None)

    def per_step(self, steps: int) -> dict:
        cuda_syncs = [str(w.message).splitlines()[0] for w in self.caught if "synchroniz" in str(w.message)]
        return {"ops_per_step": (self.marks["stop"][0] - self.marks["start"][0]) / steps,
                "syncs_per_step": (self.marks["stop"][1] - self.marks["start"][1]) / steps,
                "cuda_sync_warnings_per_step": len(cuda_syncs) / steps, "cuda_sync_kinds": sorted(set(cuda_syncs)),
                "syncs_where": {k: v / steps for k, v in self.counter.where.items()}}


def syncs(args) -> dict:
    out = {}
    for config in ("BSC bf16, AdamW fused", "BSC bf16, UncorrectedAdam foreach"):
        window = SyncWindow(args.device == "cuda")
        train(args, config, 14, 10**9, hooks={3: window.start, 13: window.stop})
        out[config] = window.per_step(10)
        print(config, {k: v for k, v in out[config].items() if k != "syncs_where"}, flush=True)
    return out


def trace(args, out_dir: Path) -> dict:
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if args.device == "cuda" else [])
    profiler = profile(activities=activities)
    first, last = 4, 4 + args.trace_steps
    train(args, "BSC bf16, UncorrectedAdam foreach", last, 10**9,
          hooks={first: lambda t: profiler.start(), last: lambda t: profiler.stop()})
    path = out_dir / "trace_bsc_bf16.json.gz"
    profiler.export_chrome_trace(str(path))
    sort = "cuda_time_total" if args.device == "cuda" else "cpu_time_total"
    (out_dir / "trace_bsc_bf16.txt").write_text(profiler.key_averages().table(sort_by=sort, row_limit=40), encoding="utf-8")
    return {"steps": args.trace_steps, "trace": path.name, "table": "trace_bsc_bf16.txt"}


def encoding_and_checkpoint(args) -> dict:
    from sentcl.training import checkpoint

    found = {}

    def measure(trainer, folder: Path) -> None:
        sample = bsc_gpu.texts(args.encode_texts, 3)
        rates = []
        trainer.encode(sample[:256], batch_size=128, precision="bf16")  # warm-up
        for _ in range(3):
            if args.device == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            trainer.encode(sample, batch_size=128, precision="bf16")
            if args.device == "cuda":
                torch.cuda.synchronize()
            rates.append(len(sample) / (time.perf_counter() - started))
        started = time.perf_counter()
        written = checkpoint.save_checkpoint(folder / "checkpoint", trainer.state, {
            "model": trainer.model.state_dict(), "optimizer": trainer.optimizer.state_dict()}, keep=1)
        seconds = time.perf_counter() - started
        found.update(encode_sentences_per_s=[round(r, 1) for r in rates],
                     checkpoint={"bytes": sum(f.stat().st_size for f in written.iterdir()), "seconds": round(seconds, 3)})

    train(args, "BSC bf16, AdamW fused", 3, 10**9, keep=measure)
    print(found, flush=True)
    return found


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="CPU, a tiny 2-layer BERT, a few steps: tests the script")
    parser.add_argument("--out-dir", type=Path, default=HERE / "results")
    parser.add_argument("--seconds", type=float, default=45.0, help="timed training per configuration")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--batches", type=int, default=100)
    parser.add_argument("--trace-steps", type=int, default=20)
    parser.add_argument("--encode-texts", type=int, default=4000)
    args = parser.parse_args(argv)
    if args.dry_run:
        args.device, args.warmup, args.batches, args.trace_steps, args.encode_texts = "cpu", 1, 8, 2, 64
        args.timed_steps = 3  # and not --seconds: a loaded CPU may take seconds a step
    else:
        args.timed_steps = 10**9
        if not torch.cuda.is_available():
            raise SystemExit("no CUDA device: run with --dry-run to test the script on a CPU")
        args.device = "cuda"
    device = torch.cuda.get_device_name(0) if args.device == "cuda" else f"CPU ({platform.processor() or platform.machine()})"
    slug = re.sub(r"[^a-z0-9]+", "_", device.lower()).strip("_")
    out_dir = args.out_dir / f"gpu_check_{slug}"
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    result = {"benchmark": "gpu_check", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "device": device, "dry_run": args.dry_run, "torch": torch.__version__, "cuda": torch.version.cuda,
              "settings": {"model": "tiny 2-layer BERT (dry run)" if args.dry_run else "bert-base-uncased architecture",
                           "batch_pairs": BATCH, "tokens": bsc_gpu.SEQ, "seconds_per_config": args.seconds}}
    result["timed"] = timed(args, device)
    result["syncs"] = syncs(args)
    result["trace"] = trace(args, out_dir)
    result |= encoding_and_checkpoint(args)
    best = result["timed"]["BSC bf16, UncorrectedAdam foreach"]["pairs_per_s"]
    result["target"] = {"recorded_pairs_per_s": RECORDED_PAIRS_PER_S, "target_pairs_per_s": 3 * RECORDED_PAIRS_PER_S,
                        "reached": best >= 3 * RECORDED_PAIRS_PER_S}
    result["wall_s"] = round(time.perf_counter() - started, 1)
    path = args.out_dir / f"gpu_check_{slug}.json"
    atomic_write_json(path, result)
    print(f"wrote {path} and {out_dir}/ in {result['wall_s']} s")
    return path


if __name__ == "__main__":
    main()
