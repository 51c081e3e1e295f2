"""Which demo setting gives IFCL's objective a gradient on all-MiniLM-L6-v2? Health of each method per setting.

The demo's stand-in was trained with a multiple-negatives loss on a billion sentence pairs: it may have
solved unsupervised SimCSE before training starts (a sentence is told from its dropout copy among 31
in-batch negatives at a loss near 0), and then the three methods differ only by terms that teach it
nothing. This script trains each method (SimCSE, IFCL w/o TL, IFCL: the chapter's ``IFCLLoss`` and
trainer) on all-MiniLM-L6-v2 for the same steps in two settings:

- ``wiki1m word repetition``: the slides' reading (``sentcl.data.augmentation.fusion_twins``) on the
  first wiki1m lines, as the paper profile trains;
- ``SNLI entailment twins``: the identical twin is the premise (dropout), the fraternal twin a hypothesis
  it entails (``sentcl.data.augmentation.entailment_twins``; SNLI dev),

and records each run's health (:mod:`sentcl.training.health`): the loss and each term in the first and
last logged windows (10 steps each), the cosine of its embeddings to the start's on the fixed probe, and
whether it counts as having trained (``active``). Trained models go to the artifact cache
(``$SENTCL_CACHE``).

    .venv/bin/python benchmarks/ifcl_demo_setting.py --data-dir ../shared/data   # -> results/ifcl_demo_setting_cpu.json
"""

from __future__ import annotations

import argparse
import datetime
import os
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

METHODS = {  # method -> (fraternal twins?, IFCLLoss options): the notebook's METHODS
    "SimCSE": (False, {"queue_batches": 0, "twin_weight": 0.0}),
    "IFCL w/o TL": (True, {"queue_batches": 3, "twin_weight": 0.0}),
    "IFCL": (True, {"queue_batches": 3, "twin_weight": 1.0}),
}


def settings(data_dir: str) -> dict:
    """Setting name -> a function ``fraternal -> TrainingData``."""
    from sentcl.data import load
    from sentcl.data.augmentation import entailment_twins, fusion_twins
    from sentcl.data.nli import prepare_nli

    wiki = list(dict.fromkeys(load("wiki1m", "prefix", data_dir=data_dir).texts))
    nli = prepare_nli([load("snli", "dev", data_dir=data_dir)])
    return {
        "wiki1m word repetition": lambda fraternal: fusion_twins(wiki, seed=0, fraternal=fraternal, name="wiki1m/prefix twins"),
        "SNLI entailment twins": lambda fraternal: entailment_twins(nli.entailment_pairs, fraternal=fraternal,
                                                                   name="snli/dev entailment twins"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(HERE / "results" / "ifcl_demo_setting_cpu.json"))
    args = parser.parse_args()

    from encode_throughput import machine

    from sentcl.io import atomic_write_json
    from sentcl.losses import IFCLLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import Trainer, TrainingConfig

    load_before = os.getloadavg()
    runs = []
    for setting, make in settings(args.data_dir).items():
        for method, (fraternal, options) in METHODS.items():
            data = make(fraternal)
            config = TrainingConfig(batch_size=args.batch_size, max_steps=args.steps, learning_rate=args.learning_rate,
                                    warmup_ratio=0.0, weight_decay=0.0, max_grad_norm=1.0, precision="fp32", seed=args.seed, checkpoint_steps=20)
            model = load_encoder(MINILM, pooling="mean", max_seq_length=32, device="cpu")
            loss = lambda m, options=options: IFCLLoss(m, temperature=0.05, forgetting_decay=0.9, **options)  # noqa: E731
            started = time.perf_counter()
            result = Trainer(model, loss, data, config, name=f"{method}, {setting}", show_progress=False).train_cached()
            health = result.health or {}
            runs.append({"setting": setting, "method": method, "rows": len(data),
                         "wall_s": round(time.perf_counter() - started, 1), "trained_here": result.trained,
                         "health": health})
            print(setting, "|", method, "|", {k: health.get(k) for k in ("loss_start", "loss_end", "start_cosine", "active")},
                  flush=True)
    atomic_write_json(args.out, {
        "benchmark": "ifcl_demo_setting",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_1_5_15_min": {"before": [round(x, 2) for x in load_before],
                                    "after": [round(x, 2) for x in os.getloadavg()]},
        "model": "sentence-transformers/all-MiniLM-L6-v2 (mean pooling, max length 32)",
        "settings": {"steps": args.steps, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                     "seed": args.seed, "temperature": 0.05, "queue_batches": 3, "forgetting_decay": 0.9,
                     "precision": "fp32", "log_steps": 10},
        "runs": runs,
    })
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
