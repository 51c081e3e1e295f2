"""Malformed data files: a one-line DataFormatError naming the file, the line and what was
expected, never a parser traceback. Each case writes a small broken file into a data root
in tmp, in the real layout, and loads it through the registry like real data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.data import load
from sentcl.errors import DataFormatError

STS_OK = "3.800\tA man is playing a guitar.\tA man plays a guitar.\n"
STSB_OK = "main-captions\tMSRvid\t2012test\t0001\t2.500\tA girl is styling her hair.\tA girl is brushing her hair.\n"
SICK_HEAD = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
SICK_OK = "1\tA dog runs.\tAn animal runs.\t4.5\tENTAILMENT\n"
SNLI_HEAD = "premise\thypothesis\tlabel\n"


def write(root: Path, rel: str, content: str | bytes) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def sts12_root(root: Path, broken: str) -> None:
    """STS12 in the real layout: four good subset files and a broken MSRpar file."""
    for subset in ("MSRvid", "SMTeuroparl", "OnWN", "SMTnews"):
        write(root, f"sts/2012/{subset}.test.tsv", STS_OK)
    write(root, "sts/2012/MSRpar.test.tsv", broken)


def load_error(name: str, split: str, root: Path) -> DataFormatError:
    with pytest.raises(DataFormatError) as info:
        load(name, split, root)
    message = str(info.value)
    assert "\n" not in message, "the error must be one line"
    return info.value


CASES = {
    # name: (dataset, split, file, content, line, words the message must contain)
    "missing column": (
        "sts12",
        "test",
        "sts/2012/MSRpar.test.tsv",
        STS_OK * 2 + "4.0\tonly one sentence\n",
        3,
        ["at least 3 tab-separated fields"],
    ),
    "extra column": (
        "sts12",
        "test",
        "sts/2012/MSRpar.test.tsv",
        STS_OK + "4.0\ta\tb\tc\n",
        2,
        ["exactly 3 tab-separated fields"],
    ),
    "non-numeric score": (
        "stsbenchmark",
        "test",
        "stsbenchmark/sts-test.csv",
        STSB_OK + STSB_OK.replace("2.500", "two"),
        2,
        ["numeric gold score in column 5", "'two'"],
    ),
    "score out of range": (
        "sts12",
        "test",
        "sts/2012/MSRpar.test.tsv",
        STS_OK + STS_OK.replace("3.800", "38.0"),
        2,
        ["between 0 and 5"],
    ),
    "bad encoding": (
        "sickr",
        "test",
        "sick2014/SICK_test_annotated.txt",
        (SICK_HEAD + SICK_OK).encode() + "2\tUn caf\xe9.\tA coffee.\t3.0\tNEUTRAL\n".encode("latin-1"),
        3,
        ["utf-8 text", "column 9"],
    ),
    "wrong header": (
        "sicke",
        "test",
        "sick2014/SICK_test_annotated.txt",
        SICK_HEAD.replace("sentence_B", "sentenceB") + SICK_OK,
        1,
        ["header columns"],
    ),
    "unknown label": (
        "sicke",
        "test",
        "sick2014/SICK_test_annotated.txt",
        SICK_HEAD + SICK_OK.replace("ENTAILMENT", "ENTAILS"),
        2,
        ["entailment_judgment"],
    ),
    "empty sentence": (
        "snli",
        "dev",
        "snli/snli_1.0_dev.tokenized.tsv",
        SNLI_HEAD + "A dog runs .\tAn animal runs .\tentailment\nA cat sleeps .\t \tneutral\n",
        3,
        ["non-empty sentence", "hypothesis"],
    ),
    "truncated row": (
        "mrpc",
        "test",
        "mrpc/msr-para-test.tsv",
        "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\r\n1\t1\t2\tA b.\tA c.\r\n0\t3\t4\tThe fi",
        3,
        ["at least 5 tab-separated fields"],
    ),
    "truncated quote": (
        "simclue",
        "test",
        "simclue/test_public.json",
        json.dumps({"sentence1": "甲", "sentence2": "乙", "label": "1"}, ensure_ascii=False)
        + '\n{"sentence1": "丙", "sentence2": "丁',
        2,
        ["a complete JSON object", "Unterminated string"],
    ),
    "missing field": (
        "simclue",
        "test",
        "simclue/test_public.json",
        json.dumps({"sentence1": "甲", "label": "1"}) + "\n",
        1,
        ["a field 'sentence2'"],
    ),
    "wrong separator count": (
        "cnsd_stsb",
        "test",
        "cnsd_stsb/cnsd-sts-test.txt",
        "2012test-0001||一个女孩。||一个孩子。||3\n2012test-0002||一个女孩。||3\n",
        2,
        ["4 fields separated by '||'"],
    ),
    "fractional cnsd score": (
        "cnsd_stsb",
        "test",
        "cnsd_stsb/cnsd-sts-test.txt",
        "2012test-0001||一个女孩。||一个孩子。||3.5\n",
        1,
        ["integer score"],
    ),
    "bad nli label": (
        "snli",
        "test",
        "snli/snli_1.0_test.tokenized.tsv",
        SNLI_HEAD + "A dog runs .\tAn animal runs .\tentails\n",
        2,
        ["gold label"],
    ),
    "blank sentence line": (
        "wiki1m",
        "prefix",
        "simcse_wiki1m/wiki1m_for_simcse.first_lines.txt",
        "One sentence.\n\nAnother.\n",
        2,
        ["non-empty sentence"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_malformed_file_gives_one_line_error_with_file_and_line(tmp_path, case):
    dataset, split, rel, content, line, words = CASES[case]
    if dataset == "sts12":
        sts12_root(tmp_path, content)
    else:
        write(tmp_path, rel, content)
    error = load_error(dataset, split, tmp_path)
    assert f"{rel}:{line}: expected " in str(error)
    assert (Path(error.path).relative_to(tmp_path).as_posix(), error.line) == (rel, line)
    for word in words:
        assert word in str(error)


def test_nli_jsonl_without_gold_label_is_dropped_and_counted(tmp_path):
    rows = [
        {"gold_label": "entailment", "sentence1": "A b.", "sentence2": "A c."},
        {"gold_label": "-", "sentence1": "A d.", "sentence2": "A e."},
        {"gold_label": "contradiction", "sentence1": "A f.", "sentence2": "A g."},
    ]
    write(tmp_path, "snli/snli_1.0_train.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    record = load("snli", "train", tmp_path)
    assert (len(record), record.dropped, record.label_counts()["contradiction"]) == (2, {"no_gold_label": 1}, 1)


def test_check_reports_a_malformed_file_as_one_line_and_fails(tmp_path, capsys):
    write(tmp_path, "stsbenchmark/sts-test.csv", STSB_OK + STSB_OK.replace("2.500", "n/a"))
    status = main(["data", "check", "--data-dir", str(tmp_path), "stsbenchmark"])
    out = capsys.readouterr().out
    assert status == 1
    [line] = [ln for ln in out.splitlines() if ln.startswith("stsbenchmark  test")]
    assert "ERROR: " in line and "sts-test.csv:2: expected a numeric gold score in column 5, found 'n/a'" in line
    assert "Traceback" not in out
