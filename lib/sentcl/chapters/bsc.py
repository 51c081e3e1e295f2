"""The BSC chapter (Chernyavskiy et al. 2022, batch-softmax contrastive loss): its title, its tables, the data
each paper row needs, its GPU-memory rows (``benchmarks/results/bsc_gpu_h100.json``), and the measurement its
demo rests on (``benchmarks/bsc_cqa_shuffle.py``: the demo on CQA-A only at several numbers of optimizer steps,
and whether the paper's shuffle ablation, Table 2, is decided there).

Its paper-profile plan of runs is counted by ``benchmarks/bsc_gpu.py`` (not here yet).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..book.benchmarks import Measurement, health_columns, interval_cell, mean_std_cell
from ..book.chapter_spec import Chapter
from ..book.coverage import scored_sets
from ..book.gpu_memory import MemoryRow, benchmark_record

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
)


__all__ = ["CAPTIONS", "CHAPTER", "COLUMNS", "MAIN", "TABLES", "TASKS_OF", "ZERO_SHOT", "cqa_shuffle_frame", "data_needs",
           "memory_rows", "task_columns"]
