"""Resume after SIGKILL, for real: kill a training process, run the same command again, and it must
end with exactly the scores and weights of a run that was never interrupted (CPU, same seed)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = r'''
"""One training run: MNRL on the sample SNLI entailment pairs, STS-B sample dev for model selection."""
import hashlib, json, sys, time
from pathlib import Path

import torch

torch.set_num_threads(1)
from sentcl.data.registry import load, samples_root
from sentcl.losses import MultipleNegativesRankingLoss
from sentcl.models import tiny_model
from sentcl.data import TrainingData
from sentcl.evaluation.sts import sts_dev_evaluator
from sentcl.training import Callback, NoDuplicatesBatchSampler, Trainer, TrainingConfig

out = Path(sys.argv[1])
spearman = sts_dev_evaluator(load("stsbenchmark", "dev", samples_root()))
data = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)


class Pace(Callback):
    """Slows the steps down so that the test can kill the process in the middle (numbers unchanged)."""

    name = "pace"

    def on_step_end(self, trainer):
        time.sleep(0.1)


config = TrainingConfig(batch_size=8, learning_rate=1e-3, epochs=2, checkpoint_steps=2, eval_fraction=0.5,
                        metric_for_best="spearman", log_steps=3, seed=7)
trainer = Trainer(tiny_model(0), MultipleNegativesRankingLoss, data, config, sampler=NoDuplicatesBatchSampler(),
                  evaluator=spearman, callbacks=[Pace()], show_progress=False)
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
}
(out / "summary.json").write_text(json.dumps(summary))
'''


def start(script: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(script), str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


def finish(process: subprocess.Popen, timeout: float = 240) -> None:
    output, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, output[-3000:]


@pytest.mark.slow
def test_sigkill_then_same_command_resumes_to_the_same_final_score(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    reference, interrupted = tmp_path / "reference", tmp_path / "interrupted"
    straight = start(script, reference)
    victim = start(script, interrupted)
    try:
        deadline = time.monotonic() + 240
        killed_after = None
        while time.monotonic() < deadline and victim.poll() is None:
            steps = sorted(int(p.name.split("-")[1]) for p in (interrupted / "checkpoints").glob("checkpoint-*"))
            if steps and steps[-1] >= 12:  # well inside the 30 steps of the run
                os.kill(victim.pid, signal.SIGKILL)
                killed_after = steps[-1]
                break
            time.sleep(0.05)
        victim.wait(timeout=60)
        assert killed_after is not None, "the run ended (or stalled) before it could be killed"
        assert victim.returncode == -signal.SIGKILL
        assert not (interrupted / "summary.json").exists()
        finish(straight)
    finally:
        for process in (straight, victim):
            if process.poll() is None:
                process.kill()
    finish(start(script, interrupted))  # the same command again

    expected = json.loads((reference / "summary.json").read_text())
    got = json.loads((interrupted / "summary.json").read_text())
    assert expected["resumed_from"] is None
    assert killed_after <= got["resumed_from"] < 30  # it continued from a checkpoint, not from scratch
    assert got["final"] == expected["final"]  # the same final dev score, exactly
    assert got["evaluations"] == expected["evaluations"] and got["losses"] == expected["losses"]
    assert got["best_step"] == expected["best_step"] and got["weights"] == expected["weights"]
    assert not (interrupted / "checkpoints").exists()  # cleaned up once the model was written
