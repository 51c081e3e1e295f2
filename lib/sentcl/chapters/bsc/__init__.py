"""The BSC chapter (Chernyavskiy et al. 2022, batch-softmax contrastive loss): its title, its tables, the data
each paper row needs, its GPU-memory rows (``benchmarks/results/bsc_gpu_h100.json``), and the measurement its
demo rests on (``benchmarks/bsc_cqa_shuffle.py``: the demo on CQA-A only at several numbers of optimizer steps,
and whether the paper's shuffle ablation, Table 2, is decided there), and its plan of runs (:func:`plan`: every
training run of every task, row and seed, which the notebook trains through and ``benchmarks/bsc_gpu.py`` projects
onto a GPU).

The notebook's training goes through this module: a task's data (:func:`task_data`, §4), a row's trainer per seed
(:func:`trainer_for`: its loss, Eqs. 1-6 or the triplet loss, and its batches, Algorithm 1 or an ablation's) and its
seeds' runs (:func:`train_row`). :func:`build` builds any one planned stage alone (``sentcl reproduce --executor
ray``: one task each) through the same functions, so a task builds the very key the notebook then finds.

Why this module is long: it holds the whole chapter of a paper with seven tasks (each task's data, rows, trainer,
plan stages, costs and the central claims across five tables) in one place, until chapters become packages of
their own (issue 44).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd

from ...book.chapter_spec import Chapter
from ...book.estimates.benchmarks import Measurement, health_columns, interval_cell, mean_std_cell, recorded
from ...book.estimates.cost import registry_count, run_steps
from ...book.estimates.coverage import scored_sets
from ...book.estimates.gpu_memory import MemoryRow, benchmark_record
from ...book.estimates.plan import Plan, PlannedStage, stage_name
from ...book.output.claims import DECIDED, Central
from ...errors import DataMissingError
from .variants import VARIANTS, training_order

if TYPE_CHECKING:
    from ...book.notebook.chapter_run import ChapterRun
    from ...data.records import TrainingData
    from ...training import Trainer
    from ...training.seeds import SavedModel, SeedRuns
    from .variants import LossSettings

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
    from ...data.registry import info

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


def rows_left_out(paper_rows: Sequence[str], rows: Sequence[str]) -> list[str]:
    """The rows of a task's table (``paper_rows``) that this chapter can compute (a training variant or the zero-shot
    row) but a profile's ``rows`` for the task leave out: its table says "not run" beside them and its claims about
    them are not tested, outside the family's count (known before anything trains)."""
    return [r for r in paper_rows if (r in VARIANTS or r == ZERO_SHOT) and r not in rows]


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
                    sentences=evaluations * dev_texts + (2 * pairs * epochs if example else 0), args=(task, row, seed)))
    return Plan(NAME, stages)


@dataclass
class TaskData:
    """What a task's rows train on (§4): its training ``record`` (capped at ``train_rows``, less the tenth a ``"9:1"``
    dev split holds out), its labelled training ``pairs``, its ``dev`` data (None without model selection) and, where
    its fallback training data stood in, the note that says so."""

    name: str
    record: Any
    pairs: TrainingData
    dev: Any  # None without model selection
    fell_back: str | None = None


def task_data(run: ChapterRun, name: str) -> TaskData:
    """Task ``name``'s data (:class:`TaskData`) from the run's data root: its ``train_data`` (else its
    ``train_fallback``), whole questions in the file's order up to ``train_rows`` for a retrieval set (a seeded
    subset for a pair set), its dev data (the last tenth under ``"9:1"``, else ``dev_max_queries`` of ``dev_data``,
    seeded), its pairs labelled as the task scores them (Antique's grades scaled to [0, 1], else binary). Raises
    :class:`~sentcl.errors.DataMissingError` where the data root lacks them (the task is not run)."""
    from ...data.judged_pairs import first_questions, training_pairs
    from ...data.records import RetrievalSet, subset
    from ...evaluation.tasks import task

    p = run.parameters
    fell_back = None
    try:
        record = run.load(*p["train_data"][name].split("/"))
    except DataMissingError:  # the task's fallback training data, said under every row it trains
        if name not in p["train_fallback"]:
            raise
        record = run.load(*p["train_fallback"][name].split("/"))
        fell_back = f"trained on {p['train_fallback'][name]}: {p['train_data'][name]} is not in this run's data root"
    cap = p["train_rows"].get(name, 0)
    if isinstance(record, RetrievalSet) and cap:  # whole questions, in the file's order
        record = first_questions(record, cap)
    elif cap:
        record = subset(record, cap, p["seeds"][0], f"train_rows[{name!r}]")
    dev = None
    if p["dev_data"][name] == "9:1":  # the last tenth held out
        cut = len(record) - max(1, len(record) // 10)
        dev, record = record.take(range(cut, len(record))), record.take(range(cut))
    elif p["select_on_dev"]:
        dev = subset(run.load(*p["dev_data"][name].split("/")), p["dev_max_queries"].get(name, 0), p["seeds"][0],
                     f"dev_max_queries[{name!r}]")
    pairs = training_pairs(record, grades="scaled" if name == "Antique" else "binary",
                           positive_label=task(p["eval_tasks"][name]).positive_label)
    return TaskData(name, record, pairs, dev, fell_back)


def data_absent(p: Mapping[str, Any], name: str) -> str:
    """Why task ``name`` is not run where :func:`task_data` finds its data absent (the files, not the folders)."""
    files = (p["train_data"][name] if p["dev_data"][name] == "9:1" or not p["select_on_dev"]
             else f"{p['train_data'][name]} or {p['dev_data'][name]}")
    return f"not run: data absent ({files} is not in this run's data root)"


def loss_settings(p: Mapping[str, Any], name: str) -> LossSettings:
    """Task ``name``'s loss hyperparameters (§5.2): τ, normalisation, the two sides of Eq. 1, the threshold of a
    positive, μ of Eq. 6, the triplet loss's margin and distance."""
    from .variants import LossSettings

    return LossSettings(temperature=p["temperature"][name], normalization=p["normalization"][name], symmetric=p["symmetric"],
                        sides=p["sides"], threshold=p["threshold"].get(name, 0.5), identical_anchors=p["identical_anchors"],
                        mu=p["mu"][name], triplet_margin=p["triplet_margin"].get(name, 0.5),
                        triplet_distance=p["triplet_distance"])


def sampler_for(p: Mapping[str, Any], name: str, batches: str) -> Any:
    """The batches of a variant (§3.2: Algorithm 1's example-based shuffling, or an ablation's), with task
    ``name``'s group size."""
    from .variants import batch_sampler

    return batch_sampler(batches, group_size=p["group_size"].get(name, 8), neighbours=p["neighbours"],
                         clusters=p["clusters"], column=p["shuffle_column"], start_epoch=p["shuffle_start_epoch"],
                         index=p["shuffle_index"])


def pfcc_negatives(run: ChapterRun, record: Any) -> Callable[[TrainingData], list[tuple[str, str]]]:
    """PFCC-S (§4): training pairs -> for each tweet, the verified claims of ``record``'s whole database at ranks
    100 + 2^k by an SBERT (``pfcc_negatives_model``)."""
    from ...data.judged_pairs import log_rank_negative_pairs
    from ...embeddings import embedder
    from ...models import load_encoder

    p = run.parameters

    def negatives(data: TrainingData) -> list[tuple[str, str]]:
        embed = embedder(load_encoder(p["pfcc_negatives_model"]), precision=p["encode_precision"], show_progress=False)
        return log_rank_negative_pairs(data, record.corpus.values(), embed, start=p["pfcc_negatives_start"])

    return negatives


def row_data(run: ChapterRun, data: TaskData, row: str) -> TrainingData:
    """The rows ``row``'s variant trains on (:func:`sentcl.data.judged_pairs.training_rows`): the task's pairs, its
    positives, its pointwise rows or its triplets (PFCC-S's negatives sampled by :func:`pfcc_negatives`)."""
    from ...data.judged_pairs import training_rows

    p = run.parameters
    return training_rows(data.pairs, VARIANTS[row].rows, threshold=p["threshold"].get(data.name, 0.5),
                         negatives=pfcc_negatives(run, data.record) if data.name == "PFCC-S" else None)


def trainer_for(run: ChapterRun, data: TaskData, row: str, rows: TrainingData, seed: int, start: str | None) -> Trainer:
    """Seed ``seed``'s trainer of ``row`` on task ``data`` (its training ``rows``: :func:`row_data`): the variant's
    loss (:func:`sentcl.chapters.bsc.variants.loss_factory`, the task's :func:`loss_settings`) and batches
    (:func:`sampler_for`), AdamW (with bias correction where ``bias_correction`` says) with linear warm-up and
    decay, one evaluation on the dev data per epoch keeping the best (``select_on_dev``, on the table's first
    metric), the model loaded from ``start`` (the folder of the model it fine-tunes; None: ``base_model``)."""
    from ...evaluation.scoring import dev_evaluator
    from ...evaluation.tasks import task
    from ...models import load_encoder
    from ...training import Trainer, TrainingConfig
    from .variants import loss_factory

    p, name, variant = run.parameters, data.name, VARIANTS[row]
    select = p["select_on_dev"]
    main = task(p["eval_tasks"][name]).metrics[0].key  # the dev evaluator's name of the table's first metric
    config = TrainingConfig(
        epochs=p["epochs"][name], batch_size=p["batch_size"][name], learning_rate=p["learning_rate"][name],
        optimizer="adamw", adam_bias_correction=p["bias_correction"].get(name, False), weight_decay=p["weight_decay"],
        warmup_ratio=p["warmup_ratio"], max_grad_norm=p["max_grad_norm"], seed=seed, precision=p["precision"],
        eval_fraction=1.0 if select else None, metric_for_best=main if select else None)
    evaluator = dev_evaluator(p["eval_tasks"][name], data.dev, precision=p["encode_precision"]) if select else None
    model = load_encoder(start or p["base_model"], pooling=p["pooling"], max_seq_length=p["max_seq_length"])
    return Trainer(model, loss_factory(variant, loss_settings(p, name)), rows, config, evaluator=evaluator,
                   sampler=sampler_for(p, name, variant.batches), name=f"{name} {row} seed {seed}")


def train_row(run: ChapterRun, data: TaskData, row: str, *, seeds: Sequence[int] | None = None,
              score: Callable[[Any], Any] | None = None, starts_from: Mapping[int, SavedModel] | None = None,
              save_to: str | Path | None = None) -> SeedRuns:
    """Train ``row`` of task ``data`` with every seed of ``seeds`` (None: the run's) under :func:`training_stage`
    (cached: a rerun loads it), each seed's run from ``starts_from`` (seed -> the model it fine-tunes; None: the base
    model), and score what ``seed_summary`` reports with ``score`` (:func:`sentcl.training.seeds.train_seeds`);
    ``save_to`` keeps the models a row fine-tuning this one starts from."""
    from ...training.seeds import train_seeds

    p = run.parameters
    rows = row_data(run, data, row)
    return train_seeds(lambda seed, start: trainer_for(run, data, row, rows, seed, start), p["seeds"] if seeds is None else seeds,
                       seed_summary=p["seed_summary"], score=score, starts_from=starts_from, save_to=save_to,
                       train=lambda trainer: run.train(trainer, stage=training_stage(data.name, row, trainer.config.seed)))


def build(run: ChapterRun, stage: PlannedStage) -> None:
    """Build one planned stage (:func:`plan`; its ``args``: task, row, seed) into the artifact cache, as the notebook
    would: a row's run of one seed; a fine-tuning row's after loading from the cache the run it starts from (seed k's,
    or under ``seed_summary`` "best on dev" the best of the starting row's seeds). A task whose data the run's data
    root lacks builds nothing (the notebook does not run it either)."""
    name, row, seed = stage.args
    try:
        data = task_data(run, name)
    except DataMissingError:
        return
    start = VARIANTS[row].starts_from
    if start is None:
        train_row(run, data, row, seeds=[seed])
        return
    seeds = [seed] if run.parameters["seed_summary"] == "mean" else run.parameters["seeds"]
    with tempfile.TemporaryDirectory() as folder:  # the path is not in a run's key: the weights are
        started = train_row(run, data, start, seeds=seeds, save_to=folder)
        train_row(run, data, row, seeds=[seed], starts_from=started.saved)


def paper_cost() -> list[str | pd.DataFrame]:
    """What the chapter's cost cell shows (with :func:`sentcl.book.notebook.show`): the two measured records, each
    its summary and table: the shuffling's CPU cost (``benchmarks/results/bsc_shuffling_cpu.json``) and the paper
    profile's GPU hours (:data:`MEMORY_RECORD`); "not measured" for a record this sentcl lacks."""
    parts: list[str | pd.DataFrame] = []
    for label, file in (("shuffling", "bsc_shuffling_cpu.json"), ("GPU", MEMORY_RECORD)):
        found = recorded(file)
        if found is None:
            parts.append(f"**{label}:** not measured (this sentcl has no `benchmarks/results/{file}`).")
            continue
        parts.append(f"**{label}** (`{file}`, {found['machine']['device']}): " + found.get("summary", ""))
        if found.get("table"):
            parts.append(pd.DataFrame(found["table"]))
    return parts


def data_needs(p: Mapping[str, Any]) -> dict:
    """The data each paper row the profile ``p`` computes needs (:data:`sentcl.book.estimates.coverage.Needs`): per task
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
    return (f"The demo's encoder when this was measured, {s['base_model'].split('/')[-1]}, trained on CQA-A only (the "
            f"first judged pairs of the training file, whole questions, in batches of {s['batch_size']}: one example-based "
            "group a batch; learning rate "
            f"{s['learning_rate']:g} with bias correction, the paper's; {s['max_seq_length']} sub-tokens; seeds "
            f"{s['seeds']}; precision {s['precision']}{' (fp32 on every CPU)' if s['precision'] == 'auto' else ''}) for each number of optimizer steps, every model scored on all CQA-A test "
            f"questions, measured by `benchmarks/bsc_cqa_shuffle.py` on {result['machine']['cpu_model']} "
            f"({result['date'][:10]}): MAP (mean ± std over the seeds), each difference with its 95 % interval over "
            "seeds and test questions and its verdict, Holm-corrected within each run, the notebook's wall time and "
            "the median wall time of one training run." + _decided_by_steps(result))


def _decided_by_steps(result: dict[str, Any]) -> str:
    """What each recorded run decided, generated from the file: per number of steps, the claims decided (direction reproduced or
    reversed), how many stay undetermined, and how far the trained models moved (the lowest cosine to the start)."""
    said = []
    for run in result["runs"]:
        decided = [f"{c['left']} − {c['right']} {c['verdict']}" for c in run["claims"] if c["verdict"] in DECIDED]
        undetermined = sum(c["verdict"] == "undetermined" for c in run["claims"])
        cosines = [h["start_cosine"] for h in run["health"].values() if h.get("start_cosine") is not None]
        moved = f"; every trained model ends at a cosine of {min(cosines):.3f} or more to its start" if cosines else ""
        said.append(f"At {run['steps']} steps: " + ("; ".join(decided) if decided else "no claim decided")
                    + f", {undetermined} undetermined{moved}.")
        said[-1] = said[-1].replace(" zero-shot (ours)", " untouched")
    return " " + " ".join(said) if said else ""


def check_parameters(p: Mapping[str, Any]) -> None:
    """Refuses, before any work, a seed summary the parameters ``p`` cannot compute
    (:func:`sentcl.training.seeds.check_seed_summary`)."""
    from ...training.seeds import check_seed_summary

    check_seed_summary(p["seed_summary"], p["seeds"], p["select_on_dev"])


def encoders(p: Mapping[str, Any]) -> dict[str, str]:
    """Model family -> the encoder its runs start from, in a profile's parameters ``p`` (the notebook's run)."""
    return {"BERT": p["base_model"]}


PAPER_MODELS = {"BERT": "bert-base-uncased"}
"""Model family -> the paper's encoder: SBERT on BERT-base uncased (§5.1)."""


def central_claims(p: Mapping[str, Any]) -> list[Central]:
    """The chapter's central claims, its primary family (:class:`~sentcl.book.output.claims.Central`), fixed before
    anything runs (the paper's row names: every profile records them so, or says they were not run). The paper's
    tables have no Average: a claim is tested on every column of its table (Table 5: STSb's Spearman).

    - **B1**, Table 5 (STSb): MSE above the combination above BSC, all three pairs (§6: STSb "is the only task where
      combo with the BSC loss was worse than MSE"; BSC alone is below both).
    - **B2**, every table where the ablation runs: BSC (example-based shuffling) against random shuffling and against
      no shuffling (§6, §7: "the order in which the data is presented for training can be critical"). In the paper
      profile that is Tables 1-3 (CQA-A/B for both pairs: there the paper's direction flips, no shuffling above BSC on
      CQA-A and below it on CQA-B, and each ordering is a claim); in the demo our own claims on STSb (Table 5), where
      the paper did not run the ablation.
    - **B3**, every other table (Tables 1-4: Antique, CQA-A/B, PFCC-S, MRPC, QQP): BSC, and its combination with MSE,
      against MSE (§7: "combo-training with BSC and MSE losses generally yields the best results (the only exception
      is STSb)"; "BSC is more suitable for ranking tasks"). Its pairs are B1's, on any table: a claim goes to the
      first central claim that covers it, so B1 (listed first) keeps Table 5's and B3 takes the rest.

    Where this differs from issue 46's list: B3 is BSC and the combination against MSE (two pairs, not the combination
    against BSC as well), so that the family stays near the paper's conclusions; the clusters shuffle (Table 2), the
    normalisation and positives-only ablations (Tables 1, 3), the triplet loss, sequential fine-tuning (Table 5) and
    the zero-shot rows stay secondary. B2 and B3 span several tables with several columns each (the paper reports no
    average), so in the paper profile they hold more claims than B1. Every central claim compares two rows with
    per-item scores: all can be tested where a profile runs their rows."""
    loss = (("BSC", "MSE"), ("Combo BSC + MSE", "MSE"))
    return [
        Central("B1", "On STSb, MSE above the combination above BSC: the only task where combo is worse than MSE",
                (*loss, ("Combo BSC + MSE", "BSC")), table="Table 5"),
        Central("B2", "The order the data is presented in can be critical: BSC's example-based shuffling against "
                "random shuffling and no shuffling", (("BSC", "BSC - random shuffle"), ("BSC", "BSC - w/o shuffle"))),
        Central("B3", "On the other tasks, BSC and its combination with MSE above MSE alone: combo generally best, "
                "BSC more suited to ranking", loss),
    ]


CHAPTER = Chapter(
    name=NAME,
    order=2,
    title="BSC: batch-softmax contrastive loss (Chernyavskiy et al. 2022)",
    memory=memory_rows,
    memory_record=MEMORY_RECORD,
    needs=data_needs,
    measurement=Measurement(CQA_SHUFFLE, "Could the demo decide the shuffle ablation on CQA-A?", cqa_shuffle_frame,
                            _cqa_shuffle_caption),
    plan=plan,
    build=build,
    check=check_parameters,
    models=encoders,
    paper_models=PAPER_MODELS,
    central=central_claims,
)


__all__ = ["CAPTIONS", "CHAPTER", "COLUMNS", "MAIN", "PAPER_MODELS", "TABLES", "TASKS_OF", "TaskData", "TaskSize", "ZERO_SHOT",
           "build", "central_claims", "check_parameters", "cqa_shuffle_frame", "data_absent", "data_needs", "encoders", "loss_settings",
           "memory_rows", "paper_sizes", "pfcc_negatives", "plan", "row_data", "rows_left_out", "sampler_for", "task_columns", "task_data",
           "train_row", "trained_rows", "trainer_for", "training_stage", "training_what"]
