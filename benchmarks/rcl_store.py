"""The augmented-embedding store (``sentcl.embeddings.store``): peak memory independent of the data size,
and write throughput against plain encoding (CPU).

**Memory.** ``write_store`` runs in a fresh process for 20,000 and for 200,000 sentences per column
(two columns, query and index, dimension 384 as all-MiniLM-L6-v2), with an encoder that returns random
vectors at once, so that what is measured is the store's own memory, not a model's. The process's peak
resident memory (``ru_maxrss``) is recorded with and without the store write (the texts alone), for both
sizes. Target: the two peaks differ by < 100 MB (a store of 200k x 2 x 384 fp16 values is 293 MiB; held in
memory it would show).

**Throughput.** all-MiniLM-L6-v2 encodes ``--texts`` distinct SNLI dev sentences (``--data-dir``; the
sample SNLI otherwise) plainly (``sentcl.embeddings.encode``, no cache, precision "auto": bf16 autocast on
CPUs with native bf16, fp32 here otherwise) and into a store with the same encoder (the default chunks of
16,384 texts, fp16 rows, flushed per chunk); alternated ``--repeats`` times, best of each. Target: the store
writes at >= 0.95x the plain encoding's sentences/s. Writes ``benchmarks/results/rcl_store_cpu.json``::

    .venv/bin/python benchmarks/rcl_store.py [--texts 2048] [--repeats 2] [--out PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "rcl_store_cpu.json"
DIM = 384


def memory_child(n: int, write: bool, folder: str) -> None:
    """One measurement process: build the texts, optionally write the store; print peak RSS (MiB)."""
    import numpy as np

    from sentcl.embeddings.store import write_store

    columns = {"query": [f"premise sentence number {k} of the corpus" for k in range(n)],
               "index": [f"hypothesis sentence number {k}" for k in range(n)]}
    rng = np.random.default_rng(0)
    if write:
        write_store(Path(folder) / "store", lambda t: rng.standard_normal((len(t), DIM), dtype=np.float32),
                    np.arange(n), columns, show_progress=False)
    print(json.dumps({"peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def peak(n: int, write: bool) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([sys.executable, __file__, "memory-child", str(n), str(int(write)), tmp],
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_rss_mib"]


def throughput(data_dir: Path, n: int, repeats: int) -> dict:
    from sentcl.data import samples_root
    from sentcl.data.registry import load
    from sentcl.embeddings import embedder, encode
    from sentcl.embeddings.store import write_store
    from sentcl.models import MINILM, load_encoder
    from sentcl.precision import resolve_precision

    root = data_dir if (data_dir / "snli").is_dir() else samples_root()
    record = load("snli", "dev", data_dir=root)
    texts = list(dict.fromkeys([*record.sentences1, *record.sentences2]))[:n]
    model = load_encoder(MINILM)
    encode(model, texts[:128], cache=False, show_progress=False)  # warm-up
    plain, stored = [], []
    for _ in range(repeats):
        started = time.perf_counter()
        encode(model, texts, cache=False, show_progress=False)
        plain.append(time.perf_counter() - started)
        with tempfile.TemporaryDirectory() as tmp:
            started = time.perf_counter()
            write_store(Path(tmp) / "s", embedder(model, cache=False, show_progress=False), list(range(len(texts))),
                        {"query": texts}, show_progress=False)
            stored.append(time.perf_counter() - started)
    best_plain, best_store = len(texts) / min(plain), len(texts) / min(stored)
    return {
        "texts": len(texts), "data": f"distinct SNLI dev sentences ({Path(root).name})", "model": MINILM,
        "precision": resolve_precision("auto"), "plain_s": [round(t, 2) for t in plain], "store_s": [round(t, 2) for t in stored],
        "plain_sentences_per_s": round(best_plain, 1), "store_sentences_per_s": round(best_store, 1),
        "ratio": round(best_store / best_plain, 4), "target": ">= 0.95", "meets_target": best_store / best_plain >= 0.95,
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "memory-child":
        memory_child(int(argv[1]), bool(int(argv[2])), argv[3])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--data-dir", default=str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--out", default=str(RESULT))
    args = parser.parse_args(argv)

    from sentcl.book.output.run_records import environment
    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    memory = {f"{n}": {"texts_only_mib": round(peak(n, False), 1), "with_store_write_mib": round(peak(n, True), 1)}
              for n in (20_000, 200_000)}
    difference = memory["200000"]["with_store_write_mib"] - memory["20000"]["with_store_write_mib"]
    store_only = {n: m["with_store_write_mib"] - m["texts_only_mib"] for n, m in memory.items()}
    record = {
        "benchmark": "rcl_store",
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "memory": {
            "sentences_per_column": memory,
            "columns": 2, "dim": DIM, "encoder": "random vectors (the store's own memory)",
            "peak_difference_200k_vs_20k_mib": round(difference, 1),
            "store_write_extra_mib": {n: round(v, 1) for n, v in store_only.items()},
            "store_size_200k_mib": round(200_000 * 2 * DIM * 2 / 2**20, 1),
            "target": "< 100 MB", "meets_target": difference < 100 * 1e6 / 2**20,
        },
    }
    if not args.skip_throughput:
        record["throughput"] = throughput(Path(args.data_dir), args.texts, args.repeats)
    env = environment()
    record["machine"] = {"device": env["device"], "cpu_count": os.cpu_count(),
                         "load_average_before": [round(x, 2) for x in load_before],
                         "load_average_after": [round(x, 2) for x in os.getloadavg()]}
    record["versions"] = env["versions"]
    atomic_write_json(args.out, record)
    print(json.dumps({k: v for k, v in record.items() if k in ("memory", "throughput")}, indent=1))
    ok = record["memory"]["meets_target"] and record.get("throughput", {}).get("meets_target", True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
