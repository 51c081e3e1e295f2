"""A chapter's hand-run measurements on its page and in its notebook (sentcl.book.estimates.benchmarks): every number
read from the recorded result, "not measured" when there is none, nothing for a chapter without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sentcl.book.estimates import benchmarks
from sentcl.chapters import CHAPTERS, chapter
from sentcl.errors import DataFormatError

ROOT = Path(__file__).resolve().parents[2]


def _claim(left, right, delta, low, high, verdict):
    return {"claim": f"{left} above {right}", "left": left, "right": right, "delta": delta, "ci_low": low,
            "ci_high": high, "p_holm": 0.01, "verdict": verdict, "reason": "", "source": "ours"}


def _health(steps, cosine, active=True):
    return {"trained_steps": steps, "planned_steps": steps, "peak_lr": 2e-5, "start_cosine": cosine,
            "loss_start": {"step": 10, "loss": 0.3}, "loss_end": {"step": steps, "loss": 0.1}, "active": active,
            "reason": "" if active else "barely moved"}


def _learned(learned, start, end):
    return {"trained_steps": 125, "planned_steps": 125, "start_cosine": 0.9, "loss_start": {"step": 10, "loss": start},
            "loss_end": {"step": 125, "loss": end}, "active": True, "reason": "", "learned": learned,
            "learned_reason": "" if learned else "its loss did not fall beyond its window-to-window noise"}


def _rate(rate, sbert_learned, sbert_dev):
    health = {"MNRLSBERT seed 0": _learned(True, 2.06, 1.34), "SBERT seed 0": _learned(sbert_learned, 1.13, 1.07)}
    devs = {"MNRLSBERT seed 0": 65.0, "SBERT seed 0": sbert_dev}
    good = [n for n in health if health[n]["learned"] and devs[n] >= 50.0]
    return {"learning_rate": rate, "trained": 2, "learned": 1 + sbert_learned, "all_learned": sbert_learned,
            "stsb_dev": devs, "qualifying": len(good), "qualifying_dev": sum(devs[n] for n in good) / len(good),
            "average": {"sentcl-mini untouched (mean pooling)": {"value": 45.0, "std": None, "seeds": [0]},
                        "MNRLSBERT": {"value": 53.9, "std": None, "seeds": [0]},
                        "SBERT": {"value": 47.25, "std": None, "seeds": [0]}},
            "claims": [], "health": health}


RATES = {
    "benchmark": "rate_rule_mnrl_sbert", "date": "2026-11-29T12:00:00+00:00", "machine": {"cpu_model": "AMD EPYC"},
    "chapter": "mnrl_sbert", "grid": [1e-4, 3e-4, 1e-3], "seed": 0, "chosen": 3e-4, "rule": "THE RULE",
    "column": "Average",
    "untouched": {"model": "sentcl-mini", "stsb_dev": 50.0},
    "first_rule": {"rule": "THE FIRST RULE", "chosen": 1e-3},
    "runs": [_rate(1e-4, False, 52.0), _rate(3e-4, True, 55.5), _rate(1e-3, True, 20.0)],
}


SETTING = {
    "benchmark": "ifcl_demo_setting", "date": "2026-11-25T12:00:00+00:00", "machine": {"cpu_model": "AMD EPYC"},
    "settings": {"steps": 60, "batch_size": 32, "learning_rate": 3e-5, "seed": 0, "precision": "fp32", "log_steps": 10},
    "runs": [
        {"setting": "wiki1m word repetition", "method": "SimCSE",
         "health": {"loss_start": {"step": 10, "loss": 1.66e-5}, "loss_end": {"step": 60, "loss": 9.7e-6},
                    "start_cosine": 0.9816, "active": False, "reason": "loss 1.7e-05 at step 10: the objective was already solved"}},
        {"setting": "SNLI entailment twins", "method": "IFCL",
         "health": {"loss_start": {"step": 10, "loss": 0.5, "InfoNCE identical": 0.01, "InfoNCE fraternal": 0.3, "Twin": 0.19},
                    "loss_end": {"step": 60, "loss": 0.2, "InfoNCE identical": 0.001, "InfoNCE fraternal": 0.1, "Twin": 0.099},
                    "start_cosine": 0.97, "active": True, "reason": ""}},
    ],
}


UNTOUCHED = "all-MiniLM-L6-v2 zero-shot (ours)"
CQA = {
    "benchmark": "bsc_cqa_shuffle", "date": "2026-11-27T12:00:00+00:00", "machine": {"cpu_model": "Intel Xeon"},
    "settings": {"task": "CQA-A", "batch_size": 8, "learning_rate": 2e-5, "max_seq_length": 90, "seeds": [0, 1, 2],
                 "base_model": "sentence-transformers/all-MiniLM-L6-v2", "precision": "auto"},
    "runs": [{
        "steps": 60, "train_pairs": 480, "notebook_wall_s": 525.0, "training_run_s": {"runs": 9, "median": 34.9},
        "average": {"BSC": {"value": 0.6853, "std": 0.0034, "seeds": [0, 1, 2]},
                    "BSC - random shuffle": {"value": 0.6845, "std": 0.0072, "seeds": [0, 1, 2]},
                    UNTOUCHED: {"value": 0.6767, "std": None, "seeds": [0]}},
        "claims": [_claim("BSC", "BSC - random shuffle", 0.0008, -0.006, 0.0075, "undetermined"),
                   _claim("BSC", UNTOUCHED, 0.0086, 0.002, 0.015, "direction reproduced")],
        "health": {"CQA-A BSC seed 0": _health(60, 0.997), "CQA-A BSC - random shuffle seed 0": _health(60, 0.9976)},
    }],
}


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """The chapters' results files in a folder of the test's own."""
    monkeypatch.setattr(benchmarks, "benchmark_result", lambda name: tmp_path / name)

    def write(name, data):
        (tmp_path / name).write_text(json.dumps(data))
    return write


def test_the_rate_rule_table_shows_each_rate_its_models_health_and_dev_and_both_rules_choices(recorded):
    rule = benchmarks.rate_rule("mnrl_sbert")
    assert benchmarks.rate_rule_section(chapter("mnrl_sbert")) == ""  # not recorded: no section
    recorded(rule.record, RATES)
    table, caption = benchmarks.measurement_frame(chapter("mnrl_sbert"), rule)
    assert list(table.index) == ["0.0001", "0.0003", "0.001"]
    assert table.loc["0.0001", "SBERT learned (loss)"] == "no (1.130 → 1.070)"
    assert table.loc["0.0003", "MNRLSBERT learned (loss)"] == "yes (2.060 → 1.340)"
    assert table.loc["0.001", "SBERT STS-B dev"] == "20.00" and table.loc["0.0003", "MNRLSBERT STS-B dev"] == "65.00"
    assert list(table["qualify (mean dev)"]) == ["1 of 2 (65.00)", "2 of 2 (60.25)", "1 of 2 (65.00)"]
    assert list(table["chosen"]) == ["", "**the rule**", ""] and list(table["the first rule"]) == ["", "", "chose it"]
    assert table.loc["0.0003", "SBERT (Average, test, not read)"] == "47.25"
    assert not any("untouched" in c for c in table.columns)  # only the trained rows' scores
    assert "the rule chose 0.0003" in caption and "Grid 0.0001, 0.0003, 0.001, seed 0" in caption and "AMD EPYC" in caption
    assert "`benchmarks/rate_rule.py --chapter mnrl_sbert`" in caption and "its rule: THE RULE." in caption
    assert "sentcl-mini scores 50.00 on STS-B dev" in caption
    assert "(THE FIRST RULE) chose 0.001: it had no check" in caption and "so it is not blind to those" in caption
    page = benchmarks.rate_rule_section(chapter("mnrl_sbert"))
    assert "no (1.130 → 1.070)" in page and page.count("\n|") >= 3
    shown, turned = benchmarks.measurement(chapter("mnrl_sbert"), rule)  # the notebook's cell: caption, then the table turned
    assert shown == caption and list(turned.columns) == list(table.index)
    recorded(rule.record, {**RATES, "first_rule": {"rule": "THE FIRST RULE", "chosen": 3e-4}})
    assert benchmarks.measurement_frame(chapter("mnrl_sbert"), rule)[1].endswith("without the dev check (THE FIRST RULE), chose the same.")


def test_the_ifcl_setting_table_shows_each_term_at_the_start_and_the_end(recorded):
    recorded(CHAPTERS["ifcl"].measurement.record, SETTING)
    table, caption = benchmarks.measurement_frame(chapter("ifcl"))
    simcse = table.loc[("wiki1m word repetition", "SimCSE")]
    assert simcse["loss"] == "1.66e-05 → 9.7e-06" and simcse["Twin"] == "—" and simcse["cosine to start"] == "0.9816"
    assert simcse["trained (active)"].startswith("no: loss 1.7e-05 at step 10")
    ifcl = table.loc[("SNLI entailment twins", "IFCL")]
    assert ifcl["InfoNCE fraternal"] == "0.3 → 0.1" and ifcl["Twin"] == "0.19 → 0.099" and ifcl["trained (active)"] == "yes"
    assert "60 steps of 32" in caption
    shown, same = benchmarks.measurement(chapter("ifcl"))  # 6 columns: as it is
    assert shown == caption and same.equals(table)


def test_the_cqa_shuffle_table_shows_each_step_count_its_maps_intervals_and_health(recorded):
    recorded(CHAPTERS["bsc"].measurement.record, CQA)
    table, caption = benchmarks.measurement_frame(chapter("bsc"))
    row = table.loc[60]
    assert row["BSC"] == "0.685 ± 0.003" and row["all-MiniLM-L6-v2 untouched"] == "0.677"
    assert row["BSC − BSC - random shuffle"] == "+0.001 [-0.006, +0.007] undetermined"
    assert row["BSC − all-MiniLM-L6-v2 untouched"] == "+0.009 [+0.002, +0.015] direction reproduced"
    assert row["lowest cosine to start"] == "0.9970" and row["trained (active)"] == "2 of 2"
    assert row["notebook wall time"] == "8.8 min" and row["median training run"] == "35 s"
    assert "batches of 8" in caption and "2e-05 with bias correction" in caption and "Intel Xeon" in caption
    assert "+0.001 [-0.006, +0.007] undetermined" in benchmarks.chapter_section(chapter("bsc"))


def test_a_chapter_without_a_record_says_not_measured_and_one_without_a_measurement_has_none(recorded, tmp_path):
    table, why = benchmarks.measurement_frame(chapter("ifcl"))
    assert table is None and "Not measured" in why and "benchmarks/ifcl_demo_setting.py" in why
    assert "Not measured" in benchmarks.chapter_section(chapter("ifcl"))
    assert benchmarks.measurement(chapter("ifcl")) == [why]  # the notebook's cell says why, and shows no table
    assert benchmarks.chapter_section(chapter("rcl")) == "" == benchmarks.chapter_section(chapter("mnrl_sbert"))
    why = benchmarks.measurement_frame(chapter("rcl"), benchmarks.rate_rule("rcl"))[1]
    assert "no `benchmarks/results/rate_rule_rcl_cpu.json` (run `benchmarks/rate_rule.py`)" in why
    (tmp_path / CHAPTERS["bsc"].measurement.record).write_text("{not json")
    with pytest.raises(DataFormatError, match=r"bsc_cqa_shuffle_cpu\.json"):
        benchmarks.measurement_frame(chapter("bsc"))


@pytest.mark.parametrize(("chapter", "rule"), sorted(
    [(c, False) for c, spec in CHAPTERS.items() if spec.measurement]
    + [(c, True) for c in CHAPTERS if (ROOT / "benchmarks" / "results" / f"rate_rule_{c}_cpu.json").is_file()]))
def test_the_recorded_results_read(chapter, rule):
    """The results shipped in benchmarks/results make a table (every run of the file a row): each chapter's
    measurement, and each rate-rule record there is (which chapters must have one: tests/chapters/test_rate_rule.py)."""
    measure = benchmarks.rate_rule(chapter) if rule else CHAPTERS[chapter].measurement
    path = ROOT / "benchmarks" / "results" / measure.record
    if not path.is_file():
        pytest.skip(f"benchmarks/results/{measure.record} is not recorded in this checkout")
    table, caption = benchmarks.measurement_frame(CHAPTERS[chapter], measure)
    assert table is not None and len(table) == len(json.loads(path.read_text())["runs"]) and caption


def test_a_record_is_read_once_one_way_none_when_absent_and_its_line_when_broken(tmp_path, monkeypatch):
    """:func:`recorded` is every shipped record's one reader (paper_cost, the measurement, the GPU memory)."""
    from sentcl.book.estimates.gpu_memory import benchmark_record
    from sentcl.errors import ConfigError

    monkeypatch.setattr(benchmarks, "benchmark_result", lambda name: tmp_path / name)
    (tmp_path / "ok.json").write_text('{"a": 1}')
    (tmp_path / "broken.json").write_text('{\n"a": 1,\n}')
    assert benchmarks.recorded("ok.json") == {"a": 1} == benchmark_record("ok.json")
    assert benchmarks.recorded("absent.json") is None
    with pytest.raises(ConfigError, match=r"absent\.json: no such benchmark record"):
        benchmark_record("absent.json")
    with pytest.raises(DataFormatError, match=r"broken\.json:3: expected a benchmark result"):
        benchmarks.recorded("broken.json")


def _primary(central, claim, column, verdict, family="primary"):
    return {"central": central, "table": "Table 1", "claim": claim, "column": column, "verdict": verdict, "family": family}


SENSITIVE = {
    "benchmark": "sensitivity", "date": "2026-11-29T12:00:00+00:00", "machine": {"cpu_model": "AMD EPYC"},
    "half_checkpoint": {"step": 1831, "of_steps": 3663, "heldout_loss_at_half": 5.67, "heldout_loss_final": 4.59},
    "runs": [{"setting": "rate x1/3", "chapter": "rcl", "primary": [
                  _primary("R1", "RCL above base", "Average", "direction reproduced"),
                  _primary("R2", "RCL above DropHead", "Average", "direction reversed")]},
             {"setting": "rate x3", "chapter": "rcl", "primary": [_primary("R1", "RCL above base", "Average", "undetermined")]},
             {"setting": "rate x3", "chapter": "ifcl", "primary": []}],
}


def test_the_sensitivity_section_counts_the_primary_verdicts_each_setting_changes(recorded):
    """Against this build's primary verdicts (the secondary family aside): a changed verdict is bold and counted, a
    claim the setting's run lacks says so (and counts as changed); no record, or no run of the chapter: "not measured"."""
    import pandas as pd

    claims = pd.DataFrame([_primary("R1", "RCL above base", "Average", "direction reproduced"),
                           _primary("R2", "RCL above DropHead", "Average", "undetermined"),
                           _primary("", "Eq. 1 above base", "Average", "direction reproduced", family="secondary")])
    assert "Not measured" in benchmarks.sensitivity_section("rcl", claims)
    recorded(benchmarks.SENSITIVITY, SENSITIVE)
    frame = benchmarks.sensitivity_frame("rcl", claims, SENSITIVE)
    assert list(frame.index) == ["R1: RCL above base (Average)", "R2: RCL above DropHead (Average)"]
    assert list(frame["rate ×⅓"]) == ["direction reproduced", "**direction reversed**"]
    assert list(frame["rate ×3"]) == ["**undetermined**", "**not in that run**"]
    assert benchmarks.sensitivity_flips(frame) == {"rate ×⅓": 1, "rate ×3": 2}
    page = benchmarks.sensitivity_section("rcl", claims)
    assert "Verdicts changed (in bold) of this build's 2 primary claims: 1 with rate ×⅓, 2 with rate ×3." in page
    assert "step 1,831 of 3,663" in page and "5.67" in page and "AMD EPYC" in page and page.count("\n|") >= 3
    untested = pd.concat([claims, pd.DataFrame([_primary("R5", "RCL above DropHead on FAQ", "MAP", "not tested")])])
    page = benchmarks.sensitivity_section("rcl", untested)
    assert "Verdicts changed (in bold) of this build's 3 primary claims: 1 with rate ×⅓, 2 with rate ×3." in page  # absent there: not tested
    assert "FAQ" not in page and "Left out of the table: 1 primary claims" in page
    tested = {**SENSITIVE, "runs": [{**r, "primary": [*r["primary"], _primary("R5", "RCL above DropHead on FAQ", "MAP", "undetermined")]}
                                    for r in SENSITIVE["runs"]]}
    recorded(benchmarks.SENSITIVITY, tested)
    page = benchmarks.sensitivity_section("rcl", untested)  # tested in a setting: shown, and changed
    assert "| R5: RCL above DropHead on FAQ (MAP) | not tested | **undetermined** |" in page and "Left out" not in page
    assert "Not measured" in benchmarks.sensitivity_section("bsc", claims)  # the record has no run of it
    assert "this build ran smoke" in benchmarks.sensitivity_section("rcl", claims, ["smoke"])  # not the runs' profile
    assert "no primary claim" in benchmarks.sensitivity_section("ifcl", claims.iloc[2:])


def test_the_sensitivity_benchmark_scales_every_rate_and_swaps_every_mini(monkeypatch):
    """``benchmarks/sensitivity.py``: each setting changes exactly the chapter's rates (per task, per family alike) or
    every parameter that names sentcl-mini, never a text that merely mentions it."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import sensitivity

    demo = {"learning_rates": {"base": 1e-5}, "english_models": {"base": "sentcl-mini"}, "zero_shot_model": "sentcl-mini",
            "note": "sentcl-mini is English", "seeds": [0]}
    assert sensitivity.overrides(demo, "rate x1/3", "/h") == {"learning_rates": {"base": 3.33e-06}}
    assert sensitivity.overrides(demo, "rate x3", "/h") == {"learning_rates": {"base": 3e-05}}
    assert sensitivity.overrides(demo, "half-pretrained", "/h") == {"english_models": {"base": "/h"}, "zero_shot_model": "/h"}
    assert sensitivity.overrides({"learning_rate": 1e-4}, "rate x3", "/h") == {"learning_rate": 3e-4}
    assert sensitivity.chapters() == ["mnrl_sbert", "bsc", "rcl", "ifcl"]


def test_the_sensitivity_record_was_made_on_the_shipped_demo_profiles():
    """The pages compare this build's primary verdicts with the record's runs: those runs must have varied the demo
    that ships (a profile changed since, a task or row added, makes the record stale: rerun benchmarks/sensitivity.py)."""
    from sentcl.book.parameters import shipped_parameters

    record = benchmarks.recorded(benchmarks.SENSITIVITY)
    assert record is not None and record["runs"]
    for run in record["runs"]:
        assert run["demo_profile"] == shipped_parameters(run["chapter"], "demo"), (run["setting"], run["chapter"])


def test_the_sensitivity_benchmark_counts_the_models_from_the_rows_evidence(tmp_path, monkeypatch, fake):
    """A rerun that loads its models from the artifact cache writes no training record: the models and whether they
    learned are read from the rows' evidence, each model once however many rows rest on it or name it."""
    from sentcl.book.notebook.chapter_run import ChapterRun

    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import sensitivity

    def model(name, cosine, learned=True):
        done = fake.done(True, name, learned=learned)
        done.health["start_cosine"] = cosine  # what tells two models apart
        return done

    run = ChapterRun("mnrl_sbert", profile="demo", data_dir=tmp_path, out_dir=tmp_path / "out")
    models = {("MNRLSBERT", s): model(f"MNRLSBERT seed {s}", 0.9 + s / 100) for s in range(2)}
    models |= {("SBERT", s): model(f"SBERT seed {s}", 0.8 + s / 100, learned=False) for s in range(2)}
    for row in ("MNRLSBERT", "SBERT"):
        for table in ("Table 1", "Table 2"):  # one model behind two rows
            run.record_scores(row, {s: fake.scored(0.1, s) for s in range(2)}, columns={"STSb": ("STSb", "Spearman")},
                              trained={s: models[row, s] for s in range(2)}, tables=[table])
    renamed = model("Attention dropout seed 0", 0.9)  # MNRLSBERT seed 0's run under another row's name
    run.record_scores("Attention dropout", {0: fake.scored(0.1, 0)}, columns={"STSb": ("STSb", "Spearman")},
                      trained={0: renamed}, tables=["Table 1"])
    health = sensitivity.evidence_health(tmp_path / "out", "mnrl_sbert")
    assert len(health) == 4 and {h["start_cosine"] for h in health.values()} == {0.9, 0.91, 0.8, 0.81}
    assert [h["learned"] for h in health.values()].count(True) == 2
