"""IFCL resume after SIGKILL (CPU): the hippocampus queue is restored and the run ends exactly as one
never interrupted.

The run: ``sentcl.models.tiny_model(0)`` trained with :class:`sentcl.losses.IFCLLoss` (queue of k = 3
batches, forgetting decay 0.9, Twin loss weight 1, static margins) on the 200 sample wiki1m sentences
and their fusion twins (``sentcl.data.augmentation.fusion_twins``, seed 7), batches of 8, 2 epochs (50
optimizer steps), a checkpoint every 2 steps, evaluation on the sample STS-B dev twice an epoch with
model selection, seed 7, one torch thread, dropout on; each step sleeps ``--pace`` seconds (numbers
unchanged) so the kill lands mid-run. The kill, the processes and the comparison are those of
``benchmarks/resume_check.py`` (reused, not copied; the machinery they share is ``benchmarks/_resume.py``);
the summary adds a SHA-256 of the queue's final contents and the queue's size right after the resume.
Writes ``benchmarks/results/ifcl_resume_check_cpu.json``::

    .venv/bin/python benchmarks/ifcl_resume_check.py [--kill-after 20] [--pace 0.1] [--out PATH]
"""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import _resume  # noqa: E402  (the command line and the record, shared with the other resume checks)
import resume_check  # noqa: E402  (its kill-after-a-checkpoint check)

RESULT = HERE / "results" / "ifcl_resume_check_cpu.json"
CONFIG = {**resume_check.CONFIG, "learning_rate": 1e-3}
LOSS = {"temperature": 0.05, "queue_batches": 3, "forgetting_decay": 0.9, "twin_weight": 1.0, "margin_embeddings": "static"}
STEPS = 50
"""Optimizer steps: 2 epochs of 200 sentences in batches of 8."""


def train(out: Path, pace: float) -> None:
    """One IFCL training run into ``out``; writes ``out/summary.json`` (what each process runs)."""
    import torch

    torch.set_num_threads(1)
    from sentcl.data import samples_root
    from sentcl.data.augmentation import fusion_twins
    from sentcl.data.registry import load
    from sentcl.evaluation.scoring import dev_evaluator
    from sentcl.losses import IFCLLoss
    from sentcl.models import tiny_model
    from sentcl.training import Callback, Trainer, TrainingConfig

    class Pace(Callback):
        """Slows the steps (so the kill lands mid-run) and notes the queue's size at the first step it sees."""

        name = "pace"

        def __init__(self):
            self.first = None

        def on_step_end(self, trainer):
            if self.first is None:
                self.first = {"step": trainer.state.global_step, "queue_batches": len(trainer.loss.queue)}
            time.sleep(pace)

    spearman = dev_evaluator("STSb", load("stsbenchmark", "dev", samples_root()))
    data = fusion_twins(load("wiki1m", "train", samples_root()).texts, repetition_rate=0.32, seed=7, name="wiki1m sample twins")
    pace_cb = Pace()
    trainer = Trainer(tiny_model(0), lambda m: IFCLLoss(m, **LOSS), data, TrainingConfig(**CONFIG),
                      evaluator=spearman, callbacks=[pace_cb], show_progress=False)
    result = trainer.train(out)
    queue = hashlib.sha256()
    for tensor in trainer.loss.queue.get_extra_state()["batches"]:
        queue.update(tensor.float().numpy().tobytes())
    _resume.write_summary(out, {**resume_check.summary(trainer, result, spearman), "queue": queue.hexdigest(),
                                "first_step_seen": pace_cb.first})


def main(argv: list[str] | None = None) -> int:
    args = _resume.parser(__doc__, "train", 0.1, RESULT, kill_after=20).parse_args(argv)
    if args.command == "train":
        train(Path(args.output_dir), args.pace)
        return 0
    settings = {"model": "sentcl.models.tiny_model(0), dropout on", "loss": {"class": "sentcl IFCLLoss", **LOSS},
                "data": "sample wiki1m (200 sentences) + fusion twins (seed 7); sample STS-B dev for evaluation",
                "config": CONFIG, "steps": STEPS, "torch_threads": 1, "pace_s": args.pace, "kill_after_step": args.kill_after}

    def check(workdir: Path) -> dict:
        """resume_check's check, pointed at this file's run; adds whether the queue came back whole."""
        outcome = resume_check.check(workdir, args.kill_after, args.pace, script=__file__, steps=STEPS,
                                     compared=(*resume_check.COMPARED, "queue"))
        outcome["queue_restored"] = outcome["resumed"]["first_step_seen"]["queue_batches"] == LOSS["queue_batches"]
        return outcome

    outcome = _resume.write_record(args, "ifcl_resume_check", check, settings)
    ok = outcome["identical"] and outcome["queue_restored"]
    print(f"killed after the checkpoint of step {outcome['killed_after_checkpoint']}, resumed from step "
          f"{outcome['resumed_from_step']} with {outcome['resumed']['first_step_seen']['queue_batches']} queued "
          f"batches: {'identical' if ok else 'DIFFERENT'} {outcome['same']}")
    print(f"-> {args.out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
