"""``sentcl pretrain``: pretrain sentcl-mini on a data root's non-test text, export it with its card;
``sentcl pretrain --verify``: check the shipped files against their card's sha256 (what ``make book``
runs; it never pretrains).

A run is resumable: killed, the same command goes on from its last checkpoint (every 100 steps, in
``--work``, by default under the sentcl cache, keyed by everything that decides the weights).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .card import NAME, REBUILD, shipped_dir, verify


def register(subparsers, name: str = "pretrain", summary: str = "pretrain sentcl-mini by masked-language modelling") -> None:
    from .mlm import PretrainConfig

    defaults = PretrainConfig()
    p = subparsers.add_parser(name, help=summary, description=summary + " (see sentcl.pretraining.mlm for the recipe)")
    p.add_argument("--verify", action="store_true", help="check the model's files against its card's sha256, train nothing")
    p.add_argument("--data-dir", help="the data root whose non-test text is the corpus (default: $SENTCL_DATA)")
    p.add_argument("--out", type=Path, help=f"the model folder to write (default: the shipped {NAME}, data/model/{NAME})")
    p.add_argument("--work", type=Path, help="the resumable state and the half-way checkpoint (default: under the sentcl cache)")
    p.add_argument("--sources", nargs="+", metavar="DATASET/SPLIT", help="the corpus' sources (default: the recipe's, "
                   "sentcl.pretraining.corpus.SOURCES)")
    p.add_argument("--tokens", type=int, default=defaults.tokens, help=f"training tokens (default {defaults.tokens:,})")
    p.add_argument("--batch-size", type=int, default=defaults.batch_size)
    p.add_argument("--seq-len", type=int, default=defaults.seq_len)
    p.add_argument("--vocab-size", type=int, default=defaults.vocab_size,
                   help=f"a WordPiece vocabulary of N tokens trained on the corpus; 0: all-MiniLM-L6-v2's (default {defaults.vocab_size})")
    p.add_argument("--learning-rate", type=float, default=defaults.learning_rate)
    p.add_argument("--warmup-fraction", type=float, default=defaults.warmup_fraction)
    p.add_argument("--seed", type=int, default=defaults.seed)
    p.add_argument("--precision", default=defaults.precision, help="auto (fp32 on a CPU), fp32, bf16 (the recorded run), fp16")
    p.add_argument("--eval-every", type=int, default=defaults.eval_every, help="held-out loss every N steps")
    p.add_argument("--architecture", default="", metavar="K=V,...",
                   help="change the model's shape, e.g. layers=2,hidden=64,heads=2,intermediate=128 (tests)")
    p.add_argument("--zero-shot-tasks", nargs="*", default=["STSb", "SICK-R"], metavar="TASK",
                   help="tasks scored zero-shot for the card (none: skip)")
    p.add_argument("--stop-after", type=int, help="stop after N steps, leaving a checkpoint to resume")
    p.set_defaults(func=cmd_pretrain)


def cmd_pretrain(args: argparse.Namespace) -> int:
    if args.verify:
        folder = args.out or shipped_dir()
        checked = verify(folder)
        print(f"{NAME}: {len(checked['sha256'])} files match their sha256 ({folder})")
        return 0
    from ..paths import data_root

    card = build(args, data_root(args.data_dir))
    if card is None:
        return 0
    last = card["result"]["heldout"][-1][1]
    print(f"{NAME}: held-out MLM loss {last:.3f} nats, unigram entropy {card['unigram_entropy']:.3f}; "
          f"written to {args.out or shipped_dir()}")
    return 0


def _architecture(text: str):
    from .mlm import Architecture

    values: dict[str, int] = {}
    for item in filter(None, text.split(",")):
        key, _, value = item.partition("=")
        if key not in Architecture.__dataclass_fields__ or not value.isdigit():
            raise ConfigError(f"--architecture {item!r}: expected K=V with K one of {', '.join(Architecture.__dataclass_fields__)}")
        values[key] = int(value)
    return Architecture(**values)


def build(args: argparse.Namespace, root: Path) -> dict[str, Any] | None:
    """Corpus, pretraining, export, zero-shot scores and card: the whole recipe of ``sentcl pretrain``."""
    from ..models import MINILM
    from ..paths import cache_root
    from ..precision import cpu_supports_bf16
    from .card import write_card
    from .corpus import SOURCES, build_corpus
    from .mlm import PretrainConfig, export_encoder, export_random_init, pretrain, run_key, write_record
    from .vocabulary import run_tokenizer

    sources = SOURCES if not args.sources else tuple(tuple(s.split("/", 1)) for s in args.sources)
    if any(len(s) != 2 for s in sources):
        raise ConfigError(f"--sources: expected DATASET/SPLIT, got {args.sources}")
    config = PretrainConfig(tokens=args.tokens, batch_size=args.batch_size, seq_len=args.seq_len, vocab_size=args.vocab_size,
                            learning_rate=args.learning_rate, warmup_fraction=args.warmup_fraction, seed=args.seed,
                            precision=args.precision, eval_every=args.eval_every, architecture=_architecture(args.architecture))
    corpus = build_corpus(root, sources)
    # the run's folder is keyed by what the vocabulary is trained from (the configuration, the corpus); the trained
    # vocabulary lives inside it, and the checkpoint's own key (pretrain) names that vocabulary too
    work = args.work or cache_root() / "pretrain" / run_key(config, corpus.train, corpus.heldout, MINILM)
    tokenizer = run_tokenizer(work, config.vocab_size, corpus.train, config.seq_len)
    print(f"{NAME}: {len(corpus.train):,} training texts, {len(corpus.heldout):,} held out; {config.steps:,} steps; "
          f"state in {work}", file=sys.stderr)
    model, result = pretrain(corpus.train, corpus.heldout, tokenizer, work, config, half_dir=work / "half",
                             stop_after=args.stop_after)
    write_record(work / "record.json", result)
    if result.steps < config.steps:
        print(f"{NAME}: stopped after {result.steps} of {config.steps} steps; run the same command to resume", file=sys.stderr)
        return None
    out = args.out or shipped_dir()
    export_encoder(model, tokenizer, out, config.seed)
    random_dir = work / "random-init"
    if not random_dir.is_dir():
        export_random_init(model.config, tokenizer, random_dir, config.seed)
    zero_shot = _zero_shot(args.zero_shot_tasks, root, {f"{NAME} (this model)": out, "the same BERT at its random "
                           "initialisation": random_dir, "all-MiniLM-L6-v2 (sentence-trained reference)": MINILM})
    card = {
        "name": NAME,
        "architecture": config.architecture.__dict__,
        "parameters": sum(p.numel() for p in model.bert.parameters()),
        "vocab_size": len(tokenizer),
        "tokenizer": tokenizer.name_or_path,
        "train_tokens": result.train_tokens,
        "corpus": corpus.summary(),
        "config": config.to_dict(),
        "result": result.to_dict(),
        "unigram_entropy": result.unigram_entropy,
        "zero_shot_tasks": list(args.zero_shot_tasks),
        "zero_shot": zero_shot,
        "machine": _machine(cpu_supports_bf16()),
        "command": _command(args),
        "rebuild": REBUILD,
        "half_checkpoint": f"half/ in the run's --work folder (step {config.steps // 2}); not shipped",
    }
    return write_card(Path(out), card)


def _zero_shot(tasks: list[str], root: Path, encoders: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Spearman × 100 of each encoder (mean pooling) on ``tasks``, whole test sets, fp32."""
    if not tasks:
        return {}
    from ..embeddings import embedder
    from ..evaluation.scoring import evaluate_tasks
    from ..models import load_encoder

    scores = {}
    for name, source in encoders.items():
        model = load_encoder(source, pooling="mean")
        values = evaluate_tasks(embedder(model, cache=False), tasks, data_dir=root)
        scores[name] = {task: float(v["Spearman"]) for task, v in values.items()}
    return scores


def _command(args: argparse.Namespace) -> str:
    """The command line that ran, from the parsed options (what differs from the defaults, and the data root)."""
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(), name="pretrain")
    defaults = vars(parser.parse_args(["pretrain"]))
    words = ["sentcl", "pretrain"]
    for key, value in vars(args).items():
        if key in defaults and value != defaults[key] and key != "verify":
            flag = "--" + key.replace("_", "-")
            words += [flag, *(map(str, value) if isinstance(value, list) else [str(value)])]
    return shlex.join(words)


def _machine(native_bf16: bool) -> str:
    from ..precision import cpu_model

    threads = os.environ.get("OMP_NUM_THREADS") or str(os.cpu_count())
    return f"{cpu_model()}, {threads} threads, {'native' if native_bf16 else 'no native'} bf16"
