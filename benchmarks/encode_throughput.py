"""Encoding throughput of all-MiniLM-L6-v2 on this CPU: fp32 versus bf16 autocast.

Encodes the distinct sentences of STS-B test (from the data root) with
``sentcl.embeddings.encode`` (cache off), alternating fp32 and bf16 runs so that both see
the same load on a shared machine, and reports sentences per second (median and best of
the repeats) with torch's default thread count and with one thread (on an oversubscribed
machine, OpenMP threads that spin-wait for each other can make two threads slower than
one), the cosine between the two precisions' embeddings, and the tiny test model's time
for 300 sentences. The machine description (CPU model, cores, bf16 flags, load average
before and after) goes into the result file.

    .venv/bin/python benchmarks/encode_throughput.py [--data-dir ../shared/data] [--n 512]
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np
import sentence_transformers
import torch
import transformers

from sentcl.data.registry import load
from sentcl.embeddings import encode
from sentcl.io import atomic_write_json
from sentcl.models import MINILM, load_encoder, resolve_model, tiny_model
from sentcl.precision import cpu_supports_bf16, resolve_precision

HERE = Path(__file__).resolve().parent


def machine() -> dict:
    model_name, flags = "unknown", set()
    with open("/proc/cpuinfo", encoding="utf-8") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model_name == "unknown":
                model_name = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    return {
        "cpu_model": model_name,
        "cpu_cores": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "omp_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY") if k in os.environ},
        "bf16_flags": sorted(flags & {"avx512_bf16", "amx_bf16", "amx_tile", "avx512f"}),
        "native_bf16": cpu_supports_bf16(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "sentence_transformers": sentence_transformers.__version__,
    }


def header(benchmark: str, load_before: tuple[float, float, float]) -> dict:
    """The opening fields of a benchmark's record: its name, the date, :func:`machine`, the load average before and now."""
    return {
        "benchmark": benchmark,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_1_5_15_min": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
    }


def timed(fn, *args, **kwargs) -> tuple[float, object]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data")
    parser.add_argument("--data-dir", default=default_data)
    parser.add_argument("--n", type=int, default=512, help="sentences per run")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(HERE / "results" / "encode_throughput_cpu.json"))
    args = parser.parse_args()

    pairs = load("stsbenchmark", "test", data_dir=args.data_dir)
    sentences = list(dict.fromkeys(pairs.sentences1 + pairs.sentences2))[: args.n]
    load_before = os.getloadavg()

    model = load_encoder(MINILM, device="cpu")
    for precision in ("fp32", "bf16"):  # warm-up: first-call allocations, oneDNN kernel selection
        encode(model, sentences[: args.batch_size], precision=precision, cache=False, show_progress=False)

    default_threads = torch.get_num_threads()
    seconds: dict[int, dict[str, list[float]]] = {}
    vectors = {}
    for threads in dict.fromkeys((default_threads, 1)):
        torch.set_num_threads(threads)
        seconds[threads] = {"fp32": [], "bf16": []}
        for _ in range(args.repeats):
            for precision in ("fp32", "bf16"):
                t, vectors[precision] = timed(
                    encode, model, sentences, batch_size=args.batch_size, precision=precision, cache=False, show_progress=False
                )
                seconds[threads][precision].append(t)
    torch.set_num_threads(default_threads)
    a, b = vectors["fp32"], vectors["bf16"]
    cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))

    tiny = tiny_model(0)
    tiny_texts = sentences[:300]
    encode(tiny, tiny_texts[:16], cache=False, show_progress=False)
    tiny_seconds = {}
    for threads in dict.fromkeys((default_threads, 1)):
        torch.set_num_threads(threads)
        for p in ("fp32", "bf16"):
            tiny_seconds[f"{threads}_threads_{p}"] = timed(
                encode, tiny, tiny_texts, precision=p, cache=False, show_progress=False
            )[0]
    torch.set_num_threads(default_threads)

    def summary(runs: list[float]) -> dict:
        return {
            "median_sentences_per_s": round(len(sentences) / statistics.median(runs), 1),
            "best_sentences_per_s": round(len(sentences) / min(runs), 1),
            "seconds": [round(x, 3) for x in runs],
        }

    throughput = {
        f"{threads}_threads": {
            **{p: summary(runs) for p, runs in by_precision.items()},
            "bf16_speedup_median": round(statistics.median(by_precision["fp32"]) / statistics.median(by_precision["bf16"]), 2),
        }
        for threads, by_precision in seconds.items()
    }
    result = {
        "benchmark": "encode_throughput",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "load_average_1_5_15_min": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in os.getloadavg()]},
        "model": MINILM,
        "model_source": resolve_model(MINILM),
        "texts": f"first {len(sentences)} distinct sentences of STS-B test ({args.data_dir})",
        "n_sentences": len(sentences),
        "batch_size": args.batch_size,
        "max_seq_length": model.max_seq_length,
        "repeats": args.repeats,
        "throughput": throughput,
        "auto_precision_here": resolve_precision("auto", "cpu"),
        "cosine_bf16_vs_fp32": {"min": float(cosine.min()), "mean": float(cosine.mean())},
        "tiny_model_300_sentences_s": {p: round(t, 3) for p, t in tiny_seconds.items()},
    }
    atomic_write_json(args.out, result)
    print(f"wrote {args.out}")
    for threads, r in throughput.items():
        for p in ("fp32", "bf16"):
            print(f"{threads} {p}: {r[p]['median_sentences_per_s']} sentences/s (median of {args.repeats}), best {r[p]['best_sentences_per_s']}")
        print(f"{threads}: bf16 speed-up {r['bf16_speedup_median']}x")
    print(f"cosine bf16 vs fp32: min {cosine.min():.6f}")
    print(f"tiny model, 300 sentences: {result['tiny_model_300_sentences_s']} s; load average {result['load_average_1_5_15_min']}")


if __name__ == "__main__":
    main()
