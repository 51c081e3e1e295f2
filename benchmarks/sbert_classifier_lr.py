"""Does SBERT's softmax loss learn in the MNRL-SBERT demo's budget? Health per classifier learning rate.

The demo trains the softmax baseline on all-MiniLM-L6-v2 for 125 steps of 16 labelled SNLI pairs at 2e-5
(2,000 rows per seed). SBERT's classifier (a fresh ``nn.Linear`` on (u, v, |u - v|)) trains at the encoder's
rate over ~36,000 steps in the paper; in 125 it may stay at chance (ln 3) while the encoder drifts on its random
gradients: a model that moved without learning, on which no claim can rest. This script trains the demo's first
seed with the classifier at the run's rate and at its own rates (``SoftmaxLoss(classifier_lr=...)``), everything
else the demo's, and records each run's health (:mod:`sentcl.training.health`: whether the loss fell beyond its
window noise, whether it ends at chance, ``learned``) and its logged losses.

    .venv/bin/python benchmarks/sbert_classifier_lr.py --data-dir ../shared/data   # -> results/sbert_classifier_lr_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import os
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEALTH = ("fell", "fall", "fall_se", "chance", "at_chance", "learned", "learned_reason")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--rates", type=float, nargs="+", default=[0.0, 1e-3, 5e-3], help="0: the run's rate (SBERT's)")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(HERE / "results" / "sbert_classifier_lr_cpu.json"))
    args = parser.parse_args()

    from encode_throughput import machine

    from sentcl.data.nli import prepare_nli
    from sentcl.data.records import subset
    from sentcl.data.registry import load
    from sentcl.io import atomic_write_json
    from sentcl.losses import SoftmaxLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import RandomBatchSampler, Trainer, TrainingConfig

    nli = prepare_nli([load("snli", split, data_dir=args.data_dir) for split in ("dev", "test")])  # the demo's nli_datasets
    data = subset(nli.labelled_pairs, args.rows, args.seed, "train_pairs")
    load_before = os.getloadavg()
    runs = []
    for rate in args.rates:
        config = TrainingConfig(epochs=1, batch_size=16, learning_rate=2e-5, optimizer="adamw", weight_decay=0.01,
                                scheduler="linear", warmup_ratio=0.1, max_grad_norm=1.0, precision="fp32", seed=args.seed,
                                log_steps=5, checkpoint_minutes=None)
        model = load_encoder(MINILM, pooling="mean")
        loss = lambda m, rate=rate: SoftmaxLoss(m, num_labels=len(nli.label_names), classifier_lr=rate or None)  # noqa: E731
        started = time.perf_counter()
        with tempfile.TemporaryDirectory() as tmp:
            result = Trainer(model, loss, data, config, sampler=RandomBatchSampler(), show_progress=False).train(Path(tmp))
        runs.append({"classifier_lr": rate or "the run's (2e-05)", "steps": result.global_step,
                     "seconds": round(time.perf_counter() - started, 1),
                     "health": {k: result.health.get(k) for k in HEALTH},
                     "losses": [round(e["loss"], 4) for e in result.losses]})
        print(runs[-1]["classifier_lr"], runs[-1]["health"], flush=True)
    atomic_write_json(Path(args.out), {
        "benchmark": "sbert_classifier_lr", "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(), "load_before": load_before, "load_after": os.getloadavg(),
        "setting": {"model": MINILM, "data": data.name, "rows": args.rows, "batch_size": 16, "learning_rate": 2e-5,
                    "warmup_ratio": 0.1, "seed": args.seed},
        "runs": runs,
    })
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
