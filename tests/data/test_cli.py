"""``sentcl data list|check``: what a data root holds, with the expected counts, and what is missing."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.data import registry, samples_root
from sentcl.data.check import MISSING, OK, SAMPLE, WRONG_COUNT, check


def table_rows(out: str) -> dict[tuple[str, str], list[str]]:
    """(dataset, split) -> the other cells of the check table."""
    rows = {}
    for line in out.splitlines():
        cells = line.split()
        if len(cells) >= 5 and cells[0] in registry():
            rows[cells[0], cells[1]] = cells[2:]
    return rows


def test_list_names_every_dataset_with_its_counts(capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    for name in registry():
        assert any(line.startswith(name + " ") for line in out.splitlines()), name
    assert "test 3108" in out and "train 5749, dev 1500, test 1379" in out


@pytest.mark.slow
@pytest.mark.realdata
def test_check_on_the_real_data_root(shared_data, capsys):
    status = main(["data", "check", "--data-dir", str(shared_data)])
    out = capsys.readouterr().out
    assert status == 0, out
    rows = table_rows(out)
    assert rows["sts12", "test"] == ["3108", "3108", "-", OK]
    assert rows["sts15", "test"] == ["3000", "3000", "unscored", "5500", OK]
    assert rows["sts16", "test"] == ["1186", "1186", "unscored", "7997", OK]
    assert rows["stsbenchmark", "test"] == ["1379", "1379", "-", OK]
    assert rows["sickr", "test"] == ["4927", "4927", "-", OK]
    assert rows["snli", "dev"] == ["9842", "9842", "-", OK]
    assert rows["mrpc", "test"] == ["1725", "1725", "-", OK]
    assert rows["wiki1m", "prefix"] == ["11914", "11914", "-", OK]
    assert rows["snli", "train"] == ["549367", "-", "-", MISSING]
    lines = {line.split(": ")[0]: line.split(": ", 1)[1] for line in out.splitlines() if line.startswith("missing ")}
    assert {"allnli", "multinli", "qqp"} <= set(lines["missing datasets"].split(", "))
    assert {"snli (train)", "wiki1m (train)"} <= set(lines["missing splits"].split(", "))
    # every registered split appears once
    assert set(rows) == {(n, s) for n, e in registry().items() for s in e.splits}


@pytest.mark.realdata
def test_check_finds_a_wrong_count(shared_data, tmp_path):
    """A copy of STS13 with one line removed: WRONG COUNT, and the check fails."""
    shutil.copytree(shared_data / "sts/2013", tmp_path / "sts/2013")
    path = tmp_path / "sts/2013/FNWN.test.tsv"
    path.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[1:]), encoding="utf-8")
    [result] = check(tmp_path, ["sts13"])
    assert (result.status, result.expected, result.found, result.failed) == (WRONG_COUNT, 1500, 1499, True)
    assert main(["data", "check", "--data-dir", str(tmp_path), "sts13"]) == 1


@pytest.mark.realdata
def test_check_verifies_retrieval_sizes(shared_data, tmp_path, monkeypatch):
    """A retrieval split is checked on its corpus and judgement counts too, not only queries."""
    import dataclasses

    from sentcl.data import info, registry

    entry = info("semeval2016_cqa_b")
    dev = entry.splits["dev"]
    assert dev.expected_sizes() == {"corpus": 500, "judgements": 500, "relevant": 214}
    [ok] = [r for r in check(shared_data, ["semeval2016_cqa_b"]) if r.split == "dev"]
    assert ok.status == "ok"
    wrong = dataclasses.replace(entry, splits={**entry.splits, "dev": dataclasses.replace(dev, relevant=215)})
    monkeypatch.setitem(registry(), "semeval2016_cqa_b", wrong)
    [bad] = [r for r in check(shared_data, ["semeval2016_cqa_b"]) if r.split == "dev"]
    assert bad.status == WRONG_COUNT and "'relevant': 214" in bad.message


def test_registry_rejects_unknown_keys(tmp_path):
    """A misspelt key in a registry entry is an error, not silently ignored."""
    from sentcl.data.registry import _parse_entry
    from sentcl.errors import ConfigError

    path = tmp_path / "x.yaml"
    path.write_text(
        "name: x\ntitle: X\nkind: sentences\nfolder: x\nsource: s\nlicence: l\n"
        "splits: {train: {files: [a], count: 1, corpsu: 3}}\n"
    )
    with pytest.raises(ConfigError, match="unknown keys \\['corpsu'\\]"):
        _parse_entry(path)


def test_check_on_the_sample_root_loads_everything():
    results = [r for r in check(samples_root()) if r.dataset in {"sts12", "snli", "allnli", "wiki1m"}]
    assert {r.status for r in results} == {SAMPLE}
    assert not any(r.failed for r in results)


def test_check_unknown_dataset_is_a_one_line_error(tmp_path, capsys):
    assert main(["data", "check", "--data-dir", str(tmp_path), "stsb"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sentcl: error: unknown dataset 'stsb'; registered:") and err.count("\n") == 1


@pytest.mark.slow
def test_installed_command_runs(tmp_path):
    """The `sentcl` console script of the environment: an empty data root has nothing
    wrong (exit 0) and names every dataset as missing."""
    exe = Path(sys.executable).with_name("sentcl")
    if not exe.exists():
        pytest.skip(f"{exe} not installed")
    done = subprocess.run(
        [str(exe), "data", "check", "--data-dir", str(tmp_path), "sts12", "sickr"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "missing datasets: sts12, sickr" in done.stdout
