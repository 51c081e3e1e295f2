"""What BSC's batch shuffling costs (Chernyavskiy et al. 2022, §3.2 and §5.2), on this CPU.

Targets (issue 9), each measured here and written to ``benchmarks/results/bsc_shuffling_cpu.json``
with the machine, its load and the versions:

1. **Example-based shuffling** (Algorithm 1, :func:`sentcl.training.shuffling.example_based_groups`)
   of 100,000 × 384 embeddings, n = 500 neighbours, groups of 8, in ≤ 15 s on 2 cores with an
   approximate (IVF) faiss index; the same with exact search (``IndexFlatIP``) for reference, and
   how far the approximate groups agree with the exact ones: (a) *neighbour recall*, the share of
   the exact 7 nearest neighbours that the IVF index returns among its 7, over 2,000 queries;
   (b) *group agreement*, the share of the IVF run's groups of 8 that are also groups of the exact
   run started from the same random order (the greedy walk diverges after the first difference,
   so this is a lower bound on how alike the batches are).
2. The same at **1,000,000** rows in ≤ 3 minutes (IVF only).
3. **Shingle shuffling** (Algorithm 2, :class:`~sentcl.training.shuffling.ShingleShuffler`) of
   1,000,000 pairs in ≤ 5 s: reading the words of the texts (once per dataset, cached by the
   shuffler; each distinct text once) and one epoch's shingles, sort and grouping, timed apart; the
   reading again with every row a distinct text (the worst case).
4. **Added time per epoch** as a share of training time (the paper: +8 %): one epoch of the demo's
   CQA-A setting (all-MiniLM-L6-v2, 90 tokens, batch 30, BSC) on the 3,790 pairs of SemEval-2016
   train part 2: the shuffler's re-encoding of the questions plus Algorithm 1, against the epoch's
   training steps (measured on ``--steps`` steps, extrapolated to the epoch).

The embeddings of 1–2 are synthetic: a mixture of 2,000 Gaussian clusters on the unit sphere in
384 dimensions (sentence embeddings are clustered; uniform noise would make every index look bad),
seeded. The texts of 3 are real sentences (STS Benchmark and SemEval-2016 CQA from the data root),
drawn with replacement to 1,000,000 rows.

    .venv/bin/python benchmarks/bsc_shuffling.py [--data-dir ../shared/data] [--skip-million] [--steps 4]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "bsc_shuffling_cpu.json"


def machine() -> dict:
    cpu = "unknown"
    with contextlib.suppress(OSError, StopIteration):
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    import faiss
    import torch

    return {"device": f"CPU: {cpu} ({os.cpu_count()} cores)", "cpu_count": os.cpu_count(),
            "faiss_threads": faiss.omp_get_max_threads(), "torch_threads": torch.get_num_threads(),
            "platform": platform.platform(), "python": platform.python_version(), "faiss": faiss.__version__,
            "torch": torch.__version__, "numpy": np.__version__}


def clustered(n: int, d: int = 384, centres: int = 2000, noise: float = 0.6, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, d)).astype(np.float32)
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    x = c[rng.integers(centres, size=n)] + noise / np.sqrt(d) * rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def example_based(n: int, exact: bool, seed: int = 0) -> dict:
    from sentcl.training.shuffling import example_based_groups, neighbour_index

    x = clustered(n, seed=seed)
    out = {"rows": n, "dim": 384, "neighbours": 500, "group_size": 8}
    started = time.perf_counter()
    ivf_groups = example_based_groups(x, 8, 500, np.random.default_rng(seed), index="ivf")
    out["ivf_s"] = round(time.perf_counter() - started, 2)
    out["ivf_groups"] = len(ivf_groups)
    out["ivf_singletons"] = sum(len(g) == 1 for g in ivf_groups)
    if exact:
        started = time.perf_counter()
        flat_groups = example_based_groups(x, 8, 500, np.random.default_rng(seed), index="flat")
        out["exact_s"] = round(time.perf_counter() - started, 2)
        full = [frozenset(g.tolist()) for g in flat_groups if len(g) == 8]
        mine = [frozenset(g.tolist()) for g in ivf_groups if len(g) == 8]
        out["group_agreement"] = round(len(set(mine) & set(full)) / max(1, len(mine)), 4)
        queries = np.random.default_rng(seed + 1).choice(n, 2000, replace=False)
        _, want = neighbour_index(x, "flat").search(x[queries], 8)
        _, got = neighbour_index(x, "ivf", seed=seed).search(x[queries], 8)
        out["neighbour_recall_at_7"] = round(float(np.mean([len(set(w[1:]) & set(g[1:])) / 7 for w, g in zip(want, got, strict=True)])), 4)
    return out


def texts_from(data_dir: Path | None) -> list[str]:
    from sentcl.data import load

    texts = []
    for name, split in (("stsbenchmark", "train"), ("stsbenchmark", "dev"), ("semeval2016_cqa_a", "train_part2")):
        try:
            record = load(name, split, data_dir)
        except Exception:  # noqa: BLE001 - a set missing from this root: use what is there
            continue
        texts += list(record.queries.values()) + list(record.corpus.values()) if hasattr(record, "queries") else \
            list(record.sentences1) + list(record.sentences2)
    if not texts:
        raise SystemExit("no texts found: pass --data-dir")
    return texts


def shingles(texts: list[str], n: int = 1_000_000) -> dict:
    from sentcl.data.records import TrainingData
    from sentcl.training.shuffling import ShingleShuffler

    rng = np.random.default_rng(0)
    rows = [texts[i] for i in rng.integers(len(texts), size=n)]
    data = TrainingData(columns={"a": rows, "b": rows}, name="bench")
    data.fingerprint()  # computed once per dataset by anyone; not the shuffler's cost
    sampler = ShingleShuffler(group_size=8, shingle_size=1)
    sampler.seed(0)
    started = time.perf_counter()
    sampler.tokens(data)
    words_s = time.perf_counter() - started
    epochs = []
    for _ in range(3):
        started = time.perf_counter()
        sampler.epoch_batches(data, 30)
        epochs.append(time.perf_counter() - started)
    # the worst case for reading the words: every row a text of its own (its row number appended)
    unique = TrainingData(columns={"a": [f"{t} {i}" for i, t in enumerate(rows)], "b": rows}, name="bench-distinct")
    unique.fingerprint()
    started = time.perf_counter()
    ShingleShuffler(group_size=8, shingle_size=1).tokens(unique)
    distinct_words_s = time.perf_counter() - started
    return {"rows": n, "distinct_texts": len(set(rows)), "group_size": 8, "shingle_size": 1,
            "read_words_once_s": round(words_s, 2), "epoch_s": [round(e, 2) for e in epochs],
            "first_epoch_total_s": round(words_s + epochs[0], 2),
            "read_words_once_all_distinct_s": round(distinct_words_s, 2)}


def added_time(data_dir: Path | None, steps: int) -> dict:
    """Demo CQA-A setting: one epoch's shuffle (re-encode + Algorithm 1) against its training steps."""
    import torch

    from sentcl.data import load
    from sentcl.data.judged_pairs import judged_pairs
    from sentcl.losses import BatchSoftmaxContrastiveLoss
    from sentcl.models import MINILM, load_encoder
    from sentcl.training import Trainer, TrainingConfig
    from sentcl.training.shuffling import ExampleBasedShuffler

    data = judged_pairs(load("semeval2016_cqa_a", "train_part2", data_dir))
    model = load_encoder(MINILM, max_seq_length=90)
    trainer = Trainer(model, BatchSoftmaxContrastiveLoss(model, 0.055), data, TrainingConfig(batch_size=30), show_progress=False)
    shuffler = ExampleBasedShuffler(8, 500)
    shuffler.seed(0)
    started = time.perf_counter()
    plan = shuffler.epoch_batches(data, 30, trainer.encode)
    shuffle_s = time.perf_counter() - started
    loss = trainer.loss
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    model.train()
    times = []
    for rows in plan[: steps + 1]:
        started = time.perf_counter()
        features = [model.preprocess(texts) for texts in data.batch_texts(rows)]
        value = loss(features, torch.as_tensor(data.labels[rows]))
        value.backward()
        optimizer.step()
        optimizer.zero_grad()
        times.append(time.perf_counter() - started)
    step_s = float(np.median(times[1:]))  # the first step warms up
    epoch_s = step_s * len(plan)
    return {"setting": f"all-MiniLM-L6-v2, 90 tokens, batch 30, BSC, {len(data):,} CQA-A pairs "
                       f"({len(set(data.columns['query'])):,} distinct questions), {len(plan)} steps per epoch",
            "shuffle_s": round(shuffle_s, 2), "step_s_median": round(step_s, 2), "steps_timed": len(times) - 1,
            "epoch_training_s_extrapolated": round(epoch_s, 1),
            "added_fraction": round(shuffle_s / epoch_s, 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--skip-million", action="store_true")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--out", type=Path, default=RESULT)
    args = parser.parse_args()
    data_dir = args.data_dir or (Path(os.environ["SENTCL_DATA"]) if "SENTCL_DATA" in os.environ else HERE.parent.parent / "shared" / "data")
    result = {"benchmark": "bsc_shuffling", "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
              "command": "bsc_shuffling.py " + " ".join(a for a in os.sys.argv[1:]), "machine": machine(),
              "load_average_before": [round(v, 2) for v in os.getloadavg()]}
    result["example_based_100k"] = example_based(100_000, exact=True)
    print(result["example_based_100k"], flush=True)
    if not args.skip_million:
        result["example_based_1m"] = example_based(1_000_000, exact=False)
        print(result["example_based_1m"], flush=True)
    result["shingles_1m"] = shingles(texts_from(data_dir))
    print(result["shingles_1m"], flush=True)
    result["added_time_per_epoch"] = added_time(data_dir, args.steps)
    print(result["added_time_per_epoch"], flush=True)
    result["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    e100, s1m, added = result["example_based_100k"], result["shingles_1m"], result["added_time_per_epoch"]
    table = [
        {"measure": "example-based, 100,000 x 384, IVF (target <= 15 s)", "value": f"{e100['ivf_s']} s"},
        {"measure": "example-based, 100,000 x 384, exact flat search", "value": f"{e100['exact_s']} s"},
        {"measure": "IVF neighbour recall@7 / groups of 8 identical to exact", "value": f"{e100['neighbour_recall_at_7']:.1%} / {e100['group_agreement']:.1%}"},
        {"measure": "shingle shuffling, 1,000,000 pairs, per epoch (target <= 5 s)", "value": f"{s1m['epoch_s'][0]} s (+ {s1m['read_words_once_s']} s reading the words once; "
                                                                                     f"{s1m['read_words_once_all_distinct_s']} s if every row is a distinct text)"},
        {"measure": "added time per epoch, demo CQA-A (paper: +8 %)", "value": f"{added['added_fraction']:+.1%}"},
    ]
    if "example_based_1m" in result:
        table.insert(2, {"measure": "example-based, 1,000,000 x 384, IVF (target <= 180 s)", "value": f"{result['example_based_1m']['ivf_s']} s"})
    result["table"] = table
    result["summary"] = "measured on this CPU; the synthetic embeddings and the setting of each line are in the file."
    from sentcl.io import atomic_write_json

    atomic_write_json(args.out, result)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
