"""``sentcl reproduce``: run the chapter notebooks with papermill, then build the book.

Each chapter is ``notebooks/<chapter>.ipynb``; its first cell is tagged ``parameters``
and holds only ``NAME = literal`` lines, among them ``profile``, ``data_dir`` and
``out_dir`` (set by this command from ``--profile``, ``--data-dir`` and ``--out``).
``notebooks/<chapter>.profiles.yaml`` gives the values of each profile
(:mod:`sentcl.book.parameters`). This command injects every value of the profile, the ``-p``
overrides and its own three, and tells the kernel where each value came from
(:data:`~sentcl.book.parameters.RESOLVED_ENV`), so the notebook's own profile resolution (the cell after its
install cell) takes them as they are: the profile is read and checked once, here.

The notebook also needs a ``# Title`` markdown cell (after the parameters cell): the book
uses it as the page title, and a page without one fails the build. The cell after the
title installs sentcl where it is missing (Colab; :mod:`sentcl.book.publishing.install`), the one after
it resolves the profile; ``tests/chapters/test_notebooks.py`` checks this layout for every
chapter.

A name the parameters cell does not define (in a profile file or ``-p NAME VALUE``) is
an error naming the valid ones, and values are checked against the type of the cell's
default (``-p`` strings are converted to it). Everything is checked before anything
runs. Notebooks then run one after another (a progress bar over cells each); the work
inside a cell (training steps, long encodings: :func:`sentcl.progress.progress_bar`) shows
its own bars on this command's terminal, not in the saved notebook, because the kernels
run with ``$SENTCL_PROGRESS=terminal``. A failed notebook is reported with its failing
cell while the others still run; each writes a run record; a summary of wall times
follows; then the book is built from the output folder (:mod:`sentcl.book.publishing.site`). The
exit status is 1 when a notebook or the book failed.

Output folder (``--out``, default ``runs/<profile>``): ``notebooks/`` (executed
notebooks), ``results/``, ``figures/``, ``data_used/``, ``records/`` and ``book_source/``
(the book's sources, generated); the HTML goes to ``<book-dir>/_build/html`` (default:
the project root).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...chapters import CHAPTERS
from ...errors import ConfigError, SentclError
from ...io import read_json, release, report_damaged
from ...paths import project_root
from ...precision import describe_machine
from ...progress import LABEL_ENV, PROGRESS_ENV, TERMINAL
from ..markdown import duration
from ..notebook.chapter_run import OUTPUT_CLAIMED_ENV, claim_output
from ..output.layout import Layout
from ..output.results import RUN_ID_ENV, new_run_id
from ..output.run_records import RunRecord, environment, write_run_record
from ..parameters import INJECTED, check_data_dir, notebook_parameters, parse_value, read_profiles, resolution, unknown_parameter
from ..profiles import NAMES, DataChoice, resolve_data
from . import site


@dataclass
class Plan:
    """One notebook to run: its chapter, paths, the values papermill injects (the
    profile's, the overrides and the three set by the runner) and all its parameters."""

    chapter: str
    notebook: Path
    executed: Path
    injected: dict[str, Any]
    parameters: dict[str, Any]
    origins: dict[str, str] = field(default_factory=dict)
    """Where each parameter's value came from (the profile, ``-p``, this command's options, the cell's default):
    the kernel takes the injected values as resolved (:data:`sentcl.book.parameters.RESOLVED_ENV`)."""


def plan_chapter(
    root: Path, chapter: str, profile: str, overrides: list[tuple[str, str]], data: DataChoice, out: Path
) -> Plan:
    """The parameters a chapter's notebook runs with: its defaults, then the profile's
    values, then ``-p`` overrides, then ``profile``/``data_dir``/``out_dir``."""
    notebook = root / "notebooks" / f"{chapter}.ipynb"
    defaults = notebook_parameters(notebook)
    injected = dict(read_profiles(notebook.with_suffix(".profiles.yaml"), defaults)[profile])
    origins = {name: f"profile {profile}" if name in injected else "default" for name in defaults}
    for name, text in overrides:
        where = f"-p {name} (notebooks/{chapter}.ipynb)"
        if name in INJECTED:
            raise ConfigError(f"{where}: {name} is set with {INJECTED[name]}")
        if name not in defaults:
            raise unknown_parameter(name, defaults, where)
        injected[name], origins[name] = parse_value(name, text, defaults[name], where), "given (-p)"
    injected.update(profile=profile, data_dir=str(data.root), out_dir=str(out))
    origins |= {name: f"given ({option})" for name, option in INJECTED.items()}
    return Plan(chapter, notebook, Layout(out).notebook(chapter), injected, {**defaults, **injected}, origins)


# --------------------------------------------------------------------------- execution


@dataclass
class Outcome:
    chapter: str
    status: str  # ok | failed
    wall_time_s: float
    peak_memory_mb: float | None
    executed: Path
    failure: str | None = None
    lines: list[str] = field(default_factory=list)  # the failure report, for the terminal


class _KernelPeakMemory:
    """Peak resident memory of the notebook's kernel, read after every cell (Linux:
    VmHWM of the kernel process, a child of this one). None where not measurable."""

    def __init__(self) -> None:
        self.peak_kb: int | None = None

    def __call__(self, **_: Any) -> None:
        try:
            import psutil

            kernels = [p for p in psutil.Process().children() if "ipykernel" in " ".join(p.cmdline())]
        except Exception:  # noqa: BLE001 - memory is informative only; never fail a run for it
            return
        for proc in kernels:
            try:
                for line in Path(f"/proc/{proc.pid}/status").read_text().splitlines():
                    if line.startswith("VmHWM:"):
                        kb = int(line.split()[1])
                        self.peak_kb = max(self.peak_kb or 0, kb)
            except (OSError, ValueError):
                pass

    @property
    def mb(self) -> float | None:
        return None if self.peak_kb is None else round(self.peak_kb / 1024, 1)


def execute(plan: Plan, profile: str, data: DataChoice, env: dict[str, Any], cwd: Path) -> Outcome:
    """Run one notebook with papermill; write its run record; never raise for a
    failure inside the notebook (it is reported in the outcome)."""
    import papermill
    from papermill.exceptions import PapermillExecutionError

    run_id = new_run_id()
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    probe = _KernelPeakMemory()
    plan.executed.parent.mkdir(parents=True, exist_ok=True)
    # the kernel inherits these: its run id, and progress bars drawn on this terminal
    kernel_env = {RUN_ID_ENV: run_id, PROGRESS_ENV: TERMINAL, LABEL_ENV: plan.chapter,
                  OUTPUT_CLAIMED_ENV: str(Path(plan.parameters["out_dir"]).resolve()),
                  **resolution(plan.chapter, profile, plan.origins)}
    old = {name: os.environ.get(name) for name in kernel_env}
    os.environ.update(kernel_env)
    t0 = time.perf_counter()
    failure, lines = None, []
    try:
        papermill.execute_notebook(
            str(plan.notebook),
            str(plan.executed),
            parameters=plan.injected,
            kernel_name="python3",
            progress_bar={"desc": plan.chapter, "unit": "cell"},
            cwd=str(cwd),
            on_cell_executed=probe,
        )
    except PapermillExecutionError as exc:
        source = exc.source.strip().splitlines()
        excerpt = source[:6] + (["..."] if len(source) > 6 else [])
        failure = f"cell {exc.cell_index} (In [{exc.exec_count}]) raised {exc.ename}: {exc.evalue}"
        lines = [failure, *(f"    | {s}" for s in excerpt)]
    except Exception as exc:  # noqa: BLE001 - a dead kernel, a timeout...: report, go on with the others
        failure = f"{type(exc).__name__}: {exc}"
        lines = [failure]
    finally:
        wall = round(time.perf_counter() - t0, 3)
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    record = RunRecord(
        kind="notebook",
        name=plan.chapter,
        chapter=plan.chapter,
        profile=profile,
        run_id=run_id,
        started=started,
        wall_time_s=wall,
        status="failed" if failure else "ok",
        error=failure,
        parameters=plan.parameters,
        config={
            "notebook": f"notebooks/{plan.chapter}.ipynb",
            "executed": str(plan.executed),
            "data_root": str(data.root),
            "sample": data.sample,
        },
        seed=plan.parameters.get("seed") if isinstance(plan.parameters.get("seed"), int) else None,
        device=env["device"],
        versions=env["versions"],
        peak_memory_mb=probe.mb,
        precision=describe_machine() | {"uses": _precision_uses(Path(plan.parameters["out_dir"]), plan.chapter, run_id)},
    )
    write_run_record(Path(plan.parameters["out_dir"]), record)
    return Outcome(plan.chapter, record.status, wall, probe.mb, plan.executed, failure, lines)


def _precision_uses(out: Path, chapter: str, run_id: str) -> list[dict[str, Any]]:
    """What the notebook's kernel ran in which precision (written by its ChapterRun); [] if it wrote nothing."""
    path = Layout(out).precision_record(chapter, run_id)
    if not path.is_file():
        return []
    try:
        return list(read_json(path, "a chapter's precision uses")["uses"])
    except (SentclError, KeyError, TypeError) as exc:
        report_damaged(path, str(exc), "the notebook's run record shows no precision uses")
        return []


def summary_table(outcomes: list[Outcome], root: Path) -> str:
    """A plain-text table: chapter, status, wall time, peak memory, executed notebook."""
    rows = [("chapter", "status", "wall time", "peak memory", "executed notebook")]
    for o in outcomes:
        try:
            shown = o.executed.relative_to(root)
        except ValueError:
            shown = o.executed
        rows.append(
            (o.chapter, o.status, duration(o.wall_time_s), "-" if o.peak_memory_mb is None else f"{o.peak_memory_mb:.0f} MiB", str(shown))
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    text = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    text.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(text)


# --------------------------------------------------------------------------- command


def register(subparsers, name: str, summary: str) -> None:
    p = subparsers.add_parser(name, help=summary, description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", choices=NAMES, default="demo", help="parameter set: smoke, demo (default), rehearsal or paper")
    p.add_argument("--only", nargs="+", metavar="CHAPTER", help=f"run only these chapters ({', '.join(CHAPTERS)})")
    p.add_argument("--data-dir", help="the data root (default: $SENTCL_DATA; demo falls back to data/samples)")
    p.add_argument("--out", help="output folder (default: runs/<profile> in the project)")
    p.add_argument(
        "-p", dest="overrides", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
        help="set a notebook parameter (typed like its default); repeatable",
    )
    p.add_argument("--book-dir", help="build the book into BOOK_DIR/_build/html (default: the project root)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--no-book", action="store_true", help="run the notebooks, do not build the book")
    which.add_argument("--book-only", action="store_true", help="build the book from the output folder, run nothing")
    p.add_argument("--executor", choices=("local", "ray"), default="local",
                   help="local (default): each notebook trains its runs in turn; ray: every planned stage of the chapters "
                        "that plan theirs is first built as a task on a Ray cluster, then the notebooks run and find them built")
    p.add_argument("--address", default=None, help="with --executor ray: a running cluster to join (auto, or ray://host:port); "
                                      "default: start a local one on this machine")
    p.add_argument("--runs-per-gpu", type=int, default=None, metavar="K",
                   help="with --executor ray: runs sharing one GPU (each asks for 1/K of it; mind the chapter's GPU-memory table)")
    p.add_argument("--cpus-per-run", type=int, default=None, metavar="N",
                   help="with --executor ray on CPU-only nodes: CPUs (and torch threads) each run asks for "
                        "(default: this command's torch threads, which keeps the in-process numbers bit for bit)")
    which.add_argument("--check", action="store_true",
                       help="check the profile, the data root and every parameter as a run would, then stop (runs nothing)")
    p.set_defaults(func=reproduce)


def reproduce(args: argparse.Namespace) -> int:
    root = project_root()
    if root is None:
        raise ConfigError("run sentcl reproduce inside a sentcl checkout (the folder with _toc.yml and notebooks/)")
    chapters = list(args.only or CHAPTERS)
    unknown = [c for c in chapters if c not in CHAPTERS]
    if unknown:
        raise ConfigError(f"unknown chapter(s) {unknown}; chapters: {', '.join(CHAPTERS)}")
    check_executor(args)
    out = Path(args.out).resolve() if args.out else root / "runs" / args.profile
    book_dir = Path(args.book_dir).resolve() if args.book_dir else root
    if args.check:
        data, plans = plan_all(args, root, chapters, out)
        print(f"sentcl: checked, nothing run: profile {args.profile}, data: {data.describe()}, "
              f"{len(plans)} notebook(s) ({', '.join(p.chapter for p in plans)}) with valid parameters")
        return 0
    # one run per output folder (and per chapter of it, against notebooks run on their own): a second
    # run stops here with one line naming the folder and the run that holds it
    locks: list[Path] = []
    try:
        for chapter in [None, *([] if args.book_only else chapters)]:
            locks.append(claim_output(out, chapter))
        return _reproduce(args, root, chapters, out, book_dir)
    finally:
        for lock in locks:
            release(lock)


def plan_all(args: argparse.Namespace, root: Path, chapters: list[str], out: Path) -> tuple[DataChoice, list[Plan]]:
    """Check the data root and every chapter's parameters (nothing runs): the data and the plans."""
    unread = check_data_dir(args.profile, args.data_dir, "--data-dir")
    if unread:
        print(f"sentcl: WARNING: {unread}", file=sys.stderr)
    data = resolve_data(args.profile, args.data_dir)
    if data.warning:
        print(f"sentcl: WARNING: {data.warning}", file=sys.stderr)
    plans = []
    for chapter in chapters:
        if not (root / "notebooks" / f"{chapter}.ipynb").is_file():
            print(f"sentcl: {chapter}: no notebook yet (notebooks/{chapter}.ipynb); the book shows a placeholder")
            continue
        plans.append(plan_chapter(root, chapter, args.profile, args.overrides, data, out))
    if args.overrides and not plans:
        raise ConfigError("-p given but no chapter notebook to run")
    return data, plans


def check_executor(args: argparse.Namespace) -> None:
    """The executor's options, checked before anything runs: Ray's only with ``--executor ray`` (and Ray installed),
    counts of 1 or more."""
    ray_only = [f"--{name.replace('_', '-')}" for name in ("address", "runs_per_gpu", "cpus_per_run")
                if getattr(args, name, None) is not None]
    if args.executor != "ray":
        if ray_only:
            raise ConfigError(f"{', '.join(ray_only)}: only with --executor ray")
        return
    for name in ("runs_per_gpu", "cpus_per_run"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise ConfigError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be 1 or more")
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ConfigError("--executor ray needs Ray: pip install 'sentcl[cluster]' (make setup installs it)") from None


def prebuild(args: argparse.Namespace, plans: list[Plan], out: Path) -> dict[str, list[str]]:
    """``--executor ray``: build every planned stage of the chapters that build theirs alone as tasks on a Ray cluster
    (:mod:`sentcl.book.publishing.executor`). Returns the chapters whose stages failed, one line per failed stage (their
    notebooks are not run)."""
    from .executor import build_with_ray, jobs, task_environment

    work = jobs({p.chapter: p.parameters for p in plans})
    others = [p.chapter for p in plans if p.chapter not in {j.chapter for j in work}]
    print(f"sentcl: ray: building {sum(len(j.plan.alone()) for j in work)} stages of {', '.join(j.chapter for j in work) or 'no chapter'}"
          + (f"; {', '.join(others)} build theirs in their notebooks" if others else ""), flush=True)
    built = build_with_ray(work, address=args.address, runs_per_gpu=args.runs_per_gpu or 1, cpus_per_run=args.cpus_per_run,
                           env=task_environment(out))
    for line in built.lines():
        print(f"sentcl: FAILED {line}", file=sys.stderr)
    return built.failed


def _reproduce(args: argparse.Namespace, root: Path, chapters: list[str], out: Path, book_dir: Path) -> int:
    outcomes: list[Outcome] = []
    if not args.book_only:
        data, plans = plan_all(args, root, chapters, out)
        env = environment()
        print(f"sentcl: profile {args.profile}, data: {data.describe()}{'' if data.sample else f' at {data.root}'}, output: {out}, device: {env['device']}")
        failed_stages = prebuild(args, plans, out) if args.executor == "ray" else {}
        for chapter, lines in failed_stages.items():
            outcomes.append(Outcome(chapter, "failed", 0.0, None, Layout(out).notebook(chapter), failure="stages failed",
                                    lines=lines))
        plans = [p for p in plans if p.chapter not in failed_stages]
        for i, plan in enumerate(plans, 1):
            print(f"[{i}/{len(plans)}] {plan.chapter}", flush=True)
            outcome = execute(plan, args.profile, data, env, cwd=root / "notebooks")
            if outcome.failure:
                print(f"sentcl: FAILED {plan.chapter}: " + "\n".join(outcome.lines), file=sys.stderr)
                print(f"    executed notebook (with the error): {outcome.executed}", file=sys.stderr)
            outcomes.append(outcome)
        if outcomes:
            print("\n" + summary_table(outcomes, root))
    failed = [o.chapter for o in outcomes if o.status == "failed"]

    if not args.no_book:
        try:
            html = site.build(site.stage(root, out), book_dir)
        except SentclError as exc:
            print(f"sentcl: error: {exc}", file=sys.stderr)
            return 1
        print(f"sentcl: book: {html / 'index.html'}")
    if failed:
        print(f"sentcl: {len(failed)} notebook(s) failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0
