"""Retrieval loaders (SemEval CQA A/B, CLEF-2020 CheckThat! 2, PFCC-S, ANTIQUE, COUGH,
FAQIR) on the real files, on the project's samples and on small files in each format.

The real-data tests check every count of the registry exactly (queries, corpus size,
judgements, relevant judgements, dropped items) and reproduce two published numbers
with an independent implementation of the official SemEval scorer's MAP.
"""

from __future__ import annotations

import pytest
import yaml

from sentcl.data import load, samples_root
from sentcl.data.loaders import cqa, faq, retrieval
from sentcl.data.registry import SAMPLE_MARKER, info
from sentcl.data.samples.retrieval import write_retrieval_samples
from sentcl.errors import ConfigError, DataFormatError, DataMissingError
from sentcl.paths import resource

CQA16 = "semeval2016_task3_cqa_ql"


def registry_yaml(name: str) -> dict:
    """The raw registry entry (with the retrieval extras: corpus, judgements, relevant)."""
    return yaml.safe_load(resource("registry", f"{name}.yaml").read_text(encoding="utf-8"))


def judgements(record) -> int:
    return sum(len(j) for j in record.qrels.values())


def relevant(record, level: int) -> int:
    return sum(g >= level for j in record.qrels.values() for g in j.values())


def official_map(record, rank=lambda record, qid, cands: cands) -> float:
    """MAP as SemEval-2016/2017 Task 3's MAP_scripts/ev.py computes it (default options):
    top 10 of each question's ranking, average precision over the relevant candidates
    found there, a question without any relevant candidate counting 0, mean over all
    questions. ``rank`` orders a question's candidates (default: file order, which is
    the official IR baseline's order)."""
    total = 0.0
    for qid, cands in record.candidates.items():
        hits, precisions = 0, []
        for i, doc in enumerate(rank(record, qid, cands)[:10], start=1):
            if record.qrels[qid][doc] > 0:
                hits += 1
                precisions.append(hits / i)
        total += sum(precisions) / len(precisions) if precisions else 0.0
    return total / len(record.candidates)


# ---------------------------------------------------------------------------------------
# Real data (../shared/data)

REAL_SPLITS = [
    ("semeval2016_cqa_a", "train_part2"), ("semeval2016_cqa_a", "dev"), ("semeval2016_cqa_a", "test"),
    ("semeval2016_cqa_b", "train_part2"), ("semeval2016_cqa_b", "dev"), ("semeval2016_cqa_b", "test"),
    ("clef2020_checkthat_task2", "train"), ("clef2020_checkthat_task2", "dev"), ("clef2020_checkthat_task2", "test"),
]


@pytest.mark.realdata
@pytest.mark.parametrize(("name", "split"), REAL_SPLITS)
def test_real_counts_match_the_registry(shared_data, name, split):
    record = load(name, split, shared_data)
    expected = registry_yaml(name)["splits"][split]
    level = registry_yaml(name)["relevance_level"]
    assert not record.sample
    assert len(record) == len(record.queries) == expected["count"]
    assert len(record.corpus) == expected["corpus"]
    assert judgements(record) == expected["judgements"]
    assert relevant(record, level) == expected["relevant"]
    assert record.dropped == expected["dropped"]
    assert set(record.qrels) == set(record.queries)
    assert all(d in record.corpus for j in record.qrels.values() for d in j)
    if record.candidates is not None:
        assert set(record.candidates) == set(record.queries)
        assert all(set(c) == set(record.qrels[q]) for q, c in record.candidates.items())


@pytest.mark.realdata
def test_semeval2016_counts_from_the_task_readme(shared_data):
    """Counts stated by SOURCES.md and README v3.2 section 8, independent of the registry."""
    a_test = load("semeval2016_cqa_a", "test", shared_data)
    b_test = load("semeval2016_cqa_b", "test", shared_data)
    assert (len(b_test), len(b_test.corpus), len(a_test.corpus)) == (70, 700, 3270)
    assert relevant(b_test, 1) == 233 and judgements(b_test) - relevant(b_test, 1) == 467
    part2 = load("semeval2016_cqa_a", "train_part2", shared_data)
    assert (len(part2.corpus), relevant(part2, 1)) == (3790, 1364)  # Good 1,364 of 3,790
    assert all(len(c) == 10 for c in a_test.candidates.values())


@pytest.mark.realdata
def test_official_ir_baselines_are_reproduced(shared_data):
    """Ranking the candidates in file order and scoring with the official MAP gives the
    published IR baselines of SemEval-2016 Task 3 (Nakov et al. 2016: subtask A 59.53,
    subtask B 74.75), which count questions without a relevant candidate as AP 0."""
    a = load("semeval2016_cqa_a", "test", shared_data)
    b = load("semeval2016_cqa_b", "test", shared_data)
    assert official_map(a) == pytest.approx(0.5953, abs=5e-5)
    assert official_map(b) == pytest.approx(0.7475, abs=5e-5)
    assert sum(not any(j.values()) for j in a.qrels.values()) == 12  # kept, scoring 0
    assert sum(not any(j.values()) for j in b.qrels.values()) == 8


@pytest.mark.realdata
def test_dev_gold_files_agree_with_the_xml_labels(shared_data):
    """The full dev XML with the official subtask-A gold file gives the same record as the
    -subtaskA file (256 repeated threads skipped), and the subtask-B gold agrees with the
    XML labels: the loader cross-checks every pair and would raise on a mismatch."""
    dev = shared_data / CQA16 / "dev"
    entry_a, entry_b = info("semeval2016_cqa_a"), info("semeval2016_cqa_b")
    gold_a = dev / "SemEval2016-Task3-CQA-QL-dev-subtaskA.xml.subtaskA.relevancy"
    full_a = cqa.load_cqa_subtask_a(entry_a, "dev", [dev / "SemEval2016-Task3-CQA-QL-dev.xml", gold_a])
    plain_a = load("semeval2016_cqa_a", "dev", shared_data)
    assert full_a.dropped == {"repeated_thread": 256}
    assert (full_a.queries, full_a.corpus, full_a.qrels, full_a.candidates) == (
        plain_a.queries, plain_a.corpus, plain_a.qrels, plain_a.candidates)
    gold_b = cqa.load_cqa_subtask_b(entry_b, "dev", [dev / "SemEval2016-Task3-CQA-QL-dev.xml",
                                                     dev / "SemEval2016-Task3-CQA-QL-dev.xml.subtaskB.relevancy"])
    assert gold_b.qrels == load("semeval2016_cqa_b", "dev", shared_data).qrels


@pytest.mark.realdata
def test_test_input_without_gold_is_refused(shared_data):
    """The official test inputs carry '?' labels: without the gold file the loader names
    the first unlabelled candidate instead of inventing labels."""
    path = shared_data / CQA16 / "test" / "SemEval2016-Task3-CQA-QL-test-input.xml"
    with pytest.raises(DataFormatError) as err:
        cqa.load_cqa_subtask_b(info("semeval2016_cqa_b"), "test", [path])
    assert err.value.path == str(path) and err.value.line > 0
    assert "RELQ_RELEVANCE2ORGQ" in str(err.value)


@pytest.mark.realdata
def test_question_text_is_subject_and_body(shared_data):
    record = load("semeval2016_cqa_a", "test", shared_data)
    assert record.queries["Q318_R6"].startswith("IT Jobs in Qatar [SEP] how hard is it for you")
    plain = load("semeval2016_cqa_a", "test", shared_data, separator=" ")
    assert plain.queries["Q318_R6"].startswith("IT Jobs in Qatar how hard")


@pytest.mark.realdata
def test_clef_multiline_claims_and_multiple_relevant(shared_data):
    train = load("clef2020_checkthat_task2", "train", shared_data)
    assert train.corpus["3057"] == ("Account describes Pamela Murphy’s efforts on behalf of patients at a Veterans\n"  # noqa: RUF001 - the dataset's own apostrophe
                                    "Administration hospital.")
    assert sum("\n" in t for t in train.corpus.values()) == 14
    assert train.qrels["878"] == {"274": 1, "723": 1}
    assert train.candidates is None
    titled = load("clef2020_checkthat_task2", "dev", shared_data, document="vclaim_title")
    assert titled.corpus["0"].endswith("Return to the Battlefield?")
    test = load("clef2020_checkthat_task2", "test", shared_data)
    assert "1198" not in test.queries and test.qrels["1167"] == {"9807": 1}


@pytest.mark.realdata
def test_absent_and_partial_datasets_name_their_missing_files(shared_data):
    with pytest.raises(DataMissingError, match=r"SemEval2016-Task3-CQA-QL-train-part1\.xml"):
        load("semeval2016_cqa_a", "train", shared_data)
    with pytest.raises(DataMissingError):
        load("cough", "user_queries", shared_data)
    # the loader itself names every missing file of the partial COUGH copy at once
    entry = info("cough")
    files = [shared_data / "cough" / f for f in entry.splits["user_queries"].files]
    with pytest.raises(DataMissingError) as err:
        faq.load_cough(entry, "user_queries", files)
    message = str(err.value)
    assert "FAQ_Bank_eval.csv" in message and "Annotated_Relevance_Set.csv" in message
    assert "User_Query_Bank.csv" not in message and "2 of 3 files missing" in message


# ---------------------------------------------------------------------------------------
# The project's sample data (data/samples)

SAMPLE_COUNTS = {  # (dataset, split) -> (queries, corpus, judgements, relevant, dropped)
    ("semeval2016_cqa_a", "train"): (21, 63, 63, 33, {"repeated_thread": 3}),
    ("semeval2016_cqa_a", "train_part2"): (11, 33, 33, 16, {"repeated_thread": 1}),
    ("semeval2016_cqa_a", "dev"): (16, 48, 48, 24, {}),
    ("semeval2016_cqa_a", "test"): (16, 48, 48, 28, {}),
    ("semeval2016_cqa_b", "train"): (4, 24, 24, 9, {}),
    ("semeval2016_cqa_b", "train_part2"): (2, 12, 12, 5, {}),
    ("semeval2016_cqa_b", "dev"): (3, 18, 18, 9, {}),
    ("semeval2016_cqa_b", "test"): (3, 18, 18, 7, {}),
    ("cough", "user_queries"): (48, 48, 288, 48, {"judgement_unknown_query": 2}),
    ("cough", "faq_pairs"): (48, 48, 48, 48, {}),
}


@pytest.fixture(scope="module")
def sample_root():
    root = samples_root()
    assert (root / SAMPLE_MARKER).is_file()
    return root


@pytest.mark.parametrize(("name", "split"), list(SAMPLE_COUNTS))
def test_samples_load_through_the_real_loaders(sample_root, name, split):
    record = load(name, split, sample_root)
    queries, corpus, judged, positive, dropped = SAMPLE_COUNTS[(name, split)]
    assert record.sample and "[sample data]" in record.describe()
    assert (len(record), len(record.corpus), judgements(record), relevant(record, 1)) == (
        queries, corpus, judged, positive)
    assert record.dropped == dropped


def test_committed_samples_are_what_the_generator_writes(tmp_path):
    """Regenerated twice into tmp: byte-identical to each other and to the committed copy."""
    first = write_retrieval_samples(tmp_path / "a")
    second = write_retrieval_samples(tmp_path / "b")
    assert [p.relative_to(tmp_path / "b") for p in second] == [p.relative_to(tmp_path / "a") for p in first]
    for path in first:
        rel = path.relative_to(tmp_path / "a")
        assert path.read_bytes() == (tmp_path / "b" / rel).read_bytes()
        committed = samples_root() / rel
        assert committed.is_file() and committed.read_bytes() == path.read_bytes(), (
            f"{rel}: regenerate with write_retrieval_samples(samples_root())")
    assert sum(p.stat().st_size for p in first) < 150_000


def test_samples_carry_a_ranking_signal(sample_root):
    """Relevant candidates share words with their question: a word-overlap ranker beats
    the file order on the sample CQA sets (so smoke-profile numbers are not noise)."""

    def words(text):
        return {w.strip(".,;:?!").lower() for w in text.split()}

    def overlap(record, qid, cands):
        return sorted(cands, key=lambda d: -len(words(record.queries[qid]) & words(record.corpus[d])))

    for name in ("semeval2016_cqa_a", "semeval2016_cqa_b"):
        record = load(name, "test", sample_root)
        assert official_map(record, overlap) > official_map(record) + 0.05


# ---------------------------------------------------------------------------------------
# Formats not in ../shared/data: small files written here


def entry_files(tmp_path, name, split):
    entry = info(name)
    return entry, [tmp_path / f for f in entry.splits[split].files]


def write(path, text, encoding="utf-8"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding=encoding)
    return path


def antique_files(tmp_path, qrels="q1 U0 a1 4\nq1 U0 a2 2\nq2 U0 a3 3\nq2 U0 a1 1\n"):
    write(tmp_path / "antique-collection.txt",
          "a1\tFirst answer\twith a tab inside\na2\tSecond answer\na3\tThird answer\na4\tNever judged\n")
    write(tmp_path / "antique-test-queries.txt", "q1\tWhy is the sky blue?\nq2\tHow do birds fly?\nq3\tUnjudged?\n")
    write(tmp_path / "antique-test.qrel", qrels)
    return entry_files(tmp_path, "antique", "test")


def test_antique_graded_judged_candidates(tmp_path):
    entry, files = antique_files(tmp_path)
    record = retrieval.load_antique(entry, "test", files)
    assert record.qrels == {"q1": {"a1": 4, "a2": 2}, "q2": {"a3": 3, "a1": 1}}
    assert record.candidates == {"q1": ["a1", "a2"], "q2": ["a3", "a1"]}
    assert set(record.corpus) == {"a1", "a2", "a3"} and record.corpus["a1"] == "First answer\twith a tab inside"
    assert record.dropped == {"query_without_judgements": 1}
    assert relevant(record, registry_yaml("antique")["relevance_level"]) == 2  # grades 3 and 4
    full = retrieval.load_antique(entry, "test", files, candidates="collection")
    assert full.candidates is None and len(full.corpus) == 4


@pytest.mark.parametrize(("qrels", "line", "expected"), [
    ("q1 U0 a1 4\nq1 U0 a2 5\n", 2, "a relevance from 1 to 4"),
    ("q1 U0 a1 4\nq1 a2 2\n", 2, "exactly 4 fields"),
    ("q1 U0 a9 4\n", 1, "a document id present in the corpus"),
])
def test_antique_bad_qrels(tmp_path, qrels, line, expected):
    entry, files = antique_files(tmp_path, qrels)
    with pytest.raises(DataFormatError) as err:
        retrieval.load_antique(entry, "test", files)
    assert (err.value.path, err.value.line) == (str(files[2]), line) and expected in str(err.value)


def pfcc_files(tmp_path, n_pairs=803):
    claims = ['fact', *[f'"Claim number {i}, with ""quotes"""' for i in range(900)], "Claim number 5, copy"]
    write(tmp_path / "pfcc_s" / "verified-claims.tsv", "\n".join(claims) + "\n")
    rows = ["claim\tfact"]
    for i in range(n_pairs):
        rows.append(f"Tweet {i // 2}\t\"Claim number {i}, with \"\"quotes\"\"\"")
    write(tmp_path / "pfcc_s" / "tweet-veclaim-pairs.tsv", "\n".join(rows) + "\n")
    entry = info("pfcc_s")
    return entry, [tmp_path / "pfcc_s" / f for f in entry.splits["test"].files]


def test_pfcc_s_split_and_pairing(tmp_path):
    entry, files = pfcc_files(tmp_path)
    train = retrieval.load_pfcc_s(entry, "train", files)
    test = retrieval.load_pfcc_s(entry, "test", files)
    assert len(train) == 400 and judgements(train) == 800  # tweets paired with two claims each
    assert train.qrels["0"] == {"0": 1, "1": 1} and train.queries["0"] == "Tweet 0"
    assert list(test.queries) == ["800", "802"] and test.qrels["800"] == {"800": 1, "801": 1}
    assert test.corpus["1"] == 'Claim number 1, with "quotes"' and len(test.corpus) == 901


def test_pfcc_s_unknown_claim_is_an_error(tmp_path):
    entry, files = pfcc_files(tmp_path)
    with open(files[1], "a", encoding="utf-8") as fh:
        fh.write("Tweet x\tA claim nobody verified\n")
    with pytest.raises(DataFormatError, match=r"tweet-veclaim-pairs\.tsv:805"):
        retrieval.load_pfcc_s(entry, "test", files)


FAQIR_XML = """<?xml version="1.0"?>
<IRSet>
  <queries>
    <Query><QueryGroupID>7</QueryGroupID><QueryID>101</QueryID><QueryString>fix a leaking tap</QueryString></Query>
    <Query><QueryGroupID>7</QueryGroupID><QueryID>102</QueryID><QueryString>tap drips at night</QueryString></Query>
    <Query><QueryGroupID>8</QueryGroupID><QueryID>103</QueryID><QueryString>paint a wall</QueryString></Query>
  </queries>
  <KB><Pairs>
    <qaPair><Id>1</Id><Question>How to fix a tap?</Question><Answer>Change the washer.</Answer></qaPair>
    <qaPair><Id>2</Id><Question>Why does my tap drip?</Question><Answer>Change the washer.</Answer></qaPair>
    <qaPair><Id>3</Id><Question>How to paint?</Question><Answer>Use a roller.</Answer></qaPair>
  </Pairs></KB>
  <relCandidates>
    <IRCandidateList><grpId>7</grpId><candidates>
      <IRCandidate><Id>1</Id><Annotations>
        <Annotation><Val>2</Val></Annotation><Annotation><Val>1</Val></Annotation></Annotations></IRCandidate>
      <IRCandidate><Id>3</Id><Annotations><Annotation><Val>4</Val></Annotation></Annotations></IRCandidate>
    </candidates></IRCandidateList>
  </relCandidates>
</IRSet>
"""


def test_faqir_templates_grades_and_pairs(tmp_path):
    entry, files = entry_files(tmp_path, "faqir", "user_queries")
    write(files[0], FAQIR_XML)
    record = faq.load_faqir(entry, "user_queries", files)
    # both queries of template 7 inherit its judgements; the best annotation wins (1 = relevant -> 3)
    assert record.qrels == {"101": {"1": 3, "3": 0}, "102": {"1": 3, "3": 0}}
    assert record.dropped == {"query_without_judgements": 1}
    assert record.corpus["1"] == "How to fix a tap? Change the washer."
    answers = faq.load_faqir(entry, "user_queries", files, document="answer")
    assert answers.corpus["3"] == "Use a roller."
    with pytest.raises(ConfigError):
        faq.load_faqir(entry, "faq_pairs", files, document="answer")
    pairs = faq.load_faqir(entry, "faq_pairs", files)
    assert pairs.qrels == {"1": {"1": 1, "2": 1}, "2": {"1": 1, "2": 1}, "3": {"3": 1}}  # same answer text


def test_faqir_unknown_annotation_value(tmp_path):
    entry, files = entry_files(tmp_path, "faqir", "user_queries")
    write(files[0], FAQIR_XML.replace("<Val>4</Val>", "<Val>9</Val>"))
    with pytest.raises(DataFormatError, match=r"FAQIRv1.0.xml:17: expected an annotation <Val>"):
        faq.load_faqir(entry, "user_queries", files)
