"""How the demo's primary verdicts move when its setting moves: reported on each page, never acted on (issue 46,
item 7).

For each chapter whose demo fine-tunes sentcl-mini and declares a primary family (its central claims), this script
reruns the chapter's demo in three other settings, each through the book's own code path
(``sentcl reproduce --profile demo --only CHAPTER -p ...``, :func:`_demo_runs.demo_run`), each into its own folder:

- ``rate x1/3`` and ``rate x3``: every learning rate of the chapter (the one its rule chose, :mod:`rate_rule`)
  divided or multiplied by 3;
- ``half-pretrained``: every parameter naming ``sentcl-mini`` names instead the checkpoint that the mini's
  pretraining exported at half its steps (``sentcl pretrain`` writes it to ``half/`` in its ``--work`` folder; it is
  not shipped, so ``--half`` names it), at the chosen rate.

It records, per setting and chapter, the verdict of every primary claim (``claims/<chapter>.csv``: its difference,
95 % interval and Holm p) and how many trained models learned (the health rule). The pages count, against the
build's own verdicts, how many primary verdicts each setting flips
(:func:`sentcl.book.estimates.benchmarks.sensitivity_section`). Nothing here changes a profile. Each run keeps the
demo profile it varied (``demo_profile``): a test holds the record to the shipped profiles, so a record made before
a profile changed fails it (rerun; the artifact cache of the earlier runs, ``SENTCL_CACHE``, spares the unchanged
models' training).

    .venv/bin/python benchmarks/sensitivity.py --data-dir ../shared/data \\
        --half ~/.cache/sentcl/pretrain/<run>/half --work /tmp/sensitivity   # -> results/sensitivity_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _demo_runs import demo_run, write_result
from rate_rule import rate_parameter

HERE = Path(__file__).resolve().parent
MINI = "sentcl-mini"
SETTINGS = {"rate x1/3": 1 / 3, "rate x3": 3.0, "half-pretrained": None}
"""Each setting -> the factor on the chapter's learning rates (None: the chosen rate, the half-pretrained encoder)."""
PRIMARY_FIELDS = ("central", "table", "claim", "column", "verdict", "delta", "ci_low", "ci_high", "p_holm")


def chapters() -> list[str]:
    """The chapters this benchmark reruns: those whose demo fine-tunes sentcl-mini and that declare central claims."""
    from sentcl.book.parameters import shipped_parameters
    from sentcl.chapters import CHAPTERS

    return [name for name, spec in CHAPTERS.items() if spec.central is not None and spec.models is not None
            and MINI in spec.models(shipped_parameters(name, "demo")).values()]


def scaled(value: Any, factor: float) -> Any:
    """A learning rate (or a mapping of them: per task, per family) times ``factor``."""
    if isinstance(value, Mapping):
        return {k: scaled(v, factor) for k, v in value.items()}
    return float(f"{value * factor:.3g}")


def swapped(value: Any, encoder: str) -> Any:
    """``value`` with every :data:`MINI` (the value itself, or a mapping's value) replaced by ``encoder``."""
    if isinstance(value, Mapping):
        return {k: swapped(v, encoder) for k, v in value.items()}
    return encoder if value == MINI else value


def overrides(demo: Mapping[str, Any], setting: str, half: str) -> dict[str, Any]:
    """The demo parameters ``setting`` changes (name -> value)."""
    factor = SETTINGS[setting]
    if factor is not None:
        key = rate_parameter(demo)
        return {key: scaled(demo[key], factor)}
    return {name: swapped(value, half) for name, value in demo.items() if swapped(value, half) != value}


def primary_claims(out: Path, chapter: str) -> list[dict[str, Any]]:
    """Every claim of the primary family the run in ``out`` wrote, with its verdict, difference and interval."""
    from sentcl.book.output.claims import read_claims

    frame = read_claims(out, chapter)
    rows = frame[frame["family"] == "primary"]
    return [{k: (None if v != v else v) for k, v in row.items()} for row in rows[list(PRIMARY_FIELDS)].to_dict("records")]


def evidence_health(out: Path, chapter: str) -> dict[str, dict[str, Any]]:
    """Name -> the health record of every trained model the run's rows rest on, read from their evidence (a model
    loaded from the artifact cache leaves no training record of this run, but its rows keep its health). A model
    two rows name differently (RCL's Eq. 1 run is its attention-dropout row) is one: records equal but for the name
    are counted once, under the first name."""
    from sentcl.book.output.evidence import load_evidence

    found: dict[str, dict[str, Any]] = {}
    for ev in load_evidence(out, chapter).values():
        for meta in ev.tasks.values():
            for h in (h for records in meta["health"].values() for h in records if h and h.get("name")):
                found.setdefault(json.dumps({k: v for k, v in h.items() if k != "name"}, sort_keys=True), h)
    return {h["name"]: h for h in found.values()}


def half_provenance(half: Path) -> dict[str, Any]:
    """The half-way checkpoint's step and held-out MLM loss, from the pretraining record beside it."""
    record = json.loads((half.parent / "record.json").read_text(encoding="utf-8"))
    step = record["steps"] // 2
    heldout = [loss for at, loss in record["heldout"] if at <= step]
    return {"step": step, "of_steps": record["steps"], "heldout_loss_at_half": heldout[-1] if heldout else None,
            "heldout_loss_final": record["heldout"][-1][1]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--half", required=True, type=Path, help="the half-way checkpoint folder of sentcl-mini's pretraining run")
    parser.add_argument("--work", required=True, type=Path, help="where each run's output folder goes (resumable: --reuse)")
    parser.add_argument("--settings", nargs="+", default=list(SETTINGS), choices=list(SETTINGS))
    parser.add_argument("--only", nargs="+", default=None, help="chapters (default: every one that qualifies)")
    parser.add_argument("--reuse", action="store_true", help="gather a run from its folder when a finished one is there")
    parser.add_argument("--out", default=str(HERE / "results" / "sensitivity_cpu.json"))
    args = parser.parse_args()

    from sentcl.book.parameters import shipped_parameters

    half = args.half.expanduser().resolve()
    runs, loads = [], []
    for setting in args.settings:
        for chapter in args.only or chapters():
            demo = shipped_parameters(chapter, "demo")
            changed = overrides(demo, setting, str(half))
            out = args.work / setting.replace(" ", "_").replace("/", "-") / chapter
            given = {k: v if isinstance(v, str) else json.dumps(v) for k, v in changed.items()}  # -p reads a str as is
            wall, load = demo_run(chapter, out, given, args.data_dir, reuse=args.reuse)
            health = list(evidence_health(out, chapter).values())
            runs.append({"setting": setting, "chapter": chapter, "demo_profile": demo, "changed": swapped_back(changed, half),
                         "command_wall_s": round(wall, 1), "trained": len(health),
                         "learned": sum(bool(h.get("learned")) for h in health), "primary": primary_claims(out, chapter)})
            loads.append({"setting": setting, "chapter": chapter, **load})
            print({k: runs[-1][k] for k in ("setting", "chapter", "learned", "trained")},
                  [c["verdict"] for c in runs[-1]["primary"]], flush=True)
    write_result(args.out, "sensitivity", "setting", loads, runs, settings={k: v for k, v in SETTINGS.items() if k in args.settings},
                 half_checkpoint=half_provenance(half), reported_never_acted_on=True)


def swapped_back(changed: Mapping[str, Any], half: Path) -> dict[str, Any]:
    """``changed`` as the record shows it: the half-way checkpoint's local path named ``sentcl-mini (half)``."""
    return {k: json.loads(json.dumps(v).replace(json.dumps(str(half))[1:-1], f"{MINI} (half)")) for k, v in changed.items()}


if __name__ == "__main__":
    main()
