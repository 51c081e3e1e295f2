"""The BSC chapter's paper profile on a GPU: step time, peak memory, throughput, projected full cost.

What runs (Chernyavskiy et al. 2022, §5.2): a BERT of bert-base-uncased's architecture
(``transformers.BertConfig()``: 12 layers, hidden 768, 12 heads, vocabulary 30,522) with
**random weights** — no weights can be downloaded on the GPU machine, and a step's time and memory
do not depend on the weights' values — mean pooling, inputs of exactly 90 sub-tokens, trained by
sentcl's :class:`~sentcl.training.Trainer` with sentcl's
:class:`~sentcl.losses.BatchSoftmaxContrastiveLoss` (τ 0.1, L2, symmetric), AdamW lr 2e-5 with
10 % warm-up, clipping at 1: batches of 30 (most tasks) and 50 (Antique, QQP), in fp32 (the paper's
GTX 1080 Ti era) and bf16 autocast. The texts are random words of a WordPiece vocabulary, each
longer than 90 tokens, so every batch is (batch, 90) — the paper's upper bound, so the projection
is an upper bound too. Each configuration trains for its share of ``--seconds``; steps are timed
from one step's end to the next (CUDA synchronised), the first ``--warmup`` left out.

It also times re-encoding (what example-based shuffling does before every epoch) in sentences/s;
the kNN part runs on the CPU (faiss; ``benchmarks/bsc_shuffling.py``) and is not timed here.

The projection counts every training run the paper profile makes (:func:`paper_plan`: the chapter's plan of
runs, :func:`sentcl.chapters.bsc.plan`, of the profile, with the registry's counts of the data it reads: tasks,
trained rows, batch, epochs, seeds, training pairs) at the measured step time, and adds the texts those runs
encode, the re-encoding before every epoch of the example-based rows and a dev evaluation per epoch (§5.2: best
epoch on dev), at the measured encoding rate. ``--reproject FILE``
recomputes a recorded result's projection from its own measurements (no GPU). Writes JSON to ``--out``::

    python benchmarks/bsc_gpu.py --out benchmarks/results/bsc_gpu_h100.json            # on the GPU
    .venv/bin/python benchmarks/bsc_gpu.py --reproject benchmarks/results/bsc_gpu_h100.json --out benchmarks/results/bsc_gpu_h100.json
    .venv/bin/python benchmarks/bsc_gpu.py --device cpu --tiny --seconds 10 --out /tmp/bsc_gpu_tiny.json
"""

from __future__ import annotations

import argparse
import contextlib
import platform
import random
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

from sentcl.io import atomic_write_json
from sentcl.training import Callback

ROOT = Path(__file__).resolve().parents[1]
VOCAB = ROOT / "data" / "tiny" / "vocab.txt"
SEQ = 90
def paper_plan() -> dict[str, dict]:
    """What the BSC notebook's paper profile trains, per task, from the chapter's plan of runs
    (:func:`sentcl.chapters.bsc.plan` of the profile ``notebooks/bsc.profiles.yaml`` gives over the notebook's
    defaults, with the registry's counts of the data it reads, :func:`sentcl.chapters.bsc.paper_sizes`): its
    ``stages``, the plan's rows of the task counted (:meth:`sentcl.book.estimates.plan.Plan.counted`: runs, optimizer steps
    and encoded texts per run), and what the projection's table shows of them: the training pairs and dev texts,
    batch, epochs, seeds, trained rows (the zero-shot row untrained) and how many shuffle by examples."""
    from sentcl.book.parameters import chapter_profiles
    from sentcl.chapters.bsc import paper_sizes, plan, training_what

    paper = chapter_profiles(ROOT / "notebooks" / "bsc.ipynb")["paper"]
    sizes = paper_sizes(paper)
    counted = plan(paper, sizes=sizes).counted()
    seeds = len(paper["seeds"])
    out = {}
    for task in paper["tasks"]:
        example = [s for s in counted if s.what == training_what(task, True)]
        stages = [s for s in counted if s.what == training_what(task, False)] + example
        out[task] = {"pairs": sizes[task].pairs, "batch": paper["batch_size"][task], "epochs": paper["epochs"][task],
                     "trained_rows": sum(s.runs for s in stages) // seeds,
                     "example_based_rows": sum(s.runs for s in example) // seeds, "seeds": seeds,
                     "dev_texts": sizes[task].dev_texts, "train_data": paper["train_data"][task], "stages": stages}
    return out


class StepTimer(Callback):
    """Trainer callback: the wall time of every optimizer step; stops the run after ``seconds``."""

    name = "step_timer"

    def __init__(self, seconds: float, sync) -> None:
        self.seconds, self.sync, self.times, self.started = seconds, sync, [], None
        self.last = None

    def on_train_begin(self, trainer) -> None:
        self.sync()
        self.started = self.last = time.perf_counter()

    def on_step_end(self, trainer) -> None:
        self.sync()
        now = time.perf_counter()
        self.times.append(now - self.last)
        self.last = now
        if now - self.started > self.seconds:
            raise TimeUp


class TimeUp(Exception):
    """The configuration's share of --seconds is spent."""


def encoder(folder: Path, tiny: bool, device: str):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    from sentcl.models import load_encoder

    config = BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64) if tiny else BertConfig()
    torch.manual_seed(0)
    BertModel(config).save_pretrained(folder)
    BertTokenizerFast(vocab_file=str(VOCAB), do_lower_case=True).save_pretrained(folder)
    return load_encoder(folder, pooling="mean", max_seq_length=SEQ, device=device), config


def texts(n: int, seed: int, mixed: bool = False) -> list[str]:
    """``n`` texts of random words: each cut at :data:`SEQ` tokens, or (``mixed``) of 8 to :data:`SEQ` words."""
    words = [w for w in VOCAB.read_text(encoding="utf-8").split() if w.isalpha() and not w.startswith("[")]
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, k=rng.randint(8, SEQ) if mixed else 2 * SEQ)) for _ in range(n)]


def measure(args, batch: int, precision: str, seconds: float) -> dict:
    from sentcl.data.records import TrainingData
    from sentcl.losses import BatchSoftmaxContrastiveLoss
    from sentcl.training import RandomBatchSampler, Trainer, TrainingConfig

    device = args.device
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    with tempfile.TemporaryDirectory() as tmp:
        model, config = encoder(Path(tmp) / "model", args.tiny, device)
        n = batch * args.batches
        data = TrainingData(columns={"query": texts(n, 1), "answer": texts(n, 2)}, name="random words, 90 tokens")
        assert model.preprocess(data.columns["query"][:2])["input_ids"].shape[1] == SEQ
        cfg = TrainingConfig(epochs=1000, batch_size=batch, learning_rate=2e-5, optimizer="adamw", weight_decay=0.01,
                             warmup_ratio=0.1, max_grad_norm=1.0, precision=precision, seed=0, log_steps=10**9)
        timer = StepTimer(seconds, sync)
        trainer = Trainer(model, lambda m: BatchSoftmaxContrastiveLoss(m, 0.1), data, cfg, sampler=RandomBatchSampler(),
                          callbacks=[timer], show_progress=False, name=f"bsc b{batch} {precision}")
        if device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats()
        with contextlib.suppress(TimeUp):
            trainer.train(Path(tmp) / "run")
        peak = torch.cuda.max_memory_allocated() / 2**30 if device.startswith("cuda") else None
        steps = timer.times[args.warmup:]
        if not steps:
            raise SystemExit(f"no step after {args.warmup} warm-up steps in {seconds:.0f} s: give more --seconds")
        step = sorted(steps)[len(steps) // 2]
        # re-encoding (example-based shuffling before every epoch), eval mode, no gradients
        sample = texts(args.encode_texts, 3)
        sync()
        started = time.perf_counter()
        trainer.encode(sample, batch_size=128, precision="bf16" if precision == "bf16" else "fp32")
        sync()
        encode_rate = len(sample) / (time.perf_counter() - started)
        del trainer, model
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return {"batch": batch, "precision": precision, "seq_len": SEQ, "steps_timed": len(steps),
            "step_s_median": round(step, 5), "step_s_mean": round(sum(steps) / len(steps), 5),
            "pairs_per_s": round(batch / step, 2), "peak_gpu_memory_gib": None if peak is None else round(peak, 3),
            "encode_sentences_per_s": round(encode_rate, 1), "layers": config.num_hidden_layers,
            "hidden": config.hidden_size}


def project(measured: list[dict], precision: str, plan: dict[str, dict] | None = None) -> list[dict]:
    """Hours of the paper profile's every training run (:func:`paper_plan`: the chapter's plan, counted) at the
    measured step time of the nearest measured batch size, plus the texts each run encodes (the plan's: both texts
    of every training pair before every epoch of the example-based rows, one dev evaluation per epoch of every
    trained row) at the measured encoding rate, plus the checkpoints
    each run writes on the trainer's cadence (:func:`sentcl.book.estimates.cost.checkpoints_per_run`) at the write
    rate ``benchmarks/checkpoint_write.py`` measured (:func:`sentcl.book.estimates.cost.measured_checkpoint_write`)."""
    from sentcl.book.estimates.cost import BERT_BASE_PARAMETERS, checkpoint_bytes, checkpoints_per_run, measured_checkpoint_write

    plan = plan or paper_plan()
    write_rate = measured_checkpoint_write()["bytes_per_s"]
    by_batch = {m["batch"]: m for m in measured if m["precision"] == precision}
    rows = []
    for name, t in plan.items():
        m = by_batch.get(t["batch"]) or by_batch[min(by_batch, key=lambda b: abs(b - t["batch"]))]
        stages = t["stages"]
        runs = sum(s.runs for s in stages)
        steps = sum(s.runs * s.steps for s in stages)
        train_h = steps * m["step_s_median"] / 3600
        reencode_h = sum(s.runs * (s.sentences - s.evaluation_sentences) for s in stages) / m["encode_sentences_per_s"] / 3600
        dev_h = sum(s.runs * s.evaluation_sentences for s in stages) / m["encode_sentences_per_s"] / 3600
        checkpoints = sum(s.runs * checkpoints_per_run(s.steps, m["step_s_median"]) for s in stages)
        checkpoint_h = checkpoints * checkpoint_bytes(BERT_BASE_PARAMETERS) / write_rate / 3600
        rows.append({"task": name, "precision": precision, "training data": t["train_data"], "training pairs": t["pairs"],
                     "batch": t["batch"], "epochs": t["epochs"], "trained rows": t["trained_rows"], "seeds": t["seeds"],
                     "training runs": runs, "optimizer steps": steps, "checkpoints": checkpoints,
                     "training (h)": round(train_h, 2), "re-encoding (h)": round(reencode_h, 2),
                     "dev evaluations (h)": round(dev_h, 2), "checkpoints (h)": round(checkpoint_h, 2),
                     "total (h)": round(train_h + reencode_h + dev_h + checkpoint_h, 2)})
    parts = ("training (h)", "re-encoding (h)", "dev evaluations (h)", "checkpoints (h)", "total (h)")
    rows.append({"task": "all", "precision": precision, "training runs": sum(r["training runs"] for r in rows),
                 "optimizer steps": sum(r["optimizer steps"] for r in rows), "checkpoints": sum(r["checkpoints"] for r in rows),
                 **{part: round(sum(r[part] for r in rows), 2) for part in parts}})
    return rows


def reproject(path: Path) -> dict:
    """A recorded result with its projection recomputed from its own measurements and today's paper profile
    (no GPU needed: the step times and encoding rates are the file's)."""
    from sentcl.io import read_json

    result = read_json(path, "a bsc_gpu benchmark result")
    precisions = list(dict.fromkeys(m["precision"] for m in result["measured"]))
    result["table"] = [row for p in precisions for row in project(result["measured"], p)]
    result["projection_assumptions"] = PROJECTION_ASSUMPTIONS
    total = {p: next(r["total (h)"] for r in result["table"] if r["task"] == "all" and r["precision"] == p) for p in precisions}
    result["summary"] = ("; ".join(f"{p}: {total[p]:.1f} hours on the measured device for every row of Tables 1-5 with "
                                   "five seeds" for p in precisions)
                         + f" (measured on {result['machine']['device']}; the paper: a GTX 1080 Ti, up to ten minutes per epoch).")
    result["reprojected"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    return result


PROJECTION_ASSUMPTIONS = [
    "every training run of the paper profile (notebooks/bsc.profiles.yaml): its tasks, the trained rows of each "
    "table (the zero-shot row untrained), batch and epochs per §5.2, five seeds",
    "training pairs as the registry counts the data the profile reads (judged pairs of a retrieval set; QQP capped "
    "at 10,000 as §4 samples; a 9:1 dev split holds out 10 %); §4's CQA-B size (19,990) is part 1's comment count, "
    "not subtask B's 1,999 question pairs (data/registry/semeval2016_cqa_b.yaml); triplet and MSE rows that add "
    "sampled negatives train on more rows in the paper: a lower bound for those",
    "every step at 90 tokens (an upper bound: shorter texts are padded only to the batch's longest)",
    "re-encoding of all training rows before every epoch of the example-based rows and one dev evaluation per epoch "
    "of every trained row, at the measured encoding rate; kNN search time (CPU faiss) not included",
    "checkpoints on the trainer's cadence (every 10 minutes of training and at the end; bert-base's weights and Adam's "
    "moments, 1.3 GB each) written at the rate measured on the CPU machine's disk "
    "(benchmarks/results/checkpoint_write_cpu.json), not the GPU machine's",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--reproject", type=Path, help="recompute a recorded result's projection (no GPU) and write it to --out")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer BERT: tests the script in seconds")
    parser.add_argument("--seconds", type=float, default=240.0, help="training time measured, all configurations together")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--batches", type=int, default=200, help="distinct batches of texts per configuration")
    parser.add_argument("--encode-texts", type=int, default=4000)
    parser.add_argument("--configs", default="30:fp32,50:fp32,30:bf16,50:bf16")
    args = parser.parse_args()
    if args.reproject:
        atomic_write_json(args.out, reproject(args.reproject))
        print(f"wrote {args.out}")
        return
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: pass --device cpu (with --tiny to test the script)")
    configs = [(int(b), p) for b, p in (c.split(":") for c in args.configs.split(","))]
    started = time.perf_counter()
    measured = []
    for batch, precision in configs:
        measured.append(measure(args, batch, precision, args.seconds / len(configs)))
        print(measured[-1], flush=True)
    device = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else f"CPU ({platform.processor() or platform.machine()})"
    import sentence_transformers
    import transformers

    precisions = list(dict.fromkeys(p for _, p in configs))
    table = [row for p in precisions for row in project(measured, p)]
    total = {p: next(r["total (h)"] for r in table if r["task"] == "all" and r["precision"] == p) for p in precisions}
    result = {
        "benchmark": "bsc_gpu", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"device": device, "torch": torch.__version__, "cuda": torch.version.cuda,
                    "transformers": transformers.__version__, "sentence_transformers": sentence_transformers.__version__,
                    "python": platform.python_version()},
        "settings": {"model": "tiny 2-layer BERT (script test)" if args.tiny else "bert-base-uncased architecture (BertConfig())",
                     "weights": "random: a step's time and memory do not depend on the weights' values",
                     "inputs": f"random WordPiece words, every text cut at {SEQ} tokens (§5.2's limit: an upper bound)",
                     "loss": "sentcl BatchSoftmaxContrastiveLoss, tau 0.1, L2, symmetric (sum of sides)",
                     "optimizer": "AdamW lr 2e-5, weight decay 0.01, 10% warm-up, clip 1.0, sentcl Trainer",
                     "seconds": args.seconds, "warmup_steps_dropped": args.warmup},
        "measured": measured,
        "projection_assumptions": PROJECTION_ASSUMPTIONS,
        "table": table,
        "summary": "; ".join(f"{p}: {total[p]:.1f} hours on the measured device for every row of Tables 1-5 with five seeds" for p in precisions)
        + f" (measured on {device}; the paper: a GTX 1080 Ti, up to ten minutes per epoch).",
        "wall_s": round(time.perf_counter() - started, 1),
    }
    atomic_write_json(args.out, result)
    print(result["summary"])
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
