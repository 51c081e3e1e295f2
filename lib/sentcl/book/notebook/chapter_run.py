"""What a chapter notebook uses to report: the data it runs on, its results, its figures.

A chapter notebook starts with its ``parameters`` cell, which always holds ``profile``,
``data_dir`` and ``out_dir`` (``sentcl reproduce`` sets them), then::

    run = ChapterRun("mnrl_sbert", profile=profile, data_dir=data_dir, out_dir=out_dir,
                     parameters=globals())          # checked; its encoders and the paper's: the chapter module's
    nli = run.load("snli", "dev")                   # from the run's data root, logged
    sts = run.load_tasks(["STS12", "STSb"])         # evaluation tasks; every row then says
                                                    # "STS pairs scored: STS12 3,108, STSb 1,379"
    result = run.train(trainer)                     # cached, resumable, with a run record
    run.record("MNRLSBERT", {"STS12": 71.9, ...}, seeds=[42], family="BERT", trained_on=data.name)
    run.table("Table 1")                            # paper | ours | Δ, in the paper's layout
    run.save_figure(run.averages_chart("Table 1"), "figure-6", "Average Spearman, paper vs ours")
    run.record_geometry("MNRLSBERT", embed, trained=result)   # alignment, uniformity, anisotropy
                                                    # (+ the trajectory of run.geometry_callback(n))

Every number the book shows is read back from the files these calls write under
``out_dir`` (see :mod:`sentcl.book.output.results`); the chapter only adds its science.

Why this module is long: :class:`ChapterRun` is the one object a notebook reports through (data, results,
claims, coverage, training records, geometry, figures), so that every chapter writes the same files the
same way; each method is a few lines that delegate to the module doing the work (results, claims,
evidence, coverage, records, geometry).
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ...chapters import chapter as chapter_named
from ...errors import ConfigError
from ...evaluation.per_item import ItemTerms
from ...evaluation.significance import ESTIMAND
from ...io import atomic_write_json, claim, read_json
from ...precision import uses
from ..estimates.plan import Plan
from ..output import claims
from ..output.claims import Central, Claim
from ..output.evidence import AVERAGE, items_fingerprint, load_evidence, record_not_run, save_row_evidence
from ..output.geometry_files import save_geometry
from ..output.layout import Layout
from ..output.results import Result, current_run_id, load_results, paper_values, save_results
from ..output.run_records import finish_run_record, start_run_record
from ..pages import report
from ..profiles import SampleDataWarning, policy, resolve_data

OUTPUT_CLAIMED_ENV = "SENTCL_OUTPUT_CLAIMED"
"""Set by ``sentcl reproduce`` for its kernels: the output folder whose chapters it has claimed."""
BUILT_BY_ENV = "SENTCL_BUILT_BY"
"""Set in the process of a task of :mod:`sentcl.book.publishing.executor`: the node and device that build its stage (a training
record's ``config.built_by``)."""


def claim_output(out: Path, chapter: str | None = None, *, for_process: bool = False) -> Path:
    """Claim the output folder ``out`` (``chapter`` None: the whole folder, as ``sentcl reproduce`` does)
    or one chapter's part of it, so that two runs never write the same results files at once: a second
    claim fails at once with one line naming the folder and the run that holds it
    (:func:`sentcl.io.claim`). Returns the lock to :func:`sentcl.io.release`."""
    lock = Layout(out).lock(chapter)
    what = f"the output folder {out}" + ("" if chapter is None else f" (chapter {chapter})")
    holder = {"pid": os.getpid(), "command": " ".join(["sentcl", *sys.argv[1:]]) if chapter is None
              else f"notebook {chapter}", "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return claim(lock, what, holder, for_process=for_process)


def quiet_progress() -> None:
    """The progress a chapter's run shows, and nothing else: no transformers "Loading weights" bar per model loaded
    (sentcl's own bars, :mod:`sentcl.progress`, say what runs). tqdm's warning that ipywidgets is missing is quieted
    earlier, when this package is imported (:mod:`sentcl.book.notebook`)."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()


class ChapterRun:
    """One run of a chapter notebook: where it reads data and writes results and figures."""

    def __init__(
        self,
        chapter: str,
        *,
        profile: str,
        data_dir: str | os.PathLike | None,
        out_dir: str | os.PathLike,
        models: Mapping[str, str] | None = None,
        paper_models: Mapping[str, str] | None = None,
        parameters: Mapping[str, Any] | None = None,
    ):
        """``models`` and ``paper_models``: family (e.g. ``"BERT"``) -> the encoder this run uses and
        the paper's; where they differ, every row of that family says which stands in for which. Not given: the
        chapter's own (:attr:`~sentcl.book.chapter_spec.Chapter.models` of ``parameters``,
        :attr:`~sentcl.book.chapter_spec.Chapter.paper_models`).
        ``parameters``: the notebook's resolved parameters, checked by the chapter's
        :attr:`~sentcl.book.chapter_spec.Chapter.check`, from which its plan of runs is computed (:attr:`plan`; None:
        no plan, :meth:`train` takes any stage name)."""
        spec = chapter_named(chapter)  # an unknown chapter: a ConfigError naming the chapters
        quiet_progress()
        self.spec = spec  # the chapter's object (sentcl.chapters): its plan, claims, measurements
        self.chapter = spec.name
        self.parameters: dict[str, Any] = dict(parameters or {})
        if parameters is not None and spec.check is not None:
            spec.check(self.parameters)  # refused before any work
        self.plan: Plan | None = spec.plan(self.parameters) if parameters is not None and spec.plan is not None else None
        # the chapter's central claims, its primary family: fixed here, before anything runs (none without parameters)
        self.central: list[Central] = list(spec.central(self.parameters)) if parameters is not None and spec.central else []
        self.built: list[str] = []  # the planned stages this run built or found in the cache, in order
        self.profile = profile
        self.data = resolve_data(profile, data_dir)
        if self.data.warning:
            warnings.warn(self.data.warning, SampleDataWarning, stacklevel=2)
        self.out_dir = Path(out_dir).resolve()
        self.layout = Layout(self.out_dir)  # every path under it
        if os.environ.get(OUTPUT_CLAIMED_ENV) != str(self.out_dir):  # run on its own: claim its results files
            claim_output(self.out_dir, chapter, for_process=True)
        self.run_id = current_run_id()
        self._loaded: list[dict[str, Any]] = []
        if models is None and parameters is not None and spec.models is not None:
            models = spec.models(self.parameters)
        self.models = dict(models or {})
        self.paper_models = dict(spec.paper_models if paper_models is None else paper_models)
        unknown = sorted(set(self.models) - set(self.paper_models)) if self.paper_models else []
        if unknown:
            raise ConfigError(f"{chapter}: model families {unknown} have no paper model; paper_models has {sorted(self.paper_models)}")
        self._evaluated_on = ""
        self._geometry_pairs = None
        self._fingerprints: dict[str, str] = {}  # task -> its test items' fingerprint (load_tasks)
        self._populations: dict[str, int] = {}  # task -> the size of the test set its items were drawn from (load_tasks)

    @property
    def kind(self) -> str:
        return "sample-data" if self.data.sample else "reproduced"

    def load(self, name: str, split: str | None = None, **options: Any):
        """Load a registered dataset from the run's data root and log it for the
        datasets appendix (``<out>/data_used/<chapter>.json``)."""
        from ...data import load

        record = load(name, split, data_dir=self.data.root, **options)
        self._loaded.append(
            {"name": name, "split": record.split, "records": len(record), "sample": record.sample, "dropped": record.dropped}
        )
        atomic_write_json(
            self.layout.data_used(self.chapter),
            {"chapter": self.chapter, "run_id": self.run_id, "profile": self.profile,
             "data_root": str(self.data.root), "sample": self.data.sample, "datasets": self._loaded},
        )
        return record

    def load_tasks(self, names: Sequence[str], *, max_pairs: int = 0, seed: int = 0, what: str = "STS pairs") -> dict:
        """Evaluation tasks by the papers' column names (:mod:`sentcl.evaluation.tasks`), read
        from the run's data root through :meth:`load` (logged for the datasets appendix), each
        cut to at most ``max_pairs`` rows drawn with ``seed`` (0: whole); every row recorded from
        now on says what it was scored on (:meth:`describe_evaluation`). Returns ``{name: record}``."""
        from ...evaluation.tasks import load_tasks, task

        records = load_tasks(names, max_pairs=max_pairs, seed=seed, loader=self.load)
        self.describe_evaluation(records, what=what, limit=max_pairs, seed=seed)
        self._fingerprints.update({task(name).name: items_fingerprint(record) for name, record in records.items()})
        self._populations.update({task(name).name: record.population or len(record) for name, record in records.items()})
        return records

    def record_scores(
        self,
        row: str,
        per_seed: Mapping[int, Mapping[str, Any]],
        *,
        trained: Mapping[int, Any] | Literal[False],
        columns: Mapping[str, tuple[str, str]] | None = None,
        tables: Sequence[str] | None = None,
        family: str | None = None,
        trained_on: str | None = None,
        note: str = "",
    ) -> list[Path]:
        """Record a row scored on evaluation tasks, with its evidence: its cells (the mean over seeds and
        their standard deviation, :func:`~sentcl.evaluation.significance.seed_mean_std`) under every table
        that lists ``row`` (or ``tables``), and its per-item scores and training health
        (:mod:`sentcl.book.output.evidence`), so that its claims can be tested (:meth:`write_claims`).

        Args:
            per_seed: seed -> task key -> :class:`~sentcl.evaluation.scoring.TaskScores` (from
                :func:`sentcl.evaluation.scoring.score`); an untrained row has one "seed".
            columns: table column -> (task key, metric label); default: each single-metric task as its
                own column (``"STS12"``: its Spearman), and ``Average`` over the English STS tasks present.
            trained: seed -> the :class:`~sentcl.training.TrainingResult` (or a list: every model the
                seed rests on, e.g. RCL's entropy models and final model), one for every scored seed; ``False``
                for a row that trains nothing. Required: whether a row's seeds carry training noise is said,
                never inferred from a missing argument (a trained row taken for an untrained one would be
                tested as if exact).
            tables, family, trained_on, note: as :meth:`record`.
        """
        from ...evaluation.scoring import TaskScores
        from ...evaluation.significance import seed_mean_std
        from ...evaluation.tasks import STS_AVERAGE, task

        if not per_seed:
            raise ConfigError(f"{self.chapter} {row}: no seeds scored")
        keys = list(next(iter(per_seed.values())))
        if columns is None:
            columns = {k: (k, task(k).metrics[0].label) for k in keys if len(task(k).metrics) == 1}
            if any(task(k).name in STS_AVERAGE for k in keys):
                columns["Average"] = (AVERAGE, "")
        for seed, scores in per_seed.items():
            if list(scores) != keys or not all(isinstance(v, TaskScores) for v in scores.values()):
                raise ConfigError(f"{self.chapter} {row}: seed {seed} must score the tasks {keys} (TaskScores each)")
        runs = [{c: (_average(scores) if key == AVERAGE else scores[key].values[label]) for c, (key, label) in columns.items()}
                for scores in per_seed.values()]
        values, std = seed_mean_std(runs)
        health = self._health(row, trained, per_seed)
        tables = list(tables) if tables is not None else self.paper_tables(row)
        save_row_evidence(self.out_dir, self.chapter, row, per_seed, columns, tables=tables, health=health,
                          trained=trained is not False, run_id=self.run_id,
                          fingerprints={k: self._fingerprints.get(task(k).name, "") for k in keys},
                          populations={k: self._populations.get(task(k).name) for k in keys})
        return self.record(row, values, seeds=list(per_seed), std=std, tables=tables, family=family,
                           trained_on=trained_on, note=note)

    def record_measures(
        self,
        row: str,
        per_seed: Mapping[int, Mapping[str, ItemTerms]],
        *,
        trained: Mapping[int, Any] | Literal[False],
        tables: Sequence[str],
        fingerprints: Mapping[str, str],
        populations: Mapping[str, int | None] | None = None,
        family: str | None = None,
        data: str | None = None,
        note: str = "",
    ) -> list[Path]:
        """Record a row of measures of its embeddings that are means of per-item terms (RCL's anisotropy, IFCL's
        mutual information), with their evidence, as :meth:`record_scores` records task scores: each measure a column
        of ``tables`` (the mean over seeds and their standard deviation), each seed's terms kept so that a claim
        between two rows resamples the items.

        Args:
            per_seed: seed -> measure name (the column) -> its :class:`~sentcl.evaluation.per_item.ItemTerms`, whose
                own key is that name.
            fingerprints: measure -> what identifies its items (two rows are compared on a measure only when they
                agree); ``populations``: measure -> how many items they were drawn from (None: unknown).
            trained, family, note: as :meth:`record_scores`; ``data``: what the measures were computed on
                (default :meth:`describe_evaluation`'s text).
        """
        from ...evaluation.significance import seed_mean_std

        if not per_seed:
            raise ConfigError(f"{self.chapter} {row}: no seeds measured")
        keys = list(next(iter(per_seed.values())))
        for seed, measured in per_seed.items():
            if list(measured) != keys or not all(isinstance(v, ItemTerms) and v.keys == (k,) for k, v in measured.items()):
                raise ConfigError(f"{self.chapter} {row}: seed {seed} must give the measures {keys}, each as the "
                                  "ItemTerms of that one measure")
        values, std = seed_mean_std([{k: float(v.metric(k)) for k, v in measured.items()} for measured in per_seed.values()])
        save_row_evidence(self.out_dir, self.chapter, row, per_seed, {k: (k, k) for k in keys}, tables=tables,
                          health=self._health(row, trained, per_seed), trained=trained is not False, run_id=self.run_id,
                          fingerprints=fingerprints, populations=populations)
        return self.record(row, values, seeds=list(per_seed), std=std, tables=tables, family=family, data=data, note=note)

    def _health(self, row: str, trained: Mapping[int, Any] | Literal[False], scored: Mapping[int, Any]) -> dict:
        """seed -> the health records of every run the seed rests on (``trained``: seed -> its training result(s),
        False for a row that trains nothing)."""
        if trained is not False and not isinstance(trained, Mapping):
            raise ConfigError(f"{self.chapter} {row}: trained is seed -> training result(s), or False for a row "
                              f"that trains nothing; got {type(trained).__name__}")
        health = {seed: [r.health for r in (done if isinstance(done, (list, tuple)) else [done])]
                  for seed, done in (trained or {}).items()}
        missing = set(health) - set(scored)
        if missing:
            raise ConfigError(f"{self.chapter} {row}: training results for seeds {sorted(missing)} that were not scored")
        return health

    def not_run(self, row: str, reason: str, tables: Sequence[str] | None = None,
                columns: Sequence[str] | None = None) -> None:
        """Say that ``row`` (a row this chapter can compute; of ``tables``, default every paper table that
        lists it) was not run in this build, and why: the claims about it say "not tested" with the reason.
        ``columns``: only these columns of the row (a table gathering several tasks, one of them not run:
        each column's claims name their own task's reason)."""
        tables = list(tables) if tables is not None else self.paper_tables(row)
        if not tables:
            raise ConfigError(f"{self.chapter}: the paper has no row {row!r}; name the tables of a row of our own")
        record_not_run(self.out_dir, self.chapter, row, reason, tables=tables, run_id=self.run_id, columns=columns)

    def write_claims(self, own: Sequence[Claim] = (), *, paired: Mapping[frozenset, bool] | None = None,
                     untestable: Mapping[str | tuple[str, str], str] | None = None,
                     headlines: Mapping[str, tuple[str, str]] | None = None,
                     estimand: str = ESTIMAND, show: bool = False) -> pd.DataFrame:
        """Test this run's claims and write ``<out>/claims/<chapter>.csv`` (:mod:`sentcl.book.output.claims`):
        every ordering of two rows the paper reports (on each table's headline columns) between rows this
        run recorded or said it did not run (a row recorded without per-item scores: not tested), and
        ``own`` claims of the chapter. ``paired``: pairs of rows whose seed k share data order and
        initialisation; ``untestable``: a table, or (table, column) -> why its values cannot tell rows
        apart (a metric at its ceiling, means over folds with no per-item scores); ``headlines``: the claims the
        introduction's answer reads, kind -> (the method's row, the other row) (:func:`sentcl.book.output.claims.mark_headlines`:
        "baseline", the method against its paper's baseline; "untouched", against the untouched encoder);
        ``estimand``: what the claims are about, the test set (default) or the population of such items
        (:data:`sentcl.evaluation.significance.ESTIMANDS`). The chapter's central claims (its
        :attr:`~sentcl.book.chapter_spec.Chapter.central`, of this run's parameters: :attr:`central`) are the
        primary family. ``show``: also display their summary (:meth:`claims_summary`) as Markdown: the notebook's
        one call for its claims.
        Returns the claims."""
        evidence = load_evidence(self.out_dir, self.chapter, {self.run_id})
        compared = self.compare()
        done = compared[compared["status"] != "cited"]
        computed = set(zip(done["table"], done["row"], strict=True)) | set(evidence)
        found = [*claims.paper_orderings(compared, computed, paired=paired), *own]
        why = dict(untestable or {})
        found = [replace(c, untestable=why.get((c.table, c.column), why.get(c.table, c.untestable))) for c in found]
        frame = claims.evaluate_claims(self.chapter, found, evidence, central=self.central, estimand=estimand)
        if headlines:
            frame = claims.mark_headlines(frame, headlines)
        claims.write_claims(self.out_dir, self.chapter, frame)
        if show:
            from IPython.display import Markdown, display

            display(Markdown("\n\n".join(self.claims_summary(frame))))
        return frame

    def write_coverage(self) -> pd.DataFrame:
        """What a paper-profile run of this chapter fills on this run's data root: per row of the paper's
        tables, runs / needs absent data (which files, from where) / cited, from the paper profile's
        parameters (:func:`sentcl.book.estimates.coverage.write_coverage`); written to ``<out>/coverage/<chapter>.csv``,
        which the chapter page shows."""
        from ..estimates.coverage import write_coverage

        return write_coverage(self.out_dir, self.spec, self.data.root)

    def claims_summary(self, frame: pd.DataFrame) -> list[str]:
        """Markdown lines: per table the verdicts of :meth:`write_claims`'s claims, then each as a sentence;
        on sample data, a last line says the sentences test the code, not the paper."""
        lines = []
        for table in dict.fromkeys(frame["table"]):
            part = frame[frame["table"] == table]
            lines.append(f"**{table}:** of {len(part)} claims, {claims.counts_text(part)}.")
            lines += [f"- {claims.sentence(c)}" for c in part.to_dict("records")]
        if self.data.sample:
            lines.append("*This run read the project's sample data: the sentences above test the code, not the paper.*")
        return lines

    def planned(self, stage: str) -> str:
        """``stage``, a stage of the run's plan about to be built (or found in the cache); a ConfigError naming
        the planned stages where the plan holds no such stage (the notebook builds what its plan names, and
        nothing else: :mod:`sentcl.book.estimates.plan`). Without a plan (or one that names no artifact) any name passes."""
        if self.plan is not None and len(self.plan):
            self.plan[stage]  # raises for a stage the plan does not hold
        self.built.append(stage)
        return stage

    def train(self, trainer, stage: str | None = None, **cached: Any):
        """Train with ``trainer`` inside the artifact cache (:meth:`sentcl.training.Trainer.train_cached`:
        a finished identical run is loaded, an interrupted one resumed, which it prints: ``resumed <run> from
        step N``), under the artifact stage name ``stage`` of the run's plan (:meth:`planned`; None: the
        cached call's ``stage_name``, for a run without a plan) and, when it trained,
        write its run record (``<out>/records/training-<name>-<run_id>.json``: configuration,
        wall time, pairs/s, peak memory, precision, health; status ``failed`` with the error if it raised).
        Returns the :class:`~sentcl.training.TrainingResult`."""
        record = start_run_record(
            kind="training", name=trainer.name, chapter=self.chapter, profile=self.profile,
            config={"run": trainer.describe()}, seed=trainer.config.seed, run_id=self.run_id,
        )
        record.precision.update(requested=trainer.config.precision, used=trainer.precision)
        if stage is not None:
            cached["stage_name"] = self.planned(stage)
        elif self.plan is not None and len(self.plan):
            raise ConfigError(f"{self.chapter}: train {trainer.name!r} under a stage of the chapter's plan (stage=...)")
        try:
            result = trainer.train_cached(**cached)
        except BaseException as exc:
            finish_run_record(self.out_dir, record, exc)
            raise
        finally:
            self._save_precision_uses()
        if result.resumed_from_step is not None and trainer.procs.is_main:  # said where a notebook user reads it
            print(f"resumed {trainer.name} from step {result.resumed_from_step} (the checkpoint an interrupted run left in "
                  f"{Path(result.output_dir).parent}); it trained on from there", flush=True)
        if result.health is not None:  # which model it is, for the claims that rest on it
            result.health = {"name": trainer.name, **result.health}
        if result.trained and trainer.procs.is_main:
            record.config.update(
                output_dir=str(result.output_dir), resumed_from_step=result.resumed_from_step,
                steps=result.global_step, **result.run,
                **({"built_by": os.environ[BUILT_BY_ENV]} if os.environ.get(BUILT_BY_ENV) else {}),
            )
            record.health = result.health
            finish_run_record(self.out_dir, record)
        return result

    def paper_tables(self, row: str) -> list[str]:
        """The tables of the paper that list ``row``, in the paper's order."""
        values = paper_values(self.chapter)
        return list(dict.fromkeys(values.loc[values["row"] == row, "table"]))

    def paper_rows(self, table: str) -> list[str]:
        """The rows of one of the paper's tables, in the paper's order."""
        values = paper_values(self.chapter)
        return list(dict.fromkeys(values.loc[values["table"] == table, "row"]))

    def paper_cells(self, table: str, *, row: str | None = None, column: str | None = None) -> pd.Series:
        """The paper's reported values along one row (indexed by column) or one column (indexed by
        row) of one of its tables, in the paper's order; empty where the paper reports none."""
        if (row is None) == (column is None):
            raise ConfigError("paper_cells: give either row= or column=, not both or neither")
        values = paper_values(self.chapter)
        along, fixed, by = ("row", row, "column") if row is not None else ("column", column, "row")
        cells = values[(values["table"] == table) & (values[along] == fixed)]
        return pd.Series(cells["value"].to_numpy(dtype=float), index=pd.Index(cells[by], name=by), name=fixed)

    def stand_in(self, family: str) -> str:
        """``"<ours> stands in for <paper's>"`` when this run's encoder of ``family`` is not the paper's, else ``""``."""
        if family not in self.models:
            raise ConfigError(f"{self.chapter}: no model family {family!r}; families: {sorted(self.models)}")
        ours, paper = self.models[family], self.paper_models.get(family, self.models[family])
        return "" if ours == paper else f"{ours} stands in for {paper}"

    def describe_evaluation(
        self, records: Mapping[str, Any], *, what: str = "STS pairs", limit: int = 0, seed: int | None = None
    ) -> str:
        """Say what the rows recorded from now on were scored on: ``{column: record}`` of the
        evaluation sets (after any subsampling; ``what`` their rows), ``limit`` the per-task cap
        (0: none) and its seed. Returns the data text every later :meth:`record` carries, e.g.
        ``"<data root>; STS pairs scored: STS12 3,108, STSb 1,379"``."""
        sizes = ", ".join(f"{column} {len(record):,}" for column, record in records.items())
        self._evaluated_on = f"{what} scored: {sizes}" + (f" (at most {limit} per task, seed {seed})" if limit else "")
        return self._data_text()

    def _data_text(self) -> str:
        return "; ".join(part for part in (self.data.describe(), self._evaluated_on) if part)

    def record(
        self,
        row: str,
        values: Mapping[str, float],
        *,
        seeds: Sequence[int],
        std: Mapping[str, float] | None = None,
        tables: Sequence[str] | None = None,
        family: str | None = None,
        trained_on: str | None = None,
        note: str = "",
        data: str | None = None,
    ) -> list[Path]:
        """Record one row of results under every paper table that lists ``row`` (or under ``tables``:
        a row of our own names its tables). Its note says what the profile changed: which encoder
        stands in for the paper's (``family``), which training subset it was trained on
        (``trained_on``), then ``note``; its data text is ``data``, default :meth:`describe_evaluation`'s."""
        tables = list(tables) if tables is not None else self.paper_tables(row)
        if not tables:
            raise ConfigError(f"{self.chapter}: the paper has no row {row!r}; name the tables of a row of our own")
        notes = [self.stand_in(family) if family is not None else "", f"trained on {trained_on}" if trained_on else "", note]
        text = "; ".join(part for part in notes if part)
        return [
            self.add_result(table, row, values, seeds=seeds, std=std, data=data or self._data_text(), note=text)
            for table in tables
        ]

    def add_result(
        self,
        table: str,
        row: str,
        values: Mapping[str, float],
        *,
        seeds: Sequence[int],
        std: Mapping[str, float] | None = None,
        data: str | None = None,
        note: str = "",
    ) -> Path:
        """Record one row of a paper table (``values``: column -> value in the paper's
        units, averaged over ``seeds``; ``std``: column -> standard deviation) in the
        results file, at once. ``data`` says what the row was computed on (default:
        :meth:`describe_evaluation`'s text). Returns the results file's path."""
        self._save_precision_uses()
        std = std or {}
        unknown = set(std) - set(values)
        if unknown:
            raise ConfigError(f"{self.chapter} {table} {row}: std given for columns without a value: {sorted(unknown)}")
        cells = [
            Result(
                table=table, row=row, column=column, value=float(value), seeds=tuple(int(s) for s in seeds),
                std=None if std.get(column) is None else float(std[column]), profile=self.profile, kind=self.kind,
                data=data or self._data_text(), note=note,
            )
            for column, value in values.items()
        ]
        return save_results(self.out_dir, self.chapter, cells, run_id=self.run_id)

    def _save_precision_uses(self) -> None:
        """Keep what this process ran in which precision so far (:func:`sentcl.precision.uses`) where
        the notebook's run record picks it up (:meth:`~sentcl.book.output.layout.Layout.precision_record`)."""
        atomic_write_json(self.layout.precision_record(self.chapter, self.run_id),
                          {"chapter": self.chapter, "run_id": self.run_id, "uses": uses()})

    def geometry_pairs(self):
        """The STS-B test pairs every geometry measure of this run uses (SimCSE's protocol;
        :attr:`sentcl.book.profiles.Profile.geometry_pairs` says how many), loaded once and logged."""
        if self._geometry_pairs is None:
            from ...data.records import subset

            self._geometry_pairs = subset(self.load("stsbenchmark", "test"), policy(self.profile).geometry_pairs, 0,
                                         "geometry_pairs")
        return self._geometry_pairs

    def geometry_callback(self, every_steps: int):
        """A :class:`~sentcl.training.callbacks.GeometryCallback` on :meth:`geometry_pairs`: pass it to a
        trainer and :meth:`record_geometry` with ``trained=`` its result keeps the trajectory."""
        from ...training.callbacks import GeometryCallback

        return GeometryCallback(self.geometry_pairs(), every_steps)

    def record_geometry(self, model: str, embed, *, seed: int | None = None, trained=None, note: str = "",
                        family: str | None = None, untouched: bool = False, encoder: str | None = None) -> dict:
        """Measure ``embed``'s geometry on :meth:`geometry_pairs` (:func:`sentcl.evaluation.geometry.evaluate_geometry`)
        and write it to ``<out>/geometry/<chapter>.csv`` as the model's final point; with ``trained``
        (a :class:`~sentcl.training.TrainingResult` of a run that had a geometry callback) its
        trajectory too. ``family``: the model family whose encoder the model is (``untouched``) or was
        trained from (default: the run's only family), written as the point's ``encoder``, and its note
        says which paper model that encoder stands in for; ``encoder`` instead, for a model of no family (a control,
        such as an encoder at random initialisation: ``note`` says what it is). Returns the measures. A run loaded from a
        cache written without the callback has no trajectory: the final point is written and
        ``"trajectory_points"`` is 0."""
        from ...evaluation.geometry import evaluate_geometry

        if encoder is not None and family is not None:
            raise ConfigError(f"{self.chapter}: record_geometry({model!r}) takes family= or encoder=, not both")
        if family is None and encoder is None and len(self.models) == 1:
            family = next(iter(self.models))
        encoder = self.models[family] if family is not None else encoder
        note = "; ".join(part for part in (self.stand_in(family) if family is not None else "", note) if part)
        pairs = self.geometry_pairs()
        measured = evaluate_geometry(pairs, embed)
        data = (f"{pairs.name} {pairs.split}: {len(pairs):,} pairs ({measured['n_positive_pairs']} scored above "
                f"{measured['positive_threshold']:g}), {measured['n_sentences']:,} sentences; {self.data.describe()}")
        common = {"model": model, "seed": seed, "profile": self.profile, "kind": self.kind, "data": data, "note": note,
                  "encoder": encoder, "untouched": untouched}
        points = [common | {"point": "final", "dimension": measured["dimension"]} | {m: measured[m] for m in
                  ("alignment", "uniformity", "anisotropy", "top_variance_share", "largest_dimension")}]
        history = Path(trained.output_dir) / "geometry.json" if trained is not None else None
        if history is not None and history.is_file():
            for h in read_json(history, "a geometry trajectory"):
                points.append(common | {"point": "trajectory", "step": int(h["step"]), "untouched": False}
                              | {m: h[m] for m in ("alignment", "uniformity", "anisotropy", "top_variance_share") if m in h})
        save_geometry(self.out_dir, self.chapter, points, run_id=self.run_id)
        self._save_precision_uses()
        return measured | {"trajectory_points": len(points) - 1}

    def results(self) -> pd.DataFrame:
        """This chapter's results file as a frame."""
        return load_results(self.out_dir, [self.chapter])

    def compare(self, thresholds: Sequence[float] = report.THRESHOLDS) -> pd.DataFrame:
        """Every cell of the paper's tables beside ours (:func:`sentcl.book.pages.report.compare`)."""
        return report.compare(self.chapter, self.results(), thresholds=thresholds)

    def table(self, table: str, thresholds: Sequence[float] = report.THRESHOLDS, caption: str | None = None):
        """One paper table with our rows beside the paper's (:func:`sentcl.book.pages.report.comparison_table`)."""
        return report.comparison_table(self.compare(thresholds), table, thresholds=thresholds, caption=caption)

    def averages_chart(self, table: str, column: str = "Average", rows: Sequence[str] | None = None, title: str | None = None):
        """The paper's and our averages side by side (:func:`sentcl.book.pages.report.averages_chart`)."""
        return report.averages_chart(self.compare(), table, column=column, rows=rows, title=title)

    def save_figure(self, fig, name: str, caption: str) -> Path:
        """Save a figure (PNG + SVG) where the book finds it, with its caption."""
        return report.save_figure(fig, self.out_dir, self.chapter, name, caption)


def _average(scores: Mapping[str, Any]) -> float:
    """The Average column of a seed's scores (:func:`sentcl.evaluation.tasks.average`)."""
    from ...evaluation.scoring import average

    return average({key: scored.values for key, scored in scores.items()})
