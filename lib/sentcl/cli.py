"""The ``sentcl`` command line.

Each command group lives beside the code it drives and registers itself here:
``sentcl data ...`` (:mod:`sentcl.data.cli`), ``sentcl evaluate ...``
(:mod:`sentcl.evaluation.cli`), ``sentcl reproduce`` (:mod:`sentcl.book.publishing.runner`) and
``sentcl wheel`` (:mod:`sentcl.book.publishing.install`) and ``sentcl pretrain``
(:mod:`sentcl.pretraining.cli`).
A :class:`~sentcl.errors.SentclError` is printed as one line and exits with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from .errors import SentclError

# (command, module, summary); each module defines ``register(subparsers)`` that adds its
# parser and sets ``func`` (called with the parsed arguments, returns an exit status).
COMMANDS = [
    ("data", "sentcl.data.cli", "inspect, check and download datasets"),
    ("evaluate", "sentcl.evaluation.cli", "evaluate a sentence encoder (STS, retrieval)"),
    ("reproduce", "sentcl.book.publishing.runner", "run the chapter notebooks with papermill and build the book"),
    ("wheel", "sentcl.book.publishing.install", "build sentcl's release wheel"),
    ("pretrain", "sentcl.pretraining.cli", "pretrain sentcl-mini by masked-language modelling, or --verify the shipped one"),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sentcl", description="Reproduce papers on contrastive sentence embeddings: data, evaluation, notebooks, book."
    )
    parser.add_argument("--version", action="version", version=f"sentcl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module, summary in COMMANDS:
        importlib.import_module(module).register(sub, name=name, summary=summary)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        status = args.func(args)
    except SentclError as exc:
        print(f"sentcl: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("sentcl: interrupted", file=sys.stderr)
        return 130
    return int(status or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
