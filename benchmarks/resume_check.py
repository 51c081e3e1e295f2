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

import argparse
import hashlib
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
    from sentcl.evaluation.sts import sts_dev_evaluator
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.models import tiny_model
    from sentcl.training import Callback, NoDuplicatesBatchSampler, Trainer, TrainingConfig

    class Pace(Callback):
        """Slows the steps down so that the kill lands in the middle of the run (numbers unchanged)."""

        name = "pace"

        def on_step_end(self, trainer):
            time.sleep(pace)

    spearman = sts_dev_evaluator(load("stsbenchmark", "dev", samples_root()))
    data = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)
    trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, data, TrainingConfig(**CONFIG),
                      sampler=NoDuplicatesBatchSampler(), evaluator=spearman, callbacks=[Pace()], show_progress=False)
    result = trainer.train(out)
    digest = hashlib.sha256()
    for name, tensor in sorted(trainer.model.state_dict().items()):
        digest.update(name.encode() + tensor.numpy().tobytes())
    summary = {
        "final": spearman(trainer.model),
        "evaluations": result.evaluations,
        "losses": result.losses,
        "best_step": result.best_step,
        "resumed_from": result.resumed_from_step,
        "weights": digest.hexdigest(),
        "wall_time_s": result.run["wall_time_s"],
    }
    (out / "summary.json").write_text(json.dumps(summary), encoding="utf-8")


def _start(out: Path, pace: float) -> subprocess.Popen:
    command = [sys.executable, str(Path(__file__).resolve()), "train", str(out), "--pace", str(pace)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _finish(process: subprocess.Popen, timeout: float) -> None:
    output, _ = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise RuntimeError(f"a training process failed (exit {process.returncode}):\n{output[-3000:]}")


def _checkpoint_steps(out: Path) -> list[int]:
    return sorted(int(p.name.split("-")[1]) for p in (out / "checkpoints").glob("checkpoint-*"))


def check(workdir: Path, kill_after: int, pace: float, timeout: float = 240) -> dict[str, Any]:
    """Run the reference and the victim in ``workdir``, SIGKILL the victim once a checkpoint at step
    ``kill_after`` or later exists, run its command again; returns the comparison."""
    if not 0 < kill_after < STEPS:
        raise SystemExit(f"--kill-after must be a step inside the run (1 to {STEPS - 1}), got {kill_after}")
    reference, interrupted = workdir / "reference", workdir / "interrupted"
    started = time.perf_counter()
    straight, victim = _start(reference, pace), _start(interrupted, pace)
    try:
        deadline = time.monotonic() + timeout
        killed_after = None
        while time.monotonic() < deadline and victim.poll() is None:
            steps = _checkpoint_steps(interrupted)
            if steps and steps[-1] >= kill_after:
                os.kill(victim.pid, signal.SIGKILL)
                killed_after = steps[-1]
                break
            time.sleep(0.05)
        victim.wait(timeout=60)
        if killed_after is None:
            raise RuntimeError(f"the victim ended (exit {victim.returncode}) or stalled before a checkpoint at step "
                               f">= {kill_after}: raise --pace")
        checkpoints_at_kill = _checkpoint_steps(interrupted)
        summary_after_kill = (interrupted / "summary.json").exists()
        _finish(straight, timeout)
    finally:
        for process in (straight, victim):
            if process.poll() is None:
                process.kill()
                process.wait()
    _finish(_start(interrupted, pace), timeout)  # the same command again
    expected = json.loads((reference / "summary.json").read_text(encoding="utf-8"))
    got = json.loads((interrupted / "summary.json").read_text(encoding="utf-8"))
    same = {key: got[key] == expected[key] for key in COMPARED}
    return {
        "killed_after_checkpoint": killed_after,
        "victim_returncode": victim.returncode,
        "checkpoints_at_kill": checkpoints_at_kill,
        "summary_after_kill": summary_after_kill,
        "resumed_from_step": got["resumed_from"],
        "checkpoints_left_after_resume": (interrupted / "checkpoints").exists(),
        "same": same,
        "identical": all(same.values()),
        "wall_time_s": {
            "whole_check": round(time.perf_counter() - started, 1),
            "reference_training": expected["wall_time_s"],
            "resumed_training": got["wall_time_s"],
        },
        "reference": {k: v for k, v in expected.items() if k != "wall_time_s"},
        "resumed": {k: v for k, v in got.items() if k != "wall_time_s"},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kill-after", type=int, default=12, help="kill once a checkpoint at this step or later exists")
    parser.add_argument("--pace", type=float, default=0.1, help="seconds each step sleeps after it")
    parser.add_argument("--out", default=str(RESULT))
    parser.add_argument("--workdir", default=None, help="where the runs train (default: a temporary folder)")
    commands = parser.add_subparsers(dest="command")
    one = commands.add_parser("train", help="one training run (what the check starts three times)")
    one.add_argument("output_dir")
    one.add_argument("--pace", type=float, default=0.1)
    args = parser.parse_args(argv)
    if args.command == "train":
        train(Path(args.output_dir), args.pace)
        return 0

    from sentcl.book.records import environment
    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        outcome = check(Path(args.workdir or tmp), args.kill_after, args.pace)
    env = environment()
    record = {
        "benchmark": "resume_check",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        "machine": {
            "device": env["device"],
            "cpu_count": os.cpu_count(),
            "platform": platform.platform(),
            "load_average_before": [round(x, 2) for x in load_before],
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        },
        "versions": env["versions"],
        "settings": {
            "model": "sentcl.models.tiny_model(0), dropout on",
            "loss": "sentcl MultipleNegativesRankingLoss",
            "sampler": "NoDuplicatesBatchSampler",
            "data": "sample SNLI train entailment pairs (120), sample STS-B dev for evaluation",
            "config": CONFIG,
            "steps": STEPS,
            "torch_threads": 1,
            "pace_s": args.pace,
            "kill_after_step": args.kill_after,
        },
        **outcome,
    }
    atomic_write_json(args.out, record)
    print(f"killed after the checkpoint of step {outcome['killed_after_checkpoint']}, resumed from step "
          f"{outcome['resumed_from_step']}: {'identical' if outcome['identical'] else 'DIFFERENT'} {outcome['same']}")
    print(f"-> {args.out}")
    return 0 if outcome["identical"] else 1


if __name__ == "__main__":
    sys.exit(main())
