"""The MNRL-SBERT chapter (Taneja et al. 2023, multiple-negatives ranking loss on NLI): its title, its tables'
captions and figures (:data:`CAPTIONS`, :data:`FIGURES`), the data each paper row needs, its GPU-memory rows (estimates: no GPU record), its plan of runs
(:func:`plan`, whose per-run estimate ``benchmarks/mnrl_sbert_cost.py`` makes, converted onto the
paper's T4 by :func:`sentcl.book.estimates.cost.t4_hours`). Its demo's learning rate rests on
``benchmarks/rate_rule.py``'s record (:func:`sentcl.book.estimates.benchmarks.rate_rule`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from ...book.chapter_spec import Chapter
from ...book.estimates.benchmarks import recorded
from ...book.estimates.cost import chapter_stages, run_steps, t4_checkpoints, t4_hours
from ...book.estimates.coverage import scored_sets
from ...book.estimates.gpu_memory import MemoryRow, estimated
from ...book.estimates.plan import Plan, PlannedStage, stage_name
from ...book.output.claims import Central

if TYPE_CHECKING:
    from ...book.notebook.chapter_run import ChapterRun
    from ...data.nli import NLIData

NAME = "mnrl_sbert"
COST_RECORD = "mnrl_sbert_cost_cpu.json"
"""The training FLOPs per step of each run, measured on a CPU by ``benchmarks/mnrl_sbert_cost.py``: the T4 hours' base."""
CAPTIONS = {"Table 1": "MNRL models and unsupervised baselines", "Table 2": "MNRL models and supervised baselines"}
"""Table -> what its rows compare (the notebook adds the metric), in the order the chapter shows them."""
FIGURES = {6: ("Table 1", "unsupervised"), 7: ("Table 2", "supervised")}
"""The paper's figure -> the table whose Average column it plots (panel a: the BERT rows, b: the RoBERTa rows),
and the kind of baselines that table compares MNRL with."""


def training_stage(row: str, seed: int) -> str:
    """The artifact stage of a trained row's run with ``seed`` (its name in :func:`plan`)."""
    return stage_name(NAME, row, "seed", seed)


def plan(p: Mapping[str, Any]) -> Plan:
    """Every training the MNRL-SBERT notebook runs with parameters ``p``: per MNRL row and seed one epoch of the
    entailment pairs in batches of ``mnrl_batch_size``, per softmax row and seed one epoch of the labelled NLI rows
    in batches of ``softmax_batch_size`` (``train_pairs`` rows each where set; else the counts the data preparation
    asserts), each from its family's base model (no upstream stage; :func:`build` builds one). Step names are
    ``benchmarks/mnrl_sbert_cost.py``'s (``"mnrl"``, ``"softmax"``)."""
    pairs = min(p["train_pairs"] or p["expected_entailment_pairs"], p["expected_entailment_pairs"])
    rows = min(p["train_pairs"] or p["expected_nli_rows"], p["expected_nli_rows"])
    objectives = ((f"MNRL ({', '.join(p['mnrl_rows'])})", p["mnrl_rows"], run_steps(pairs, p["mnrl_batch_size"], p["epochs"]), "mnrl"),
                  (f"softmax loss ({', '.join(p['softmax_rows'])})", p["softmax_rows"],
                   run_steps(rows, p["softmax_batch_size"], p["epochs"]), "softmax"))
    return Plan(NAME, [PlannedStage(what, name=training_stage(row, seed), steps=steps, step=step,
                                    checkpoint_steps=p["checkpoint_steps"], args=(row, seed))
                       for what, trained, steps, step in objectives for row in trained for seed in p["seeds"]])


def load_nli(run: ChapterRun) -> NLIData:
    """The run's NLI train sets (``nli_datasets``), merged (:func:`sentcl.data.nli.prepare_nli`)."""
    from ...data.nli import prepare_nli

    return prepare_nli([run.load(*name.split("/")) for name in run.parameters["nli_datasets"]])


def train(run: ChapterRun, nli: NLIData, row: str, seed: int):
    """Fine-tune the encoder of ``row``'s family with its objective (MNRL, Eq. 1, for an MNRL row; SBERT's softmax
    loss for a softmax row) and ``seed`` on that seed's subset of ``train_pairs`` rows of ``nli``, under the
    planned stage :func:`training_stage` (cached: a rerun loads it). Returns (the model, its
    :class:`~sentcl.training.TrainingResult`)."""
    from ...data.records import subset
    from ...losses import MultipleNegativesRankingLoss, SoftmaxLoss
    from ...models import load_encoder
    from ...training import NoDuplicatesBatchSampler, RandomBatchSampler, Trainer, TrainingConfig

    p = run.parameters
    objective = "mnrl" if row in p["mnrl_rows"] else "softmax"
    family = p[f"{objective}_rows"][row]

    def loss(model):
        if objective == "mnrl":
            return MultipleNegativesRankingLoss(model, scale=p["mnrl_scale"], similarity=p["mnrl_similarity"])
        return SoftmaxLoss(model, num_labels=len(nli.label_names), concatenation=p["softmax_concatenation"],
                           classifier_lr=p["softmax_classifier_lr"])

    pairs = nli.entailment_pairs if objective == "mnrl" else nli.labelled_pairs
    batch_size, sampler = p[f"{objective}_batch_size"], p[f"{objective}_batch_sampler"]
    samplers = {"random": RandomBatchSampler, "no_duplicates": NoDuplicatesBatchSampler}
    data = subset(pairs, p["train_pairs"], seed, "train_pairs")
    config = TrainingConfig(
        epochs=p["epochs"], batch_size=batch_size, learning_rate=p["learning_rate"], optimizer=p["optimizer"],
        weight_decay=p["weight_decay"], scheduler="linear", warmup_ratio=p["warmup_ratio"], max_grad_norm=p["max_grad_norm"],
        precision=p["precision"], seed=seed, checkpoint_steps=p["checkpoint_steps"] or None)
    model = load_encoder(p["base_models"][family], pooling=p["pooling"], max_seq_length=p["max_seq_length"])
    result = run.train(Trainer(model, loss, data, config, sampler=samplers[sampler](), name=f"{row} seed {seed}"),
                       stage=training_stage(row, seed))
    return model, result


def build(run: ChapterRun, stage: PlannedStage) -> None:
    """Build one planned stage (:func:`plan`) into the artifact cache, as the notebook would: a row's run of one seed."""
    row, seed = stage.args
    train(run, load_nli(run), row, seed)


def paper_cost() -> list[str | pd.DataFrame]:
    """The paper profile's training cost on a T4, for the chapter's cost cell (shown with
    :func:`sentcl.book.notebook.show`): the record :data:`COST_RECORD`'s table and assumptions, then its FLOPs per
    step applied to the counts of the paper profile's plan as shipped (:func:`~sentcl.book.estimates.cost.t4_hours`,
    :func:`~sentcl.book.estimates.cost.t4_checkpoints`); "no cost estimate" where this sentcl has no record."""
    cost = recorded(COST_RECORD)
    if cost is None:
        return [f"No cost estimate: this sentcl has no `benchmarks/results/{COST_RECORD}` (run `benchmarks/mnrl_sbert_cost.py`)."]
    stages = chapter_stages(CHAPTER)
    low, high = t4_hours(stages, cost)
    checkpoints = "–".join(dict.fromkeys(f"{n:,}" for n in t4_checkpoints(stages, cost)))
    return [pd.DataFrame(cost["table"]).set_index("run"),
            f"Estimate from a measurement on {cost['machine']['cpu']} ({cost['measured']}). Assumptions: "
            + "; ".join(cost["assumptions"]) + ".",
            "The paper profile trains " + ", ".join(f"{s.runs} × {s.what} ({s.steps:,} steps)" for s in stages)
            + f": about **{low:.1f}–{high:.1f} T4 hours** of training steps in all (the same assumptions), and "
            f"{checkpoints} checkpoints on the trainer's cadence (every 10 minutes of training, every `checkpoint_steps`, "
            "and at the end), not timed."]


def data_needs(p: Mapping[str, Any]) -> dict:
    """The data each paper row the profile ``p`` computes needs (:data:`sentcl.book.estimates.coverage.Needs`)."""
    sts = scored_sets(p["sts_tasks"])
    needs: dict = {row: [*p["nli_datasets"], *sts] for row in (*p["mnrl_rows"], *p["softmax_rows"])}
    needs |= {row: sts for row in p["first_last_avg_rows"]}
    for row, source in p["whitening_rows"].items():  # fitted on NLI sentences; SBERT's on its trained model
        needs[row] = [*p["whitening_fit_datasets"], *(p["nli_datasets"] if source in p["softmax_rows"] else []), *sts]
    return needs


def memory_rows(paper: Mapping[str, Any]) -> list[MemoryRow]:
    """Per family, each objective's run at its batch: estimated (pairs: two texts a row)."""
    runs = [("MNRL", paper["mnrl_batch_size"]), ("softmax loss", paper["softmax_batch_size"])]
    return [estimated(f"{family} ({model}), {loss}", model, batch, 2, paper["max_seq_length"])
            for family, model in paper["base_models"].items() for loss, batch in runs]


def encoders(p: Mapping[str, Any]) -> dict[str, str]:
    """Model family -> the encoder its runs start from, in a profile's parameters ``p`` (the notebook's run)."""
    return dict(p["base_models"])


def _row_of(rows: Mapping[str, str], family: str, paper_row: str) -> str:
    """The row of ``rows`` (row -> its family, or the row it starts from) that ``family`` names, else the paper's
    name for it (a row a profile leaves out is recorded as not run under the paper's name)."""
    return next((row for row, source in rows.items() if source == family), paper_row)


def central_claims(p: Mapping[str, Any]) -> list[Central]:
    """The chapter's central claims, its primary family (:class:`~sentcl.book.output.claims.Central`), from a
    profile's parameters ``p`` (each row named as the notebook records it: the ``mnrl_rows``, ``softmax_rows``,
    ``first_last_avg_rows`` and ``whitening_rows`` row of its family, else the paper's name, which a profile that
    leaves the row out records as not run). Fixed before anything runs; on each table's Average.

    - **M1**, Table 2: MNRLSBERT above SBERT, trained with the softmax loss (§V: "a substantial improvement over ...
      SBERT/SRoBERTa"): the paper's one change to SBERT is its objective (§III), and this pair is it.
    - **M2**, Table 2: the same for RoBERTa, MNRLSRoBERTa above SRoBERTa.
    - **M3**, Table 1: MNRLSBERT above BERT's first-last averaging and BERT-whitening, the untrained baselines the
      paper outperforms "with a clear margin" (§V).

    Where this differs from issue 46's list: M3 is BERT's pairs alone. The RoBERTa family's untrained baselines
    (RoBERTa(first-last avg.), RoBERTa-whitening) stay secondary: M2 already stakes the RoBERTa family, and three
    pairs carry the claim. Left secondary too: the contrastive baselines of Table 1 (SimCSE, DiffCSE, DeCLUTR,
    ...: cited, never run), SBERT-whitening and SRoBERTa-whitening (Table 2: whitening a softmax-trained model tests
    a post-processing step, not the objective) and our "above the untouched encoder" claims. Every central claim is
    a comparison of two rows with per-item scores: all can be tested where a profile runs their rows."""
    method = {family: _row_of(p["mnrl_rows"], family, f"MNRLS{family}") for family in PAPER_MODELS}
    softmax = {family: _row_of(p["softmax_rows"], family, f"S{family}") for family in PAPER_MODELS}
    averaged = _row_of(p["first_last_avg_rows"], "BERT", "BERT (first-last avg.)")
    whitened = _row_of(p["whitening_rows"], "BERT", "BERT-whitening")
    return [
        Central("M1", "A substantial improvement over SBERT: MNRL above the softmax loss on NLI (BERT)",
                ((method["BERT"], softmax["BERT"]),), table="Table 2"),
        Central("M2", "A substantial improvement over SRoBERTa: MNRL above the softmax loss on NLI (RoBERTa)",
                ((method["RoBERTa"], softmax["RoBERTa"]),), table="Table 2"),
        Central("M3", "MNRLSBERT outperforms the unsupervised baselines, first-last averaging and whitening, with a clear margin",
                ((method["BERT"], averaged), (method["BERT"], whitened)), table="Table 1"),
    ]


PAPER_MODELS = {"BERT": "bert-base-uncased", "RoBERTa": "roberta-base"}
"""Model family -> the paper's encoder: BERT's and RoBERTa's rows (Tables 1 and 2)."""


CHAPTER = Chapter(
    name=NAME,
    order=1,
    title="MNRL-SBERT: multiple-negatives ranking loss on NLI (Taneja et al. 2023)",
    memory=memory_rows,
    needs=data_needs,
    plan=plan,
    build=build,
    models=encoders,
    paper_models=PAPER_MODELS,
    central=central_claims,
    one_budget_row="MNRL",
)


__all__ = ["CAPTIONS", "CHAPTER", "FIGURES", "PAPER_MODELS", "build", "central_claims", "data_needs", "encoders", "load_nli", "memory_rows", "plan",
           "train", "training_stage"]
