"""A chapter's demo learning rate by the rule its profile writes down before any verdict is read.

The rule (issue 46: one rate for every method of a chapter, never tuned per method, never chosen by what the
claims say). A trained row's seed-0 run *qualifies* at a rate when it learned by the health rule
(:func:`sentcl.training.health.learning`: its loss fell beyond its window-to-window noise and did not end at
chance) and did not diverge: its STS-B dev Spearman is not below the untouched encoder's. Of a short grid, the
rule takes the rates at which the most trained rows qualify and, of those, the one at which they score highest
on STS-B dev (their mean; the papers choose their settings on STS-B dev). The test sets are never read by it.

For each rate this script runs the chapter's notebook in the demo profile with that rate and the first seed
only (``sentcl reproduce --only CHAPTER -p learning_rate R -p seeds [S]``, the book's own code path, each rate
into its own folder, with a cache of its own under ``--work`` so that each run trains its models and its
training records name their folders), reads each trained model's health from what the run wrote, scores the
trained models and the untouched encoder on STS-B dev, and records
the rule's choice, with the first rule's (every row learned, no dev check) beside it. The run's test-set
averages go to the record for the reader only.

    .venv/bin/python benchmarks/rate_rule.py --chapter mnrl_sbert --data-dir ../shared/data
    # -> results/rate_rule_mnrl_sbert_cpu.json; the profile's learning_rate is set to its "chosen"

A chapter's test holds the demo profile's rate to the record's choice.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from _demo_runs import HEALTH_FIELDS, demo_run, gather, trained_models, write_result

HERE = Path(__file__).resolve().parent
GRID = (1e-4, 3e-4, 1e-3)
RULE = ("of the grid, the rates at which the most trained rows' seed-0 runs qualify (they learned by the health rule "
        "and their STS-B dev Spearman is not below the untouched encoder's), and of those the one at which those rows "
        "score highest on STS-B dev")
FIRST_RULE = ("the largest rate of the grid at which every trained row's seed-0 run learned (the health rule); where no "
              "rate qualifies, the largest at which the most of them learned")
"""The rule first written (no divergence check): kept beside the rule's choice, since it chose a rate at which the
softmax model collapsed (the record and benchmarks/README.md say how the rule came to change)."""


def qualifies(health: Mapping, dev: float, untouched_dev: float) -> bool:
    """A seed-0 run counts for the rule: it learned, and its STS-B dev score is not below the untouched encoder's."""
    return bool(health["learned"]) and dev >= untouched_dev


def choose(runs: Sequence[Mapping]) -> float:
    """The rule (:data:`RULE`) over ``runs``, one per rate: ``learning_rate``, ``qualifying`` (how many rows
    qualify) and ``qualifying_dev`` (their mean STS-B dev; None for none)."""
    return max(runs, key=lambda r: (r["qualifying"], r["qualifying_dev"] or float("-inf")))["learning_rate"]


def choose_first(runs: Sequence[Mapping]) -> float:
    """:data:`FIRST_RULE` over ``runs`` (``learned``: how many learned, ``trained``: how many rows)."""
    every = [r["learning_rate"] for r in runs if r["learned"] == r["trained"]]
    return max(every) if every else max(runs, key=lambda r: (r["learned"], r["learning_rate"]))["learning_rate"]


def rate_parameter(demo: Mapping) -> str:
    """The demo parameter holding a chapter's encoder learning rate: ``learning_rate`` (one rate, or one per task),
    or IFCL's ``learning_rates`` (one per encoder family)."""
    return next(key for key in ("learning_rate", "learning_rates") if key in demo)


def is_control(name: str, demo: Mapping) -> bool:
    """Whether the trained model ``name`` is a control of the demo's ``control_models`` (the geometry chapter's
    "MNRL (random init) seed 0"): no method of the chapter, so the rule never counts it; it trains at the rate the
    rule picks for the methods, and its health is recorded beside."""
    return any(f"({family})" in name for family in demo.get("control_models", {}))


def dev_scores(models: Mapping[str, Any], evaluate) -> dict[str, float]:
    """STS-B dev Spearman (x 100, as ``evaluate``, the STS-B dev evaluator, gives it) of each trained model of
    :func:`trained_models`, loaded from the artifact folder its training record names."""
    from sentcl.models import load_encoder

    return {name: round(evaluate(load_encoder(Path(r.config["output_dir"]) / "model"))["spearman"], 3) for name, r in models.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapter", required=True)
    parser.add_argument("--data-dir", default=os.environ.get("SENTCL_DATA") or str(HERE.parent.parent / "shared" / "data"))
    parser.add_argument("--grid", type=float, nargs="+", default=list(GRID))
    parser.add_argument("--column", default="Average", help="the results column shown for the reader (default: Average)")
    parser.add_argument("--work", default=None, help="where the runs' output folders go (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="gather a rate from its folder in --work when a finished run is there (no rerun)")
    parser.add_argument("--out", default=None, help="default: results/rate_rule_CHAPTER_cpu.json")
    args = parser.parse_args()

    from sentcl.book.parameters import shipped_parameters
    from sentcl.chapters import CHAPTERS
    from sentcl.data.registry import load
    from sentcl.evaluation.scoring import dev_evaluator
    from sentcl.models import load_encoder
    from sentcl.paths import CACHE_ENV

    work = Path(args.work or tempfile.mkdtemp(prefix=f"rate_rule_{args.chapter}-"))
    # a cache of its own: every rate's models are trained by its run, whose training records name their folders
    os.environ[CACHE_ENV] = str(work / "cache")
    demo = shipped_parameters(args.chapter, "demo")
    key = rate_parameter(demo)
    seed = demo["seeds"][0]
    [untouched] = set(CHAPTERS[args.chapter].models(demo).values())  # the demo fine-tunes one encoder
    evaluate = dev_evaluator("STSb", load("stsbenchmark", "dev", data_dir=args.data_dir))
    untouched_dev = round(evaluate(load_encoder(untouched))["spearman"], 3)
    runs, loads = [], []
    for rate in sorted(args.grid):
        out = work / f"lr-{rate:g}"
        # one rate for every trained row: per task where the chapter sets its rates per task
        given = {task: rate for task in demo[key]} if isinstance(demo[key], dict) else rate
        # seed 0 alone, for every row (RCL's dropout rows have seeds of their own)
        seeds = {name: json.dumps([seed]) for name in ("seeds", "baseline_seeds") if name in demo}
        wall, load_average = demo_run(args.chapter, out, {key: json.dumps(given), **seeds},
                                      args.data_dir, reuse=args.reuse)
        models = trained_models(out, args.chapter)
        controls = {name: {k: r.health.get(k) for k in HEALTH_FIELDS} for name, r in sorted(models.items()) if is_control(name, demo)}
        models = {name: r for name, r in models.items() if name not in controls}
        found = gather(out, args.chapter, args.column) | {
            "health": {name: {k: r.health.get(k) for k in HEALTH_FIELDS} for name, r in sorted(models.items())},
            "controls": controls}
        devs = dev_scores(models, evaluate)
        good = [name for name, h in found["health"].items() if qualifies(h, devs[name], untouched_dev)]
        loads.append({"learning_rate": rate, **load_average})
        runs.append({"learning_rate": rate, "command_wall_s": round(wall, 1), "trained": len(found["health"]),
                     "learned": sum(bool(h["learned"]) for h in found["health"].values()),
                     "all_learned": all(h["learned"] for h in found["health"].values()), "stsb_dev": devs,
                     "qualifying": len(good), "qualifying_dev": round(sum(devs[n] for n in good) / len(good), 3) if good else None,
                     **found})
        print({k: runs[-1][k] for k in ("learning_rate", "learned", "qualifying", "qualifying_dev", "stsb_dev")}, flush=True)
    chosen, first = choose(runs), choose_first(runs)
    print(f"chosen: {chosen} (the first rule: {first})")
    write_result(args.out or str(HERE / "results" / f"rate_rule_{args.chapter}_cpu.json"), f"rate_rule_{args.chapter}",
                 "learning rate", loads, runs, chapter=args.chapter, grid=sorted(args.grid), seed=seed, rule=RULE,
                 column=args.column, chosen=chosen, untouched={"model": untouched, "stsb_dev": untouched_dev},
                 first_rule={"rule": FIRST_RULE, "chosen": first},
                 demo_profile={k: v for k, v in demo.items() if k != key})


if __name__ == "__main__":
    main()
