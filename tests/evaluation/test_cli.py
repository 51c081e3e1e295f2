"""``sentcl evaluate ...``: the tiny model on sample data, and all-MiniLM-L6-v2 on the real
STS data against the scores the community published for it (MTEB)."""

from __future__ import annotations

import argparse
import errno
import json
import os
from pathlib import Path

import numpy as np
import pytest

import sentcl.evaluation.cli
from sentcl.cli import main
from sentcl.data import load, samples_root
from sentcl.errors import OutputError
from sentcl.evaluation.sts import evaluate_sts
from sentcl.evaluation.tasks import STS_AVERAGE, TASKS

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

# all-MiniLM-L6-v2's model card (MTEB results), cosine Spearman x100 on the test sets.
# MTEB's SICK-R task scores all 9927 SICK pairs (our split `sickr/all`), not the 4927 test pairs.
MTEB_MINILM = {
    "STS12": 72.369,
    "STS13": 80.603,
    "STS14": 75.589,
    "STS15": 85.390,
    "STS16": 78.989,
    "STSb": 82.032,
    "SICK-R": 77.582,
}


def test_sts_command_on_sample_data(tmp_path, capsys):
    out, details = tmp_path / "sts.json", tmp_path / "details.json"
    status = main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()),
                   "--json", str(out), "--details", str(details)])
    assert status == 0
    scores = json.loads(out.read_text())
    assert list(scores) == [*STS_AVERAGE, "avg"]
    assert all(isinstance(v, float) and -100 <= v <= 100 for v in scores.values())
    full = json.loads(details.read_text())
    assert full["scores"] == scores and full["setting"] == "all"
    assert full["details"]["STS16"]["subsets"]  # per-subset correlations are kept in the details
    printed = capsys.readouterr().out
    assert "STSb" in printed and "sample data" in printed


@pytest.mark.slow
def test_sts_command_task_subset_and_errors(tmp_path, capsys):
    out = tmp_path / "two.json"
    assert main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()),
                 "--tasks", "STS13", "sickr", "--json", str(out)]) == 0  # any of the papers' spellings
    assert list(json.loads(out.read_text())) == ["STS13", "SICK-R", "avg"]
    # --sick-split all scores every SICK pair, as MTEB does
    details = tmp_path / "sick-all.json"
    assert main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()), "--tasks", "SICK-R",
                 "--sick-split", "all", "--json", str(out), "--details", str(details)]) == 0
    full = json.loads(details.read_text())
    assert full["sick_split"] == "all"
    assert full["details"]["SICK-R"]["n"] == len(load("sickr", "all", samples_root())) > len(load("sickr", "test", samples_root()))
    # a missing data root is a one-line error, and no JSON is written
    missing = tmp_path / "none.json"
    assert main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(tmp_path), "--json", str(missing)]) == 2
    assert "sentcl: error:" in capsys.readouterr().err and not missing.exists()


def test_sts_command_accepts_the_papers_spellings_and_refuses_other_tasks(tmp_path, capsys):
    out = tmp_path / "sts.json"
    assert main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()), "--tasks", "STS-B", "sickr",
                 "--setting", "wmean", "--json", str(out)]) == 0
    scores = json.loads(out.read_text())
    assert list(scores) == ["STSb", "SICK-R", "avg"] and scores["avg"] == pytest.approx((scores["STSb"] + scores["SICK-R"]) / 2)
    for name, why in (("MRPC", "not an STS task with scored pairs"), ("SimCLUE", "not an STS task with scored pairs"),
                      ("CQA-A", "not an STS task with scored pairs"), ("STS17", "unknown evaluation task")):
        with pytest.raises(SystemExit) as exc:
            main(["evaluate", "sts", "--model", "tiny", "--tasks", name, "--json", str(out)])
        assert exc.value.code == 2 and why in capsys.readouterr().err


@pytest.mark.slow
def test_sts_command_is_the_one_scoring_path_in_every_setting(tmp_path):
    """The command's numbers are :func:`score`'s: each task's pooled Spearman in the "all" setting,
    the chosen setting's for STS12-16 and the pooled one for STS-B and SICK-R whatever the setting."""
    from sentcl.embeddings import embedder
    from sentcl.evaluation.scoring import average, score
    from sentcl.evaluation.tasks import load_task
    from sentcl.models import load_encoder

    names = ["STS12", "STS16", "STSb"]
    scored = score(embedder(load_encoder("tiny"), precision="fp32"), {n: load_task(n, samples_root()) for n in names})
    for setting in ("all", "wmean"):
        out = tmp_path / f"{setting}.json"
        assert main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()), "--tasks", *names,
                     "--setting", setting, "--json", str(out)]) == 0
        scores = json.loads(out.read_text())
        expected = {n: scored[n].result["spearman"]["all" if n == "STSb" else setting] for n in names}
        assert scores == pytest.approx(expected | {"avg": average({n: {"Spearman": v} for n, v in expected.items()})},
                                       abs=1e-12)
    assert scores["STS16"] != pytest.approx(scored["STS16"].values["Spearman"])  # wmean is not the pooled value


@pytest.mark.parametrize(("dataset", "split"), [("semeval2016_cqa_a", "test"), ("cough", "user_queries")])
def test_retrieval_command_on_sample_data(tmp_path, capsys, dataset, split):
    out, details = tmp_path / "r.json", tmp_path / "d.json"
    status = main(["evaluate", "retrieval", "--model", "tiny", "--dataset", dataset, "--split", split,
                   "--data-dir", str(samples_root()), "--metrics", "map", "mrr", "acc@1", "ndcg@10",
                   "--json", str(out), "--details", str(details)])
    assert status == 0
    scores = json.loads(out.read_text())
    assert list(scores) == ["map", "mrr", "acc@1", "ndcg@10"]
    assert all(0.0 <= v <= 1.0 for v in scores.values())
    full = json.loads(details.read_text())
    assert full["mode"] == ("candidates" if dataset.startswith("semeval") else "corpus")
    assert full["sample"] is True and full["n_queries"] > 0
    assert "[sample data]" in capsys.readouterr().out


@pytest.mark.slow
def test_tasks_command_scores_any_tasks_in_the_papers_units(tmp_path, capsys):
    out, details = tmp_path / "tasks.json", tmp_path / "details.json"
    names = ["STS12", "STS-B", "sickr", "SimCLUE", "CQA-A-2016", "MRPC", "COUGH"]
    assert main(["evaluate", "tasks", "--model", "tiny", "--data-dir", str(samples_root()), "--tasks", *names,
                 "--max-pairs", "30", "--json", str(out), "--details", str(details)]) == 0
    scores = json.loads(out.read_text())
    assert list(scores) == ["STS12", "STSb", "SICK-R", "SimCLUE", "CQA-A-2016", "MRPC", "COUGH", "Average"]
    for name in scores:
        if name != "Average":
            assert list(scores[name]) == [m.label for m in TASKS[name].metrics]
    assert 0 <= scores["CQA-A-2016"]["MAP"] <= 1 and 1 < scores["MRPC"]["F1"] <= 100  # fractions, F1 x100
    sts = [scores[n]["Spearman"] for n in scores if n in STS_AVERAGE]
    assert len(sts) == 3 and scores["Average"] == {"Spearman": pytest.approx(np.mean(sts))}
    full = json.loads(details.read_text())
    assert full["scores"] == scores and full["max_pairs"] == 30
    assert full["results"]["CQA-A-2016"]["protocol"] == "semeval" and full["results"]["SICK-R"]["n"] == 30
    assert "sample data" in capsys.readouterr().out


def test_an_unknown_task_is_a_usage_error_listing_the_tasks(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["evaluate", "tasks", "--model", "tiny", "--tasks", "STS12", "STS17", "--json", str(tmp_path / "o.json")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown evaluation task 'STS17'" in err and "CQA-A-2016" in err
    with pytest.raises(SystemExit):
        main(["evaluate", "sts", "--model", "tiny", "--tasks", "MRPC", "--json", str(tmp_path / "o.json")])
    assert "not an STS task" in capsys.readouterr().err


@pytest.mark.parametrize("command", [
    ["sts"], ["tasks", "--tasks", "STS12"], ["retrieval", "--dataset", "cough", "--split", "faq_pairs"]])
@pytest.mark.parametrize(("option", "where", "why"), [
    ("--json", "file.txt/o.json", "file.txt is not a directory"),  # the parent is a regular file
    ("--json", "file.txt/missing/o.json", "file.txt is not a directory"),  # a missing parent that cannot be made
    ("--json", "folder", "it is a directory"),
    ("--details", "file.txt/d.json", "file.txt is not a directory"),
])
def test_an_output_that_cannot_be_written_is_a_one_line_error_before_any_work(tmp_path, capsys, monkeypatch, command, option, where, why):
    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "folder").mkdir()
    monkeypatch.setattr(sentcl.evaluation.cli, "_embedder", lambda args: pytest.fail("the model was loaded"))
    paths = {"--json": str(tmp_path / "ok.json"), option: str(tmp_path / where)}
    argv = ["evaluate", *command, "--model", "tiny", "--data-dir", str(samples_root())]
    status = main(argv + [arg for pair in paths.items() for arg in pair])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert err.startswith(f"sentcl: error: cannot write {option} {tmp_path / where}: ") and why in err
    assert not (tmp_path / "ok.json").exists()


def test_a_folder_without_write_permission_is_refused(tmp_path, capsys, monkeypatch):
    """As root every folder is writable, so the permission answer is the one os.access would give
    an ordinary user for a folder of mode 0500."""
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == locked else real_access(path, mode, **kw))
    assert main(["evaluate", "sts", "--model", "tiny", "--json", str(locked / "sub" / "o.json")]) == 2
    assert f"no permission to write in {locked}" in capsys.readouterr().err


def test_a_failing_write_names_the_file_and_why(tmp_path, monkeypatch):
    args = argparse.Namespace(json=str(tmp_path / "new" / "sub" / "o.json"), details=str(tmp_path / "d.json"))
    sentcl.evaluation.cli._check_outputs(args)  # missing parents that can be made are fine: writing makes them
    sentcl.evaluation.cli._write(args, {"a": 1}, {"b": 2})
    assert json.loads((tmp_path / "new" / "sub" / "o.json").read_text()) == {"a": 1}

    def full_disk(path, obj):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(sentcl.evaluation.cli, "atomic_write_json", full_disk)
    with pytest.raises(OutputError, match=rf"cannot write --json {tmp_path / 'new'}.*: No space left on device"):
        sentcl.evaluation.cli._write(args, {}, {})


@pytest.mark.realdata
@pytest.mark.slow
def test_minilm_reproduces_the_published_mteb_sts_scores(shared_data, tmp_path, monkeypatch):
    """all-MiniLM-L6-v2 through the command line (default precision: fp32): within 0.015 of
    MTEB's published cosine Spearman on every task.

    Measured on this project's CPU, ours - MTEB (x100): STS12 -0.002, STS13 -0.003, STS14
    +0.011, STS15 -0.000, STS16 -0.003, STSBenchmark +0.000, SICK-R (all pairs) +0.000. With
    bf16 autocast the differences reach 0.019 and move by ~0.005 with the batch composition,
    so the command's default is fp32.
    """
    import sentcl.embeddings

    real_embedder, embeds, seen = sentcl.embeddings.embedder, [], {}

    def remembering_embedder(model, **kwargs):  # the SICK-R check below reuses the CLI's vectors
        embed = real_embedder(model, **kwargs)

        def remembered(texts):
            new = [t for t in dict.fromkeys(texts) if t not in seen]
            if new:
                seen.update(zip(new, embed(new), strict=True))
            return np.stack([seen[t] for t in texts])

        embeds.append(remembered)
        return remembered

    monkeypatch.setattr(sentcl.embeddings, "embedder", remembering_embedder)
    out, details = tmp_path / "minilm.json", tmp_path / "minilm-details.json"
    assert main(["evaluate", "sts", "--model", MINILM, "--data-dir", str(shared_data),
                 "--json", str(out), "--details", str(details)]) == 0
    scores = json.loads(out.read_text())
    assert list(scores) == [*STS_AVERAGE, "avg"]
    full = json.loads(details.read_text())
    assert full["precision"] == "fp32"
    counts = {t: d["n"] for t, d in full["details"].items()}
    assert counts == {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186,
                      "STSb": 1379, "SICK-R": 4927}
    for task in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSb"):
        assert scores[task] == pytest.approx(MTEB_MINILM[task], abs=0.015), task
    assert scores["avg"] == pytest.approx(np.mean([scores[t] for t in STS_AVERAGE]))

    # SICK-R as MTEB scores it: all 9927 pairs, with the same model, precision and vectors
    sick_all = evaluate_sts(load("sickr", "all", shared_data), embeds[0])
    assert sick_all["n"] == 9927
    assert sick_all["spearman"]["all"] == pytest.approx(MTEB_MINILM["SICK-R"], abs=0.015)
    # the papers' SICK-R (SentEval: the 4927 test pairs) is a different, lower number for this model
    assert scores["SICK-R"] < MTEB_MINILM["SICK-R"] - 0.2
