"""``sentcl evaluate ...``: score a sentence encoder on the papers' evaluation tasks.

``sentcl evaluate tasks --model M --tasks STS12 STSb CQA-A-2016 MRPC ... [--data-dir D] --json OUT``
scores any tasks of :data:`sentcl.evaluation.tasks.TASKS` (named as the papers' tables
name them, e.g. "STS-B" or "stsb" for STSb), encoding every distinct text of all of them
once, and writes ``{task: {metric: value}}`` in the papers' units, plus ``"Average":
{"Spearman": ...}`` over the English STS columns among them. ``--max-pairs N`` scores a
seeded subset of each set (quick runs only).

``sentcl evaluate sts --model M [--data-dir D] [--tasks ...] --json OUT`` writes
``{"STS12": .., "STS13": .., "STS14": .., "STS15": .., "STS16": .., "STSb": .., "SICK-R": ..,
"avg": ..}`` (Spearman ×100; only the chosen tasks with ``--tasks``; ``avg`` is the tables'
Average over the English STS columns among them) and prints a table; ``--setting`` and
``--sick-split`` choose SentEval's aggregate and MTEB's SICK-R. Both commands score through
:func:`sentcl.evaluation.scoring.score`, as the chapters do.
``sentcl evaluate retrieval --model M --dataset NAME --json OUT`` writes ``{metric: value}``
for any split of a retrieval dataset with any metrics.

``--details FILE`` writes everything else (per-subset correlations, query counts,
settings) to a second JSON file. Files are written atomically; a missing parent folder is
created. Both paths are checked before the model is loaded, so a path that cannot be
written is a one-line error (:class:`OutputError`) instead of a traceback after the
encoding. Encoding is fp32 unless ``--precision`` says otherwise: with bf16 autocast,
all-MiniLM-L6-v2's STS scores move by up to 0.02 from the published ones, depending on how
the sentences fall into batches.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import ConfigError, OutputError
from ..io import atomic_write_json
from .retrieval import DEFAULT_METRICS, PROTOCOLS
from .sts import SETTINGS
from .tasks import SPEARMAN, STS_AVERAGE, TASKS, task


def _task_name(name: str) -> str:
    """A task name in any accepted spelling -> its table name (argparse ``type``)."""
    try:
        return task(name).name
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _sts_task_name(name: str) -> str:
    canonical = _task_name(name)
    if TASKS[canonical].evaluator != "sts" or TASKS[canonical].positive_label is not None:
        valid = [n for n, t in TASKS.items() if t.evaluator == "sts" and t.positive_label is None]
        raise argparse.ArgumentTypeError(f"{name!r} is not an STS task with scored pairs; valid: {', '.join(valid)}")
    return canonical


def register(subparsers, name: str = "evaluate", summary: str = "evaluate a sentence encoder (STS, retrieval)") -> None:
    parser = subparsers.add_parser(name, help=summary, description=summary)
    sub = parser.add_subparsers(dest="evaluate_command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser(
        "sts",
        help="Spearman x100 of cosine similarity on STS12-16, STS-B and SICK-R",
        description="Encode every distinct sentence of the STS tasks once and report the Spearman correlation x100 "
        "between cosine similarity and the gold scores: STS12-16 pooled over each year's subsets (SentEval's 'all'), "
        "STS Benchmark and SICK-R on their test splits, and the average.",
    )
    _model_options(p)
    p.add_argument("--tasks", nargs="+", type=_sts_task_name, metavar="TASK", help=f"default: all of {', '.join(STS_AVERAGE)}")
    p.add_argument("--setting", choices=SETTINGS, default="all", help="STS12-16 aggregate over subsets (default: all = pooled)")
    p.add_argument(
        "--sick-split",
        choices=("test", "all"),
        default="test",
        help="SICK-R split: test (4927 pairs, SentEval and the papers; default) or all (9927 pairs, as MTEB scores it)",
    )
    p.set_defaults(func=cmd_sts)

    p = sub.add_parser(
        "tasks",
        help="any of the papers' evaluation tasks (STS, CQA, FAQ retrieval, MRPC...), each with its protocol and metrics",
        description="Score the chosen tasks of the papers' tables, each on its dataset and split with its protocol "
        "and metrics (see sentcl.evaluation.tasks), encoding every distinct text of all of them once.",
    )
    _model_options(p)
    p.add_argument("--tasks", nargs="+", required=True, type=_task_name, metavar="TASK", help=f"any of: {', '.join(TASKS)}")
    p.add_argument("--max-pairs", type=int, default=0, help="score at most this many pairs (queries) per task, drawn with --seed (default 0: all)")
    p.add_argument("--seed", type=int, default=0, help="seed of the --max-pairs draw (default 0)")
    p.set_defaults(func=cmd_tasks)

    p = sub.add_parser(
        "retrieval",
        help="retrieval / re-ranking metrics (MAP, MRR, nDCG@k, Acc@k...) on a retrieval dataset",
        description="Rank each query's candidates (re-ranking datasets such as SemEval CQA) or the whole corpus "
        "(FAQ retrieval, CLEF/PFCC-S) by cosine similarity and score the ranking with trec_eval semantics.",
    )
    _model_options(p)
    p.add_argument("--dataset", required=True, help="a retrieval dataset of the registry (see `sentcl data list`)")
    p.add_argument("--split", default=None, help="default: test (or the dataset's only split)")
    p.add_argument("--metrics", nargs="+", default=list(DEFAULT_METRICS), help=f"default: {' '.join(DEFAULT_METRICS)}")
    p.add_argument("--relevance-level", type=int, default=1, help="lowest grade that counts as relevant (trec_eval -l; default 1)")
    p.add_argument("--depth", type=int, default=None, help="documents ranked per query in corpus retrieval (default: all)")
    p.add_argument("--protocol", choices=PROTOCOLS, default="trec", help="'semeval': the SemEval Task 3 scorer's MAP/MRR")
    p.set_defaults(func=cmd_retrieval)


def _model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="hub id, local model directory, or 'tiny'")
    p.add_argument("--data-dir", help="the data root (default: $SENTCL_DATA)")
    p.add_argument("--batch-size", type=int, default=64, help="sentences per forward pass (default 64)")
    p.add_argument(
        "--precision",
        choices=("auto", "fp32", "bf16"),
        default="fp32",
        help="default fp32, which reproduces published scores; bf16 (or auto: bf16 on CPUs with native bf16) "
        "is up to ~1.8x faster on such CPUs and moves STS scores by up to ~0.02",
    )
    p.add_argument("--max-seq-length", type=int, default=None, help="truncate inputs to this many tokens (default: the model's)")
    p.add_argument("--json", required=True, metavar="OUT", help="write the scores here (JSON, atomically)")
    p.add_argument("--details", metavar="FILE", help="also write the full result (subsets, counts, settings) here")


def _embedder(args: argparse.Namespace):
    from ..embeddings import embedder
    from ..models import load_encoder

    model = load_encoder(args.model, max_seq_length=args.max_seq_length)
    return embedder(model, batch_size=args.batch_size, precision=args.precision)


def _table(rows: Sequence[tuple[str, ...]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths, strict=True))) for r in rows)


def _outputs(args: argparse.Namespace) -> list[tuple[str, str]]:
    return [(option, path) for option, path in (("--json", args.json), ("--details", args.details)) if path]


def _check_outputs(args: argparse.Namespace) -> None:
    """Raise :class:`OutputError` unless every output path can be written: not a folder, and its
    nearest existing ancestor a writable folder (the missing ones are created when writing)."""
    for option, path in _outputs(args):
        target = Path(path)
        if target.is_dir():
            raise OutputError(f"cannot write {option} {path}: it is a directory")
        ancestor = target.parent
        while not (ancestor.exists() or ancestor.is_symlink()) and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            raise OutputError(f"cannot write {option} {path}: {ancestor} is not a directory")
        if not os.access(ancestor, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write {option} {path}: no permission to write in {ancestor}")


def _write(args: argparse.Namespace, scores: dict, details: dict) -> None:
    content = {"--json": scores, "--details": details}
    for option, path in _outputs(args):
        try:
            atomic_write_json(path, content[option])
        except OSError as exc:
            raise OutputError(f"cannot write {option} {path}: {exc.strerror or exc}") from None


def cmd_sts(args: argparse.Namespace) -> int:
    from ..data import load
    from .scoring import average, score
    from .sts import POOLED_ONLY

    _check_outputs(args)
    started = time.perf_counter()
    chosen = [TASKS[name] for name in dict.fromkeys(args.tasks or STS_AVERAGE)]
    # SICK-R on another split (MTEB's: all 9927 pairs) is the table's task on that split
    tasks = {t.name: replace(t, split=args.sick_split) if t.name == "SICK-R" else t for t in chosen}
    records = {name: load(t.dataset, t.split, args.data_dir, **dict(t.load_options)) for name, t in tasks.items()}
    scored = score(_embedder(args), records, tasks=tasks)
    results = {name: s.result for name, s in scored.items()}
    # STS12-16 in the chosen setting; sets of one pooled set (STS-B, SICK-R) pooled whatever it is
    scores = {name: r["spearman"]["all" if r["dataset"] in POOLED_ONLY else args.setting] for name, r in results.items()}
    if any(name in STS_AVERAGE for name in scores):
        scores["avg"] = average({name: {SPEARMAN.label: value} for name, value in scores.items()})
    details = {"model": args.model, "precision": args.precision, "max_seq_length": args.max_seq_length,
               "scores": scores, "setting": args.setting, "details": results, "sick_split": args.sick_split}
    _write(args, scores, details)
    rows = [("task", "Spearman x100", "pairs")]
    for name, value in scores.items():
        n = str(results[name]["n"]) if name in results else ""
        rows.append((name, f"{value:.2f}", n))
    print(_table(rows))
    if any(r["sample"] for r in results.values()):
        print("[sample data: the project's own small sets, not the real benchmarks]")
    print(f"({args.setting} setting for STS12-16; {time.perf_counter() - started:.0f} s; written to {args.json})")
    return 0


def cmd_retrieval(args: argparse.Namespace) -> int:
    from ..data import load
    from .retrieval import evaluate_retrieval

    _check_outputs(args)
    started = time.perf_counter()
    data = load(args.dataset, args.split, args.data_dir)
    result = evaluate_retrieval(
        data,
        _embedder(args),
        metrics=args.metrics,
        relevance_level=args.relevance_level,
        depth=args.depth,
        protocol=args.protocol,
    )
    details = {"model": args.model, "precision": args.precision, "max_seq_length": args.max_seq_length, **result}
    _write(args, result["scores"], details)
    print(_table([("metric", "value")] + [(m, f"{v:.4f}") for m, v in result["scores"].items()]))
    label = " [sample data]" if data.sample else ""
    print(
        f"({data.name}/{data.split}{label}: {result['n_queries']} queries, {result['mode']} ranking, "
        f"{args.protocol} protocol; {time.perf_counter() - started:.0f} s; written to {args.json})"
    )
    return 0


def cmd_tasks(args: argparse.Namespace) -> int:
    from .scoring import average, score
    from .tasks import load_tasks

    _check_outputs(args)
    started = time.perf_counter()
    tasks = list(dict.fromkeys(args.tasks))
    records = load_tasks(tasks, args.data_dir, args.max_pairs, args.seed)
    scored = score(_embedder(args), records)
    results = {name: s.result for name, s in scored.items()}
    scores = {name: s.values for name, s in scored.items()}
    if any(name in STS_AVERAGE for name in scores):
        scores["Average"] = {SPEARMAN.label: average(scores)}
    details = {
        "model": args.model, "precision": args.precision, "max_seq_length": args.max_seq_length,
        "max_pairs": args.max_pairs, "seed": args.seed, "scores": scores, "results": results,
    }
    _write(args, scores, details)
    rows = [("task", "metric", "value", "size")]
    for name, values in scores.items():
        size = str(len(records[name])) if name in records else ""
        rows += [(name, metric, f"{value:.4g}", size) for metric, value in values.items()]
    print(_table(rows))
    if any(r.sample for r in records.values()):
        print("[sample data: the project's own small sets, not the real benchmarks]")
    subset = f"at most {args.max_pairs} pairs or queries per task, seed {args.seed}; " if args.max_pairs else ""
    print(f"({subset}{time.perf_counter() - started:.0f} s; written to {args.json})")
    return 0
