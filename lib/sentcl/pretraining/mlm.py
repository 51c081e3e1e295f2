"""Masked-language-model pretraining of sentcl-mini: a small BERT trained from random initialisation on
the corpus of :mod:`sentcl.pretraining.corpus`, the regime every paper of the book fine-tunes from.

The recipe, with the ecosystem's parts:

- **model**: transformers' ``BertForMaskedLM`` at :class:`Architecture` (4 layers, hidden 256, 4
  heads, feed-forward 1024, 128 positions), an uncased WordPiece vocabulary of 8,192 tokens trained on
  the corpus (:mod:`sentcl.pretraining.vocabulary`); weights drawn by BERT's own initialisation under ``seed``;
- **data**: the texts shuffled once, tokenized, joined with ``[SEP]`` and cut into sequences of
  ``[CLS]`` + 127 tokens (:func:`pack`): no padding anywhere; every epoch visits the sequences in a
  new order (:func:`batch_rows`);
- **masking**: transformers' ``DataCollatorForLanguageModeling``, 15 % of the non-special tokens
  chosen afresh at every step (80 % ``[MASK]``, 10 % a random token, 10 % kept), the loss at the
  chosen positions only;
- **loss** (:func:`mlm_loss`): the prediction head (transform + the vocabulary-wide projection tied to
  the embeddings) computed **only at the masked positions**, about 15 % of them. The head is most of a
  small model's work at every position: on 2 CPU cores this alone makes a step 2.9 times faster
  (``benchmarks/results/pretrain_throughput_cpu.json``), with the same loss as ``BertForMaskedLM``'s
  own (``tests/pretraining/test_mlm.py``);
- **optimiser**: AdamW (no decay on biases and LayerNorm), a linear warm-up over ``warmup_fraction``
  of the steps, then a linear decay to 0 (transformers' ``get_linear_schedule_with_warmup``);
- **precision**: bf16 autocast when asked (``precision="bf16"``; the recorded run used it, on a CPU
  with native bf16: 2 times faster again), master weights and the loss in fp32.

Every step's batch, masks and dropout draws follow from (``seed``, step) alone, so a run killed and
resumed from its last checkpoint (every ``checkpoint_every`` steps, written atomically) goes on
exactly as if it had not stopped (``tests/pretraining/test_mlm.py``). The held-out loss, every
``eval_every`` steps, masks the held-out sequences the same way at every evaluation, so its curve
compares like with like.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import ConfigError, check_choice, check_number, check_positive_int
from ..hashing import stable_hash, texts_hash
from ..io import atomic_directory, atomic_write_json, read_json
from ..precision import PRECISIONS, autocast, resolve_precision
from ..progress import progress_bar

MINILM_VOCAB = 30_522
"""The size of the vocabulary all-MiniLM-L6-v2 ships (BERT's uncased), ``vocab_size`` 0."""


@dataclass(frozen=True)
class Architecture:
    """sentcl-mini's BERT (the issue's starting point: BERT-base's shape at a quarter of its width and a third of its depth)."""

    layers: int = 4
    hidden: int = 256
    heads: int = 4
    intermediate: int = 1024
    positions: int = 128

    def bert_config(self, vocab_size: int, **extra: Any):
        from transformers import BertConfig

        return BertConfig(vocab_size=vocab_size, hidden_size=self.hidden, num_hidden_layers=self.layers,
                          num_attention_heads=self.heads, intermediate_size=self.intermediate,
                          max_position_embeddings=self.positions, **extra)


@dataclass(frozen=True)
class PretrainConfig:
    """Everything that decides the pretrained weights (with the corpus and the tokenizer)."""

    tokens: int = 30_000_000
    """The budget in training tokens (sequence positions, [CLS] and [SEP] included): steps = tokens / (batch × length).
    30 M, about 23 passes over the corpus' 1.3 M: with the corpus' own vocabulary the held-out loss stays near the
    unigram level for about 10 M tokens, then falls (``benchmarks/README.md``: a 12 M-token run ended 0.75 nats below
    it, the 30 M-token run 2.43)."""
    batch_size: int = 64
    seq_len: int = 128
    vocab_size: int = 8192
    """A WordPiece vocabulary of this many tokens trained on the corpus (:mod:`sentcl.pretraining.vocabulary`, which
    says why); 0: the 30,522-token vocabulary all-MiniLM-L6-v2 ships (the first shipped mini's)."""
    learning_rate: float = 1e-3
    warmup_fraction: float = 0.06
    weight_decay: float = 0.01
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-6
    mlm_probability: float = 0.15
    eval_every: int = 100
    checkpoint_every: int = 100
    seed: int = 0
    precision: str = "auto"
    architecture: Architecture = field(default_factory=Architecture)

    def __post_init__(self) -> None:
        for name in ("tokens", "batch_size", "seq_len", "eval_every", "checkpoint_every"):
            check_positive_int(name, getattr(self, name))
        if self.vocab_size and self.vocab_size < 256:
            raise ConfigError(f"vocab_size {self.vocab_size}: expected 0 (all-MiniLM-L6-v2's vocabulary) or at least 256")
        check_number("learning_rate", self.learning_rate, low=0.0, low_open=True)
        check_number("warmup_fraction", self.warmup_fraction, low=0.0, high=1.0)
        check_number("mlm_probability", self.mlm_probability, low=0.0, high=1.0, low_open=True)
        check_choice("precision", self.precision, PRECISIONS)
        if self.seq_len > self.architecture.positions:
            raise ConfigError(f"seq_len {self.seq_len} exceeds the model's {self.architecture.positions} positions")

    @property
    def steps(self) -> int:
        return max(1, math.ceil(self.tokens / (self.batch_size * self.seq_len)))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ------------------------------------------------------------------------------------------ data


def pack(texts: Sequence[str], tokenizer, seq_len: int, seed: int) -> np.ndarray:
    """``texts`` shuffled with ``seed``, tokenized without special tokens, each followed by ``[SEP]``,
    and cut into rows of ``[CLS]`` + ``seq_len - 1`` tokens (int32, ``[rows, seq_len]``); a text may
    run on into the next row. The last, shorter piece is dropped."""
    order = np.random.default_rng(seed).permutation(len(texts))
    ids = tokenizer([texts[i] for i in order], add_special_tokens=False, verbose=False)["input_ids"]
    stream = np.fromiter((t for row in ids for t in (*row, tokenizer.sep_token_id)), dtype=np.int32)
    width = seq_len - 1
    rows = len(stream) // width
    if rows == 0:
        raise ConfigError(f"the corpus gives {len(stream)} tokens, fewer than one sequence of {seq_len}")
    body = stream[: rows * width].reshape(rows, width)
    return np.concatenate([np.full((rows, 1), tokenizer.cls_token_id, dtype=np.int32), body], axis=1)


def batch_rows(step: int, batch_size: int, rows: int, seed: int) -> np.ndarray:
    """The rows of step ``step``'s batch: epoch after epoch, each epoch a fresh permutation of the
    ``rows`` sequences drawn from (``seed``, epoch); a batch may straddle two epochs."""
    positions = np.arange(step * batch_size, (step + 1) * batch_size)
    epochs, within = np.divmod(positions, rows)
    out = np.empty(batch_size, dtype=np.int64)
    for epoch in np.unique(epochs):
        permutation = np.random.default_rng([seed, int(epoch)]).permutation(rows)
        out[epochs == epoch] = permutation[within[epochs == epoch]]
    return out


def masked_batch(collator, rows: np.ndarray, seed: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """``rows`` masked by ``collator`` (a ``DataCollatorForLanguageModeling``) with a generator seeded
    by ``seed``: (input ids, labels with -100 where no loss is taken)."""
    collator.generator = torch.Generator().manual_seed(int(stable_hash(list(seed), 15), 16))
    inputs = torch.from_numpy(rows.astype(np.int64))
    special = (inputs == collator.tokenizer.cls_token_id) | (inputs == collator.tokenizer.sep_token_id)
    return collator.torch_mask_tokens(inputs.clone(), special_tokens_mask=special)


# ------------------------------------------------------------------------------------------ loss


def mlm_loss(model, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Masked-language-modelling cross-entropy (Devlin et al. 2019, §3.1 Task #1), mean over the
    masked positions, with the prediction head computed at those positions only: the same value as
    ``BertForMaskedLM(input_ids, labels=labels).loss``, without the vocabulary projection of the
    unmasked ~85 %."""
    hidden = model.bert(input_ids=input_ids).last_hidden_state
    where = labels != -100
    logits = model.cls(hidden[where])
    return F.cross_entropy(logits.float(), labels[where])


# ------------------------------------------------------------------------------------------ training


@dataclass
class PretrainResult:
    """What a finished run did: its configuration, the per-step losses and the held-out curve."""

    config: dict[str, Any]
    steps: int
    train_rows: int
    heldout_rows: int
    precision: str
    losses: list[float]
    learning_rates: list[float]
    step_seconds: list[float]
    """Each step's wall time: batch, masking, forward, backward, optimiser (not the held-out evaluations)."""
    heldout: list[tuple[int, float]]
    train_tokens: int
    """The corpus' tokens as packed (every position but [CLS]: its [SEP]s included)."""
    unigram_entropy: float
    """The packed corpus' unigram entropy in nats, special tokens left out (:func:`sentcl.pretraining.card.unigram_entropy`)."""
    seconds: float
    tokens_per_second: float
    resumed_from: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def run_key(config: PretrainConfig, train: Sequence[str], heldout: Sequence[str], tokenizer_name: str) -> str:
    """A key of everything that decides the weights: a checkpoint of another key is never resumed."""
    return stable_hash({"config": config.to_dict(), "train": texts_hash(train), "heldout": texts_hash(heldout),
                        "tokenizer": tokenizer_name, "format": 1})


def pretrain(
    train: Sequence[str],
    heldout: Sequence[str],
    tokenizer,
    work_dir: str | Path,
    config: PretrainConfig = PretrainConfig(),
    *,
    half_dir: str | Path | None = None,
    stop_after: int | None = None,
    show_progress: bool = True,
) -> tuple[Any, PretrainResult]:
    """Pretrain a ``BertForMaskedLM`` by the module doc's recipe; returns it (fp32) and its record.

    ``work_dir`` holds the resumable state (``checkpoint/``, the newest every ``checkpoint_every``
    steps); an existing checkpoint of the same run (:func:`run_key`) is resumed. At half the steps the
    encoder is exported to ``half_dir`` (:func:`export_encoder`). ``stop_after``: stop after that many
    steps, leaving a checkpoint (a test kills a run this way; the result is then partial).
    """
    from transformers import BertForMaskedLM, DataCollatorForLanguageModeling, get_linear_schedule_with_warmup

    from ..training.checkpoint import load_state, save_state
    from .card import unigram_entropy

    work = Path(work_dir)
    work.mkdir(parents=True, exist_ok=True)
    precision = resolve_precision(config.precision, "cpu")
    if len(tokenizer) > config.vocab_size if config.vocab_size else len(tokenizer) != MINILM_VOCAB:
        raise ConfigError(f"a tokenizer of {len(tokenizer):,} tokens for vocab_size {config.vocab_size} (0: all-MiniLM-L6-v2's "
                          f"{MINILM_VOCAB:,}; N: a vocabulary of at most N trained on the corpus)")
    key = run_key(config, train, heldout, tokenizer.name_or_path)
    train_rows = pack(train, tokenizer, config.seq_len, config.seed)
    heldout_rows = pack(heldout, tokenizer, config.seq_len, config.seed + 1)
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=config.mlm_probability)

    bert_config = config.architecture.bert_config(len(tokenizer))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = BertForMaskedLM(bert_config)
    decay = [p for n, p in model.named_parameters() if not (n.endswith("bias") or "LayerNorm" in n)]
    no_decay = [p for n, p in model.named_parameters() if n.endswith("bias") or "LayerNorm" in n]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=config.learning_rate, betas=config.adam_betas, eps=config.adam_eps)
    steps = config.steps
    scheduler = get_linear_schedule_with_warmup(optimizer, round(config.warmup_fraction * steps), steps)
    history: dict[str, Any] = {"losses": [], "learning_rates": [], "heldout": [], "seconds": 0.0, "step_seconds": []}
    start, resumed = 0, None
    checkpoint = work / "checkpoint"
    if checkpoint.is_dir():
        state = load_state(checkpoint)
        if state.get("key") == key:
            model.load_state_dict(state["model"])
            optimizer.load_state_dict(state["optimizer"])
            scheduler.load_state_dict(state["scheduler"])
            history = state["history"]
            start = resumed = int(state["step"])

    def heldout_loss() -> float:
        model.eval()
        total, count = 0.0, 0
        with torch.no_grad(), autocast(precision, "cpu"):
            for first in range(0, len(heldout_rows), config.batch_size):
                ids, labels = masked_batch(collator, heldout_rows[first:first + config.batch_size], (config.seed, -1, first))
                n = int((labels != -100).sum())
                total += float(mlm_loss(model, ids, labels)) * n
                count += n
        model.train()
        return total / max(count, 1)

    def save(step: int) -> None:
        with atomic_directory(checkpoint) as tmp:
            save_state(tmp, {"key": key, "step": step, "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                             "scheduler": scheduler.state_dict(), "history": history})

    model.train()
    end = steps if stop_after is None else min(steps, start + stop_after)
    bar = progress_bar(total=steps, initial=start, desc="pretraining sentcl-mini", unit="step", disable=not show_progress)
    began = time.perf_counter()
    seconds_before = float(history["seconds"])
    for step in range(start, end):
        step_began = time.perf_counter()
        ids, labels = masked_batch(collator, train_rows[batch_rows(step, config.batch_size, len(train_rows), config.seed)],
                                   (config.seed, step))
        torch.manual_seed(int(stable_hash([config.seed, step, "dropout"], 15), 16))
        with autocast(precision, "cpu"):
            loss = mlm_loss(model, ids, labels)
        loss.backward()
        optimizer.step()
        history["learning_rates"].append(scheduler.get_last_lr()[0])
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        history["losses"].append(loss.item())
        history["step_seconds"].append(time.perf_counter() - step_began)
        done = step + 1
        elapsed = seconds_before + time.perf_counter() - began
        history["seconds"] = elapsed
        if done % config.eval_every == 0 or done == steps:
            history["heldout"].append([done, heldout_loss()])
        if half_dir is not None and done == steps // 2:
            export_encoder(model, tokenizer, half_dir, config.seed)
        if done % config.checkpoint_every == 0 or done == end:
            save(done)
        bar.update(1)
        rate = (done - start) * config.batch_size * config.seq_len / max(time.perf_counter() - began, 1e-9)
        postfix = {"loss": f"{history['losses'][-1]:.3f}", "tok/s": f"{rate:,.0f}"}
        if history["heldout"]:
            postfix["held-out"] = f"{history['heldout'][-1][1]:.3f}"
        bar.set_postfix(postfix)
    bar.close()
    seconds = float(history["seconds"])
    result = PretrainResult(
        config=config.to_dict(), steps=len(history["losses"]), train_rows=len(train_rows), heldout_rows=len(heldout_rows),
        precision=precision, losses=history["losses"], learning_rates=history["learning_rates"],
        step_seconds=history.get("step_seconds", []),
        heldout=[(int(s), float(v)) for s, v in history["heldout"]],
        train_tokens=int(np.count_nonzero(train_rows != tokenizer.cls_token_id)),
        unigram_entropy=unigram_entropy(train_rows, tokenizer.all_special_ids), seconds=seconds,
        tokens_per_second=len(history["losses"]) * config.batch_size * config.seq_len / max(seconds, 1e-9),
        resumed_from=resumed,
    )
    return model, result


# ------------------------------------------------------------------------------------------ export


def export_encoder(mlm_model, tokenizer, folder: str | Path, seed: int) -> Path:
    """Write the encoder of a ``BertForMaskedLM`` as a plain transformers ``BertModel`` checkpoint in
    fp16 safetensors, with its tokenizer, atomically: what :func:`sentcl.models.load_encoder` loads
    and pools. The MLM head is left out (fine-tuning does not use it). The pooler layer, which MLM
    does not train, is BERT's initialisation drawn from ``seed``, so every load of the files gives the
    same weights (mean pooling, the demo's, does not use it)."""
    from transformers import BertModel

    folder = Path(folder)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        encoder = BertModel(mlm_model.config, add_pooling_layer=True)
    missing, unexpected = encoder.load_state_dict(mlm_model.bert.state_dict(), strict=False)
    if unexpected or any(not k.startswith("pooler.") for k in missing):
        raise ConfigError(f"exporting the encoder: unexpected {unexpected}, missing {missing}")
    with atomic_directory(folder) as tmp:
        encoder.half().save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        config = read_json(tmp / "config.json", "the exported model's configuration")
        config["dtype"] = "float32"  # fp16 is storage only: loaded ("auto"), the encoder computes in fp32
        atomic_write_json(tmp / "config.json", config)
    return folder


def export_random_init(bert_config, tokenizer, folder: str | Path, seed: int) -> Path:
    """The same BERT at its initialisation under ``seed`` (as :func:`pretrain` draws it), exported as
    :func:`export_encoder` exports a trained one: the control every comparison with the mini needs."""
    from transformers import BertForMaskedLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertForMaskedLM(bert_config)
    return export_encoder(model, tokenizer, folder, seed)


def write_record(path: str | Path, result: PretrainResult) -> Path:
    """The run record (losses, held-out curve, timings) as JSON, atomically."""
    return atomic_write_json(path, result.to_dict())
