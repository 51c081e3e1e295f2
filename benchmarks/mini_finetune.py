"""Does pretraining help? MNRL fine-tuning started from sentcl-mini and from the same BERT at its random
initialisation, same recipe, steps and seeds (issue 46's "Pretraining helps", measured before any chapter
moves to the mini).

The plainest fine-tuning run of the book: SBERT's MNRL on the entailment pairs of ``--datasets`` (SNLI dev by
default; ``--pairs`` a seeded subset per seed, as the MNRL-SBERT demo draws them), batch ``--batch-size``,
``--epochs``, mean pooling, fp32, scored by Spearman × 100 on STS-B test (all 1,379 pairs). The learning rate is
chosen by a rule fixed before any test score is read (``--rule``): ``loss``, the largest rate of ``--grid`` at
which the MNRL loss of sentcl-mini's seed-0 run falls (sentcl's health rule: ``learned``) and ends below its start
without diverging (no NaN, last window below the first), one rate for both starts; or ``dev``, each start its own
rate, the learned one with the highest STS-B dev score of its seed-0 run. Then ``--seeds`` runs from each start;
the difference of the means with a Welch interval over seeds (the test items fixed: an interval for these 1,379
pairs) says whether the mini starts ahead.

    .venv/bin/python benchmarks/mini_finetune.py --data-dir ../shared/data   # -> results/mini_finetune_cpu.json
    .venv/bin/python benchmarks/mini_finetune.py --data-dir ../shared/data --datasets snli/dev snli/test --pairs 2000 \
        --batch-size 12 --weight-decay 0.01 --out benchmarks/results/mini_finetune_mnrl_sbert_demo_cpu.json   # the MNRL-SBERT demo's MNRL run
    .venv/bin/python benchmarks/mini_finetune.py --data-dir ../shared/data --datasets snli/dev snli/test --pairs 2000 \
        --batch-size 12 --weight-decay 0.01 --rule dev --out benchmarks/results/mini_finetune_mnrl_sbert_demo_dev_rule_cpu.json
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


def run(start: str, lr: float, seed: int, pairs, stsb, batch_size: int, work: Path, epochs: int = 1, per_seed: int = 0,
        weight_decay: float = 0.0, dev=None) -> dict:
    from sentcl.data.records import subset
    from sentcl.embeddings import embedder
    from sentcl.evaluation.scoring import dev_evaluator, evaluate_tasks
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import load_encoder
    from sentcl.training import NoDuplicatesBatchSampler, Trainer, TrainingConfig

    pairs = subset(pairs, per_seed, seed, "--pairs") if per_seed else pairs
    model = load_encoder(start, pooling="mean")
    config = TrainingConfig(batch_size=batch_size, epochs=epochs, learning_rate=lr, seed=seed, log_steps=5,
                            weight_decay=weight_decay)
    began = time.perf_counter()
    result = Trainer(model, MultipleNegativesRankingLoss, pairs, config, sampler=NoDuplicatesBatchSampler(),
                     show_progress=False).train(work / f"{Path(start).name}-{lr:g}-{seed}")
    embed = embedder(model, cache=False, show_progress=False)
    score = evaluate_tasks(embed, {"STSb": stsb})["STSb"]["Spearman"]
    dev_score = {} if dev is None else {"stsb_dev": round(dev_evaluator("STSb", dev)(model)["spearman"], 3)}
    health = result.health or {}
    losses = [w["loss"] for w in result.losses]
    return {"start": Path(start).name, "lr": lr, "seed": seed, "stsb": round(score, 3), **dev_score, "steps": result.global_step,
            "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4), "learned": health.get("learned"),
            "active": health.get("active"), "start_cosine": health.get("start_cosine"),
            "seconds": round(time.perf_counter() - began, 1)}


RULES = {
    "loss": "one rate for both starts: the largest of the grid at which sentcl-mini's seed-0 MNRL loss is 'learned' "
            "(health rule) and ends below its start",
    "dev": "each start its own rate: of the grid's rates at which its seed-0 MNRL loss is 'learned' and ends below its "
           "start, the one with the highest STS-B dev Spearman (1,500 pairs; the papers choose their settings on it)",
}


def choose(grid: list[dict], rule: str) -> float:
    """The rate ``rule`` (:data:`RULES`) picks from one start's seed-0 grid."""
    fine = [r for r in grid if r["learned"] and math.isfinite(r["loss_last"]) and r["loss_last"] < r["loss_first"]]
    if not fine:
        raise SystemExit(f"no rate of the grid trains {grid[0]['start']}: widen --grid")
    return max(fine, key=lambda r: r["lr"] if rule == "loss" else r["stsb_dev"])["lr"]


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
    parser.add_argument("--datasets", nargs="+", default=["snli/dev"], metavar="DATASET/SPLIT",
                        help="the NLI files whose entailment pairs are trained on, merged")
    parser.add_argument("--weight-decay", type=float, default=0.0, help="AdamW's (the MNRL-SBERT chapter's: 0.01)")
    parser.add_argument("--rule", choices=sorted(RULES), default="loss", help="how the rate is chosen: " + "; ".join(
        f"{k}: {v}" for k, v in RULES.items()))
    parser.add_argument("--pairs", type=int, default=0, help="pairs per seed, a seeded subset (each seed its own); 0: all")
    parser.add_argument("--mini", type=Path, help="the pretrained model folder (default: the shipped sentcl-mini)")
    parser.add_argument("--out", default=str(HERE / "results" / "mini_finetune_cpu.json"))
    args = parser.parse_args()

    from encode_throughput import header

    from sentcl.data.nli import prepare_nli
    from sentcl.data.registry import load
    from sentcl.io import atomic_write_json
    from sentcl.pretraining.card import shipped_dir, verify

    pairs = prepare_nli([load(*name.split("/"), data_dir=args.data_dir) for name in args.datasets]).entailment_pairs
    stsb = load("stsbenchmark", "test", data_dir=args.data_dir)
    dev = load("stsbenchmark", "dev", data_dir=args.data_dir) if args.rule == "dev" else None
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        mini = args.mini or shipped_dir()
        starts = {"sentcl-mini": str(mini), "random init": str(random_init(mini, work / "random-init"))}
        common = (pairs, stsb, args.batch_size, work, args.epochs, args.pairs, args.weight_decay)
        if args.rule == "loss":
            grid = {"sentcl-mini": [run(starts["sentcl-mini"], lr, args.seeds[0], *common) for lr in sorted(args.grid)]}
        else:
            grid = {name: [run(path, lr, args.seeds[0], *common, dev=dev) for lr in sorted(args.grid)]
                    for name, path in starts.items()}
        for rows in grid.values():
            for row in rows:
                print("grid", row, flush=True)
        chosen = {name: choose(rows, args.rule) for name, rows in grid.items()}
        if args.rule == "loss":
            chosen["random init"] = chosen["sentcl-mini"]
        runs = {name: [run(path, chosen[name], seed, *common) for seed in args.seeds] for name, path in starts.items()}
    for name, rows in runs.items():
        print(name, [r["stsb"] for r in rows], flush=True)
    scores = {name: [r["stsb"] for r in rows] for name, rows in runs.items()}
    result = {
        **header("mini_finetune", load_before),
        "mini": verify(mini)["command"],
        "recipe": f"MNRL on the entailment pairs of {', '.join(args.datasets)} ({len(pairs)}"
                  + (f"; {args.pairs} a seed, a seeded subset" if args.pairs else "") + f"), batch {args.batch_size}, "
                  f"{args.epochs} epoch(s), AdamW weight decay {args.weight_decay:g}, mean pooling, fp32; "
                  "STS-B test Spearman x100 (1,379 pairs)",
        "rule": RULES[args.rule],
        "grid": grid,
        "chosen_lr": chosen,
        "runs": runs,
        "mean_stsb": {name: round(statistics.mean(v), 3) for name, v in scores.items()},
        "mini_minus_random": welch(scores["sentcl-mini"], scores["random init"]),
    }
    atomic_write_json(args.out, result)
    print(result["mean_stsb"], result["mini_minus_random"], f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
