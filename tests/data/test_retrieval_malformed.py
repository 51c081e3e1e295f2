"""Malformed retrieval files: every problem is a one-line DataFormatError naming the file
and the line (truncated or broken XML, bad encoding, missing columns, wrong qrels lines,
ids that do not match), or a counted drop where the policy says so.

The files are copies of the project's own samples (always available), damaged here.
"""

from __future__ import annotations

import re
import shutil

import pytest

from sentcl.data import load
from sentcl.data.loaders import cqa, faq, retrieval  # noqa: F401  (registers the loaders)
from sentcl.data.registry import info
from sentcl.data.samples.retrieval import write_retrieval_samples
from sentcl.errors import ConfigError, DataFormatError

CQA16 = "semeval2016_task3_cqa_ql"
DEV_XML = f"{CQA16}/dev/SemEval2016-Task3-CQA-QL-dev.xml"
TEST_A_XML = f"{CQA16}/test/SemEval2016-Task3-CQA-QL-test-subtaskA-input.xml"
TEST_A_GOLD = f"{CQA16}/test/SemEval2016-Task3-CQA-QL-test-subtaskA.xml.subtaskA.relevancy"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("pristine")
    write_retrieval_samples(root)
    return root


@pytest.fixture
def root(pristine, tmp_path):
    """A fresh, writable copy of the sample data root for each test to damage."""
    copy = tmp_path / "root"
    shutil.copytree(pristine, copy)
    return copy


def lines_of(path):
    return path.read_text(encoding="utf-8").split("\n")


def set_line(path, number, text):
    """Replace 1-based line ``number`` of ``path``."""
    lines = lines_of(path)
    lines[number - 1] = text
    path.write_text("\n".join(lines), encoding="utf-8")


def line_with(path, pattern, nth=0):
    """1-based number of the nth line matching ``pattern``."""
    return [i for i, line in enumerate(lines_of(path), start=1) if re.search(pattern, line)][nth]


def raises_at(path, line, call, *args, **kwargs):
    with pytest.raises(DataFormatError) as err:
        call(*args, **kwargs)
    assert err.value.path == str(path), str(err.value)
    assert err.value.line == line, str(err.value)
    assert "\n" not in str(err.value)
    return err.value


# ---------------------------------------------------------------------------------------
# XML (SemEval CQA)


def test_truncated_xml_names_the_last_line(root):
    path = root / DEV_XML
    data = path.read_bytes()
    path.write_bytes(data[: len(data) * 2 // 3])
    last = path.read_bytes().count(b"\n") + 1
    err = raises_at(path, last, load, "semeval2016_cqa_b", "dev", root)
    assert "well-formed UTF-8 XML" in str(err)


def test_mismatched_tag_names_its_line(root):
    path = root / DEV_XML
    n = line_with(path, "<RelCText>", 5)
    set_line(path, n, "\t\t\t\t<RelCText>oops</RelComment>")
    err = raises_at(path, n, load, "semeval2016_cqa_b", "dev", root)
    assert "mismatched tag" in str(err)


def test_bad_encoding_in_xml_names_its_line(root):
    path = root / DEV_XML
    n = line_with(path, "<RelCText>", 2)
    lines = path.read_bytes().split(b"\n")
    lines[n - 1] = lines[n - 1].replace(b"<RelCText>", b"<RelCText>\xff\xfe", 1)
    path.write_bytes(b"\n".join(lines))
    raises_at(path, n, load, "semeval2016_cqa_b", "dev", root)


def test_unknown_label_missing_attribute_and_empty_comment(root):
    path = root / DEV_XML
    pristine = path.read_text(encoding="utf-8")
    n = line_with(path, 'RELC_RELEVANCE2RELQ="Bad"')
    set_line(path, n, lines_of(path)[n - 1].replace('RELC_RELEVANCE2RELQ="Bad"', 'RELC_RELEVANCE2RELQ="Awful"'))
    err = raises_at(path, n, cqa.load_cqa_subtask_a, info("semeval2016_cqa_a"), "dev", [path])
    assert "'Awful'" in str(err)

    path.write_text(pristine, encoding="utf-8")
    n = line_with(path, "<RelQuestion ", 3)
    set_line(path, n, re.sub(r' RELQ_ID="[^"]*"', "", lines_of(path)[n - 1]))
    err = raises_at(path, n, load, "semeval2016_cqa_b", "dev", root)
    assert "attribute RELQ_ID on <RelQuestion>" in str(err)

    path.write_text(pristine, encoding="utf-8")
    n = line_with(path, "<RelCText>", 4)
    set_line(path, n, "\t\t\t\t<RelCText>   </RelCText>")
    comment_line = n - 1  # the <RelComment> start tag
    err = raises_at(path, comment_line, load, "semeval2016_cqa_b", "dev", root)
    assert "non-empty <RelCText>" in str(err)


def test_subtask_b_needs_original_questions(root):
    path = root / f"{CQA16}/dev/SemEval2016-Task3-CQA-QL-dev-subtaskA.xml"
    with pytest.raises(DataFormatError, match="subtask B needs a full file"):
        cqa.load_cqa_subtask_b(info("semeval2016_cqa_b"), "dev", [path])


def test_gold_file_problems_name_their_line(root):
    gold = root / TEST_A_GOLD
    xml = root / TEST_A_XML
    pristine = gold.read_text(encoding="utf-8")

    set_line(gold, 3, "Q10_R1\tQ10_R1_C3\t3\t0.33")  # a field missing
    err = raises_at(gold, 3, load, "semeval2016_cqa_a", "test", root)
    assert "5 tab-separated fields" in str(err)

    gold.write_text(pristine, encoding="utf-8")
    fields = lines_of(gold)[1].split("\t")
    set_line(gold, 2, "\t".join([*fields[:4], "maybe"]))
    raises_at(gold, 2, load, "semeval2016_cqa_a", "test", root)

    gold.write_text(pristine, encoding="utf-8")
    set_line(gold, 2, "\t".join(["Q99_R1", "Q99_R1_C1", *fields[2:]]))  # an id the XML does not have
    err = raises_at(gold, 2, load, "semeval2016_cqa_a", "test", root)
    assert "Q99_R1 Q99_R1_C1" in str(err)

    gold.write_text(pristine.split("\n", 1)[1], encoding="utf-8")  # the first candidate has no gold line
    missing = pristine.split("\t", 2)[1]
    err = raises_at(xml, line_with(xml, f'RELC_ID="{missing}"'), load, "semeval2016_cqa_a", "test", root)
    assert missing in str(err)


def test_gold_disagreeing_with_xml_labels(root):
    dev = root / f"{CQA16}/dev"
    xml = dev / "SemEval2016-Task3-CQA-QL-dev.xml"
    records = cqa.read_cqa_xml(xml)[0]
    lines = [f"{o.id}\t{t.question.id}\t{t.question.line}\t0.5\t{'true' if t.question.label else 'false'}"
             for o in records for t in o.threads]
    gold = dev / "dev.subtaskB.relevancy"
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    entry = info("semeval2016_cqa_b")
    assert cqa.load_cqa_subtask_b(entry, "dev", [xml, gold]).qrels == load("semeval2016_cqa_b", "dev", root).qrels
    flipped = lines[4].rsplit("\t", 1)
    lines[4] = flipped[0] + "\t" + ("false" if flipped[1] == "true" else "true")
    gold.write_text("\n".join(lines) + "\n", encoding="utf-8")
    raises_at(gold, 5, cqa.load_cqa_subtask_b, entry, "dev", [xml, gold])


def test_registry_split_needs_one_xml(root):
    entry = info("semeval2016_cqa_a")
    gold = root / TEST_A_GOLD
    with pytest.raises(ConfigError):
        cqa.load_cqa_subtask_a(entry, "test", [gold])


# ---------------------------------------------------------------------------------------
# Delimited files (CLEF layout written here; COUGH from the samples)


def clef_root(tmp_path):
    folder = tmp_path / "clef2020_checkthat_task2"
    (folder / "test").mkdir(parents=True)
    (folder / "verified_claims.docs.tsv").write_text(
        '\tvclaim\ttitle\n0\tA claim.\tTitle 0\n1\t"A claim\nover two lines."\tTitle 1\n2\tThird claim.\tTitle 2\n',
        encoding="utf-8")
    (folder / "test" / "tweets.queries.tsv").write_text(
        '\ttweet_content\n10\tFirst tweet\n11\t"Second ""quoted"" tweet"\n12\tThird tweet\n', encoding="utf-8")
    (folder / "test" / "tweet-vclaim-pairs.qrels").write_text("10\t0\t1\t1\n11\t0\t2\t1\n11\t0\t0\t1\n",
                                                              encoding="utf-8")
    return tmp_path, folder


def test_clef_layout_loads(tmp_path):
    data, _ = clef_root(tmp_path)
    record = load("clef2020_checkthat_task2", "test", data)
    assert record.corpus["1"] == "A claim\nover two lines."
    assert record.queries == {"10": "First tweet", "11": 'Second "quoted" tweet'}
    assert record.qrels == {"10": {"1": 1}, "11": {"2": 1, "0": 1}}
    assert record.dropped == {"query_without_judgements": 1}


def test_clef_missing_column(tmp_path):
    data, folder = clef_root(tmp_path)
    path = folder / "verified_claims.docs.tsv"
    path.write_text(path.read_text(encoding="utf-8").replace("\tvclaim\ttitle", "\tvclaim\theadline"), encoding="utf-8")
    err = raises_at(path, 1, load, "clef2020_checkthat_task2", "test", data)
    assert "'title'" in str(err)


def test_clef_bad_encoding(tmp_path):
    data, folder = clef_root(tmp_path)
    path = folder / "test" / "tweets.queries.tsv"
    path.write_bytes(path.read_bytes().replace(b"Third tweet", b"Third \xe9 tweet"))
    raises_at(path, 4, load, "clef2020_checkthat_task2", "test", data)


def test_clef_qrels_wrong_field_count_and_relevance(tmp_path):
    data, folder = clef_root(tmp_path)
    path = folder / "test" / "tweet-vclaim-pairs.qrels"
    path.write_text("10\t0\t1\t1\n11\t0\t2\n", encoding="utf-8")
    err = raises_at(path, 2, load, "clef2020_checkthat_task2", "test", data)
    assert "exactly 4 fields" in str(err)
    path.write_text("10\t0\t1\tyes\n", encoding="utf-8")
    raises_at(path, 1, load, "clef2020_checkthat_task2", "test", data)


def test_qrels_unknown_ids_policy(tmp_path):
    """An unknown query id is dropped and counted; an unknown document id is an error."""
    data, folder = clef_root(tmp_path)
    path = folder / "test" / "tweet-vclaim-pairs.qrels"
    path.write_text("10\t0\t1\t1\n99\t0\t1\t1\n11\t0\t2\t1\n10\t0\t1\t1\n", encoding="utf-8")
    record = load("clef2020_checkthat_task2", "test", data)
    assert record.dropped == {"judgement_unknown_query": 1, "duplicate_judgement": 1, "query_without_judgements": 1}
    path.write_text("10\t0\t1\t1\n11\t0\t77\t1\n", encoding="utf-8")
    err = raises_at(path, 2, load, "clef2020_checkthat_task2", "test", data)
    assert "'77'" in str(err)


def test_clef_duplicate_claim_id_and_empty_tweet(tmp_path):
    data, folder = clef_root(tmp_path)
    claims = folder / "verified_claims.docs.tsv"
    claims.write_text(claims.read_text(encoding="utf-8") + "2\tAgain.\tTitle\n", encoding="utf-8")
    raises_at(claims, 6, load, "clef2020_checkthat_task2", "test", data)
    data, folder = clef_root(tmp_path / "again")
    tweets = folder / "test" / "tweets.queries.tsv"
    tweets.write_text('\ttweet_content\n10\t  \n', encoding="utf-8")
    raises_at(tweets, 2, load, "clef2020_checkthat_task2", "test", data)


def test_cough_problems(root):
    bank = root / "cough" / "FAQ_Bank_eval.csv"
    judged = root / "cough" / "Annotated_Relevance_Set.csv"
    pristine_bank, pristine_judged = bank.read_text(encoding="utf-8"), judged.read_text(encoding="utf-8")

    bank.write_text(pristine_bank.replace("index,question,answer", "index,question,reply", 1), encoding="utf-8")
    raises_at(bank, 1, load, "cough", "user_queries", root)

    bank.write_text(pristine_bank, encoding="utf-8")
    set_line(judged, 3, lines_of(judged)[2].replace("negative", "unsure"))
    raises_at(judged, 3, load, "cough", "user_queries", root)

    judged.write_text(pristine_judged, encoding="utf-8")
    set_line(judged, 4, "2,a query,4711,negative")  # a FAQ index the bank does not have
    raises_at(judged, 4, load, "cough", "user_queries", root)

    judged.write_text(pristine_judged, encoding="utf-8")
    set_line(bank, 2, '0,"",,sample,,en')  # an item without question and answer: dropped with its judgements
    record = load("cough", "user_queries", root)
    assert "0" not in record.corpus
    queries = {row.split(",", 1)[0] for row in lines_of(root / "cough" / "User_Query_Bank.csv")}
    on_item_0 = sum(1 for row in lines_of(judged) if row.split(",")[2:3] == ["0"] and row.split(",")[0] in queries)
    assert on_item_0 > 0
    assert record.dropped == {"faq_item_without_text": 1, "judgement_dropped_document": on_item_0,
                              "judgement_unknown_query": 2}
    pairs = load("cough", "faq_pairs", root)
    assert pairs.dropped == {"faq_item_without_question": 1, "faq_item_without_answer": 1}
