"""What a chapter shows from its hand-run benchmarks: measurements that decide how its demo is set up.

A chapter may rest a demo choice on a measurement made outside the book's run: its
:attr:`~sentcl.book.chapter_spec.Chapter.measurement` (a :class:`Measurement`) names the recorded result
(shipped with sentcl, ``benchmarks/results``: :func:`sentcl.paths.benchmark_result`), the section's title,
and the functions that make its table and caption (in the chapter's package, ``sentcl/chapters/<name>/``).

:func:`measurement_frame` gives a chapter's table and caption, :func:`measurement` both as the notebook shows them
(``show(measurement(chapter))``), :func:`chapter_section` the same as a page fragment
(``book/_generated/<chapter>/measured.md``, which the chapter page includes);
:func:`interval_cell`, :func:`mean_std_cell` and :func:`health_columns` are the cells the chapters' tables share.

A demo that picks its learning rate by the rule its profile states has a second record, ``benchmarks/rate_rule.py``'s
(:func:`rate_rule`: the same functions take it as ``measure``); :func:`rate_rule_section` is its page fragment
(``book/_generated/<chapter>/rate_rule.md``), empty for a chapter without one. :func:`sensitivity_section` counts how
many of a build's primary verdicts change when ``benchmarks/sensitivity.py`` reran the demo in other settings
(``book/_generated/<chapter>/sensitivity.md``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ...errors import DataFormatError
from ...paths import benchmark_result
from ..chapter_spec import Chapter
from ..markdown import md, md_table


@dataclass(frozen=True)
class Measurement:
    """A chapter's hand-run benchmark: its results file in ``benchmarks/results`` (written by
    ``benchmarks/<record less _cpu.json>.py``), the section's title, and its table and caption of the result."""

    record: str
    title: str
    frame: Callable[[dict[str, Any]], pd.DataFrame]
    caption: Callable[[dict[str, Any]], str]


def interval_cell(claim: dict[str, Any] | None, digits: int = 2) -> str:
    """A claim's cell: ``+0.50 [-0.10, +1.10] undetermined`` (the verdict alone without a difference; — for none)."""
    if claim is None:
        return "—"
    if claim.get("delta") is None or (isinstance(claim["delta"], float) and math.isnan(claim["delta"])):
        return f"{claim['verdict']}"
    return f"{claim['delta']:+.{digits}f} [{claim['ci_low']:+.{digits}f}, {claim['ci_high']:+.{digits}f}] {claim['verdict']}"


def mean_std_cell(cell: dict[str, Any] | None, digits: int = 2) -> str:
    """A row's cell: ``80.50 ± 0.10`` (mean ± std over the seeds; the mean alone for one seed; — for none)."""
    if cell is None:
        return "—"
    return f"{cell['value']:.{digits}f}" + (f" ± {cell['std']:.{digits}f}" if cell.get("std") is not None else "")


def health_columns(health: dict[str, dict]) -> dict[str, str]:
    """The trained models' health in two cells: the lowest cosine to the start, how many counted as trained."""
    cosines = [h["start_cosine"] for h in health.values() if h.get("start_cosine") is not None]
    return {"lowest cosine to start": f"{min(cosines):.4f}" if cosines else "—",
            "trained (active)": f"{sum(bool(h.get('active')) for h in health.values())} of {len(health)}"}


def _learned_cell(health: dict[str, Any]) -> str:
    start, end = health.get("loss_start") or {}, health.get("loss_end") or {}
    loss = f"{start['loss']:.3f} → {end['loss']:.3f}" if start and end else "no loss"
    return f"{'yes' if health.get('learned') else 'no'} ({loss})"


def rate_rule_frame(result: dict[str, Any]) -> pd.DataFrame:
    """One row per learning rate of a ``benchmarks/rate_rule.py`` record: per trained model of the seed-0 run,
    whether it learned (the health rule; its loss from the first to the last window) and its STS-B dev score;
    how many qualified (learned, dev not below the untouched encoder's) and their mean dev; whether each control
    (the geometry chapter's random-initialised encoder, which the rule does not count) learned; the rule's choice and
    the first rule's; and, for the reader only (the rules read no test score), each row's test-set average."""
    rows = []
    for run in result["runs"]:
        row: dict[str, str] = {"learning rate": f"{run['learning_rate']:g}"}
        trained = {name.split(" seed")[0] for name in run["health"]}  # "MNRLSBERT", or a task's "STSb MSE"
        for name, h in run["health"].items():
            row[f"{name.split(' seed')[0]} learned (loss)"] = _learned_cell(h)
            row[f"{name.split(' seed')[0]} STS-B dev"] = f"{run['stsb_dev'][name]:.2f}"
        for name, h in run.get("controls", {}).items():  # a control trains at the rate chosen for the methods
            row[f"{name.split(' seed')[0]} learned (loss; a control, not counted)"] = _learned_cell(h)
        row["qualify (mean dev)"] = (f"{run['qualifying']} of {run['trained']}"
                                     + (f" ({run['qualifying_dev']:.2f})" if run["qualifying_dev"] is not None else ""))
        row["chosen"] = "**the rule**" if run["learning_rate"] == result["chosen"] else ""
        row["the first rule"] = "chose it" if run["learning_rate"] == result["first_rule"]["chosen"] else ""
        row.update({f"{name} ({result['column']}, test, not read)": f"{cell['value']:.2f}"
                    for name, cell in run["average"].items() if any(m == name or m.endswith(f" {name}") for m in trained)})
        rows.append(row)
    return pd.DataFrame(rows).set_index("learning rate")


def rate_rule_caption(result: dict[str, Any]) -> str:
    """What a ``benchmarks/rate_rule.py`` record shows: the rule, its grid and seed, the machine, the choice."""
    untouched = result["untouched"]
    return (f"The demo's learning rate, one for every trained row, by its rule: {result['rule']}. Grid "
            f"{', '.join(f'{r:g}' for r in result['grid'])}, seed {result['seed']}, the rest of the demo profile unchanged; "
            f"the untouched {untouched['model']} scores {untouched['stsb_dev']:.2f} on STS-B dev. Measured by "
            f"`benchmarks/rate_rule.py --chapter {result['chapter']}` on {result['machine']['cpu_model']} "
            f"({result['date'][:10]}): the rule chose {result['chosen']:g}. " + _first_rule(result))


def _first_rule(result: dict[str, Any]) -> str:
    first = result["first_rule"]
    if first["chosen"] == result["chosen"]:
        return f"The rule first written, without the dev check ({first['rule']}), chose the same."
    return (f"The rule first written ({first['rule']}) chose {first['chosen']:g}: it had no check for a model whose "
            "loss falls while its embeddings degrade. The rule now has one, written after the MNRL-SBERT demo's runs under "
            "the first rule and their test averages were seen, so it is not blind to those (`benchmarks/README.md` says "
            "how it came about).")


def rate_rule(chapter: str) -> Measurement:
    """A chapter's measurement that its demo's learning rate rests on (``benchmarks/rate_rule.py``)."""
    return Measurement(f"rate_rule_{chapter}_cpu.json", "The demo's learning rate", rate_rule_frame, rate_rule_caption)


def recorded(name: str) -> dict[str, Any] | None:
    """The benchmark record ``benchmarks/results/<name>`` shipped with sentcl, or None where this sentcl has none
    (not measured); a DataFormatError naming the file and line where it is not JSON."""
    path = benchmark_result(name)
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, "a benchmark result (JSON)", exc.msg) from None


def measurement_frame(chapter: Chapter, measure: Measurement | None = None) -> tuple[pd.DataFrame | None, str]:
    """``(table, caption)`` of the chapter's measurement (or of ``measure``, e.g. its :func:`rate_rule`);
    ``(None, why)`` when it was not recorded."""
    measure = measure or chapter.measurement
    if measure is None:
        return None, f"the chapter {chapter.name} has no recorded measurement"
    result = recorded(measure.record)
    if result is None:
        name = measure.record
        script = name.removesuffix("_cpu.json").removesuffix(f"_{chapter.name}")
        return None, f"Not measured: this sentcl has no `benchmarks/results/{name}` (run `benchmarks/{script}.py`)."
    return measure.frame(result), measure.caption(result)


def measurement(chapter: Chapter, measure: Measurement | None = None) -> list[str | pd.DataFrame]:
    """The chapter's measurement (or ``measure``) as its notebook shows it: the caption, then the table
    (:func:`turned`); the caption alone (why) where it was not recorded. One line of a notebook cell:
    ``show(measurement(chapter))``."""
    table, caption = measurement_frame(chapter, measure)
    return [caption] if table is None else [caption, turned(table)]


def turned(table: pd.DataFrame) -> pd.DataFrame:
    """A measurement's table of more than 8 columns, one per run, turned so that its measures are rows (ten do not
    fit across); a narrower one as it is."""
    return table.T if table.columns.nlevels == 1 and len(table.columns) > 8 else table


def chapter_section(chapter: Chapter, measure: Measurement | None = None) -> str:
    """The page fragment of the chapter's measurement (or of ``measure``; "" for a chapter without one), laid out as
    in its notebook."""
    if (measure or chapter.measurement) is None:
        return ""
    table, caption = measurement_frame(chapter, measure)
    return caption + "\n" if table is None else _section(table, caption)


def rate_rule_section(chapter: Chapter) -> str:
    """The page fragment of the chapter's demo learning rate (:func:`rate_rule`), "" where none is recorded: a
    chapter whose demo does not choose its rate by the rule has no record."""
    table, caption = measurement_frame(chapter, rate_rule(chapter.name))
    return "" if table is None else _section(table, caption)


SENSITIVITY = "sensitivity_cpu.json"
"""``benchmarks/sensitivity.py``'s record: the demos' primary claims rerun in other settings (issue 46, item 7)."""
NOT_IN_RUN = "not in that run"
SETTING_LABELS = {"rate x1/3": "rate ×⅓", "rate x3": "rate ×3", "half-pretrained": "half-pretrained mini"}


def sensitivity_frame(chapter: str, claims: pd.DataFrame, result: dict[str, Any]) -> pd.DataFrame | None:
    """One row per primary claim of this build's ``claims`` (its key, claim and column): its verdict here and in each
    setting of the :data:`SENSITIVITY` record ``result`` for ``chapter`` (a changed verdict in bold; :data:`NOT_IN_RUN`
    where the setting's run has no such claim, as "not tested"); None where the record has no run of ``chapter``."""
    runs = {r["setting"]: {(c["table"], c["claim"], c["column"]): c for c in r["primary"]}
            for r in result["runs"] if r["chapter"] == chapter}
    if not runs:
        return None
    primary = claims[claims["family"] == "primary"]
    rows = []
    for claim in primary.to_dict("records"):
        key = (claim["table"], claim["claim"], claim["column"])
        row = {"claim": f"{claim['central']}: {claim['claim']} ({claim['column']})", "this build": claim["verdict"]}
        for setting, found in runs.items():
            there = found.get(key)  # a claim the setting's run did not write was not tested there
            verdict, said = (there["verdict"], there["verdict"]) if there else ("not tested", NOT_IN_RUN)
            row[SETTING_LABELS.get(setting, setting)] = f"**{said}**" if verdict != claim["verdict"] else said
        rows.append(row)
    columns = ["claim", "this build", *(SETTING_LABELS.get(setting, setting) for setting in runs)]
    return pd.DataFrame(rows, columns=columns).set_index("claim")


def sensitivity_flips(frame: pd.DataFrame) -> dict[str, int]:
    """Setting -> how many of :func:`sensitivity_frame`'s primary verdicts it changed (its bold cells)."""
    return {column: int(frame[column].str.startswith("**").sum()) for column in frame.columns if column != "this build"}


def sensitivity_section(chapter: str, claims: pd.DataFrame, profiles: Sequence[str] = ("demo",)) -> str:
    """The page fragment of the chapter's sensitivity (``book/_generated/<chapter>/sensitivity.md``): how many of this
    build's primary verdicts (its run's ``profiles``: the record reran the demo, so only a demo build compares) each
    setting of the :data:`SENSITIVITY` record changes, and the claims' table; a line saying so where nothing was
    measured. Reported, never acted on: no profile reads it."""
    if list(profiles) != ["demo"]:
        return (f"*`benchmarks/sensitivity.py` reran the demo profile; this build ran {', '.join(profiles) or 'nothing'}: "
                "its verdicts are not the ones those runs vary.*\n")
    result = recorded(SENSITIVITY)
    frame = sensitivity_frame(chapter, claims, result) if result is not None else None
    if result is None or frame is None:
        return ("*Not measured: `benchmarks/sensitivity.py` has no run of this chapter's demo in other settings "
                "(`benchmarks/results/sensitivity_cpu.json`).*\n")
    if frame.empty:
        return "*This build records no primary claim, so no verdict can flip.*\n"
    flips = sensitivity_flips(frame)
    shown = frame[~frame.isin(["not tested", NOT_IN_RUN]).all(axis=1)]  # a claim no setting tested says nothing here
    half = result["half_checkpoint"]
    said = ", ".join(f"{n} with {setting}" for setting, n in flips.items())
    caption = (f"Sensitivity, reported and never acted on: the demo rerun with its learning rate divided and multiplied "
               f"by 3 and, at its rate, from the checkpoint sentcl-mini's pretraining exported at half its steps (step "
               f"{half['step']:,} of {half['of_steps']:,}; held-out MLM loss {half['heldout_loss_at_half']:.2f} there, "
               f"{half['heldout_loss_final']:.2f} at the end), by `benchmarks/sensitivity.py` on "
               f"{result['machine']['cpu_model']} ({result['date'][:10]}). Verdicts changed (in bold) of this build's "
               f"{len(frame)} primary claims: {said}. A verdict that changes with the setting is one to read with care; no profile "
               "was changed by it."
               + (f" Left out of the table: {len(frame) - len(shown)} primary claims not tested here nor in any setting."
                  if len(shown) < len(frame) else ""))
    return _section(shown, caption) if len(shown) else md(caption) + "\n"


def _section(table: pd.DataFrame, caption: str) -> str:
    shown = turned(table)
    if shown is not table:  # its measures are rows: their column headed as the table's rows were
        shown = shown.rename_axis(table.index.name)
    flat = shown.reset_index()
    return md(caption) + "\n\n" + md_table([md(str(c)) for c in flat.columns],
                                           [[md(str(v)) for v in row] for row in flat.itertuples(index=False)])


__all__ = ["SENSITIVITY", "Measurement", "chapter_section", "health_columns", "interval_cell", "mean_std_cell", "measurement", "measurement_frame",
           "rate_rule", "rate_rule_caption", "rate_rule_frame", "rate_rule_section", "sensitivity_flips", "sensitivity_frame",
           "sensitivity_section", "turned"]
