"""``sentcl evaluate ...``: the tiny model on sample data, and all-MiniLM-L6-v2 on the real
STS data against the scores the community published for it (MTEB)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentcl.cli import main
from sentcl.data import load, samples_root
from sentcl.evaluation.sts import STS_TASKS, evaluate_sts

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

# all-MiniLM-L6-v2's model card (MTEB results), cosine Spearman x100 on the test sets.
# MTEB's SICK-R task scores all 9927 SICK pairs (our split `sickr/all`), not the 4927 test pairs.
MTEB_MINILM = {
    "STS12": 72.369,
    "STS13": 80.603,
    "STS14": 75.589,
    "STS15": 85.390,
    "STS16": 78.989,
    "STSBenchmark": 82.032,
    "SICK-R": 77.582,
}


def test_sts_command_on_sample_data(tmp_path, capsys):
    out, details = tmp_path / "sts.json", tmp_path / "details.json"
    status = main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()),
                   "--json", str(out), "--details", str(details)])
    assert status == 0
    scores = json.loads(out.read_text())
    assert list(scores) == [*STS_TASKS, "avg"]
    assert all(isinstance(v, float) and -100 <= v <= 100 for v in scores.values())
    full = json.loads(details.read_text())
    assert full["scores"] == scores and full["setting"] == "all"
    assert full["details"]["STS16"]["subsets"]  # per-subset correlations are kept in the details
    printed = capsys.readouterr().out
    assert "STSBenchmark" in printed and "sample data" in printed


def test_sts_command_task_subset_and_errors(tmp_path, capsys):
    out = tmp_path / "two.json"
    assert main(["evaluate", "sts", "--model", "tiny", "--data-dir", str(samples_root()),
                 "--tasks", "STS13", "SICK-R", "--json", str(out)]) == 0
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


@pytest.mark.parametrize("dataset, split", [("semeval2016_cqa_a", "test"), ("cough", "user_queries")])
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
                seen.update(zip(new, embed(new)))
            return np.stack([seen[t] for t in texts])

        embeds.append(remembered)
        return remembered

    monkeypatch.setattr(sentcl.embeddings, "embedder", remembering_embedder)
    out, details = tmp_path / "minilm.json", tmp_path / "minilm-details.json"
    assert main(["evaluate", "sts", "--model", MINILM, "--data-dir", str(shared_data),
                 "--json", str(out), "--details", str(details)]) == 0
    scores = json.loads(out.read_text())
    assert list(scores) == [*STS_TASKS, "avg"]
    full = json.loads(details.read_text())
    assert full["precision"] == "fp32"
    counts = {t: d["n"] for t, d in full["details"].items()}
    assert counts == {"STS12": 3108, "STS13": 1500, "STS14": 3750, "STS15": 3000, "STS16": 1186,
                      "STSBenchmark": 1379, "SICK-R": 4927}
    for task in ("STS12", "STS13", "STS14", "STS15", "STS16", "STSBenchmark"):
        assert scores[task] == pytest.approx(MTEB_MINILM[task], abs=0.015), task
    assert scores["avg"] == pytest.approx(np.mean([scores[t] for t in STS_TASKS]))

    # SICK-R as MTEB scores it: all 9927 pairs, with the same model, precision and vectors
    sick_all = evaluate_sts(load("sickr", "all", shared_data), embeds[0])
    assert sick_all["n"] == 9927
    assert sick_all["spearman"]["all"] == pytest.approx(MTEB_MINILM["SICK-R"], abs=0.015)
    # the papers' SICK-R (SentEval: the 4927 test pairs) is a different, lower number for this model
    assert scores["SICK-R"] < MTEB_MINILM["SICK-R"] - 0.2
