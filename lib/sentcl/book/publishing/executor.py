"""Building the chapters' planned stages before their notebooks run, as tasks on a Ray cluster.

``sentcl reproduce --executor ray`` submits every stage of each chosen chapter's plan (:mod:`sentcl.book.estimates.plan`)
whose chapter can build one alone (:attr:`~sentcl.book.chapter_spec.Chapter.build`) as one Ray task that builds
it into the shared artifact cache (``$SENTCL_CACHE``, a folder every node sees), after the tasks of the stages it
reads. When every stage is built the notebooks run as with the default executor and train nothing: they find
each stage in the cache. A chapter without a builder is built by its notebook, in the command's process.

- **Resources**: on a cluster with GPUs each task asks for ``1/runs_per_gpu`` of a GPU (several small runs share
  one GPU) and one CPU, and computes with as many torch threads as this command's process would. On a CPU-only
  cluster a task asks for ``cpus_per_run`` CPUs and computes with that many threads; by default as many as this
  command's process computes with (at most a node's CPUs): a CPU's sums depend on its threads, so the default keeps
  a stage's numbers those of the in-process run, bit for bit, and never runs more threads than cores. (Tasks that
  ask for fewer CPUs than they compute with share the cores: measured on 2 cores, two tasks of two threads trained
  each run 6.8 times slower than the notebook, ``benchmarks/README.md``.) Fewer CPUs per run run more tasks at once,
  each with the numbers of an in-process run with that many threads.
- **Faults**: a task whose worker dies is retried by Ray (:data:`RETRIES` times) and resumes from the checkpoint
  its interrupted run left (:meth:`sentcl.training.Trainer.train_cached`); a stage that raises fails for good and is
  reported in one line (its chapter, its stage, the last line of its error), the stages that do not read it are
  built and kept, and its chapter's notebook is not run. A rerun finds the finished stages in the cache and
  builds only what is missing; two commands on one cache wait for each other's stages (the stage locks).
- **Progress**: one bar per chapter (stages built of planned), the stages running named after it; the training
  record of each stage built says which node and device built it (``config.built_by``). A chapter's tasks share one
  run id of their own, as its notebook's runs do in process (so two chapters' runs of one name, RCL's and the
  geometry chapter's "RCL seed 0", keep a record each).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...chapters import chapter as chapter_named
from ...errors import ConfigError
from ...paths import CACHE_ENV, cache_root
from ..estimates.plan import Plan
from ..notebook.chapter_run import BUILT_BY_ENV, OUTPUT_CLAIMED_ENV
from ..output.results import RUN_ID_ENV, new_run_id

RETRIES = 3
"""How many times Ray runs a stage again whose worker died (a stage that raises is not run again)."""
LOCAL_OBJECT_STORE = 200 * 2**20
"""Bytes of Ray's object store on a local cluster: tasks pass only names and small dicts (the stages go to the cache)."""


@dataclass
class Job:
    """One chapter's stages to build: its plan of the run's parameters (the stages a task can build alone,
    :meth:`~sentcl.book.estimates.plan.Plan.alone`; its notebook builds the others), and the run id its tasks' records carry."""

    chapter: str
    parameters: dict[str, Any]
    plan: Plan
    run_id: str = field(default_factory=new_run_id)


@dataclass
class Built:
    """What the executor did: the stages built (or found finished) per chapter, and the failures, one line each."""

    done: dict[str, list[str]] = field(default_factory=dict)
    failed: dict[str, list[str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"{chapter}: stage {line}" for chapter, lines in self.failed.items() for line in lines]


def jobs(parameters: Mapping[str, Mapping[str, Any]]) -> list[Job]:
    """The chapters (by name -> their run's parameters) whose stages a task can build, with their plans."""
    found = []
    for chapter, p in parameters.items():
        spec = chapter_named(chapter)
        if spec.build is None or spec.plan is None:
            continue
        plan = spec.plan(p)
        if plan.alone():
            found.append(Job(spec.name, dict(p), plan))
    return found


def build_stage(chapter: str, parameters: Mapping[str, Any], name: str, threads: int | None = None,
                run_id: str | None = None) -> dict[str, Any]:
    """Build the planned stage ``name`` of ``chapter`` with ``parameters`` (its run's, ``profile``, ``data_dir`` and
    ``out_dir`` among them) in this process: a :class:`~sentcl.book.notebook.chapter_run.ChapterRun` of the chapter (its records
    under ``run_id``; None: this process's) and the chapter's builder. Returns the stage, the node and the device
    that built it."""
    import torch

    from ..notebook.chapter_run import ChapterRun
    from ..output.run_records import environment
    from ..profiles import SampleDataWarning

    if threads:
        torch.set_num_threads(threads)
    node = _node()
    device = environment()["device"]
    os.environ[BUILT_BY_ENV] = f"{node} ({device})"
    if run_id:
        os.environ[RUN_ID_ENV] = run_id
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SampleDataWarning)  # the command said which data it runs on
        run = ChapterRun(chapter, profile=parameters["profile"], data_dir=parameters["data_dir"],
                         out_dir=parameters["out_dir"], parameters=parameters)
    assert run.spec.build is not None and run.plan is not None
    run.spec.build(run, run.plan[name])
    return {"chapter": chapter, "stage": name, "node": node, "device": device}


def _node() -> str:
    try:
        import ray

        if ray.is_initialized():
            return str(ray.util.get_node_ip_address())
    except ImportError:  # built outside Ray
        pass
    import platform

    return platform.node()


def build_with_ray(work: Sequence[Job], *, address: str | None = None, runs_per_gpu: int = 1,
                   cpus_per_run: int | None = None, threads: int | None = None, env: Mapping[str, str] | None = None, show_progress: bool = True) -> Built:
    """Build every stage of ``work`` as Ray tasks (module doc) on the cluster at ``address`` (None: start a local
    one on this machine's CPUs and GPUs; ``"auto"`` or ``ray://host:port``: join a running one). ``threads``: each
    task's torch threads on GPU nodes, and its CPUs and threads on CPU-only ones without ``cpus_per_run`` (None:
    this process's). ``env``: the variables every task's process gets besides the
    cache root (the claim on the output folder)."""
    import ray
    import torch

    if runs_per_gpu < 1 or (cpus_per_run is not None and cpus_per_run < 1):
        raise ConfigError(f"runs per GPU ({runs_per_gpu}) and CPUs per run ({cpus_per_run}) must be 1 or more")
    variables = {CACHE_ENV: str(cache_root()), **(env or {})}
    started = not ray.is_initialized()
    if started:
        ray.init(address=address, runtime_env={"env_vars": variables}, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING, object_store_memory=LOCAL_OBJECT_STORE if address is None else None)
    try:
        gpus = ray.cluster_resources().get("GPU", 0)
        threads = threads or torch.get_num_threads()
        if not gpus:  # as many threads as CPUs asked for: never more threads than cores on a node
            threads = cpus_per_run or min(threads, int(max(n["Resources"].get("CPU", 1) for n in ray.nodes() if n["Alive"])))
        options = {"num_gpus": 1 / runs_per_gpu, "num_cpus": 1} if gpus else {"num_cpus": threads}
        task = ray.remote(max_retries=RETRIES, retry_exceptions=False, **options)(_task)
        return _run(ray, task, work, threads, show_progress)
    finally:
        if started:
            ray.shutdown()


def _task(chapter: str, parameters: Mapping[str, Any], name: str, threads: int | None, run_id: str,
          *upstream: Any) -> dict[str, Any]:
    """One Ray task: build one stage (``upstream``: the results of the tasks it waits for)."""
    return build_stage(chapter, parameters, name, threads, run_id)


def _run(ray: Any, task: Any, work: Sequence[Job], threads: int | None, show_progress: bool) -> Built:
    from ...progress import progress_bar

    built = Built()
    refs: dict[Any, tuple[Job, str]] = {}
    by_name: dict[tuple[str, str], Any] = {}
    for job in work:  # in plan order: a stage after the stages it reads
        for stage in job.plan.alone():
            upstream = [by_name[(job.chapter, u)] for u in stage.upstream]
            ref = task.remote(job.chapter, job.parameters, stage.name, threads, job.run_id, *upstream)
            refs[ref] = (job, stage.name)
            by_name[(job.chapter, stage.name)] = ref
    bars = {job.chapter: progress_bar(total=len(job.plan.alone()), desc=f"{job.chapter} stages", unit="stage",
                                  disable=not show_progress, file=sys.stderr) for job in work}
    pending = list(refs)
    while pending:
        ready, pending = ray.wait(pending, num_returns=1)
        job, name = refs[ready[0]]
        try:
            ray.get(ready[0])
            built.done.setdefault(job.chapter, []).append(name)
        except Exception as exc:  # noqa: BLE001 -- any error of a stage is reported in its line; the others go on
            built.failed.setdefault(job.chapter, []).append(f"{name} failed: {last_line(exc)}")
        bar = bars[job.chapter]
        bar.update(1)
        running = [refs[r][1].split(".", 1)[1] for r in pending if refs[r][0] is job]
        bar.set_postfix_str(", ".join(running[:3]) + (f" (+{len(running) - 3})" if len(running) > 3 else ""))
    for bar in bars.values():
        bar.close()
    return built


def last_line(exc: BaseException) -> str:
    """The last line of an error, as a stage's failure is reported: a Ray task's error carries the traceback of the
    worker, whose last line names the exception raised there (an upstream stage's failure: that one's)."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__


def task_environment(out: Path) -> dict[str, str]:
    """What a task needs of the command's environment: the claim on the output folder (the command holds it)."""
    return {OUTPUT_CLAIMED_ENV: str(out)}


__all__ = ["RETRIES", "Built", "Job", "build_stage", "build_with_ray", "jobs", "last_line",
           "task_environment"]
