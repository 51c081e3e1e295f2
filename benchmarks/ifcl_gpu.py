"""The IFCL paper profile's training step on a GPU: step time, peak memory, throughput, and the projected
cost of one wiki1m epoch for BERT-base and BERT-large.

The paper profile (notebooks/ifcl.ipynb, its defaults): unsupervised IFCL on wiki1m, batch 64, max
length 32, IFCL with the hippocampus queue (k = 3, decay 0.9) and the Twin loss (static margins),
AdamW, fp32. Each run goes through sentcl's own Trainer and IFCLLoss for a fixed time budget:

- the encoders are BERT-base and BERT-large **built from their configurations with random weights**
  (no weights on the GPU machine; step time and memory do not depend on weight values), [CLS] pooling;
- the sentences are synthesised: random words of the project's tiny vocabulary, long enough that every
  view is truncated to the paper's 32 tokens (the data root holds only wiki1m's first lines, and a
  fixed number of steps is what is timed), with their fusion twins (word repetition, rate 0.32);
- one STS-B-dev-sized evaluation (1,500 pairs = 3,000 sentences, eval mode) is timed too, because the
  paper profile evaluates every 125 steps.

The projection: steps of one epoch = ceil(1,000,000 / 64) = 15,625; epoch time = steps x median step
time + 125 evaluations x evaluation time; one seed (the paper profile's). A SimCSE-base run (two views,
no queue, no Twin loss) gives the reference the IFCL overhead is read against. Writes JSON to ``--out``::

    python benchmarks/ifcl_gpu.py --out benchmarks/results/ifcl_gpu_h100.json [--seconds 240]
    python benchmarks/ifcl_gpu.py --device cpu --tiny --seconds 10 --out /tmp/ifcl_gpu_tiny.json  # a check
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

BASE = {"hidden_size": 768, "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072}
LARGE = {"hidden_size": 1024, "num_hidden_layers": 24, "num_attention_heads": 16, "intermediate_size": 4096}
TINY = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 128}
WIKI1M = 1_000_000
EVAL_EVERY = 125
DEV_SENTENCES = 3_000
RUNS = [  # name, architecture, method, learning rate (the paper profile's), share of --seconds
    ("IFCL-BERT-base", "base", "ifcl", 3e-5, 0.4),
    ("IFCL-BERT-large", "large", "ifcl", 1e-5, 0.4),
    ("SimCSE-BERT-base", "base", "simcse", 3e-5, 0.2),
]


def build_encoder(folder: Path, architecture: dict, device: str, max_length: int):
    """A random-weight BERT of ``architecture`` (vocabulary 30,522, as bert-base/large-uncased) with a
    tokenizer over the project's tiny vocabulary, loaded as a SentenceTransformer with [CLS] pooling."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    from sentcl.models import _tiny_vocab, load_encoder

    vocab = _tiny_vocab()
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=30_522, max_position_embeddings=512, **architecture)).save_pretrained(folder)
    BertTokenizer(vocab={tok: i for i, tok in enumerate(vocab)}, do_lower_case=True).save_pretrained(folder)
    return load_encoder(str(folder), pooling="cls", max_seq_length=max_length, device=device), vocab


def sentences(vocab: list[str], count: int, words: int, seed: int) -> list[str]:
    import numpy as np

    plain = [w for w in vocab if w.isalpha() and w.islower()]
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(plain, size=words)) for _ in range(count)]


def time_run(name, architecture, method, lr, seconds, args, workdir):
    import torch

    from sentcl.data.augmentation import fusion_twins
    from sentcl.losses import IFCLLoss
    from sentcl.training import Callback, Trainer, TrainingConfig

    class Clock(Callback):
        """Records each step's end time; stops the run once its time budget is spent."""

        name = "clock"

        def __init__(self):
            self.ends, self.start = [], None

        def on_step_end(self, trainer):
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
            now = time.perf_counter()
            self.ends.append(now)
            if now - self.start > seconds:
                trainer.state.stopped_early = True

    device = args.device
    model, vocab = build_encoder(workdir / f"{name}-init", architecture, device, args.max_length)
    texts = sentences(vocab, args.batch * args.max_steps, args.max_length + 8, seed=0)
    data = fusion_twins(texts, repetition_rate=0.32, seed=0, fraternal=method == "ifcl", name="synthetic wiki1m-length sentences")
    options = dict(queue_batches=3, forgetting_decay=0.9, twin_weight=1.0) if method == "ifcl" else dict(queue_batches=0, twin_weight=0.0)
    config = TrainingConfig(batch_size=args.batch, max_steps=args.max_steps, learning_rate=lr, warmup_ratio=0.0,
                            weight_decay=0.0, max_grad_norm=1.0, precision=args.precision, seed=0, log_steps=10)
    clock = Clock()
    trainer = Trainer(model, lambda m: IFCLLoss(m, temperature=0.05, margin_embeddings="static", **options), data,
                      config, callbacks=[clock], name=name, show_progress=False)
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    clock.start = time.perf_counter()
    trainer.train(workdir / name)
    steps = [b - a for a, b in itertools.pairwise([clock.start, *clock.ends])]
    timed = steps[args.warmup_steps:] or steps
    peak = torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
    # one STS-B-dev-sized evaluation, as the paper profile runs every 125 steps
    dev = sentences(vocab, DEV_SENTENCES, args.max_length + 8, seed=1)
    started = time.perf_counter()
    trainer.encode(dev, batch_size=128, precision="fp32" if args.precision == "fp32" else "auto")
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    evaluation_s = time.perf_counter() - started
    step_s = statistics.median(timed)
    epoch_steps = math.ceil(WIKI1M / args.batch)
    epoch_h = (epoch_steps * step_s + (epoch_steps // EVAL_EVERY) * evaluation_s) / 3600
    del trainer, model
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return {
        "model": name, "architecture": architecture, "method": method, "views": 3 if method == "ifcl" else 2,
        "steps_run": len(steps), "steps_timed": len(timed),
        "step_s_median": round(step_s, 5), "step_s_p90": round(sorted(timed)[int(0.9 * (len(timed) - 1))], 5),
        "sentences_per_s": round(args.batch / step_s, 1),
        "peak_gpu_memory_gib": None if peak is None else round(peak, 3),
        "evaluation_3000_sentences_s": round(evaluation_s, 3),
        "epoch_steps": epoch_steps, "projected_epoch_h": round(epoch_h, 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="tiny configurations instead of BERT-base/large (a check)")
    parser.add_argument("--seconds", type=float, default=240, help="training time budget over all runs")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--max-steps", type=int, default=600, help="steps at most per run")
    parser.add_argument("--warmup-steps", type=int, default=5, help="first steps left out of the timing")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"])
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)

    import torch

    from sentcl.io import atomic_write_json

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: pass --device cpu (with --tiny for a quick check)")
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else platform.processor() or platform.machine()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, arch, method, lr, share in RUNS:
            architecture = TINY if args.tiny else {"base": BASE, "large": LARGE}[arch]
            rows.append(time_run(name, architecture, method, lr, share * args.seconds, args, Path(tmp)))
            print(f"{name}: {rows[-1]['step_s_median']:.4f} s/step (median of {rows[-1]['steps_timed']}), "
                  f"peak {rows[-1]['peak_gpu_memory_gib']} GiB, projected epoch {rows[-1]['projected_epoch_h']:.2f} h", flush=True)
    ifcl, simcse = rows[0]["step_s_median"], rows[2]["step_s_median"]
    record = {
        "benchmark": "ifcl_gpu",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": device_name + (" (tiny configurations: a check, not the paper profile)" if args.tiny else ""),
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(),
                    "torch": torch.__version__, "cuda": torch.version.cuda},
        "settings": {"batch": args.batch, "max_length": args.max_length, "precision": args.precision,
                     "seconds": args.seconds, "max_steps": args.max_steps, "warmup_steps": args.warmup_steps,
                     "loss": "IFCLLoss(temperature=0.05, queue_batches=3, forgetting_decay=0.9, twin_weight=1, static margins)"},
        "table": rows,
        "ifcl_over_simcse_step_time": round(ifcl / simcse - 1, 4),
        "notes": [
            "Random weights built from the BERT-base/large configurations: step time and memory do not depend on weight values.",
            "Synthetic sentences truncated to 32 tokens (the paper profile's max length); the data root has only wiki1m's first lines.",
            f"Projected epoch = ceil(1,000,000 / {args.batch}) steps x median step time + one STS-B-dev-sized evaluation every "
            f"{EVAL_EVERY} steps; one seed; model loading and checkpoints not counted.",
            "IFCL encodes three views per sentence (SimCSE two): ifcl_over_simcse_step_time compares the two runs on BERT-base.",
        ],
    }
    atomic_write_json(args.out, record)
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
