"""RCL's regulators cost little: a training step with 8 regulators (Eq. 3, 4 entropy models) against a plain
Eq. 1 step on the same batch, through the trainer (CPU).

The model: all-MiniLM-L6-v2 (the demo's encoder, bundled offline). The batch: 64 (premise, entailment,
contradiction) triplets of SNLI dev (``--data-dir``, default ``../shared/data``; the project's sample SNLI
otherwise), as the paper's batch of 64 with hard negatives. Both steps go through
``Trainer.step_gradients`` (tokenise, forward, loss, backward) on the same rows: Eq. 1 is
``RegulatorLoss`` with no stores, the other ``RegulatorLoss`` with 4 fp16 stores (8 regulators) looked
up by example id. The stores hold random vectors (what is timed is the lookup and the regulators' math,
not their values). The two kinds of step alternate, ``--repeats`` times each after a warm-up; the ratio
of the medians is the overhead. Target: <= 1.10. Writes ``benchmarks/results/rcl_step_overhead_cpu.json``::

    .venv/bin/python benchmarks/rcl_step_overhead.py [--repeats 8] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "rcl_step_overhead_cpu.json"


def triplets(data_dir: Path | None, rows: int):
    from sentcl.data import TrainingData, samples_root
    from sentcl.data.registry import load

    root = data_dir if data_dir is not None and (data_dir / "snli").is_dir() else samples_root()
    record = load("snli", "dev", data_dir=root)
    found: dict[str, dict[str, str]] = {}
    for s1, s2, label in zip(record.sentences1, record.sentences2, record.labels, strict=True):
        found.setdefault(s1, {}).setdefault(record.label_names[label], s2)
    picked = [(p, h["entailment"], h["contradiction"]) for p, h in found.items() if {"entailment", "contradiction"} <= set(h)]
    picked = picked[:rows]
    return TrainingData(dict(zip(["query", "index", "negative"], map(list, zip(*picked, strict=True)), strict=True))), str(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)

    from sentcl.book.output.run_records import environment
    from sentcl.embeddings.store import write_store
    from sentcl.io import atomic_write_json
    from sentcl.losses import RegulatorLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import SequentialBatchSampler, Trainer, TrainingConfig

    load_before = os.getloadavg()
    data, root = triplets(Path(args.data_dir), args.batch_size)
    model = load_encoder(MINILM)
    dim = model.get_embedding_dimension()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        stores = [
            write_store(Path(tmp) / f"s{n}", lambda t: rng.normal(size=(len(t), dim)), data.ids,
                        {"query": data.columns["query"], "index": data.columns["index"]}, show_progress=False)
            for n in range(4)
        ]
        config = TrainingConfig(batch_size=args.batch_size, max_steps=1)
        trainers = {
            "eq1": Trainer(model, RegulatorLoss(model, [], scale=20.0), data, config, sampler=SequentialBatchSampler(), show_progress=False),
            "regulators_8": Trainer(model, RegulatorLoss(model, stores, scale=20.0), data, config, sampler=SequentialBatchSampler(), show_progress=False),
        }
        batch = [np.arange(len(data))]
        times: dict[str, list[float]] = {name: [] for name in trainers}
        for trainer in trainers.values():  # warm-up
            trainer.step_gradients(batch)
        for _ in range(args.repeats):
            for name, trainer in trainers.items():
                started = time.perf_counter()
                trainer.step_gradients(batch)
                times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) for name, values in times.items()}
    ratio = median["regulators_8"] / median["eq1"]
    env = environment()
    record = {
        "benchmark": "rcl_step_overhead",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"device": env["device"], "cpu_count": os.cpu_count(), "torch_threads": __import__("torch").get_num_threads(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "versions": env["versions"],
        "settings": {"model": MINILM, "batch": f"{len(data)} SNLI dev triplets (query, index, hard negative) from {Path(root).name}",
                     "regulators": 8, "entropy_models": 4, "store_dtype": "float16", "repeats": args.repeats, "fp32": True},
        "step_s": {name: [round(t, 4) for t in values] for name, values in times.items()},
        "median_step_s": {name: round(v, 4) for name, v in median.items()},
        "ratio_regulators_8_vs_eq1": round(ratio, 4),
        "target": "<= 1.10",
        "meets_target": ratio <= 1.10,
    }
    atomic_write_json(args.out, record)
    print(f"Eq. 1 step {median['eq1']:.3f} s, 8 regulators {median['regulators_8']:.3f} s: x{ratio:.3f} -> {args.out}")
    return 0 if ratio <= 1.10 else 1


if __name__ == "__main__":
    sys.exit(main())
