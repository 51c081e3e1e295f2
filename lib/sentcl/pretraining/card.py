"""sentcl-mini's model card and the check of the shipped files.

The card is two files beside the weights: ``card.json`` (every number: corpus counts, tokens, steps,
the held-out loss curve, the unigram entropy, the zero-shot scores, the command, each file's sha256)
and ``README.md``, written from it. :func:`verify` checks each shipped file against its sha256;
``make book`` runs it (``sentcl pretrain --verify``) and never pretrains.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataMissingError, SentclError
from ..hashing import file_sha256
from ..io import atomic_write_json, atomic_write_text, read_json
from ..paths import resource

NAME = "sentcl-mini"
CARD = "card.json"
SHIPPED = ("model", NAME)
"""Where the shipped model lives under the project's ``data/`` (``sentcl._data`` in a wheel)."""
REBUILD = "sentcl pretrain --data-dir DATA_ROOT --precision bf16"
"""The command that rebuilds the shipped files (the card records the exact one that made them)."""


def shipped_dir() -> Path:
    """The folder of the shipped sentcl-mini (``data/model/sentcl-mini``)."""
    return resource(*SHIPPED)


def file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file of the model folder but the card's own two files."""
    return {p.name: file_sha256(p) for p in sorted(folder.iterdir()) if p.is_file() and p.name not in (CARD, "README.md")}


def verify(folder: str | Path | None = None) -> dict[str, Any]:
    """The card of the model in ``folder`` (default: the shipped one), after checking every file it
    lists against its sha256. A missing or damaged file raises one line naming it and the command
    that rebuilds it."""
    folder = Path(folder) if folder is not None else shipped_dir()
    card = read_card(folder)
    for name, expected in card["sha256"].items():
        path = folder / name
        if not path.is_file():
            raise DataMissingError(f"{path} is missing; rebuild sentcl-mini with `{REBUILD}` (or restore the file from git)")
        found = file_sha256(path)
        if found != expected:
            raise SentclError(f"{path} is damaged: its sha256 is {found}, its card says {expected}; restore it from git "
                              f"or rebuild sentcl-mini with `{REBUILD}`")
    return card


def read_card(folder: str | Path | None = None) -> dict[str, Any]:
    """The card of the model in ``folder`` (default: the shipped one), unchecked: what a page describing the
    model reads (:func:`verify` checks the files too). A missing card raises one line naming it and the
    command that rebuilds it."""
    card_path = (Path(folder) if folder is not None else shipped_dir()) / CARD
    if not card_path.is_file():
        raise DataMissingError(f"{card_path} is missing: sentcl-mini is not there; rebuild it with `{REBUILD}`")
    return read_json(card_path, "sentcl-mini's model card")


def unigram_entropy(rows: np.ndarray, special: Iterable[int]) -> float:
    """The entropy, in nats, of the corpus' token distribution (its special tokens left out): the loss
    of a model that predicts every masked token by its corpus frequency, ignoring the context."""
    counts = Counter(rows.reshape(-1).tolist())
    for token in special:
        counts.pop(int(token), None)
    total = sum(counts.values())
    return -sum(c / total * math.log(c / total) for c in counts.values())


def write_card(folder: Path, card: dict[str, Any]) -> dict[str, Any]:
    """``card`` with the sha256 of the folder's files, written as ``card.json`` and ``README.md``."""
    card = {**card, "sha256": file_hashes(folder)}
    atomic_write_json(folder / CARD, card)
    atomic_write_text(folder / "README.md", render(card))
    return card


def _vocabulary(card: dict[str, Any]) -> str:
    if card["config"].get("vocab_size"):
        return f"an uncased WordPiece vocabulary of {card['vocab_size']:,} tokens trained on the corpus"
    return f"the uncased WordPiece vocabulary of {card['vocab_size']:,} tokens that all-MiniLM-L6-v2 ships"


def description(card: dict[str, Any]) -> str:
    """What the model is, in one sentence from its card: "a 4-layer BERT (hidden 256, ...) pretrained by sentcl
    by masked-language modelling on N tokens ..., for S steps (T tokens seen, P passes)" (the card's first line
    and every page whose run fine-tunes it: :mod:`sentcl.book.pages.findings`)."""
    arch, cfg, result = card["architecture"], card["config"], card["result"]
    seen = result["steps"] * cfg["batch_size"] * cfg["seq_len"]
    return (f"a {arch['layers']}-layer BERT (hidden {arch['hidden']}, {arch['heads']} heads, feed-forward "
            f"{arch['intermediate']}, {arch['positions']} positions; {card['parameters']:,} parameters, {_vocabulary(card)}) "
            f"**pretrained by sentcl** by masked-language modelling on {card['train_tokens']:,} tokens of the data root's "
            f"non-test English text, for {result['steps']:,} steps ({seen:,} tokens seen, "
            f"{seen / card['train_tokens']:.1f} passes)")


def render(card: dict[str, Any]) -> str:
    """The card as Markdown: what the model is, what it was trained on, how, and how well."""
    cfg, result, corpus = card["config"], card["result"], card["corpus"]
    curve = result["heldout"]
    what = description(card)
    lines = [
        f"# {NAME}",
        "",
        f"{what[0].upper()}{what[1:]}. It has never seen a "
        "sentence pair: it is the demo's stand-in for the MLM-pretrained encoders the papers fine-tune.",
        "",
        "Weights: fp16 safetensors (loaded in fp32). The MLM head is not shipped; the pooler layer is at its "
        "initialisation (MLM does not train it): pool by mean.",
        "",
        "## Corpus",
        "",
        f"{corpus['train_texts']:,} distinct texts for training, {corpus['heldout_texts']:,} held out "
        f"({corpus['heldout_per_mille'] / 10:g} %, by a hash of the text). Removed from every source, after lower-casing "
        "and keeping only the words: each text equal to a text of an evaluation set the book scores, and each text "
        f"containing one of at least {corpus['min_contained_words']} words; repeats.",
        "",
        "| source | texts read | kept | equal to an evaluation text | containing one | repeats |",
        "|---|---:|---:|---:|---:|---:|",
        *(f"| {s['dataset']}/{s['split']} | {s['texts']:,} | {s['kept']:,} | {s['evaluation']:,} | {s['containing']:,} | "
          f"{s['repeated']:,} |" for s in corpus["sources"]),
        "",
        "Evaluation sets checked (distinct texts): " + ", ".join(f"{k} {v:,}" for k, v in corpus["evaluation_sets_checked"].items())
        + ". Not in the data root, so not checked: " + (", ".join(corpus["evaluation_sets_absent"]) or "none") + ".",
        "",
        "## Training",
        "",
        f"Batches of {cfg['batch_size']} packed sequences of {cfg['seq_len']} tokens; 15 % dynamic masking "
        f"(transformers' DataCollatorForLanguageModeling), the loss at the masked positions only; AdamW (lr "
        f"{cfg['learning_rate']:g}, betas {tuple(cfg['adam_betas'])}, eps {cfg['adam_eps']:g}, weight decay "
        f"{cfg['weight_decay']:g}), linear warm-up over {cfg['warmup_fraction']:.0%} of the steps, then linear decay to 0; "
        f"seed {cfg['seed']}; precision {result['precision']}. {result['seconds'] / 60:.1f} minutes on {card['machine']} "
        f"({result['tokens_per_second']:,.0f} tokens/s).",
        "",
        "Command: `" + card["command"] + "`",
        "",
        "## Held-out MLM loss (nats)",
        "",
        f"Last: **{curve[-1][1]:.3f}**, beside the corpus' unigram entropy **{card['unigram_entropy']:.3f}** (the loss of "
        f"predicting each masked token by its frequency alone): {card['unigram_entropy'] - curve[-1][1]:.2f} nats below it.",
        "",
        "| step | " + " | ".join(str(s) for s, _ in curve) + " |",
        "|---|" + "---:|" * len(curve),
        "| loss | " + " | ".join(f"{v:.3f}" for _, v in curve) + " |",
        "",
        "## Zero-shot STS (Spearman × 100, mean pooling, cosine)",
        "",
        "| encoder | " + " | ".join(card["zero_shot_tasks"]) + " |",
        "|---|" + "---:|" * len(card["zero_shot_tasks"]),
        *(f"| {name} | " + " | ".join(f"{scores[t]:.2f}" for t in card["zero_shot_tasks"]) + " |"
          for name, scores in card["zero_shot"].items()),
        "",
        "Not required to order: mean pooling of a random model already scores by word overlap, and raw MLM encoders "
        "are known to score little above it; all-MiniLM-L6-v2 was trained on a billion sentence pairs.",
        "",
        "## Files (sha256)",
        "",
        *(f"- `{name}` {digest}" for name, digest in card["sha256"].items()),
        "",
        f"`make book` checks them (`sentcl pretrain --verify`) and never pretrains; rebuild with `{REBUILD}`.",
        "",
    ]
    return "\n".join(lines)
