"""The task table: every task points at a registered dataset and split, the papers' column
names resolve, one call of the encoder serves a whole list of tasks and gives what each
evaluator gives alone, and each task's protocol is the one the papers use (checked against
independent computations, so that a wrong setting, split or scorer fails)."""

from __future__ import annotations

import inspect
import zlib

import numpy as np
import pytest
from scipy.stats import spearmanr

import sentcl.data.loaders  # noqa: F401 - importing registers every loader
from sentcl.book.output.results import paper_values
from sentcl.data import info, load, samples_root
from sentcl.data.registry import LOADERS
from sentcl.errors import ConfigError, DataMissingError
from sentcl.evaluation.classification import evaluate_pair_classification
from sentcl.evaluation.encode_once import embed_groups
from sentcl.evaluation.retrieval import evaluate_retrieval
from sentcl.evaluation.scoring import average, evaluate_tasks, score
from sentcl.evaluation.sts import evaluate_sts
from sentcl.evaluation.tasks import STS_AVERAGE, TASKS, EvalTask, Metric, load_task, load_tasks, task

# the tasks whose data the sample data root lacks (their real sets are not distributed here)
NOT_IN_SAMPLES = {"CQA-A", "CQA-B", "Antique", "PFCC-S", "CLEF-2020", "FAQIR"}

# every evaluation column of the papers' tables, spelled as each table spells it
PAPER_COLUMNS = {
    "mnrl_sbert": ["STS12", "STS13", "STS14", "STS15", "STS16", "STSb", "SICK-R"],  # Tables 1-2
    "rcl": ["sts12", "sts13", "sts14", "sts15", "sts16", "stsb", "sickr", "FAQIR", "COUGH"],  # Tables 1-5
    "ifcl": ["STS12", "STS13", "STS14", "STS15", "STS16", "STS-B", "SICK-R", "Chinese STS-B", "SimCLUE"],
    "bsc": ["Antique", "CQA-A", "CQA-B", "PFCC-S", "MRPC", "QQP", "STSb"],  # Tables 1-5
}
KIND = {"sts": "scored_pairs", "classification": "labelled_pairs", "retrieval": "retrieval"}


def hash_embed(texts, dim=16):
    """Deterministic pseudo-embeddings: the same text always gets the same vector."""
    return np.stack([np.random.default_rng(zlib.crc32(t.encode())).normal(size=dim) for t in texts])


class CountingEmbed:
    """``hash_embed`` that records every call."""

    def __init__(self):
        self.calls: list[list[str]] = []

    def __call__(self, texts):
        self.calls.append(list(texts))
        return hash_embed(texts)


def cosines(a_texts, b_texts):
    a, b = hash_embed(a_texts), hash_embed(b_texts)
    return np.einsum("ij,ij->i", a, b) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))


def texts_of(record):
    if hasattr(record, "queries"):
        return [*record.queries.values(), *record.corpus.values()]
    return [*record.sentences1, *record.sentences2]


def loop_metrics(record, ks, relevance_level=1):
    """Acc@k (a relevant document in the top k), MAP and MAP@5, query by query, the corpus
    ranked by float64 cosine with ties by document id descending (trec_eval)."""
    ids = sorted(record.corpus, reverse=True)
    docs = hash_embed([record.corpus[d] for d in ids])
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    per_query = []
    for q, judged in record.qrels.items():
        relevant = {d for d, g in judged.items() if g >= relevance_level}
        order = [ids[i] for i in np.argsort(-(docs @ hash_embed([record.queries[q]])[0]), kind="stable")]
        ranks = [rank for rank, d in enumerate(order, 1) if d in relevant]
        precisions = [(hits + 1) / rank for hits, rank in enumerate(ranks)]
        values = {f"acc@{k}": float(any(rank <= k for rank in ranks)) for k in ks}
        values["map"] = sum(precisions) / len(relevant) if relevant else 0.0
        values["map@5"] = sum(p for p, rank in zip(precisions, ranks, strict=True) if rank <= 5) / len(relevant) if relevant else 0.0
        per_query.append(values)
    return {m: float(np.mean([v[m] for v in per_query])) for m in per_query[0]}


def file_order_map_mrr(record):
    """MAP and MRR of every question's candidates in file order (cut at 10): what the SemEval
    scorer gives when all scores tie, since it sorts stably."""
    aps, rrs = [], []
    for q, cands in record.candidates.items():
        rel = [record.qrels[q].get(c, 0) >= 1 for c in cands[:10]]
        ranks = [i + 1 for i, r in enumerate(rel) if r]
        aps.append(np.mean([(j + 1) / r for j, r in enumerate(ranks)]) if ranks else 0.0)
        rrs.append(1 / ranks[0] if ranks else 0.0)
    return float(np.mean(aps)), float(np.mean(rrs))


def constant_embed(texts):
    return np.ones((len(texts), 4))


# --------------------------------------------------------------------------- the table


@pytest.mark.parametrize("name", list(TASKS))
def test_every_task_is_a_registered_split_of_the_right_kind(name):
    t = TASKS[name]
    entry = info(t.dataset)
    assert t.split in entry.splits, f"{t.dataset} has no split {t.split}"
    # an STS task on binary labels (SimCLUE) reads labelled pairs
    assert entry.kind == ("labelled_pairs" if t.evaluator == "sts" and t.positive_label else KIND[t.evaluator])
    assert set(t.papers) <= set(entry.papers), "the registry lists the chapters that use a dataset"
    accepted = inspect.signature(LOADERS[t.dataset]).parameters
    assert all(option in accepted for option, _ in t.load_options)
    if t.evaluator == "retrieval":
        # the registry's binarisation, except in the faq_pairs view, which grades every match 1
        assert t.relevance_level == (1 if t.split == "faq_pairs" else entry.relevance_level)
        assert t.protocol == ("semeval" if t.dataset.startswith("semeval") else "trec")
    assert t.note or t.evaluator == "sts", "a task the papers leave open says what was chosen"


def test_every_column_of_the_papers_tables_names_its_task():
    for paper, columns in PAPER_COLUMNS.items():
        for column in columns:
            assert paper in task(column).papers, (paper, column)
    named = {task(c).name for columns in PAPER_COLUMNS.values() for c in columns}
    assert named == {n for n, t in TASKS.items() if t.papers}
    for name, t in TASKS.items():
        assert set(t.papers) == {p for p, cols in PAPER_COLUMNS.items() if name in {task(c).name for c in cols}}
    # the MNRL-SBERT chapter's typed-in tables, column by column: STS Spearman x100
    values = paper_values("mnrl_sbert")
    for column, scales in values.groupby("column")["scale"].unique().items():
        if column != "Average":
            assert task(column).metrics == (Metric("Spearman", "spearman"),) and list(scales) == [100.0]
    assert [task(c).name for c in ("STS-B", "stsb", "STSBenchmark", "sts benchmark", "chinese_sts-b")] == [
        "STSb", "STSb", "STSb", "STSb", "Chinese STS-B"]


def test_unknown_names_list_the_valid_ones():
    with pytest.raises(ConfigError, match=r"unknown evaluation task 'STS17'.*STS12, STS13.*COUGH"):
        task("STS17")
    with pytest.raises(ConfigError, match="unknown evaluation task"):
        evaluate_tasks(hash_embed, ["STS12", "Avg."], data_dir=samples_root())
    with pytest.raises(ConfigError, match="list of task names"):
        load_tasks("STS12", samples_root())
    with pytest.raises(ConfigError, match="same task"):
        score(hash_embed, {"STSb": load_task("STSb", samples_root()), "STS-B": load_task("STS-B", samples_root())})


def test_a_task_definition_is_checked():
    spearman = (Metric("Spearman", "spearman"),)
    with pytest.raises(ConfigError, match="setting"):
        EvalTask("X", "sts12", "test", "sts", spearman)
    with pytest.raises(ConfigError, match="setting"):
        EvalTask("X", "sts12", "test", "sts", spearman, setting="pooled")
    with pytest.raises(ConfigError, match="protocol and relevance_level"):
        EvalTask("X", "cough", "faq_pairs", "retrieval", (Metric("MAP", "map"),), protocol="trec")
    with pytest.raises(ConfigError, match="SemEval scorer computes"):
        EvalTask("X", "semeval2016_cqa_a", "test", "retrieval", (Metric("P@1", "p@1"),), protocol="semeval", relevance_level=1)
    with pytest.raises(ConfigError, match="canonically"):
        EvalTask("X", "cough", "faq_pairs", "retrieval", (Metric("nDCG@1", "nDCG@1"),), protocol="trec", relevance_level=1)
    with pytest.raises(ConfigError, match="positive_label"):
        EvalTask("X", "mrpc", "test", "classification", (Metric("F1", "f1", 100.0),))


def test_embed_groups_encodes_the_distinct_texts_of_all_groups_in_one_call():
    embed = CountingEmbed()
    groups = [["a", "b", "a"], [], ["c", "b"]]
    out = embed_groups(embed, groups)
    assert embed.calls == [["a", "b", "c"]]
    assert [m.shape for m in out] == [(3, 16), (0, 16), (2, 16)]
    for group, matrix in zip(groups, out, strict=True):
        for text, row in zip(group, matrix, strict=True):
            np.testing.assert_array_equal(row, hash_embed([text])[0])


# --------------------------------------------------------------------------- on the sample data


@pytest.fixture(scope="module")
def sample_tasks():
    """The tasks the sample data root has, with their records."""
    records, missing = {}, set()
    for name in TASKS:
        try:
            records[name] = load_task(name, samples_root())
        except DataMissingError:
            missing.add(name)
    assert missing == NOT_IN_SAMPLES
    return records


def test_one_call_for_all_tasks_equals_each_evaluator_alone(sample_tasks):
    embed = CountingEmbed()
    names = list(sample_tasks)
    scores = evaluate_tasks(embed, names, data_dir=samples_root())
    assert list(scores) == names
    # one call, on every distinct text of all the tasks
    assert len(embed.calls) == 1
    assert sorted(embed.calls[0]) == sorted({t for r in sample_tasks.values() for t in texts_of(r)})
    for name, record in sample_tasks.items():
        t = TASKS[name]
        if t.evaluator == "sts" and t.positive_label is None:
            alone = {"Spearman": evaluate_sts(record, hash_embed)["spearman"]["all"]}
        elif t.evaluator == "sts":  # SimCLUE: Spearman of the cosine with the 0/1 label
            gold = record.labels == record.label_names.index("similar")
            alone = {"Spearman": 100 * spearmanr(cosines(record.sentences1, record.sentences2), gold).statistic}
        elif t.evaluator == "classification":
            alone = {"F1": 100 * evaluate_pair_classification(record, hash_embed, positive_label=t.positive_label)["f1"]}
        else:
            result = evaluate_retrieval(record, hash_embed, metrics=[m.key for m in t.metrics],
                                        relevance_level=t.relevance_level, protocol=t.protocol)
            alone = {m.label: m.scale * result["scores"][m.key] for m in t.metrics}
        assert scores[name] == pytest.approx(alone, abs=1e-9), name


def test_records_passed_in_are_scored_as_given_and_keyed_by_the_callers_names(sample_tasks):
    records = {"STS-B": load("stsbenchmark", "test", samples_root()), "sickr": sample_tasks["SICK-R"].take(range(10))}
    scores = evaluate_tasks(hash_embed, records)
    assert list(scores) == ["STS-B", "sickr"]
    assert scores["sickr"]["Spearman"] == pytest.approx(evaluate_sts(records["sickr"], hash_embed)["spearman"]["all"])
    assert average(scores) == pytest.approx((scores["STS-B"]["Spearman"] + scores["sickr"]["Spearman"]) / 2)
    with pytest.raises(ConfigError, match="used as given"):
        evaluate_tasks(hash_embed, records, max_pairs=5)


def test_average_is_the_mean_spearman_of_the_english_sts_columns(sample_tasks):
    scores = evaluate_tasks(hash_embed, [*STS_AVERAGE, "Chinese STS-B", "MRPC"], data_dir=samples_root())
    assert average(scores) == pytest.approx(np.mean([scores[n]["Spearman"] for n in STS_AVERAGE]))
    assert average({"STS12": {"Spearman": 70.0}, "Chinese STS-B": {"Spearman": 10.0}}) == 70.0
    with pytest.raises(ConfigError, match="no STS column"):
        average({"MRPC": scores["MRPC"]})


def test_max_pairs_draws_a_seeded_subset_of_pairs_and_of_queries():
    records = load_tasks(["STS12", "MRPC", "COUGH"], samples_root(), max_pairs=6, seed=3)
    assert [len(r) for r in records.values()] == [6, 6, 6]
    again = load_tasks(["STS12", "MRPC", "COUGH"], samples_root(), max_pairs=6, seed=3)
    assert records["STS12"].sentences1 == again["STS12"].sentences1
    assert list(records["COUGH"].queries) == list(again["COUGH"].queries)
    assert len(records["COUGH"].corpus) == len(load_task("COUGH", samples_root()).corpus)  # the corpus stays whole
    assert evaluate_tasks(hash_embed, ["STS12"], data_dir=samples_root(), max_pairs=6, seed=3) == evaluate_tasks(
        hash_embed, {"STS12": records["STS12"]})
    with pytest.raises(ConfigError, match="at least 2"):
        load_tasks(["STS12"], samples_root(), max_pairs=1)


# --------------------------------------------------------------------------- protocols


def test_sts_years_are_scored_pooled_not_by_mean_of_subsets(sample_tasks):
    record = sample_tasks["STS12"]
    full = evaluate_sts(record, hash_embed)["spearman"]
    score = evaluate_tasks(hash_embed, {"STS12": record})["STS12"]["Spearman"]
    pooled = 100 * spearmanr(cosines(record.sentences1, record.sentences2), record.scores).statistic
    assert score == pytest.approx(pooled)
    assert abs(score - full["mean"]) > 1e-6 and abs(score - full["wmean"]) > 1e-6  # the other settings differ


def test_a_record_of_another_split_or_dataset_is_refused(sample_tasks):
    sick_all = load("sickr", "all", samples_root())
    assert len(sick_all) > len(sample_tasks["SICK-R"])  # the papers' SICK-R is the test split
    with pytest.raises(ConfigError, match=r"SICK-R is computed on sickr/test, got sickr/all"):
        evaluate_tasks(hash_embed, {"SICK-R": sick_all})
    with pytest.raises(ConfigError, match=r"STSb is computed on stsbenchmark/test, got stsbenchmark/dev"):
        evaluate_tasks(hash_embed, {"STSb": load("stsbenchmark", "dev", samples_root())})
    with pytest.raises(ConfigError, match="computed on sts12/test, got sts13/test"):
        evaluate_tasks(hash_embed, {"STS12": sample_tasks["STS13"]})
    with pytest.raises(ConfigError, match="computed on cough/faq_pairs, got cough/user_queries"):
        evaluate_tasks(hash_embed, {"COUGH": load("cough", "user_queries", samples_root())})


@pytest.mark.parametrize("name", ["CQA-A-2016", "CQA-B-2016"])
def test_cqa_uses_the_semeval_scorer_which_keeps_the_file_order_on_ties(sample_tasks, name):
    """With every score tied the official scorer keeps the gold file's order (trec_eval would
    sort by document id): the MAP and MRR of the candidates in file order."""
    record = sample_tasks[name]
    scores = evaluate_tasks(constant_embed, {name: record})[name]
    assert (scores["MAP"], scores["MRR"]) == pytest.approx(file_order_map_mrr(record))
    trec = evaluate_retrieval(record, constant_embed, metrics=["map", "mrr"])["scores"]
    assert trec["map"] != pytest.approx(scores["MAP"])  # so a trec protocol would be caught


def test_faq_retrieval_acc_at_k_and_map_in_percent_match_a_loop(sample_tasks):
    record = sample_tasks["COUGH"]
    scores = evaluate_tasks(hash_embed, {"COUGH": record})["COUGH"]
    loop = loop_metrics(record, (1, 3, 5))
    assert scores == pytest.approx({"Acc@1": 100 * loop["acc@1"], "Acc@3": 100 * loop["acc@3"],
                                    "Acc@5": 100 * loop["acc@5"], "MAP": 100 * loop["map"]})
    assert 0 < scores["Acc@1"] < scores["Acc@5"] < 100  # a test that can tell the cut-offs apart


def test_paraphrase_f1_is_the_best_threshold_f1_times_100(sample_tasks):
    for name, positive in (("MRPC", "equivalent"), ("QQP", "duplicate")):
        record = sample_tasks[name]
        labels = record.labels == record.label_names.index(positive)
        sims = cosines(record.sentences1, record.sentences2)
        best = 0.0
        for threshold in np.unique(sims):
            pred = sims >= threshold
            tp = np.sum(pred & labels)
            if tp:
                precision, recall = tp / pred.sum(), tp / labels.sum()
                best = max(best, 2 * precision * recall / (precision + recall))
        assert evaluate_tasks(hash_embed, {name: record})[name] == {"F1": pytest.approx(100 * best)}


# --------------------------------------------------------------------------- on the real data

REAL_SIZES = {  # pairs or queries of each task's split (registry counts)
    "STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186, "STSb": 1379, "SICK-R": 4927,
    "Chinese STS-B": 1361, "SimCLUE": 28031, "MRPC": 1725, "QQP": 40430, "CQA-A": 293, "CQA-B": 88,
    "CQA-A-2016": 327, "CQA-B-2016": 70, "Antique": 200, "CLEF-2020": 199, "FAQIR": 4133,
}


@pytest.fixture(scope="module")
def real_tasks(shared_data):
    records = {}
    for name in TASKS:
        try:
            records[name] = load_task(name, shared_data)
        except DataMissingError:
            continue
    if not records:
        pytest.skip(f"no task's data under {shared_data}")
    return records


@pytest.mark.realdata
def test_tasks_on_the_real_data_have_the_papers_sizes(real_tasks):
    for name, record in real_tasks.items():
        assert not record.sample
        if name in REAL_SIZES:
            assert len(record) == REAL_SIZES[name], name


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "expected"), [("CQA-A-2016", (59.53, 67.83)), ("CQA-B-2016", (74.75, 83.79))])
def test_cqa_2016_with_tied_scores_gives_the_published_ir_baseline(real_tasks, name, expected):
    """Nakov et al. 2016: the search engine's order (the gold file's) scores MAP/MRR x100 as below."""
    if name not in real_tasks:
        pytest.skip(f"{name} not in the real data root")
    scores = evaluate_tasks(constant_embed, {name: real_tasks[name]})[name]
    assert (round(100 * scores["MAP"], 2), round(100 * scores["MRR"], 2)) == expected


@pytest.mark.slow
@pytest.mark.realdata
def test_clef_2020_has_positive_at_k_matches_a_loop(real_tasks):
    if "CLEF-2020" not in real_tasks:
        pytest.skip("CLEF-2020 not in the real data root")
    record = real_tasks["CLEF-2020"]
    embed = CountingEmbed()
    scores = evaluate_tasks(embed, {"CLEF-2020": record})["CLEF-2020"]
    assert len(embed.calls) == 1
    loop = loop_metrics(record, (1, 5, 50))
    assert scores == pytest.approx({"HP@1": loop["acc@1"], "HP@5": loop["acc@5"], "HP@50": loop["acc@50"],
                                    "MAP@5": loop["map@5"]})
