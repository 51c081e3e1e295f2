"""Does pretraining help? MNRL fine-tuning started from sentcl-mini and from the same BERT at its random
initialisation, same recipe, steps and seeds (issue 46's "Pretraining helps", measured before any chapter
moves to the mini).

The plainest fine-tuning run of the book: SBERT's MNRL on SNLI dev's entailment pairs (the demo's NLI
rows), batch ``--batch-size``, one epoch, mean pooling, fp32, scored by Spearman × 100 on STS-B test
(all 1,379 pairs). The learning rate is chosen by a rule fixed before any score is read: the largest
rate of ``--grid`` at which the MNRL loss of sentcl-mini's seed-0 run falls (sentcl's health rule:
``learned``) and ends below its start without diverging (no NaN, last window below the first). Then
``--seeds`` runs from each start at that rate; the difference of the means with a Welch interval over
seeds (the test items fixed: an interval for these 1,379 pairs) says whether the mini starts ahead.

    .venv/bin/python benchmarks/mini_finetune.py --data-dir ../shared/data   # -> results/mini_finetune_cpu.json
    .venv/bin/python benchmarks/mini_finetune.py --data-dir ../shared/data --epochs 3 --grid 3e-4 1e-3 --seeds 0 1 2 \
        --out benchmarks/results/mini_finetune_3epochs_cpu.json      # does more fine-tuning let the mini catch up?
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def random_init(mini: Path, folder: Path) -> Path:
    """The mini's architecture and tokenizer at BERT's initialisation (its card's seed), exported as the mini is."""
    from transformers import AutoTokenizer, BertConfig

    from sentcl.pretraining.card import verify
    from sentcl.pretraining.mlm import export_random_init

    return export_random_init(BertConfig.from_pretrained(mini), AutoTokenizer.from_pretrained(mini), folder,
                              verify(mini)["config"]["seed"])


def run(start: str, lr: float, seed: int, pairs, stsb, batch_size: int, work: Path, epochs: int = 1) -> dict:
    from sentcl.embeddings import embedder
    from sentcl.evaluation.scoring import evaluate_tasks
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import load_encoder
    from sentcl.training import NoDuplicatesBatchSampler, Trainer, TrainingConfig

    model = load_encoder(start, pooling="mean")
    config = TrainingConfig(batch_size=batch_size, epochs=epochs, learning_rate=lr, seed=seed, log_steps=5)
    began = time.perf_counter()
    result = Trainer(model, MultipleNegativesRankingLoss, pairs, config, sampler=NoDuplicatesBatchSampler(),
                     show_progress=False).train(work / f"{Path(start).name}-{lr:g}-{seed}")
    score = evaluate_tasks(embedder(model, cache=False, show_progress=False), {"STSb": stsb})["STSb"]["Spearman"]
    health = result.health or {}
    losses = [w["loss"] for w in result.losses]
    return {"start": Path(start).name, "lr": lr, "seed": seed, "stsb": round(score, 3), "steps": result.global_step,
            "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4), "learned": health.get("learned"),
            "active": health.get("active"), "start_cosine": health.get("start_cosine"),
            "seconds": round(time.perf_counter() - began, 1)}


def welch(a: list[float], b: list[float]) -> dict:
    from scipy import stats

    diff = statistics.mean(a) - statistics.mean(b)
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    se = math.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = stats.t.ppf(0.975, dof) * se
    return {"difference": round(diff, 3), "ci95": [round(diff - half, 3), round(diff + half, 3)], "se": round(se, 3),
            "dof": round(dof, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--grid", type=float, nargs="+", default=[1e-4, 3e-4, 1e-3])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=1, help="passes over the pairs (the grid's runs too)")
    parser.add_argument("--mini", type=Path, help="the pretrained model folder (default: the shipped sentcl-mini)")
    parser.add_argument("--out", default=str(HERE / "results" / "mini_finetune_cpu.json"))
    args = parser.parse_args()

    from encode_throughput import header

    from sentcl.data import TrainingData
    from sentcl.data.registry import load
    from sentcl.io import atomic_write_json
    from sentcl.pretraining.card import shipped_dir, verify

    pairs = TrainingData.from_record(load("snli", "dev", data_dir=args.data_dir).with_label("entailment"), labels=False)
    stsb = load("stsbenchmark", "test", data_dir=args.data_dir)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        mini = args.mini or shipped_dir()
        starts = {"sentcl-mini": str(mini), "random init": str(random_init(mini, work / "random-init"))}
        grid = [run(starts["sentcl-mini"], lr, args.seeds[0], pairs, stsb, args.batch_size, work, args.epochs)
                for lr in sorted(args.grid)]
        for row in grid:
            print("grid", row, flush=True)
        fine = [r for r in grid if r["learned"] and math.isfinite(r["loss_last"]) and r["loss_last"] < r["loss_first"]]
        if not fine:
            raise SystemExit("no rate of the grid trains sentcl-mini: widen --grid")
        lr = max(r["lr"] for r in fine)
        runs = {name: [run(path, lr, seed, pairs, stsb, args.batch_size, work, args.epochs) for seed in args.seeds]
                for name, path in starts.items()}
    for name, rows in runs.items():
        print(name, [r["stsb"] for r in rows], flush=True)
    scores = {name: [r["stsb"] for r in rows] for name, rows in runs.items()}
    result = {
        **header("mini_finetune", load_before),
        "mini": verify(mini)["command"],
        "recipe": f"MNRL on SNLI dev entailment pairs ({len(pairs)}), batch {args.batch_size}, {args.epochs} epoch(s), mean pooling, fp32; "
                  "STS-B test Spearman x100 (1,379 pairs)",
        "rule": "the largest rate of the grid at which sentcl-mini's seed-0 MNRL loss is 'learned' (health rule) and ends below its start",
        "grid": grid,
        "chosen_lr": lr,
        "runs": runs,
        "mean_stsb": {name: round(statistics.mean(v), 3) for name, v in scores.items()},
        "mini_minus_random": welch(scores["sentcl-mini"], scores["random init"]),
    }
    atomic_write_json(args.out, result)
    print(result["mean_stsb"], result["mini_minus_random"], f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
