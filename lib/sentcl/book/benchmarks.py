"""What a chapter shows from its hand-run benchmarks: measurements that decide how its demo is set up.

Three chapters rest a demo choice on a measurement made outside the book's run (the recorded results ship
with sentcl, ``benchmarks/results``: :func:`sentcl.paths.benchmark_result`):

- **MNRL-SBERT**, ``mnrl_sbert_rows_cpu.json`` (``benchmarks/mnrl_sbert_rows.py``): the demo run at
  several numbers of training rows per seed, and how its claims (MNRL against the softmax loss, each
  against the untouched encoder) move with that budget;
- **BSC**, ``bsc_cqa_shuffle_cpu.json`` (``benchmarks/bsc_cqa_shuffle.py``): the demo on CQA-A only at
  several numbers of optimizer steps, and whether the paper's shuffle ablation (Table 2) is decided there;
- **IFCL**, ``ifcl_demo_setting_cpu.json`` (``benchmarks/ifcl_demo_setting.py``): each method's loss
  terms at the start and the end of the same short run on the demo's stand-in, with the slides' twins
  (word repetition on wiki1m) and with twins from NLI entailment pairs: which setting leaves the
  objective something to learn.

:func:`measurement_frame` gives a chapter's table (the notebook displays it), :func:`chapter_section` the
same as a page fragment (``book/_generated/<chapter>/measured.md``, which the chapter page includes).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pandas as pd

from ..errors import DataFormatError
from ..paths import benchmark_result
from .markdown import md, md_table

TRAINING_ROWS = "mnrl_sbert_rows_cpu.json"
IFCL_SETTING = "ifcl_demo_setting_cpu.json"
CQA_SHUFFLE = "bsc_cqa_shuffle_cpu.json"


def _interval(claim: dict[str, Any] | None, digits: int = 2) -> str:
    if claim is None:
        return "—"
    if claim.get("delta") is None or (isinstance(claim["delta"], float) and math.isnan(claim["delta"])):
        return f"{claim['verdict']}"
    return f"{claim['delta']:+.{digits}f} [{claim['ci_low']:+.{digits}f}, {claim['ci_high']:+.{digits}f}] {claim['verdict']}"


def _mean_std(cell: dict[str, Any] | None, digits: int = 2) -> str:
    if cell is None:
        return "—"
    return f"{cell['value']:.{digits}f}" + (f" ± {cell['std']:.{digits}f}" if cell.get("std") is not None else "")


def _health_columns(health: dict[str, dict]) -> dict[str, str]:
    """The trained models' health in two cells: the lowest cosine to the start, how many counted as trained."""
    cosines = [h["start_cosine"] for h in health.values() if h.get("start_cosine") is not None]
    return {"lowest cosine to start": f"{min(cosines):.4f}" if cosines else "—",
            "trained (active)": f"{sum(bool(h.get('active')) for h in health.values())} of {len(health)}"}


def training_rows_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per number of training rows of ``mnrl_sbert_rows_cpu.json``: the average Spearman of the
    untouched encoder and of both objectives (mean ± std over the seeds), each claim's difference with its
    95 % interval and verdict, and the trained models' health (steps, the lowest cosine to the start,
    how many counted as trained)."""
    rows = []
    for run in result["runs"]:
        average = run["average"]
        untouched = next((r for r in average if "untouched" in r), None)
        claims = {(c["left"], c["right"]): c for c in run["claims"]}
        health = run["health"]
        steps = {m.split(" seed")[0]: h["trained_steps"] for m, h in health.items()}
        rows.append({
            "rows per seed": run["train_pairs"],
            "steps (MNRL / softmax)": f"{steps.get('MNRLSBERT', '—')} / {steps.get('SBERT', '—')}",
            "untouched": _mean_std(average.get(untouched)),
            "MNRLSBERT": _mean_std(average.get("MNRLSBERT")),
            "SBERT": _mean_std(average.get("SBERT")),
            "MNRLSBERT − SBERT": _interval(claims.get(("MNRLSBERT", "SBERT"))),
            "MNRLSBERT − untouched": _interval(claims.get(("MNRLSBERT", untouched))),
            "SBERT − untouched": _interval(claims.get(("SBERT", untouched))),
            **_health_columns(health),
        })
    return pd.DataFrame(rows).set_index("rows per seed")


def cqa_shuffle_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per number of optimizer steps of ``bsc_cqa_shuffle_cpu.json``: each row's CQA-A MAP (mean ± std
    over the seeds), each claim between two rows with its 95 % interval and verdict (the paper's orderings of the
    shuffle ablation, and each trained row against the untouched encoder), the models' health and the wall time."""
    rows = []
    for run in result["runs"]:
        row: dict[str, Any] = {"steps": run["steps"]}
        row.update({name.replace(" zero-shot (ours)", " untouched"): _mean_std(cell, 3) for name, cell in run["average"].items()})
        for claim in run["claims"]:
            pair = (claim["left"], claim["right"])
            row[" − ".join(name.replace(" zero-shot (ours)", " untouched") for name in pair)] = _interval(claim, 3)
        row.update(_health_columns(run["health"]))
        row["notebook wall time"] = f"{run['notebook_wall_s'] / 60:.1f} min"
        if (median := (run.get("training_run_s") or {}).get("median")) is not None:
            row["median training run"] = f"{median:.0f} s"
        rows.append(row)
    return pd.DataFrame(rows).set_index("steps")


def ifcl_setting_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per (setting, method) of ``ifcl_demo_setting_cpu.json``: the loss and each of its terms in
    the first and last logged window, the cosine to the start, and whether the run counts as trained."""
    rows = []
    for run in result["runs"]:
        h = run["health"]
        start, end = h.get("loss_start") or {}, h.get("loss_end") or {}
        row = {"setting": run["setting"], "method": run["method"],
               "loss": f"{_g(start.get('loss'))} → {_g(end.get('loss'))}"}
        for term in ("InfoNCE identical", "InfoNCE fraternal", "Twin"):
            row[term] = f"{_g(start.get(term))} → {_g(end.get(term))}" if term in start else "—"
        row["cosine to start"] = "—" if h.get("start_cosine") is None else f"{h['start_cosine']:.4f}"
        row["trained (active)"] = "yes" if h.get("active") else f"no: {h.get('reason', '')}"
        rows.append(row)
    return pd.DataFrame(rows).set_index(["setting", "method"])


def _g(value: float | None) -> str:
    return "—" if value is None else f"{value:.3g}"


def _training_rows_caption(result: dict[str, Any]) -> str:
    profile = result["demo_profile"]
    return (f"The demo (all-MiniLM-L6-v2, seeds {profile['seeds']}, learning rate {profile['learning_rate']:g}, "
            f"{profile['sts_max_pairs']} pairs per STS task) at each number of training rows per seed, measured by "
            f"`benchmarks/mnrl_sbert_rows.py` on {result['machine']['cpu_model']} ({result['date'][:10]}): the average "
            "Spearman × 100 (mean ± std over the seeds) and each difference with its 95 % interval over seeds and test "
            f"pairs and its verdict, Holm-corrected within each run. The book's demo trains {profile['train_pairs']:,} rows."
            + _verdicts_by_rows(result, ("MNRLSBERT", "SBERT")))


def _verdicts_by_rows(result: dict[str, Any], pair: tuple[str, str]) -> str:
    """`` The paper's claim "<left> above <right>": holds at 3,000 rows; undetermined at 1,000 and 2,000.``
    (the verdicts of ``pair`` in the recorded runs, grouped), or nothing when no run tested it."""
    by_verdict: dict[str, list[int]] = {}
    for run in result["runs"]:
        for claim in run["claims"]:
            if (claim["left"], claim["right"]) == pair:
                by_verdict.setdefault(claim["verdict"], []).append(run["train_pairs"])
    if not by_verdict:
        return ""
    parts = [f"{verdict} at {' and '.join(f'{n:,}' for n in sorted(rows))}" for verdict, rows in by_verdict.items()]
    return f' The paper\'s claim "{pair[0]} above {pair[1]}": ' + "; ".join(parts) + " rows per seed."


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


def _ifcl_setting_caption(result: dict[str, Any]) -> str:
    s = result["settings"]
    return (f"Each method trained for {s['steps']} steps of {s['batch_size']} at learning rate {s['learning_rate']:g} "
            f"(seed {s['seed']}, {s['precision']}) on all-MiniLM-L6-v2, measured by `benchmarks/ifcl_demo_setting.py` on "
            f"{result['machine']['cpu_model']} ({result['date'][:10]}): the loss and its terms in the first and the last "
            f"window of {s['log_steps']} steps, the mean cosine of its embeddings to the start's on the fixed probe, and "
            "whether it counts as trained (a loss at or below 0.001 in the first window: the objective was already solved).")


MEASUREMENTS: dict[str, tuple[str, str, Callable[[dict], pd.DataFrame], Callable[[dict], str]]] = {
    "mnrl_sbert": (TRAINING_ROWS, "How the verdicts move with the training rows", training_rows_frame, _training_rows_caption),
    "bsc": (CQA_SHUFFLE, "Could the demo decide the shuffle ablation on CQA-A?", cqa_shuffle_frame, _cqa_shuffle_caption),
    "ifcl": (IFCL_SETTING, "Which setting leaves the objective something to learn", ifcl_setting_frame, _ifcl_setting_caption),
}
"""chapter -> (its results file, the section's title, its table, its caption)."""


def read_measurement(chapter: str) -> dict[str, Any] | None:
    """The chapter's recorded result (None when the chapter has none, or it was not recorded)."""
    if chapter not in MEASUREMENTS:
        return None
    path = benchmark_result(MEASUREMENTS[chapter][0])
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, "a benchmark result (JSON)", exc.msg) from None


def measurement_frame(chapter: str) -> tuple[pd.DataFrame | None, str]:
    """``(table, caption)`` of the chapter's measurement; ``(None, why)`` when it was not recorded."""
    if chapter not in MEASUREMENTS:
        return None, f"the chapter {chapter} has no recorded measurement"
    name, _title, frame, caption = MEASUREMENTS[chapter]
    result = read_measurement(chapter)
    if result is None:
        return None, f"Not measured: this sentcl has no `benchmarks/results/{name}` (run `benchmarks/{name.removesuffix('_cpu.json')}.py`)."
    return frame(result), caption(result)


def chapter_section(chapter: str) -> str:
    """The page fragment of the chapter's measurement ("" for a chapter without one)."""
    if chapter not in MEASUREMENTS:
        return ""
    table, caption = measurement_frame(chapter)
    if table is None:
        return caption + "\n"
    if table.columns.nlevels == 1 and len(table.columns) > 8:  # one column per run: ten measures do not fit across
        table = table.T.rename_axis(table.index.name)
    flat = table.reset_index()
    return md(caption) + "\n\n" + md_table([md(str(c)) for c in flat.columns],
                                           [[md(str(v)) for v in row] for row in flat.itertuples(index=False)])


__all__ = ["MEASUREMENTS", "chapter_section", "cqa_shuffle_frame", "ifcl_setting_frame", "measurement_frame", "read_measurement",
           "training_rows_frame"]
