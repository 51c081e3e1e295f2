"""fp32 or bf16 on a CPU: what each costs and what it changes, on the demo profile's model.

Answers the question behind ``"auto"`` (:mod:`sentcl.precision`): should the book's default be the
same on every CPU? all-MiniLM-L6-v2 (the demo's encoder) is timed in both precisions, for encoding
(the distinct sentences of STS-B test, batch 64) and for training (MNRL steps of 32 SNLI pairs,
AdamW), twice: with oneDNN's native kernels, and with oneDNN capped at ``AVX512_CORE`` (no bf16
instructions: what a CPU without avx512_bf16 does; each in its own process, since oneDNN reads
``$ONEDNN_MAX_CPU_ISA`` once). Then what bf16 moves: the Spearman (x100) on STS-B test of the
untouched encoder encoded in fp32 and in bf16, and of models trained in fp32 and in bf16 (same seed,
data and steps; scored in fp32), beside the seed-to-seed spread of fp32 training.

    .venv/bin/python benchmarks/precision_cpu.py --data-dir ../shared/data   # -> results/precision_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPPED_ISA = "AVX512_CORE"


def _setup(data_dir: str):
    from sentcl.data import TrainingData
    from sentcl.data.registry import load

    stsb = load("stsbenchmark", "test", data_dir=data_dir)
    nli = load("snli", "dev", data_dir=data_dir)
    pairs = TrainingData.from_record(nli.with_label("entailment"), labels=False)
    return stsb, pairs


def timings(data_dir: str, n_sentences: int, steps: int, repeats: int) -> dict:
    """Seconds per sentence encoded and per training step, fp32 and bf16, in this process's oneDNN."""
    import numpy as np
    import torch

    from sentcl.embeddings import encode
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import Trainer, TrainingConfig

    stsb, pairs = _setup(data_dir)
    sentences = list(dict.fromkeys(stsb.sentences1 + stsb.sentences2))[:n_sentences]
    model = load_encoder(MINILM, device="cpu")
    out: dict = {"encode_sentences_per_s": {}, "train_s_per_step": {}}
    for precision in ("fp32", "bf16"):
        encode(model, sentences[:64], precision=precision, cache=False, show_progress=False)  # warm-up
    runs: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for _ in range(repeats):  # alternating, so that both see the same load
        for precision in runs:
            start = time.perf_counter()
            encode(model, sentences, batch_size=64, precision=precision, cache=False, show_progress=False)
            runs[precision].append(time.perf_counter() - start)
    out["encode_sentences_per_s"] = {p: round(len(sentences) / statistics.median(r), 1) for p, r in runs.items()}
    step_runs: dict[str, list[float]] = {"fp32": [], "bf16": []}
    for _ in range(repeats):
        for precision in step_runs:
            trainer = Trainer(load_encoder(MINILM, device="cpu"), MultipleNegativesRankingLoss, pairs,
                              TrainingConfig(batch_size=32, max_steps=steps + 1, precision=precision), show_progress=False)
            trainer.step_gradients([np.arange(32)])  # warm-up step (kernel selection)
            start = time.perf_counter()
            for k in range(steps):
                trainer.step_gradients([np.arange(32 * (k + 1), 32 * (k + 2))])
            step_runs[precision].append((time.perf_counter() - start) / steps)
    out["train_s_per_step"] = {p: round(statistics.median(r), 3) for p, r in step_runs.items()}
    out["torch_threads"] = torch.get_num_threads()
    out["oneDNN_max_isa"] = os.environ.get("ONEDNN_MAX_CPU_ISA", "native")
    return out


def scores(data_dir: str, train_steps: int, seeds: list[int], cache_dir: Path) -> dict:
    """STS-B test Spearman x100: the untouched encoder in fp32 vs bf16; models trained in fp32 vs bf16."""
    from sentcl.artifacts import ArtifactCache
    from sentcl.embeddings import embedder
    from sentcl.evaluation.scoring import evaluate_tasks
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import NoDuplicatesBatchSampler, Trainer, TrainingConfig

    stsb, pairs = _setup(data_dir)

    def spearman(model, precision="fp32") -> float:
        return evaluate_tasks(embedder(model, precision=precision, cache=False, show_progress=False), {"STSb": stsb})["STSb"]["Spearman"]

    base = load_encoder(MINILM, device="cpu")
    out = {"untouched": {p: round(spearman(base, p), 4) for p in ("fp32", "bf16")}, "trained": {}}
    cache = ArtifactCache(cache_dir)
    for precision in ("fp32", "bf16"):
        for seed in seeds:
            model = load_encoder(MINILM, device="cpu")
            config = TrainingConfig(batch_size=32, max_steps=train_steps, learning_rate=5e-5, precision=precision, seed=seed)
            Trainer(model, MultipleNegativesRankingLoss, pairs, config, sampler=NoDuplicatesBatchSampler(),
                    show_progress=False).train_cached(cache)
            out["trained"].setdefault(precision, {})[str(seed)] = round(spearman(model), 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--sentences", type=int, default=512)
    parser.add_argument("--steps", type=int, default=5, help="timed training steps per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--train-steps", type=int, default=60, help="steps of each trained model whose score is compared")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--out", default=str(HERE / "results" / "precision_cpu.json"))
    parser.add_argument("--timings-only", action="store_true", help=argparse.SUPPRESS)  # a child process
    args = parser.parse_args()
    if args.timings_only:
        print(json.dumps(timings(args.data_dir, args.sentences, args.steps, args.repeats)))
        return

    from encode_throughput import machine

    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    measured = {}
    for label, isa in (("native", None), (f"oneDNN capped at {CAPPED_ISA} (no bf16 instructions)", CAPPED_ISA)):
        env = {**os.environ, **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {})}
        proc = subprocess.run([sys.executable, __file__, "--timings-only", "--data-dir", args.data_dir,
                               "--sentences", str(args.sentences), "--steps", str(args.steps), "--repeats", str(args.repeats)],
                              env=env, capture_output=True, text=True, check=True)
        measured[label] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(label, measured[label], flush=True)
    cache_dir = Path(os.environ.get("SENTCL_CACHE") or Path.home() / ".cache" / "sentcl") / "benchmark-precision"
    moved = scores(args.data_dir, args.train_steps, args.seeds, cache_dir)
    trained = {p: list(v.values()) for p, v in moved["trained"].items()}
    summary = {
        "untouched_bf16_minus_fp32": round(moved["untouched"]["bf16"] - moved["untouched"]["fp32"], 4),
        "trained_bf16_minus_fp32_per_seed": [round(b - f, 4) for f, b in zip(trained["fp32"], trained["bf16"], strict=True)],
        "fp32_seed_std": round(statistics.stdev(trained["fp32"]), 4) if len(trained["fp32"]) > 1 else None,
    }
    result = {
        "benchmark": "precision_cpu",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_1_5_15_min": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "model": "sentence-transformers/all-MiniLM-L6-v2",
        "timings": measured,
        "stsb_test_spearman": moved,
        "summary": summary,
        "settings": {"sentences": args.sentences, "timed_steps": args.steps, "repeats": args.repeats,
                     "train_steps": args.train_steps, "seeds": args.seeds, "train": "MNRL, batch 32, lr 5e-5, SNLI dev entailment pairs"},
    }
    atomic_write_json(args.out, result)
    print(json.dumps(summary), f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
