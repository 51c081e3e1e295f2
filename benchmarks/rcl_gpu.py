"""The RCL paper profile on a GPU: entropy-model steps (Eq. 2), final-model steps with 4 and 8 regulators
(Eq. 3), a plain Eq. 1 step, and the augmented-embedding store's writing throughput, all through sentcl's
own Trainer, losses and store; then the full cost of Appendix A.1's setup, projected.

The encoder is the RoBERTa-base architecture (SRoBERTa-base: 12 layers, hidden 768, 12 heads, vocabulary
50,265, mean pooling) built from its configuration with **random weights**: step time and memory do not
depend on the weight values. No tokenizer or data is downloaded: the texts are synthetic sentences whose
lengths follow NLI (queries 20 ± 8 tokens, indexes and hard negatives 11 ± 4, clipped), tokenised by the
project's tiny WordPiece vocabulary one token per word, so each batch has NLI's padded lengths.
Batches of 64 (query, index, contradiction) triplets as Appendix A.1; ``--precision`` fp16 (autocast with a
gradient scaler, as sentence-transformers' NLI training) or fp32. Each stage trains ``--seconds`` / 4
seconds (after 3 warm-up steps) with ``Trainer.train`` and a callback timing every optimizer step
(forward, loss, backward, clipping, AdamW): median step time, peak GPU memory
(``torch.cuda.max_memory_allocated``), triplets/s. Stores: an entropy model encodes 2 x ``--store-texts``
texts into an fp16 store (``write_store``), timed against plain encoding of the same texts.

Projection: every training and encoding the RCL chapter's paper profile runs, counted from its
parameters by its plan of runs (:func:`sentcl.chapters.rcl.plan`: 5 entropy models, early-stopped between their
earliest stop and one epoch; their stores and the control's; the 60 final models of Tables 1, 3, 4 and 5 over 5
seeds and the control, each evaluated on STS-B dev every 10 %; every row and seed scored on the STS test
sets; Table 2's 5 folds on FAQIR and COUGH), times the measured step times and encoding rate
(:func:`sentcl.chapters.rcl.rcl_paper_projection`). ``--project-only`` recomputes the projection of a
recorded file from its measurements, without a GPU. Writes JSON to ``--out``::

    python benchmarks/rcl_gpu.py --out benchmarks/results/rcl_gpu_h100.json          # on the GPU
    .venv/bin/python benchmarks/rcl_gpu.py --device cpu --tiny --seconds 8 --out /tmp/rcl_gpu.json
    .venv/bin/python benchmarks/rcl_gpu.py --project-only --out benchmarks/results/rcl_gpu_h100.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from sentcl.training import Callback

ROOT = Path(__file__).resolve().parents[1]
BATCH = 64
ROBERTA_BASE = dict(vocab_size=50_265, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                    intermediate_size=3072, max_position_embeddings=514, type_vocab_size=1)
TINY = dict(vocab_size=0, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
            max_position_embeddings=514, type_vocab_size=1)


def build_encoder(folder: Path, tiny: bool, device: str):
    """A RoBERTa(-base) encoder with random weights and the tiny WordPiece tokenizer, as a SentenceTransformer."""
    from transformers import BertTokenizer, RobertaConfig, RobertaModel

    from sentcl.models import load_encoder

    vocab = (ROOT / "data" / "tiny" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tokenizer = BertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)
    shape = dict(TINY if tiny else ROBERTA_BASE)
    shape["vocab_size"] = max(shape["vocab_size"], len(vocab))  # the tiny vocabulary fits in RoBERTa's 50,265 rows
    config = RobertaConfig(**shape, pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    RobertaModel(config, add_pooling_layer=False).save_pretrained(folder)
    tokenizer.model_max_length = 128
    tokenizer.save_pretrained(folder)
    return load_encoder(folder, pooling="mean", max_seq_length=128, device=device)


def synthetic_triplets(rows: int, seed: int = 0):
    from sentcl.data import TrainingData

    words = [w for w in (ROOT / "data" / "tiny" / "vocab.txt").read_text(encoding="utf-8").splitlines()
             if w.isalpha() and len(w) > 2][:5000]
    rng = np.random.default_rng(seed)

    def sentences(mean: float, std: float, low: int, high: int) -> list[str]:
        lengths = np.clip(rng.normal(mean, std, rows).round().astype(int), low, high)
        return [" ".join(rng.choice(words, n)) for n in lengths]

    return TrainingData({"query": sentences(20, 8, 5, 64), "index": sentences(11, 4, 3, 40),
                         "negative": sentences(11, 4, 3, 40)}, name="synthetic NLI-length triplets")


class StepTimer(Callback):
    """A trainer callback: time of every optimizer step; stops training after ``seconds`` (warm-up excluded)."""

    name = "step-timer"

    def __init__(self, seconds: float, warmup: int = 3) -> None:
        self.seconds, self.warmup, self.times, self.last, self.began = seconds, warmup, [], None, None

    def on_train_begin(self, trainer) -> None:
        self.last = self._now()

    def on_step_end(self, trainer) -> None:
        now = self._now()
        if trainer.state.global_step > self.warmup:
            self.times.append(now - self.last)
            self.began = self.began or self.last
            if now - self.began >= self.seconds:
                trainer.state.stopped_early = True
        self.last = now

    @staticmethod
    def _now() -> float:
        if torch.cuda.is_available():
            torch.cuda.synchronize()
        return time.perf_counter()


def measure(name, make_model, loss_of, data, seconds, precision, device, work: Path) -> dict:
    from sentcl.training import NoDuplicatesBatchSampler, Trainer, TrainingConfig

    model = make_model()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    timer = StepTimer(seconds)
    config = TrainingConfig(batch_size=BATCH, max_steps=100_000, precision=precision, learning_rate=2e-5,
                            weight_decay=0.01, warmup_ratio=0.1, log_steps=50)
    trainer = Trainer(model, loss_of(model), data, config, sampler=NoDuplicatesBatchSampler(), callbacks=[timer],
                      name=name, show_progress=False)
    trainer.train(work / name)
    step = statistics.median(timer.times)
    return {"steps_timed": len(timer.times), "median_step_s": round(step, 5), "triplets_per_s": round(BATCH / step, 1),
            "peak_gpu_memory_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3) if device.startswith("cuda") else None}


def store_throughput(model, texts: list[str], device: str, work: Path) -> dict:
    from sentcl.embeddings import embedder, encode
    from sentcl.embeddings.store import write_store

    precision = "fp32" if device == "cpu" else "auto"
    encode(model, texts[:256], cache=False, precision=precision, show_progress=False)  # warm-up
    started = StepTimer._now()
    encode(model, texts, cache=False, precision=precision, show_progress=False)
    plain = StepTimer._now() - started
    started = StepTimer._now()
    write_store(work / "store", embedder(model, cache=False, precision=precision, show_progress=False),
                np.arange(len(texts)), {"query": texts}, show_progress=False)
    stored = StepTimer._now() - started
    return {"texts": len(texts), "plain_encode_sentences_per_s": round(len(texts) / plain, 1),
            "store_write_sentences_per_s": round(len(texts) / stored, 1), "ratio": round(plain / stored, 4),
            "encode_precision": precision}


ASSUMPTIONS = [
    "random weights: step time and memory do not depend on weight values",
    "synthetic texts with NLI-like token lengths (queries 20 +- 8, indexes/negatives 11 +- 4 tokens)",
    "the paper profile's counts (its plan of runs, sentcl.chapters.rcl.plan): 4,968 steps of 64 per epoch (issue 23), "
    "entropy models early-stopped between 3 windows of 500 steps after the first (2,000 steps) and one epoch, "
    "60 final models of one epoch each evaluated 10 times on STS-B dev (3,000 sentences), 71 scored rows x seeds, "
    "Table 2's 5 folds on FAQIR (4,133 pairs) and COUGH (7,117), 3 epochs each with dev MAP every 10 %",
    "a final model with k regulators runs at the step time measured for the nearest of 0, 4, 8 regulators; "
    "FAQ pairs at the measured Eq. 1 step of NLI triplets",
    "every encoding (stores, evaluations, scoring) at the measured store-writing rate",
    "the regulators' stores hold random vectors (lookup cost, not values, is what is timed)",
    "checkpoints on the trainer's cadence (every 10 minutes of training or the profile's checkpoint_steps, whichever "
    "is sooner, and at the end), each the weights and Adam's moments, written at the rate measured on the CPU "
    "machine's disk (benchmarks/results/checkpoint_write_cpu.json), not the GPU machine's",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--seconds", type=float, default=200.0, help="training time measured, over the 4 stages")
    parser.add_argument("--precision", default="fp16", choices=("fp16", "bf16", "fp32"))
    parser.add_argument("--tiny", action="store_true", help="a tiny RoBERTa (a quick check off the GPU)")
    parser.add_argument("--store-texts", type=int, default=20_000)
    parser.add_argument("--project-only", action="store_true",
                        help="recompute the projection of the recorded --out file from its measurements (no GPU)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    from sentcl.chapters.rcl import rcl_paper_projection

    if args.project_only:
        record = json.loads(Path(args.out).read_text(encoding="utf-8"))
        record |= {"projection": rcl_paper_projection(record), "assumptions": ASSUMPTIONS}
        Path(args.out).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        print(json.dumps({k: v for k, v in record["projection"].items() if k != "table"}))
        return 0
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: use --device cpu (with --tiny for a quick check)")
    from sentcl.embeddings.store import write_store
    from sentcl.losses import EntropyLoss, RegulatorLoss

    started = time.perf_counter()
    rows = 4096 if args.tiny else 20_000
    data = synthetic_triplets(rows)
    results: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        folder = work / "roberta"
        base = build_encoder(folder, args.tiny, args.device)
        from sentcl.models import load_encoder

        def fresh():
            return load_encoder(folder, pooling="mean", max_seq_length=128, device=args.device)

        store_texts = [*data.columns["query"], *data.columns["index"]][: 2 * min(args.store_texts, rows)]
        results["store"] = store_throughput(base, store_texts, args.device, work)
        dim = base.get_embedding_dimension()
        rng = np.random.default_rng(0)
        stores = [write_store(work / f"aug{n}", lambda t: rng.standard_normal((len(t), dim), dtype=np.float32), data.ids,
                              {"query": data.columns["query"], "index": data.columns["index"]}, show_progress=False)
                  for n in range(4)]
        seconds = args.seconds / 4
        stages = {
            "entropy_eq2": lambda m: EntropyLoss(m, phi=0.01, scale=20.0),
            "plain_eq1": lambda m: RegulatorLoss(m, [], scale=20.0),
            "final_4_regulators": lambda m: RegulatorLoss(m, stores[:2], scale=20.0),
            "final_8_regulators": lambda m: RegulatorLoss(m, stores, scale=20.0),
        }
        for name, loss in stages.items():
            results[name] = measure(name, fresh, loss, data, seconds, args.precision, args.device, work)
            print(name, results[name], flush=True)
    device_name = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else "CPU"
    record = {
        "benchmark": "rcl_gpu",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "device": device_name,
        "measured": f"{'tiny RoBERTa' if args.tiny else 'RoBERTa-base architecture'}, random weights, batch {BATCH} triplets, {args.precision}",
        "versions": {"torch": torch.__version__, "cuda": torch.version.cuda, "python": sys.version.split()[0]},
        "settings": {"precision": args.precision, "seconds_per_stage": args.seconds / 4, "tiny": args.tiny,
                     "scale": 20.0, "max_seq_length": 128, "data": "synthetic NLI-length triplets"},
        "results": results,
        "assumptions": ASSUMPTIONS,
        "wall_time_s": round(time.perf_counter() - started, 1),
    }
    record["projection"] = rcl_paper_projection(record)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(record["projection"], indent=1))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    sys.exit(main())
