"""Resume after SIGKILL, for real (CPU): kill a training process, run the same command again, and it must
end with exactly the scores, history and weights of a run that was never interrupted.

The run: ``sentcl.models.tiny_model(0)`` trained with MultipleNegativesRankingLoss on the 120 sample
SNLI entailment pairs (``sentcl.data.samples_root()``, no data root needed), batches of 8 planned by
NoDuplicatesBatchSampler, 2 epochs (30 optimizer steps), a checkpoint every 2 steps, evaluation on the
sample STS-B dev at every half epoch with model selection on its Spearman correlation, seed 7, one
torch thread, dropout on. Each step sleeps ``--pace`` seconds after it (a callback; the numbers do not
change) so that the kill lands in the middle of the run.

Three processes of the same command (``resume_check.py train OUT``): the reference and the victim start
side by side; the victim gets SIGKILL as soon as a checkpoint at step ``--kill-after`` or later exists;
then the victim's command runs again in the victim's folder and continues from its last checkpoint.
The record compares the resumed run with the reference: the final dev score, every evaluation and
logged loss, the best step and a SHA-256 of the final weights. Writes
``benchmarks/results/resume_check_cpu.json`` (with the machine: CPU model, cores, load averages)::

    .venv/bin/python benchmarks/resume_check.py [--kill-after 12] [--pace 0.1] [--out PATH] [--workdir DIR]

``tests/training/test_resume.py`` runs this script and asserts what the record says.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import _resume  # the kill, the rerun and the record, shared with the other resume checks

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "resume_check_cpu.json"
CONFIG = {
    "batch_size": 8,
    "learning_rate": 1e-3,
    "epochs": 2,
    "checkpoint_steps": 2,
    "eval_fraction": 0.5,
    "metric_for_best": "spearman",
    "log_steps": 3,
    "seed": 7,
}
STEPS = 30
"""Optimizer steps of the run: 2 epochs of 120 pairs in batches of 8."""
COMPARED = ("final", "evaluations", "losses", "best_step", "weights")
"""What the resumed run must share, exactly, with the reference (keys of ``summary.json``)."""


def train(out: Path, pace: float) -> None:
    """One training run into ``out`` (what each process of the check runs); writes ``out/summary.json``."""
    import torch

    torch.set_num_threads(1)
    from sentcl.data import TrainingData, samples_root
    from sentcl.data.registry import load
    from sentcl.evaluation.scoring import dev_evaluator
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import tiny_model
    from sentcl.training import Callback, NoDuplicatesBatchSampler, Trainer, TrainingConfig

    class Pace(Callback):
        """Slows the steps down so that the kill lands in the middle of the run (numbers unchanged)."""

        name = "pace"

        def on_step_end(self, trainer):
            time.sleep(pace)

    spearman = dev_evaluator("STSb", load("stsbenchmark", "dev", samples_root()))
    data = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)
    trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, data, TrainingConfig(**CONFIG),
                      sampler=NoDuplicatesBatchSampler(), evaluator=spearman, callbacks=[Pace()], show_progress=False)
    _resume.write_summary(out, summary(trainer, trainer.train(out), spearman))


def summary(trainer, result, evaluate) -> dict[str, Any]:
    """What the check compares of a finished run: ``evaluate``'s final score, the evaluations, losses and
    best step, the step it resumed from, the weights' hash and the training's wall time."""
    return {
        "final": evaluate(trainer.model),
        "evaluations": result.evaluations,
        "losses": result.losses,
        "best_step": result.best_step,
        "resumed_from": result.resumed_from_step,
        "weights": _resume.weights_sha256(trainer.model),
        "wall_time_s": result.run["wall_time_s"],
    }


def _checkpoint_steps(out: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in (out / "checkpoints").glob("checkpoint-*"))


def check(workdir: Path, kill_after: int, pace: float, timeout: float = 240, *, script: str | Path = __file__,
          steps: int = STEPS, compared: tuple[str, ...] = COMPARED) -> dict[str, Any]:
    """Run ``script``'s reference and victim in ``workdir``, SIGKILL the victim once a checkpoint at step
    ``kill_after`` or later exists, run its command again; returns the comparison (``steps``: the run's
    optimizer steps; ``compared``: the summary keys that must be equal)."""
    if not 0 < kill_after < steps:
        raise SystemExit(f"--kill-after must be a step inside the run (1 to {steps - 1}), got {kill_after}")

    def reached(out: Path) -> int | None:
        done = _checkpoint_steps(out)
        return done[-1] if done and done[-1] >= kill_after else None

    rerun = _resume.kill_and_rerun(script, "train", workdir, pace, kill_when=reached, after_kill=_checkpoint_steps,
                                   not_killed=f"or stalled before a checkpoint at step >= {kill_after}", timeout=timeout)
    expected, got = rerun.expected, rerun.got
    same = rerun.same(compared)
    return {
        "killed_after_checkpoint": rerun.killed,
        "victim_returncode": rerun.victim_returncode,
        "checkpoints_at_kill": rerun.at_kill,
        "summary_after_kill": rerun.summary_after_kill,
        "resumed_from_step": got["resumed_from"],
        "checkpoints_left_after_resume": (workdir / "interrupted" / "checkpoints").exists(),
        "same": same,
        "identical": all(same.values()),
        "wall_time_s": {
            "whole_check": rerun.wall_time_s,
            "reference_training": expected["wall_time_s"],
            "resumed_training": got["wall_time_s"],
        },
        "reference": {k: v for k, v in expected.items() if k != "wall_time_s"},
        "resumed": {k: v for k, v in got.items() if k != "wall_time_s"},
    }


def main(argv: list[str] | None = None) -> int:
    args = _resume.parser(__doc__, "train", 0.1, RESULT, kill_after=12).parse_args(argv)
    if args.command == "train":
        train(Path(args.output_dir), args.pace)
        return 0
    settings = {
        "model": "sentcl.models.tiny_model(0), dropout on",
        "loss": "sentcl MultipleNegativesRankingLoss",
        "sampler": "NoDuplicatesBatchSampler",
        "data": "sample SNLI train entailment pairs (120), sample STS-B dev for evaluation",
        "config": CONFIG,
        "steps": STEPS,
        "torch_threads": 1,
        "pace_s": args.pace,
        "kill_after_step": args.kill_after,
    }
    command = " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])
    outcome = _resume.write_record(args, "resume_check", lambda workdir: check(workdir, args.kill_after, args.pace),
                                   settings, command=command)
    print(f"killed after the checkpoint of step {outcome['killed_after_checkpoint']}, resumed from step "
          f"{outcome['resumed_from_step']}: {'identical' if outcome['identical'] else 'DIFFERENT'} {outcome['same']}")
    print(f"-> {args.out}")
    return 0 if outcome["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
