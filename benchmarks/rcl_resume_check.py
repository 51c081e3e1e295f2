"""Algorithm 1 resumes after SIGKILL (CPU): kill the RCL pipeline while it trains its *second* entropy model,
run the same command again, and it must continue without retraining the first entropy model or rewriting
its store, and end with exactly the results of a pipeline that was never interrupted.

The pipeline (``sentcl.training.entropy_models``): ``sentcl.models.tiny_model(0)``, the project's sample
SNLI train triplets (premise, first entailment, first contradiction), two entropy models (φ = 0.01, 0.02;
Eq. 2, batches of 8, early stopping after 3 steps without a lower loss, at most 12 steps), their fp16
stores, and the final model (Eq. 3, 4 regulators, 12 steps), seed 7, one torch thread. Each run has its
own artifact cache (``$SENTCL_CACHE`` in its folder). Each optimizer step sleeps ``--pace`` seconds (a
callback; the numbers do not change), so that the kill lands inside the second entropy model.

The reference and the victim start side by side; the victim gets SIGKILL once its second entropy model has
written a checkpoint at step 5 or later; the victim's command then runs again. The record compares: which stages the rerun
trained (the first entropy model must not be), the step the second resumed from, and, against the
reference, the entropy models' losses, the stores' contents, the final model's weights and its STS-B dev
score (sample). Writes ``benchmarks/results/rcl_resume_check_cpu.json``::

    .venv/bin/python benchmarks/rcl_resume_check.py [--pace 0.3] [--out PATH]
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import _resume  # the kill, the rerun and the record, shared with the other resume checks

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "rcl_resume_check_cpu.json"
PHIS = (0.01, 0.02)
KILL_AFTER = 5
"""The victim is killed once its second entropy model has a checkpoint at this step or later."""
COMPARED = ("entropy_losses", "stores", "final_weights", "final_dev_spearman", "final_losses")


def pipeline(out: Path, pace: float) -> None:
    """One run of the pipeline with its cache in ``out`` (what each process runs); writes ``out/summary.json``."""
    os.environ["SENTCL_CACHE"] = str(out / "cache")
    import numpy as np
    import torch

    torch.set_num_threads(1)
    from sentcl.data import TrainingData, samples_root
    from sentcl.data.registry import load
    from sentcl.evaluation.scoring import dev_evaluator
    from sentcl.models import tiny_model
    from sentcl.training import Callback, TrainingConfig
    from sentcl.training.entropy_models import augment, train_final_model

    class Pace(Callback):
        name = "pace"

        def on_step_end(self, trainer):
            time.sleep(pace)

    ran: list[dict[str, Any]] = []

    def train(trainer):
        (out / "phase.txt").write_text(trainer.name, encoding="utf-8")
        trainer.callbacks.append(Pace())
        trainer.show_progress = False
        result = trainer.train_cached()
        ran.append({"name": trainer.name, "trained": result.trained, "resumed_from_step": result.resumed_from_step})
        return result

    record = load("snli", "train", samples_root())
    found: dict[str, dict[str, str]] = {}
    for s1, s2, label in zip(record.sentences1, record.sentences2, record.labels, strict=True):
        found.setdefault(s1, {}).setdefault(record.label_names[label], s2)
    rows = [(p, h["entailment"], h["contradiction"]) for p, h in found.items() if {"entailment", "contradiction"} <= set(h)]
    data = TrainingData(dict(zip(["query", "index", "negative"], map(list, zip(*rows, strict=True)), strict=True)))
    base = lambda: tiny_model(0)  # noqa: E731
    config = TrainingConfig(batch_size=8, learning_rate=1e-3, max_steps=12, seed=7, log_steps=1, checkpoint_steps=1)
    augmented = augment(base, data, PHIS, config, scale=20.0, patience=3, train=train, show_progress=False)
    model, final = train_final_model(base, data, augmented.stores_for(PHIS), config, scale=20.0, train=train)
    summary = {
        "ran": ran,
        "triplets": len(data),
        "entropy_losses": {f"{p:g}": augmented.results[p].losses for p in PHIS},
        "entropy_steps": {f"{p:g}": augmented.results[p].global_step for p in PHIS},
        "stores": {f"{p:g}": hashlib.sha256(np.ascontiguousarray(augmented.stores[p].array("query")).tobytes()
                                            + np.ascontiguousarray(augmented.stores[p].array("index")).tobytes()).hexdigest()
                   for p in PHIS},
        "final_losses": final.losses,
        "final_weights": _resume.weights_sha256(model),
        "final_dev_spearman": dev_evaluator("STSb", load("stsbenchmark", "dev", samples_root()))(model)["spearman"],
    }
    _resume.write_summary(out, summary)


def _second_has_checkpoint(out: Path) -> bool:
    phase = out / "phase.txt"
    if not phase.is_file() or phase.read_text(encoding="utf-8") != f"entropy model phi={PHIS[1]:g}":
        return False
    steps = [int(p.name.split("-")[1]) for p in (out / "cache").glob("artifacts/train/.*.partial/checkpoints/checkpoint-*")]
    return bool(steps) and max(steps) >= KILL_AFTER


def check(workdir: Path, pace: float, timeout: float = 600) -> dict[str, Any]:
    rerun = _resume.kill_and_rerun(__file__, "pipeline", workdir, pace, kill_when=_second_has_checkpoint,
                                   not_killed="before its second entropy model checkpointed", timeout=timeout,
                                   what="pipeline")
    expected, got = rerun.expected, rerun.got
    first, second = (next(r for r in got["ran"] if r["name"] == f"entropy model phi={p:g}") for p in PHIS)
    same = rerun.same(COMPARED)
    return {
        "killed_during": f"entropy model phi={PHIS[1]:g}",
        "victim_returncode": rerun.victim_returncode,
        "summary_after_kill": rerun.summary_after_kill,
        "rerun_stages": got["ran"],
        "first_entropy_model_retrained": first["trained"],
        "second_entropy_model_resumed_from_step": second["resumed_from_step"],
        "same": same,
        "identical": all(same.values()) and not first["trained"] and bool(second["resumed_from_step"]),
        "wall_time_s": rerun.wall_time_s,
        "reference": {k: expected[k] for k in ("entropy_steps", "stores", "final_weights", "final_dev_spearman", "triplets")},
    }


def main(argv: list[str] | None = None) -> int:
    args = _resume.parser(__doc__, "pipeline", 0.3, RESULT).parse_args(argv)
    if args.command == "pipeline":
        pipeline(Path(args.output_dir), args.pace)
        return 0
    settings = {"model": "sentcl.models.tiny_model(0)", "data": "sample SNLI train triplets", "phis": list(PHIS),
                "entropy": "Eq. 2, batch 8, lr 1e-3, early stop after 3 steps without a lower loss, <= 12 steps",
                "final": "Eq. 3 with 4 regulators, 12 steps", "seed": 7, "torch_threads": 1, "pace_s": args.pace}
    outcome = _resume.write_record(args, "rcl_resume_check", lambda workdir: check(workdir, args.pace), settings,
                                   with_platform=False)
    print(f"killed during the second entropy model; rerun: first retrained={outcome['first_entropy_model_retrained']}, "
          f"second resumed from step {outcome['second_entropy_model_resumed_from_step']}; "
          f"{'identical' if outcome['identical'] else 'DIFFERENT'} {outcome['same']} -> {args.out}")
    return 0 if outcome["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
