"""Several BSC runs on one GPU at once (issue 32, ``--runs-per-gpu``): the aggregate training throughput of K
concurrent runs, each a Ray task asking for 1/K of the GPU, as ``sentcl reproduce --executor ray --runs-per-gpu K``
schedules a chapter's runs.

What each run is: ``benchmarks/bsc_gpu.py``'s BSC step (a BERT of bert-base-uncased's architecture with random
weights, mean pooling, inputs of exactly 90 sub-tokens, sentcl's Trainer and BatchSoftmaxContrastiveLoss, AdamW
lr 2e-5, the paper's batch of 30 pairs, §5.2), in ``--precision``. For each K of ``--k`` (1, 2, 4), K tasks start
together on a local Ray cluster; each builds its model, trains for ``--seconds`` and returns the wall-clock time of
every step's end (CUDA synchronised) and its peak GPU memory (each task is its own process). The aggregate
throughput is the pairs of every step that ended in the window all K runs were past their ``--warmup`` steps and
still training, divided by that window: what the GPU does while K runs share it. The speed-up is that against K=1.
Nothing here changes a result: each run is the run it would be alone (the executor's tests show a stage's numbers
are the in-process ones).

On the GPU machine (one command; about K x seconds for each K, plus the models' start)::

    .venv/bin/python benchmarks/ray_runs_per_gpu.py --out benchmarks/results/ray_runs_per_gpu_h100.json

Test the script on a CPU in a minute (a 2-layer BERT; CPU tasks share the cores, so its numbers mean nothing)::

    .venv/bin/python benchmarks/ray_runs_per_gpu.py --device cpu --tiny --seconds 8 --k 1 2 --out /tmp/ray_k.json
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def one_run(device: str, tiny: bool, batch: int, precision: str, seconds: float, threads: int, barrier: str,
            k: int) -> dict[str, Any]:
    """One BSC run of ``seconds`` (a Ray task): the time every step ended (``time.time()``, so runs in other
    processes compare), and its peak GPU memory. It starts training once all ``k`` runs have built their model
    (each leaves a file in the folder ``barrier``), so that they train at the same time."""
    sys.path.insert(0, str(HERE))
    import torch
    from bsc_gpu import SEQ, StepTimer, TimeUp, encoder, texts

    from sentcl.data.records import TrainingData
    from sentcl.losses import BatchSoftmaxContrastiveLoss
    from sentcl.training import RandomBatchSampler, Trainer, TrainingConfig

    torch.set_num_threads(threads)
    cuda = device.startswith("cuda")
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    ends: list[float] = []

    class Ends(StepTimer):
        def on_step_end(self, trainer) -> None:
            super().on_step_end(trainer)
            ends.append(time.time())

    with tempfile.TemporaryDirectory() as tmp:
        model, _ = encoder(Path(tmp) / "model", tiny, device)
        n = batch * 200
        data = TrainingData(columns={"query": texts(n, 1), "answer": texts(n, 2)}, name=f"random words, {SEQ} tokens")
        config = TrainingConfig(epochs=1000, batch_size=batch, learning_rate=2e-5, optimizer="adamw", weight_decay=0.01,
                                warmup_ratio=0.1, max_grad_norm=1.0, precision=precision, seed=0, log_steps=10**9)
        trainer = Trainer(model, lambda m: BatchSoftmaxContrastiveLoss(m, 0.1), data, config, sampler=RandomBatchSampler(),
                          callbacks=[Ends(seconds, sync)], show_progress=False, name=f"bsc b{batch} {precision}")
        if cuda:
            torch.cuda.reset_peak_memory_stats()
        (Path(barrier) / str(os.getpid())).touch()
        while len(list(Path(barrier).iterdir())) < k:
            time.sleep(0.05)
        with contextlib.suppress(TimeUp):
            trainer.train(Path(tmp) / "run")
    peak = torch.cuda.max_memory_allocated() / 2**30 if cuda else None
    return {"ends": ends, "peak_gpu_memory_gib": None if peak is None else round(peak, 3)}


def aggregate(runs: list[dict[str, Any]], batch: int, warmup: int) -> dict[str, Any]:
    """The pairs per second of every step that ended while all ``runs`` were past their warm-up and training."""
    if any(len(r["ends"]) <= warmup + 1 for r in runs):
        raise SystemExit(f"a run made {min(len(r['ends']) for r in runs)} steps: give more --seconds than {warmup} warm-up steps take")
    start = max(r["ends"][warmup] for r in runs)
    end = min(r["ends"][-1] for r in runs)
    if end <= start:
        raise SystemExit("the runs did not train at the same time (no common window): give more --seconds")
    steps = sum(start < t <= end for r in runs for t in r["ends"])
    return {"window_s": round(end - start, 2), "steps_in_window": steps, "pairs_per_s": round(steps * batch / (end - start), 2),
            "steps_per_run": [len(r["ends"]) for r in runs], "peak_gpu_memory_gib": [r["peak_gpu_memory_gib"] for r in runs]}


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--tiny", action="store_true", help="a 2-layer BERT: tests the script in seconds")
    parser.add_argument("--k", type=int, nargs="+", default=[1, 2, 4], help="runs sharing the GPU")
    parser.add_argument("--batch", type=int, default=30, help="pairs per step (§5.2: 30 for most tasks)")
    parser.add_argument("--precision", default="bf16", choices=("fp32", "bf16"))
    parser.add_argument("--seconds", type=float, default=60.0, help="each run's training time")
    parser.add_argument("--warmup", type=int, default=5, help="steps of each run before the window opens")
    args = parser.parse_args(argv)
    import ray
    import torch

    cuda = args.device.startswith("cuda")
    if cuda and not torch.cuda.is_available():
        raise SystemExit("no CUDA device: pass --device cpu (with --tiny to test the script)")
    cpus = os.cpu_count() or 1
    ray.init(include_dashboard=False, log_to_driver=False, object_store_memory=200 * 2**20)
    measured = []
    try:
        for k in args.k:
            options = {"num_gpus": 1 / k, "num_cpus": 1} if cuda else {"num_cpus": 1}
            task = ray.remote(max_retries=0, **options)(one_run)
            threads = max(1, cpus // k)
            with tempfile.TemporaryDirectory() as barrier:
                runs = ray.get([task.remote(args.device, args.tiny, args.batch, args.precision, args.seconds, threads,
                                            barrier, k) for _ in range(k)])
            measured.append({"k": k, "torch_threads_per_run": threads, **aggregate(runs, args.batch, args.warmup)})
            print(measured[-1], flush=True)
    finally:
        ray.shutdown()
    alone = next((m["pairs_per_s"] for m in measured if m["k"] == 1), None)
    for m in measured:
        m["speed_up_vs_k1"] = round(m["pairs_per_s"] / alone, 2) if alone else None
    from sentcl.io import atomic_write_json

    device = torch.cuda.get_device_name(0) if cuda else f"CPU ({platform.processor() or platform.machine()}, {cpus} cores)"
    result = {
        "benchmark": "ray_runs_per_gpu", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"device": device, "cpus": cpus, "torch": torch.__version__, "cuda": torch.version.cuda,
                    "ray": ray.__version__, "python": platform.python_version()},
        "settings": {"model": "tiny 2-layer BERT (script test)" if args.tiny else "bert-base-uncased architecture, random weights",
                     "batch": args.batch, "seq_len": 90, "precision": args.precision, "seconds_per_run": args.seconds,
                     "warmup_steps": args.warmup, "loss": "sentcl BatchSoftmaxContrastiveLoss, tau 0.1",
                     "each run": "a Ray task asking for 1/K GPU and 1 CPU (CPU: 1 CPU), torch threads = cores / K"},
        "measured": measured,
    }
    atomic_write_json(args.out, result)
    print(f"wrote {args.out}")
    return args.out


if __name__ == "__main__":
    main()
