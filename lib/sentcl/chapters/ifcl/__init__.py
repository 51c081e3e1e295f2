"""The IFCL chapter (Xiao et al. 2023, identical and fraternal twins): its title, the data each row of the
slides' tables needs, its GPU-memory rows, its plan of runs (:func:`plan`, projected by
:func:`ifcl_paper_projection` from ``benchmarks/results/ifcl_gpu_h100.json``), the runs themselves (:func:`train`
on a language's :class:`TrainingTexts`, which the notebook and :func:`build` share: ``sentcl reproduce --executor
ray`` builds each planned run as one task, and the notebook then finds it in the cache), Table 4's estimates for a
trained model (:func:`mutual_information`), and the measurement its demo setting rests on
(``benchmarks/ifcl_demo_setting.py``: each method's loss terms at the start and the end of the same short run on the
demo's earlier stand-in, all-MiniLM-L6-v2, with the slides' twins and with twins from NLI entailment pairs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...book.chapter_spec import Chapter
from ...book.estimates.benchmarks import Measurement, recorded
from ...book.estimates.cost import (
    BERT_BASE_PARAMETERS,
    BERT_LARGE_PARAMETERS,
    measured_checkpoint_write,
    projection,
    registry_count,
    run_steps,
    scored_sentences,
)
from ...book.estimates.coverage import scored_sets
from ...book.estimates.gpu_memory import MemoryRow, benchmark_record
from ...book.estimates.plan import Plan, PlannedStage, stage_name
from ...book.output.claims import Central
from ...book.output.results import paper_values

if TYPE_CHECKING:
    from ...book.notebook.chapter_run import ChapterRun
    from ...data.records import TrainingData
    from ...evaluation.information import MutualInformation
    from ...training import TrainingResult

NAME = "ifcl"
MEMORY_RECORD = "ifcl_gpu_h100.json"
DEMO_SETTING = "ifcl_demo_setting_cpu.json"
FRATERNAL = {"ifcl": True, "ifcl_wo_tl": True, "simcse": False}
"""Method -> whether its rows carry a fraternal twin (SimCSE trains on the identical twin alone)."""


def ifcl_step(size: str, method: str) -> str:
    """The measured step of a row of ``method`` on the ``size`` encoder: ``benchmarks/ifcl_gpu.py``'s model names
    (IFCL w/o TL encodes IFCL's three views, so it runs IFCL's step)."""
    return f"{'SimCSE' if method == 'simcse' else 'IFCL'}-BERT-{size}"


def training_stage(row: str, seed: int, chinese: bool = False) -> str:
    """The artifact stage of a trained row's run with ``seed`` (its name in :func:`plan`): the English table's
    rows under ``english``, the Chinese table's under ``chinese`` (the two tables may share a row's name)."""
    return stage_name(NAME, "chinese" if chinese else "english", row, "seed", seed)


def plan(p: Mapping[str, Any]) -> Plan:
    """Every training and encoding the IFCL notebook runs with parameters ``p``: per English row and seed one run
    over the training sentences (the registry's count of ``train_dataset``, or ``train_sentences``), per trained
    Chinese row and seed one run over the Chinese training sentences (both sides of every pair: at most that many
    distinct ones), each from its encoder (no upstream stage; :func:`training_stage`), counted together by the
    measured step they run (:func:`ifcl_step`; the Chinese BERT is BERT-base's architecture), their length and
    their dev set's size (Chinese runs that differ from English ones by their dev set alone say "(Chinese)"); each
    run's dev evaluation (STS-B, Chinese STS-B) every ``eval_steps`` steps; every row and seed
    scored on the STS test sets (unnamed: not in the artifact cache). Table 4's mutual information (a few
    thousand sentences per row) is left out."""
    english = registry_count(p["train_dataset"])
    chinese = 2 * sum(registry_count(name) for name in p["chinese_train_datasets"])
    english, chinese = (min(n, p["train_sentences"] or n) for n in (english, chinese))
    # (step, steps, dev sentences) -> the builder's args of its runs: (row, seed, Chinese?)
    runs: dict[tuple[str, int, int], list[tuple[str, int, bool]]] = {}
    for row, (size, method) in p["english_rows"].items():
        key = (ifcl_step(size, method), run_steps(english, p["batch_size"], p["epochs"], p["max_steps"]),
               2 * (p["dev_max_pairs"] or registry_count("stsbenchmark/dev")))
        runs.setdefault(key, []).extend((row, seed, False) for seed in p["seeds"])
    for row, method in p["chinese_rows"].items():
        if method != "untouched":
            key = (ifcl_step("base", method), run_steps(chinese, p["batch_size"], p["epochs"], p["max_steps"]),
                   2 * (p["dev_max_pairs"] or registry_count("cnsd_stsb/dev")))
            runs.setdefault(key, []).extend((row, seed, True) for seed in p["seeds"])
    what = {key: f"{key[0]}: {len(named)} runs of {key[1]:,} steps" for key, named in runs.items()}
    for key, named in runs.items():  # the Chinese runs of an English row's step and length, but another dev set
        if list(what.values()).count(what[key]) > 1 and all(chinese for *_, chinese in named):
            what[key] = f"{key[0]} (Chinese): {len(named)} runs of {key[1]:,} steps"
    stages = []
    for (step, steps, dev), named in runs.items():
        evaluations = steps // p["eval_steps"] if p["eval_steps"] else 0
        stages += [PlannedStage(what[step, steps, dev], 1, steps, step, sentences=evaluations * dev,
                                evaluations=evaluations, evaluation_sentences=evaluations * dev,
                                parameters=BERT_LARGE_PARAMETERS if step.endswith("large") else BERT_BASE_PARAMETERS,
                                checkpoint_steps=p["checkpoint_steps"], name=training_stage(*args), args=args)
                   for args in named]
    english_scored = len(p["english_rows"]) * len(p["seeds"]) + len(p["first_last_avg_rows"])
    stages.append(PlannedStage("English STS test sets: every row and seed scored", english_scored,
                               sentences=scored_sentences(p["sts_tasks"], p["sts_max_pairs"])))
    if p["chinese_rows"]:
        chinese_scored = sum(1 if m == "untouched" else len(p["seeds"]) for m in p["chinese_rows"].values())
        stages.append(PlannedStage("Chinese STS test sets: every row and seed scored", chinese_scored,
                                   sentences=scored_sentences(p["chinese_tasks"], p["chinese_max_pairs"])))
    return Plan(NAME, stages)


def sentences(run: ChapterRun, names: Sequence[str]) -> list[str]:
    """The distinct sentences of "dataset/split" names (both sides of a pair), read through the run."""
    texts: list[str] = []
    for name in names:
        record = run.load(*name.split("/"))
        texts += getattr(record, "texts", None) or [*record.sentences1, *record.sentences2]
    return list(dict.fromkeys(texts))


class TrainingTexts:
    """One language's training data: the sentences each run's twins are made of (``train_sentences`` of them,
    seeded) and its dev set (STS-B dev, or Chinese STS-B dev; ``dev_max_pairs`` of it; None without selection,
    ``eval_steps`` 0). English: the sentences of ``train_dataset``, or with ``fraternal_twins``
    "entailment" each premise of its NLI entailment pairs; Chinese: the distinct sentences of
    ``chinese_train_datasets``."""

    def __init__(self, run: ChapterRun, chinese: bool = False):
        from ...data.nli import prepare_nli
        from ...data.records import subset

        p = self.parameters = run.parameters
        self.run, self.chinese = run, chinese
        self.entailment: TrainingData | None = None
        self._sentences: list[str] = []  # Chinese: the trained sentences; English: those twins are drawn from
        self._twins: dict[tuple[int, bool], TrainingData] = {}
        if chinese:
            self._sentences = subset(sentences(run, p["chinese_train_datasets"]), p["train_sentences"], 0, "train_sentences")
        elif p["fraternal_twins"] == "entailment":
            self.entailment = prepare_nli([run.load(*p["train_dataset"].split("/"))]).entailment_pairs
        else:
            self._sentences = sentences(run, [p["train_dataset"]])
        dev = run.load("cnsd_stsb" if chinese else "stsbenchmark", "dev") if p["eval_steps"] else None
        self.dev = subset(dev, p["dev_max_pairs"], 0, "dev_max_pairs") if dev is not None else None
        """The dev set each evaluation scores (None without selection)."""

    @property
    def texts(self) -> list[str]:
        """The sentences every run trains on (English: those of seed 0's twins, the same for every seed)."""
        return self._sentences if self.chinese else self.twins(0).columns["text"]

    def twins(self, seed: int, fraternal: bool = True) -> TrainingData:
        """The fusion augmentation's rows (text, identical twin[, fraternal twin]) of ``seed``: the identical twin is
        the text (dropout noise alone tells them apart); the fraternal twin its word repetition
        (``repetition_rate``, drawn with ``seed``) or, English with entailment twins, the first hypothesis it
        entails. English rows are drawn once per seed (the rows the notebook shows and Table 4 reads are a run's)."""
        from ...data.augmentation import entailment_twins, fusion_twins
        from ...data.records import subset

        p = self.parameters
        if self.chinese:
            return fusion_twins(self._sentences, repetition_rate=p["repetition_rate"], seed=seed, fraternal=fraternal,
                                name="Chinese twins")
        if (seed, fraternal) not in self._twins:
            if self.entailment is not None:
                rows = entailment_twins(self.entailment, fraternal=fraternal, name=f"{p['train_dataset']} entailment twins")
            else:
                rows = fusion_twins(self._sentences, repetition_rate=p["repetition_rate"], seed=seed, fraternal=fraternal,
                                    name=f"{p['train_dataset']} twins")
            self._twins[seed, fraternal] = subset(rows, p["train_sentences"], 0, "train_sentences")
        return self._twins[seed, fraternal]


def ifcl_loss(p: Mapping[str, Any], method: str) -> Callable[[Any], Any]:
    """The loss of ``method`` for a model: the slides' objective l^I(h, h+) + l^I(h, h-) + lambda l^T (Eq. I, InfoNCE
    with the hippocampus queue of ``queue_batches`` batches, forgetting ``forgetting_decay``; Eq. T, the Twin loss
    with weight ``twin_weight``); IFCL w/o TL: lambda = 0; SimCSE: no queue, no Twin loss (and no fraternal twins,
    :data:`FRATERNAL`)."""
    from ...losses import IFCLLoss

    options = {"ifcl": {"queue_batches": p["queue_batches"], "twin_weight": p["twin_weight"]},
               "ifcl_wo_tl": {"queue_batches": p["queue_batches"], "twin_weight": 0.0},
               "simcse": {"queue_batches": 0, "twin_weight": 0.0}}[method]
    return lambda m: IFCLLoss(m, temperature=p["temperature"], forgetting_decay=p["forgetting_decay"],
                              margin_embeddings=p["margin_embeddings"], **options)


def train(run: ChapterRun, data: TrainingTexts, row: str, seed: int) -> tuple[Any, TrainingResult]:
    """Train ``row`` (an English row, or a trained Chinese row where ``data`` is Chinese) with its method
    (:func:`ifcl_loss`) and ``seed`` from its family's encoder on ``data``'s twins of that seed, its dev set
    scored every ``eval_steps`` steps (the best checkpoint kept), under the planned stage :func:`training_stage`
    (cached: a rerun loads it, a killed run resumes). Returns (the model, its
    :class:`~sentcl.training.TrainingResult`, with its health)."""
    from ...evaluation.scoring import dev_evaluator
    from ...models import load_encoder
    from ...training import Trainer, TrainingConfig

    p = run.parameters
    family, method = ("Chinese", p["chinese_rows"][row]) if data.chinese else p["english_rows"][row]
    config = TrainingConfig(
        epochs=p["epochs"], batch_size=p["batch_size"], max_steps=p["max_steps"] or None,
        learning_rate=p["chinese_learning_rate"] if data.chinese else p["learning_rates"][family],
        weight_decay=p["weight_decay"], warmup_ratio=p["warmup_ratio"], max_grad_norm=p["max_grad_norm"],
        precision=p["precision"], seed=seed, checkpoint_steps=p["checkpoint_steps"] or None,
        eval_steps=p["eval_steps"] or None, metric_for_best="spearman" if p["eval_steps"] else None,
        unpadded=p["unpadded"])
    evaluator = dev_evaluator("Chinese STS-B" if data.chinese else "STSb", data.dev) if data.dev is not None else None
    model = load_encoder(encoders(p)[family], pooling=p["pooling"], max_seq_length=p["max_seq_length"])
    trainer = Trainer(model, ifcl_loss(p, method), data.twins(seed, FRATERNAL[method]), config,
                      name=f"{row} seed {seed}", evaluator=evaluator)
    return model, run.train(trainer, stage=training_stage(row, seed, data.chinese))


def mutual_information(model, twins: TrainingData, task: tuple[list[str], list[str]] | None, *, fraternal: bool,
                       candidates: int, temperature: float, embed: Callable[[list[str]], Any],
                       cache: bool = True) -> tuple[dict[str, MutualInformation], dict[str, Any]]:
    """Table 4's estimates for one trained model (:func:`~sentcl.evaluation.information.infonce_mutual_information`,
    ``candidates`` K, critic cos/``temperature``): MI(h, h+) between two dropout draws (seeds 1 and 2) of the twins'
    sentences, MI(h, h-) between the first and a draw (seed 3) of their fraternal twins (with ``fraternal``), MI_task
    between ``embed``'s embeddings (evaluation mode) of the STS-B pairs ``task`` (None: not estimated). The draws are
    :func:`~sentcl.evaluation.information.dropout_embeddings` (``cache``: kept in the embedding cache). Returns the
    estimates by column and the drawn views ``{"h", "h+"[, "h-"]}``."""
    from ...evaluation.information import dropout_embeddings, infonce_mutual_information

    texts = twins.columns["text"]
    views = {"h": dropout_embeddings(model, texts, seed=1, cache=cache),
             "h+": dropout_embeddings(model, texts, seed=2, cache=cache)}
    found = {"MI(h, h+)": infonce_mutual_information(views["h"], views["h+"], candidates=candidates, temperature=temperature)}
    if fraternal:
        views["h-"] = dropout_embeddings(model, twins.columns["fraternal"], seed=3, cache=cache)
        found["MI(h, h-)"] = infonce_mutual_information(views["h"], views["h-"], candidates=candidates, temperature=temperature)
    if task is not None:
        found["MI_task"] = infonce_mutual_information(embed(task[0]), embed(task[1]), candidates=candidates,
                                                      temperature=temperature)
    return found, views


def record_mutual_information(run: ChapterRun, row: str, per_seed: Mapping[int, Mapping[str, MutualInformation]],
                              trained: Mapping[int, Any], *, twins: TrainingData, task: tuple[list[str], list[str]],
                              population: int, family: str, data: str) -> None:
    """Record Table 4's ``row`` from each seed's estimates (:func:`mutual_information`; ``trained``: seed -> its run):
    each column the mean over the seeds, each seed's per-pair terms (``MutualInformation.terms``) the evidence its
    claims resample as independent pairs (a pair's term also depends on the other candidates of its group, which the
    resampling ignores). A column's items are known by the texts its pairs are made of (the twins' sentences and
    fraternal twins, the STS-B pairs ``task``) and K; ``population``: the sentences the twins were drawn from
    (MI_task's pairs are every close pair); ``data``: what they were computed on."""
    from ...evaluation.per_item import ItemTerms
    from ...hashing import stable_hash, texts_hash

    made_of = {"MI(h, h+)": [twins.columns["text"]], "MI(h, h-)": [twins.columns["text"], twins.columns.get("fraternal", [])],
               "MI_task": list(task)}
    k = next(iter(next(iter(per_seed.values())).values())).candidates
    fingerprints = {c: stable_hash({"texts": [texts_hash(list(t)) for t in parts], "K": k}) for c, parts in made_of.items()}
    run.record_measures(row, {seed: {c: ItemTerms({c: e.terms}) for c, e in found.items()} for seed, found in per_seed.items()},
                        trained=dict(trained), tables=["Table 4"], fingerprints=fingerprints, family=family,
                        populations={"MI(h, h+)": population, "MI(h, h-)": population, "MI_task": len(task[0])},
                        data=f"{run.data.describe()}; {data}")


def build(run: ChapterRun, stage: PlannedStage) -> None:
    """Build one planned stage (:func:`plan`) into the artifact cache, as the notebook would: one row's run of one
    seed, English or Chinese (its ``args``: row, seed, Chinese?)."""
    row, seed, chinese = stage.args
    train(run, TrainingTexts(run, chinese), row, seed)


def ifcl_paper_projection(measured: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`projection` of the IFCL chapter's paper profile from a ``benchmarks/ifcl_gpu.py`` record: each
    model's median step, every sentence encoded at the slowest measured evaluation rate (an upper bound). A
    stage whose step the record did not measure is left out and named under ``"not measured"``."""
    from ...book.parameters import shipped_parameters

    paper = shipped_parameters(NAME)
    steps = {r["model"]: r["step_s_median"] for r in measured["table"]}
    rate = min(3000 / r["evaluation_3000_sentences_s"] for r in measured["table"])
    stages = plan(paper).counted()
    result = projection([s for s in stages if not s.step or s.step in steps], steps, rate,
                        measured_checkpoint_write()["bytes_per_s"])
    result["not measured"] = [s.what for s in stages if s.step and s.step not in steps]
    return result


def paper_cost() -> list[str | pd.DataFrame]:
    """The paper profile's GPU hours, for the chapter's cost cell (shown with :func:`sentcl.book.notebook.show`): the
    record :data:`MEMORY_RECORD`'s measured models, then :func:`ifcl_paper_projection` stage by stage and in all;
    "not measured" where this sentcl has no record."""
    cost = recorded(MEMORY_RECORD)
    if cost is None:
        return [f"GPU cost: **not measured**: this sentcl has no `benchmarks/results/{MEMORY_RECORD}` "
                "(run `benchmarks/ifcl_gpu.py` on a GPU)."]
    projected = ifcl_paper_projection(cost)  # every run of the paper profile, counted from its parameters
    parts = ", ".join(f"{part} {hours:.1f}" for part, hours in projected["parts"].items())
    unmeasured = f"; not measured: {', '.join(projected['not measured'])}" if projected["not measured"] else ""
    return [pd.DataFrame(cost["table"]).drop(columns=["architecture"]).set_index("model"),
            f"Measured on {cost['device']} ({cost['date']}). " + " ".join(cost["notes"]),
            pd.DataFrame(projected["table"]).set_index("stage"),
            f"The paper profile: about **{projected['hours']:.1f} GPU hours** on this device (encoding at the slowest "
            f"measured rate): {parts} hours; {projected['checkpoints']:,} checkpoints, {projected['checkpoint_terabytes']:.2f} "
            "TB written at the rate measured on the CPU machine's disk (`benchmarks/results/checkpoint_write_cpu.json`)"
            + unmeasured + "."]


def data_needs(p: Mapping[str, Any]) -> dict:
    """The data each row of the slides' tables the profile ``p`` computes needs (:data:`sentcl.book.estimates.coverage.Needs`)."""
    english, chinese = scored_sets(p["sts_tasks"]), scored_sets(p["chinese_tasks"])
    # a trained row the slides' tables lack (IFCL w/o TL's English scores) serves Table 4 only
    needs: dict = {("English STS", row): [p["train_dataset"], *english] for row in p["english_rows"]}
    needs |= {("English STS", row): english for row in p["first_last_avg_rows"]}
    needs |= {("Chinese STS", row): chinese if method == "untouched" else [*p["chinese_train_datasets"], *chinese]
              for row, method in p["chinese_rows"].items()}
    needs |= {("Table 4", row): [p["train_dataset"], *scored_sets(["STS-B"])] for row in p["mi_rows"]}
    values = paper_values(NAME)
    return {key: need for key, need in needs.items() if key in set(zip(values["table"], values["row"], strict=True))}


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Each model of ``benchmarks/results/ifcl_gpu_h100.json`` with its measured peak."""
    record = benchmark_record(MEMORY_RECORD)
    return [MemoryRow(row["model"], "bert-large" if "large" in row["model"] else "bert-base",
                      record["settings"]["batch"], record["settings"]["precision"], row["peak_gpu_memory_gib"],
                      MEMORY_RECORD)
            for row in record["table"]]


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


def _ifcl_setting_caption(result: dict[str, Any]) -> str:
    s = result["settings"]
    return (f"Each method trained for {s['steps']} steps of {s['batch_size']} at learning rate {s['learning_rate']:g} "
            f"(seed {s['seed']}, {s['precision']}) on the demo's earlier stand-in, all-MiniLM-L6-v2, measured by `benchmarks/ifcl_demo_setting.py` on "
            f"{result['machine']['cpu_model']} ({result['date'][:10]}): the loss and its terms in the first and the last "
            f"window of {s['log_steps']} steps, the mean cosine of its embeddings to the start's on the fixed probe, and "
            "whether it counts as trained (a loss at or below 0.001 in the first window: the objective was already solved).")


def encoders(p: Mapping[str, Any]) -> dict[str, str]:
    """Model family -> the encoder its runs start from, in a profile's parameters ``p`` (the notebook's run)."""
    return {**p["english_models"], **({"Chinese": p["chinese_model"]} if p["chinese_rows"] else {})}


PAPER_MODELS = {"base": "bert-base-uncased", "large": "bert-large-uncased", "Chinese": "bert-base-chinese"}
"""Model family -> the paper's encoder: the slides' English BERT base and large and the Chinese BERT."""


def _row_of(rows: Mapping[str, Any], what: Any, paper_row: str) -> str:
    """The row of ``rows`` (row -> what it is: a string, or English rows' [size, method]) that is ``what``, else the
    slides' name for it (a row a profile leaves out is recorded as not run under the slides' name)."""
    return next((row for row, it in rows.items() if (list(it) if isinstance(it, (list, tuple)) else it) == what), paper_row)


def central_claims(p: Mapping[str, Any]) -> list[Central]:
    """The chapter's central claims, its primary family (:class:`~sentcl.book.output.claims.Central`), from a
    profile's parameters ``p`` (each row as the notebook names it: the ``english_rows``, ``chinese_rows`` and
    ``mi_rows`` row of that size and method, else the slides' name, which a profile that leaves the row out records
    as not run). Fixed before anything runs; on the English table's Average, the Chinese table's two tasks (it has
    no average) and Table 4's three estimates.

    - **I1**, English STS: IFCL-BERT-base above SimCSE-BERT-base, the method IFCL extends (the same wiki1m
      sentences, the same encoder and schedule here).
    - **I2**, our claims: the Twin loss, IFCL-BERT-base above IFCL-BERT-base w/o TL (the slides' Table 4 ablation,
      which they report for mutual information only: the STS comparison is our own claim, on the same seeds).
    - **I3**, English STS: the large rows, IFCL-BERT-large above SimCSE-BERT-large.
    - **I4**, Chinese STS: IFCL-BERT above SimCSE-BERT (◇), the SimCSE the slides trained in the same setting.
    - **I5**, Table 4: mutual information, IFCL-BERT against IFCL-BERT w/o TL (the slides: the Twin loss reduces
      the information the positive pair shares, MI(h, h+) 4.15 against 4.23, while MI_task stays near it). Every
      seed's model is estimated and the claims resample its pairs' terms (:func:`record_mutual_information`); a
      column at the bound's ceiling ln K is declared untestable. The slides' other reading, MI(h, h-) above
      MI(h, h+) within a model, compares two columns of one row, not two rows: no pair can carry it.

    Where this differs from issue 46's list: I1 and I3 are against SimCSE alone, not the other cited methods
    (ConSERT, VaSCL, DCLR, MoCoSE, PT-BERT: cited numbers, never run); I4 is against the slides' own SimCSE (◇),
    not the cited one (•) or the untouched BERT; I5 is the Twin-loss pair alone (SimCSE's row of Table 4 stays
    secondary, as does every claim against an untouched or first-last averaged encoder)."""
    english = p["english_rows"]
    ifcl, simcse = ({size: _row_of(english, [size, method], f"{name}-BERT-{size}") for size in ("base", "large")}
                    for method, name in (("ifcl", "IFCL"), ("simcse", "SimCSE")))
    twinless = _row_of(english, ["base", "ifcl_wo_tl"], "IFCL-BERT-base w/o TL")
    chinese = {method: _row_of(p["chinese_rows"], method, row) for method, row in (("ifcl", "IFCL-BERT"),
                                                                                 ("simcse", "SimCSE-BERT (◇)"))}
    mi = {source: _row_of(p["mi_rows"], english_row, source) for source, english_row in
          (("IFCL-BERT", ifcl["base"]), ("IFCL-BERT w/o TL", twinless))}
    return [
        Central("I1", "IFCL above SimCSE on the English STS tasks (BERT-base)", ((ifcl["base"], simcse["base"]),),
                table="English STS"),
        Central("I2", "The Twin loss helps: IFCL above IFCL without it", ((ifcl["base"], twinless),)),
        Central("I3", "IFCL above SimCSE on the English STS tasks (BERT-large)", ((ifcl["large"], simcse["large"]),),
                table="English STS"),
        Central("I4", "IFCL above SimCSE on the Chinese STS tasks", ((chinese["ifcl"], chinese["simcse"]),),
                table="Chinese STS"),
        Central("I5", "The Twin loss reduces the mutual information of positive pairs, keeping task-relevant information",
                ((mi["IFCL-BERT"], mi["IFCL-BERT w/o TL"]),), table="Table 4"),
    ]


CHAPTER = Chapter(
    name=NAME,
    order=4,
    title="IFCL: identical and fraternal twins (Xiao et al. 2023)",
    memory=memory_rows,
    memory_record=MEMORY_RECORD,
    needs=data_needs,
    measurement=Measurement(DEMO_SETTING, "Which setting leaves the objective something to learn", ifcl_setting_frame,
                            _ifcl_setting_caption),
    plan=plan,
    build=build,
    models=encoders,
    paper_models=PAPER_MODELS,
    central=central_claims,
)


__all__ = ["CHAPTER", "FRATERNAL", "PAPER_MODELS", "TrainingTexts", "build", "central_claims", "data_needs", "encoders", "ifcl_loss",
           "ifcl_paper_projection", "ifcl_setting_frame", "ifcl_step", "memory_rows", "mutual_information", "plan",
           "record_mutual_information", "sentences", "train", "training_stage"]
