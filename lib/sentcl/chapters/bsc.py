"""The BSC chapter (Chernyavskiy et al. 2022, batch-softmax contrastive loss): its title, its tables, the data
each paper row needs, its GPU-memory rows (``benchmarks/results/bsc_gpu_h100.json``), and the measurement its
demo rests on (``benchmarks/bsc_cqa_shuffle.py``: the demo on CQA-A only at several numbers of optimizer steps,
and whether the paper's shuffle ablation, Table 2, is decided there), and its plan of runs (:func:`plan`: every
training run of every task, row and seed, which the notebook trains through and ``benchmarks/bsc_gpu.py`` projects
onto a GPU).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import pandas as pd

from ..book.benchmarks import Measurement, health_columns, interval_cell, mean_std_cell
from ..book.chapter_spec import Chapter
from ..book.cost import registry_count, run_steps
from ..book.coverage import scored_sets
from ..book.gpu_memory import MemoryRow, benchmark_record
from ..book.plan import Plan, PlannedStage, stage_name
from ..training.variants import VARIANTS, training_order

NAME = "bsc"
MEMORY_RECORD = "bsc_gpu_h100.json"
CQA_SHUFFLE = "bsc_cqa_shuffle_cpu.json"
TABLES = {"Antique": ("Table 1", "{m}"), "CQA-A": ("Table 2", "CQA-A {m}"), "CQA-B": ("Table 2", "CQA-B {m}"),
          "PFCC-S": ("Table 3", "{m}"), "MRPC": ("Table 4", "MRPC (F1)"), "QQP": ("Table 4", "QQP (F1)"),
          "STSb": ("Table 5", "STSb")}
"""Task -> (the paper's table it is reported in, the pattern of its columns there: ``{m}`` the metric)."""
COLUMNS = {"Table 1": ("MRR", "P@1", "nDCG@1"), "Table 2": ("MAP", "MRR"), "Table 3": ("HP@1", "HP@5", "HP@50"),
           "Table 4": ("F1",), "Table 5": ("Spearman",)}
"""Table -> the metrics of its columns, in the paper's order (each a metric label of the task scored)."""
CAPTIONS = {"Table 1": "Antique: MRR, P@1, nDCG@1",
            "Table 2": "CQA-A and CQA-B (SemEval-2016 test sets stand in for 2017's): MAP, MRR",
            "Table 3": "PFCC-S (CLEF-2020 CheckThat! Task 2 stands in): HasPositive@k",
            "Table 4": "MRPC and QQP: F1 x 100", "Table 5": "STSb: Spearman x 100"}
"""Table -> its caption, in the order the chapter shows the tables."""
TASKS_OF = {table: [name for name, (t, _) in TABLES.items() if t == table] for table in CAPTIONS}
"""Table -> the tasks reported in it."""
MAIN = {name: pattern.format(m=COLUMNS[table][0]) for name, (table, pattern) in TABLES.items()}
"""Task -> the column its claims compare rows on: the first of its columns in its table."""
ZERO_SHOT = "SimCSE (unsup.)"
"""The paper's row of the zero-shot encoder (fine-tuned on nothing)."""


def task_columns(name: str, scored: str) -> dict[str, tuple[str, str]]:
    """The columns of task ``name`` in its paper table -> (``scored``, the evaluation task it is scored on; the
    column's metric label), e.g. ``CQA-A MAP`` -> (``CQA-A-2016``, ``MAP``)."""
    table, pattern = TABLES[name]
    return {pattern.format(m=label): (scored, label) for label in COLUMNS[table]}


class TaskSize(NamedTuple):
    """What a task's training runs read: the training ``pairs`` each run trains on, and the ``dev_texts`` one
    evaluation on its dev data encodes."""

    pairs: int
    dev_texts: int


def _registry_size(name: str, share: float = 1.0) -> tuple[int, int]:
    """(pairs, texts encoded to score them) of a registered "dataset/split", or of ``share`` of it: a retrieval
    set's judged (query, document) pairs, and its queries with their candidates, or the whole base every query
    ranks (PFCC-S's verified claims); a pair set's pairs and their two texts."""
    from ..data.registry import info

    dataset, split = name.split("/")
    entry, count = info(dataset).splits[split], registry_count(name)
    if entry.judgements is not None:
        pairs, queries, corpus = int(entry.judgements * share), int(count * share), entry.corpus or 0
        return pairs, queries + (corpus if corpus > entry.judgements else pairs)  # a base every query ranks, or its candidates
    return int(count * share), 2 * int(count * share)


def paper_sizes(p: Mapping[str, Any]) -> dict[str, TaskSize]:
    """Per task of ``p``, its :class:`TaskSize` as the registry counts the paper's data ``p`` reads: the training
    pairs (a retrieval set's judged pairs, a pair set's rows; capped at ``train_rows``; less the tenth a ``"9:1"``
    dev split holds out) and the texts of its dev data (that tenth, or ``dev_data``'s share of at most
    ``dev_max_queries`` queries or pairs)."""
    sizes = {}
    for task in p["tasks"]:
        registered, _ = _registry_size(p["train_data"][task])
        pairs = min(registered, p["train_rows"].get(task, 0) or registered)
        if p["dev_data"][task] == "9:1":  # the last tenth of the (capped) training data is the dev set
            dev_pairs, dev_texts = _registry_size(p["train_data"][task], pairs / registered / 10)
            pairs -= dev_pairs
        else:  # at most dev_max_queries of its queries (or pairs)
            queries = registry_count(p["dev_data"][task])
            cap = p["dev_max_queries"].get(task, 0) or queries
            _, dev_texts = _registry_size(p["dev_data"][task], min(cap, queries) / queries)
        sizes[task] = TaskSize(pairs, dev_texts)
    return sizes


def training_stage(task: str, row: str, seed: int) -> str:
    """The artifact stage of ``row``'s training run on ``task`` with ``seed`` (its name in :func:`plan`)."""
    return stage_name(NAME, task, row, "seed", seed)


def training_what(task: str, example_based: bool) -> str:
    """What :func:`plan` counts a training run of ``task`` as: the runs with example-based shuffling (which
    re-encode the training rows before every epoch) apart from the others."""
    return f"{task}: " + ("runs with example-based shuffling" if example_based else "other runs")


def trained_rows(p: Mapping[str, Any], task: str) -> list[str]:
    """The rows of ``task`` the notebook trains, in the order it trains them: its rows of the paper's tables but
    the zero-shot one, each row whose model another fine-tunes before it (trained even where it is not a row)."""
    out: list[str] = []
    for row in training_order(p["rows"][task]):
        start = VARIANTS[row].starts_from if row in VARIANTS else None
        if start and start not in out:
            out.append(start)
        if row != ZERO_SHOT and row not in out:
            out.append(row)
    return out


def plan(p: Mapping[str, Any], sizes: Mapping[str, TaskSize] | None = None) -> Plan:
    """Every training run the BSC notebook makes with parameters ``p``: per task of ``tasks`` and trained row
    (:func:`trained_rows`), one run per seed of ``epochs`` over the task's training pairs in batches of
    ``batch_size``, with one dev evaluation per epoch where ``select_on_dev`` (its dev texts encoded), and, with
    example-based shuffling, both texts of every training pair encoded before every epoch. A fine-tuning row's
    run of seed k reads its starting row's run of seed k (under ``seed_summary`` "best on dev", the best of that
    row's seeds: every one of them). ``sizes`` (task -> :class:`TaskSize`) are the data each task reads; None:
    the registry's counts of the paper's data (:func:`paper_sizes`). Every row of a task is counted at its
    training pairs (a row that trains on the positives only, or adds negatives, trains on fewer or more)."""
    sizes = paper_sizes(p) if sizes is None else sizes
    stages = []
    for task in p["tasks"]:
        pairs, dev_texts = sizes[task]
        epochs = p["epochs"][task]
        evaluations = epochs if p["select_on_dev"] else 0
        for row in trained_rows(p, task):
            variant = VARIANTS[row]
            example = variant.batches == "example"
            for seed in p["seeds"]:
                start_seeds = [seed] if p["seed_summary"] == "mean" else p["seeds"]
                upstream = tuple(training_stage(task, variant.starts_from, s) for s in start_seeds) if variant.starts_from else ()
                stages.append(PlannedStage(
                    training_what(task, example), name=training_stage(task, row, seed), upstream=upstream,
                    steps=run_steps(pairs, p["batch_size"][task], epochs), step=f"batch {p['batch_size'][task]}",
                    evaluations=evaluations, evaluation_sentences=evaluations * dev_texts,
                    sentences=evaluations * dev_texts + (2 * pairs * epochs if example else 0)))
    return Plan(NAME, stages)


def data_needs(p: Mapping[str, Any]) -> dict:
    """The data each paper row the profile ``p`` computes needs (:data:`sentcl.book.coverage.Needs`): per task
    and row, its training and model-selection data (none for the zero-shot row) and its test data."""
    needs: dict = {}
    for name in p["tasks"]:
        scored = scored_sets([p["eval_tasks"][name]])
        train = p["train_data"][name] + (f" or {p['train_fallback'][name]}" if name in p["train_fallback"] else "")
        trained = [train, *([] if p["dev_data"][name] == "9:1" else [p["dev_data"][name]])]
        for row in p["rows"][name]:
            key = (TABLES[name][0], row)
            needs[key] = [*needs.get(key, []), *([] if row == ZERO_SHOT else trained), *scored]
    return needs


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Each measured batch of ``benchmarks/results/bsc_gpu_h100.json`` that a task of the paper profile trains at,
    in each precision measured, named by those tasks."""
    record, by_batch = benchmark_record(MEMORY_RECORD), _tasks_by(paper["batch_size"])
    return [MemoryRow(f"BERT-base, {', '.join(by_batch[m['batch']])}", "bert-base", m["batch"], m["precision"],
                      m["peak_gpu_memory_gib"], MEMORY_RECORD)
            for m in record["measured"] if m["batch"] in by_batch]


def _tasks_by(batch_sizes: dict[str, int]) -> dict[int, list[str]]:
    """Batch size -> the tasks trained at it."""
    out: dict[int, list[str]] = {}
    for task, batch in batch_sizes.items():
        out.setdefault(batch, []).append(task)
    return out


def cqa_shuffle_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per number of optimizer steps of ``bsc_cqa_shuffle_cpu.json``: each row's CQA-A MAP (mean ± std
    over the seeds), each claim between two rows with its 95 % interval and verdict (the paper's orderings of the
    shuffle ablation, and each trained row against the untouched encoder), the models' health and the wall time."""
    rows = []
    for run in result["runs"]:
        row: dict[str, Any] = {"steps": run["steps"]}
        row.update({name.replace(" zero-shot (ours)", " untouched"): mean_std_cell(cell, 3) for name, cell in run["average"].items()})
        for claim in run["claims"]:
            pair = (claim["left"], claim["right"])
            row[" − ".join(name.replace(" zero-shot (ours)", " untouched") for name in pair)] = interval_cell(claim, 3)
        row.update(health_columns(run["health"]))
        row["notebook wall time"] = f"{run['notebook_wall_s'] / 60:.1f} min"
        if (median := (run.get("training_run_s") or {}).get("median")) is not None:
            row["median training run"] = f"{median:.0f} s"
        rows.append(row)
    return pd.DataFrame(rows).set_index("steps")


def _cqa_shuffle_caption(result: dict[str, Any]) -> str:
    s = result["settings"]
    return (f"The demo's {s['base_model'].split('/')[-1]} trained on CQA-A only (the first judged pairs of the training "
            f"file, whole questions, in batches of {s['batch_size']}: one example-based group a batch; learning rate "
            f"{s['learning_rate']:g} with bias correction, the paper's; {s['max_seq_length']} sub-tokens; seeds "
            f"{s['seeds']}; precision {s['precision']}{' (fp32 on every CPU)' if s['precision'] == 'auto' else ''}) for each number of optimizer steps, every model scored on all CQA-A test "
            f"questions, measured by `benchmarks/bsc_cqa_shuffle.py` on {result['machine']['cpu_model']} "
            f"({result['date'][:10]}): MAP (mean ± std over the seeds), each difference with its 95 % interval over "
            "seeds and test questions and its verdict, Holm-corrected within each run, the notebook's wall time and "
            "the median wall time of one training run." + _decided_by_steps(result))


def _decided_by_steps(result: dict[str, Any]) -> str:
    """What each recorded run decided, generated from the file: per number of steps, the claims that hold or are
    contradicted, how many stay undetermined, and how far the trained models moved (the lowest cosine to the start)."""
    said = []
    for run in result["runs"]:
        decided = [f"{c['left']} − {c['right']} {c['verdict']}" for c in run["claims"] if c["verdict"] in ("holds", "contradicted")]
        undetermined = sum(c["verdict"] == "undetermined" for c in run["claims"])
        cosines = [h["start_cosine"] for h in run["health"].values() if h.get("start_cosine") is not None]
        moved = f"; every trained model ends at a cosine of {min(cosines):.3f} or more to its start" if cosines else ""
        said.append(f"At {run['steps']} steps: " + ("; ".join(decided) if decided else "no claim decided")
                    + f", {undetermined} undetermined{moved}.")
        said[-1] = said[-1].replace(" zero-shot (ours)", " untouched")
    return " " + " ".join(said) if said else ""


CHAPTER = Chapter(
    name=NAME,
    title="BSC: batch-softmax contrastive loss (Chernyavskiy et al. 2022)",
    memory=memory_rows,
    memory_record=MEMORY_RECORD,
    needs=data_needs,
    measurement=Measurement(CQA_SHUFFLE, "Could the demo decide the shuffle ablation on CQA-A?", cqa_shuffle_frame,
                            _cqa_shuffle_caption),
    plan=plan,
)


__all__ = ["CAPTIONS", "CHAPTER", "COLUMNS", "MAIN", "TABLES", "TASKS_OF", "ZERO_SHOT", "TaskSize", "cqa_shuffle_frame",
           "data_needs", "memory_rows", "paper_sizes", "plan", "task_columns", "trained_rows", "training_stage",
           "training_what"]
