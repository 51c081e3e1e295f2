"""The pretraining step of sentcl-mini: tokens per second in fp32 and bf16, on a CPU with native bf16
and as on one without it, and sentcl's loop beside transformers' own ``Trainer`` on the same model
and the same batches.

The pilot that sized the shipped run (issue 46). Each configuration trains the mini's BERT
(:class:`sentcl.pretraining.mlm.Architecture`, the 30,522-token vocabulary) on batches of 64 packed
sequences of 128 tokens of the real corpus, masked alike:

- ``sentcl``: :func:`sentcl.pretraining.mlm.pretrain`, the prediction head at the masked positions only;
- ``Trainer``: ``transformers.Trainer`` on ``BertForMaskedLM`` (its loss, the head at every position),
  fed the very batches sentcl's loop draws (same rows, same masks), AdamW at the same settings,
  ``bf16=True`` for bf16.

Each runs in its own process, natively and with oneDNN capped at ``AVX512_CORE`` (no bf16
instructions: a CPU without avx512_bf16; oneDNN reads ``$ONEDNN_MAX_CPU_ISA`` once); the median
step time after ``--warmup`` steps is reported.

    .venv/bin/python benchmarks/pretrain_step.py --data-dir ../shared/data   # -> results/pretrain_step_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CAPPED_ISA = "AVX512_CORE"
LOOPS = ("sentcl", "Trainer")


def _setup(data_dir: str, texts: int):
    from transformers import AutoTokenizer

    from sentcl.models import MINILM, resolve_model
    from sentcl.pretraining.corpus import build_corpus

    corpus = build_corpus(data_dir)
    tokenizer = AutoTokenizer.from_pretrained(resolve_model(MINILM), model_max_length=128)
    return corpus.train[:texts], corpus.heldout, tokenizer


def step_seconds(loop: str, precision: str, data_dir: str, steps: int, warmup: int, texts: int) -> list[float]:
    """Seconds of each step of ``loop`` in ``precision`` (after ``warmup`` steps), in this process's oneDNN."""
    from sentcl.pretraining.mlm import PretrainConfig, pretrain

    train, heldout, tokenizer = _setup(data_dir, texts)
    total = warmup + steps
    config = PretrainConfig(tokens=total * 64 * 128, vocab_size=0, precision=precision, eval_every=10_000, checkpoint_every=10_000)
    with tempfile.TemporaryDirectory() as work:
        if loop == "sentcl":
            _, result = pretrain(train, heldout, tokenizer, work, config, show_progress=False)
            return result.step_seconds[warmup:]
        return _trainer_steps(train, tokenizer, config, work)[warmup:]


def _trainer_steps(train, tokenizer, config, work: str) -> list[float]:
    """transformers' Trainer on BertForMaskedLM, fed sentcl's batches (rows and masks), timed per step."""
    import torch
    from transformers import BertForMaskedLM, DataCollatorForLanguageModeling, Trainer, TrainerCallback, TrainingArguments

    from sentcl.pretraining.mlm import batch_rows, masked_batch, pack

    rows = pack(train, tokenizer, config.seq_len, config.seed)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability)
    examples = []
    for step in range(config.steps):
        ids, labels = masked_batch(collator, rows[batch_rows(step, config.batch_size, len(rows), config.seed)], (config.seed, step))
        examples += [{"input_ids": i, "labels": lab} for i, lab in zip(ids, labels, strict=True)]

    times: list[float] = []

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            self.began = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            times.append(time.perf_counter() - self.began)

    torch.manual_seed(config.seed)
    model = BertForMaskedLM(config.architecture.bert_config(len(tokenizer)))
    args = TrainingArguments(
        output_dir=work, per_device_train_batch_size=config.batch_size, max_steps=config.steps, learning_rate=config.learning_rate,
        warmup_steps=round(config.warmup_fraction * config.steps), weight_decay=config.weight_decay,
        adam_beta1=config.adam_betas[0], adam_beta2=config.adam_betas[1], adam_epsilon=config.adam_eps, lr_scheduler_type="linear",
        bf16=config.precision == "bf16", use_cpu=True, report_to=[], logging_strategy="no", save_strategy="no",
        dataloader_num_workers=0, disable_tqdm=True, seed=config.seed,
    )
    trainer = Trainer(model=model, args=args, train_dataset=examples, callbacks=[Clock()],
                      data_collator=lambda batch: {k: torch.stack([b[k] for b in batch]) for k in batch[0]})
    trainer.train()
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--steps", type=int, default=6, help="timed steps per configuration")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--texts", type=int, default=6000, help="corpus texts packed for the batches")
    parser.add_argument("--out", default=str(HERE / "results" / "pretrain_step_cpu.json"))
    parser.add_argument("--child", nargs=2, metavar=("LOOP", "PRECISION"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(step_seconds(*args.child, args.data_dir, args.steps, args.warmup, args.texts)))
        return

    from encode_throughput import header

    from sentcl.io import atomic_write_json

    load_before = os.getloadavg()
    measured: dict = {}
    for label, isa in (("native", None), (f"oneDNN capped at {CAPPED_ISA} (no bf16 instructions)", CAPPED_ISA)):
        env = {**os.environ, **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {}), "PYTHONWARNINGS": "ignore"}
        for precision in ("fp32", "bf16"):
            for loop in LOOPS:
                proc = subprocess.run([sys.executable, __file__, "--child", loop, precision, "--data-dir", args.data_dir,
                                       "--steps", str(args.steps), "--warmup", str(args.warmup), "--texts", str(args.texts)],
                                      env=env, capture_output=True, text=True, check=True)
                times = json.loads(proc.stdout.strip().splitlines()[-1])
                median = statistics.median(times)
                measured.setdefault(label, {}).setdefault(precision, {})[loop] = {
                    "s_per_step": round(median, 3), "tokens_per_s": round(64 * 128 / median), "steps": [round(t, 3) for t in times]}
                print(label, precision, loop, measured[label][precision][loop]["s_per_step"], flush=True)
    ratios = {label: {p: round(v["sentcl"]["s_per_step"] / v["Trainer"]["s_per_step"], 3) for p, v in by.items()}
              for label, by in measured.items()}
    result = {
        **header("pretrain_step", load_before),
        "model": "sentcl-mini's BERT (4 layers, hidden 256, 4 heads, feed-forward 1024, 30,522-token vocabulary)",
        "batch": "64 packed sequences of 128 tokens of the pretraining corpus, 15 % masked (the same rows and masks for both loops)",
        "measured": measured,
        "sentcl_over_trainer_step_time": ratios,
        "settings": {"timed_steps": args.steps, "warmup_steps": args.warmup, "texts": args.texts},
    }
    atomic_write_json(args.out, result)
    print(json.dumps(ratios), f"\nwrote {args.out}")


if __name__ == "__main__":
    main()
