"""What one training checkpoint of a BERT-base encoder costs: its bytes and the seconds to write it.

A BERT of bert-base-uncased's architecture (``transformers.BertConfig()``, random weights: the bytes do not
depend on their values) with AdamW's two moments after one step, written by the trainer's own
:func:`sentcl.training.checkpoint.save_checkpoint` (copy to the host, safetensors, atomic rename) into
``--dir`` (default: a temporary folder on the disk the runs would use), ``--repeats`` times; the median
seconds and the write rate (bytes/s) are what :mod:`sentcl.book.estimates.cost` projects checkpoints with. Writes
``benchmarks/results/checkpoint_write_cpu.json`` (``--out``)::

    .venv/bin/python benchmarks/checkpoint_write.py [--repeats 3] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))


def measure(repeats: int, folder: Path | None) -> dict:
    import torch
    from transformers import BertConfig, BertModel

    from sentcl.training.checkpoint import TrainerState, save_checkpoint

    torch.manual_seed(0)
    model = BertModel(BertConfig())
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=2e-5)
    for p in params:
        p.grad = torch.zeros_like(p)
    optimizer.step()
    seconds, sizes = [], []
    with tempfile.TemporaryDirectory(dir=folder) as out:
        for k in range(repeats):
            state = TrainerState("benchmark", 1, 1000, 1000, global_step=k + 1)
            started = time.perf_counter()
            written = save_checkpoint(out, state, {"model": model.state_dict(), "optimizer": optimizer.state_dict()}, keep=1)
            seconds.append(time.perf_counter() - started)
            sizes.append(sum(f.stat().st_size for f in written.iterdir()))
    return {"parameters": sum(p.numel() for p in params), "bytes": sizes[-1], "seconds": [round(s, 3) for s in seconds],
            "seconds_median": round(statistics.median(seconds), 3),
            "bytes_per_s": round(sizes[-1] / statistics.median(seconds))}


def main() -> None:
    from trainer_dispatch import cpu_name  # benchmarks/trainer_dispatch.py

    from sentcl.io import atomic_write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "checkpoint_write_cpu.json")
    args = parser.parse_args()
    result = measure(args.repeats, args.dir)
    atomic_write_json(args.out, {
        "what": __doc__.split("\n\n")[0], "machine": {"cpu": cpu_name()},
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": "BertConfig() (bert-base-uncased's architecture), AdamW moments", **result,
    })
    print(result)


if __name__ == "__main__":
    main()
