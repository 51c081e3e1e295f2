"""What the hippocampus queue and the Twin loss cost (CPU): target ≤ 5 % on a training step that encodes
the same three views without them, and queue memory bounded as training runs.

Two training steps on the same batches of the same encoder (forward of the three views, the loss,
backward, an AdamW step):

``without``  ``IFCLLoss(queue_batches=0, twin_weight=0)``: ℓ^I on both twins, no queue, no Twin loss;
``with``     ``IFCLLoss(queue_batches=3, forgetting_decay=0.9, twin_weight=1)``: the full objective
             (queue negatives, the static margins M_i, the Twin loss, the queue update).

They alternate step by step (so machine load hits both alike) after warm-up steps; the overhead is the
ratio of the median step times. Then the queue alone is pushed ``--pushes`` batches and its memory
recorded: it must stay at k · N · d · 4 bytes. Writes ``benchmarks/results/ifcl_overhead_cpu.json``::

    .venv/bin/python benchmarks/ifcl_overhead.py [--model sentence-transformers/all-MiniLM-L6-v2]
        [--batch 64] [--max-length 32] [--steps 12] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "ifcl_overhead_cpu.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--steps", type=int, default=12, help="timed steps of each variant")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--pushes", type=int, default=2000, help="batches pushed in the memory check")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)

    import torch

    from sentcl.book.output.run_records import environment
    from sentcl.data import load, samples_root
    from sentcl.data.augmentation import fusion_twins
    from sentcl.io import atomic_write_json
    from sentcl.losses import HippocampusQueue, IFCLLoss
    from sentcl.models import load_encoder

    torch.manual_seed(0)
    model = load_encoder(args.model, max_seq_length=args.max_length)
    model.train()
    texts = load("wiki1m", "train", samples_root()).texts
    data = fusion_twins(texts, seed=0)
    batches = [data.batch_texts(range(i, i + args.batch)) for i in range(0, len(data) - args.batch + 1, args.batch)]
    features = [[model.preprocess(col) for col in batch] for batch in batches]
    losses = {"without": IFCLLoss(model, queue_batches=0, twin_weight=0.0),
              "with": IFCLLoss(model, queue_batches=3, forgetting_decay=0.9, twin_weight=1.0)}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-7)  # tiny steps: the model barely moves
    times: dict[str, list[float]] = {name: [] for name in losses}
    load_before = os.getloadavg()
    for step in range(args.warmup + args.steps):
        order = list(losses) if step % 2 == 0 else list(reversed(losses))
        for name in order:
            cols = features[step % len(features)]
            started = time.perf_counter()
            value = losses[name](cols)
            value.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            if step >= args.warmup:
                times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(t) for name, t in times.items()}
    overhead = median["with"] / median["without"] - 1

    queue = HippocampusQueue(3, 0.9)
    dim = model.get_embedding_dimension()
    sizes = []
    for i in range(args.pushes):
        queue.push(torch.randn(args.batch, dim))
        if i in (0, 1, 2, 10, 100) or i == args.pushes - 1:
            sizes.append({"pushed": i + 1, "batches_held": len(queue), "bytes": queue.nbytes()})
    bound = 3 * args.batch * dim * 4
    env = environment()
    record = {
        "benchmark": "ifcl_overhead",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"device": env["device"], "cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "torch_threads": torch.get_num_threads(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "versions": env["versions"],
        "settings": {"model": args.model, "batch": args.batch, "max_length": args.max_length, "views": 3,
                     "steps": args.steps, "warmup": args.warmup, "optimizer": "AdamW",
                     "data": "sample wiki1m sentences + fusion twins"},
        "step_time_s": {name: {"median": round(median[name], 4), "all": [round(t, 4) for t in times[name]]}
                        for name in losses},
        "overhead": round(overhead, 4),
        "target": "<= 0.05",
        "meets_target": overhead <= 0.05,
        "queue_memory": {"bound_bytes": bound, "samples": sizes, "bounded": all(s["bytes"] <= bound for s in sizes)},
    }
    atomic_write_json(args.out, record)
    print(f"median step: without {median['without']:.3f} s, with {median['with']:.3f} s: overhead {overhead:+.1%} "
          f"(target <= 5%); queue memory after {args.pushes} pushes {sizes[-1]['bytes']:,} B (bound {bound:,} B)")
    print(f"-> {args.out}")
    return 0 if record["meets_target"] and record["queue_memory"]["bounded"] else 1


if __name__ == "__main__":
    sys.exit(main())
