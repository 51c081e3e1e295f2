"""A notebook resolving its own profile (sentcl.book.parameters.resolve_parameters): a parameter
given explicitly keeps its value, every other one takes the profile's, the result is printed; and
``sentcl reproduce``'s fully injected runs resolve to exactly what it injected."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from sentcl.book import parameters, runner
from sentcl.book.chapter import CHAPTERS, DataChoice
from sentcl.errors import ConfigError
from sentcl.paths import notebook_file

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = "mnrl_sbert"


@pytest.fixture(scope="module")
def defaults() -> dict:
    return parameters.notebook_parameters(ROOT / "notebooks" / f"{CHAPTER}.ipynb")


def smoke_profile() -> dict:
    return parameters.read_profiles(ROOT / "notebooks" / f"{CHAPTER}.profiles.yaml",
                                    parameters.notebook_parameters(ROOT / "notebooks" / f"{CHAPTER}.ipynb"))["smoke"]


def test_the_notebooks_and_profiles_are_read_from_the_package():
    """In a checkout the package's sentcl._notebooks is the notebooks/ folder itself: one copy."""
    for chapter in CHAPTERS:
        assert notebook_file(f"{chapter}.ipynb").resolve() == (ROOT / "notebooks" / f"{chapter}.ipynb").resolve()
        assert notebook_file(f"{chapter}.profiles.yaml").is_file()


def test_the_profile_fills_every_parameter_not_given(defaults, capsys):
    namespace = {**defaults, "profile": "smoke"}
    resolved = parameters.resolve_parameters(CHAPTER, namespace, given={"profile"})
    smoke = smoke_profile()
    assert smoke, "the smoke profile changes something"
    assert resolved == {**defaults, **smoke, "profile": "smoke", "out_dir": "runs/smoke"}
    printed = capsys.readouterr().out
    assert printed.startswith(f"{CHAPTER}, profile smoke: {len(smoke)} values from the profile")
    assert "1 given (profile)" in printed
    for name in defaults:  # every parameter printed, with where its value came from
        assert re.search(rf"^  {name} +=", printed, re.M), name
    assert re.search(r"^  train_pairs +\s*= 96  \(profile smoke\)$", printed, re.M)
    assert re.search(r"^  out_dir +\s*= 'runs/smoke'  \(default: runs/<profile>\)$", printed, re.M)


def test_a_value_given_explicitly_wins_over_the_profile(defaults):
    smoke = smoke_profile()
    assert smoke["train_pairs"] != defaults["train_pairs"] and smoke["expected_nli_rows"] != defaults["expected_nli_rows"]
    namespace = {**defaults, "profile": "smoke", "train_pairs": 7, "out_dir": "/tmp/elsewhere"}
    # papermill injected train_pairs and also the paper's own expected_nli_rows: both kept
    resolved = parameters.resolve_parameters(CHAPTER, namespace, given={"profile", "train_pairs", "expected_nli_rows"})
    assert resolved["train_pairs"] == 7 and resolved["expected_nli_rows"] == defaults["expected_nli_rows"]
    assert resolved["out_dir"] == "/tmp/elsewhere"  # changed in the cell, not injected: still given
    assert resolved["expected_entailment_pairs"] == smoke["expected_entailment_pairs"]  # not given: the profile's


def test_the_one_ambiguity_a_value_equal_to_the_default_not_known_as_injected(defaults):
    """Without the injected cell to read (outside IPython), the paper's value typed explicitly
    cannot be told from the default: the profile's wins."""
    namespace = {**defaults, "profile": "smoke"}
    resolved = parameters.resolve_parameters(CHAPTER, namespace, given=set())
    assert resolved["expected_nli_rows"] == smoke_profile()["expected_nli_rows"]


def test_a_notebook_opened_as_is_runs_the_demo(defaults):
    resolved = parameters.resolve_parameters(CHAPTER, dict(defaults), given=set())
    demo = parameters.read_profiles(ROOT / "notebooks" / f"{CHAPTER}.profiles.yaml", defaults)["demo"]
    assert resolved["profile"] == "demo" and resolved["out_dir"] == "runs/demo"
    assert all(resolved[name] == value for name, value in demo.items())


@pytest.mark.parametrize(
    ("namespace", "given", "message"),
    [
        ({"profile": "fast"}, set(), "parameter profile is 'fast'; expected one of smoke, demo, rehearsal, paper"),
        ({"seeed": [3]}, {"seeed"}, "mnrl_sbert notebook (papermill -p): unknown parameter 'seeed'; did you mean 'seeds'?"),
        ({"train_pairs": "96"}, {"train_pairs"}, "parameter train_pairs must be int like its default 0, got '96'"),
        ({"sts_tasks": "[STSb]"}, {"sts_tasks"}, "pass lists and dicts with -y 'sts_tasks: ...'"),
    ],
)
def test_bad_values_are_one_line_errors_naming_the_parameter(defaults, namespace, given, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parameters.resolve_parameters(CHAPTER, {**defaults, **namespace}, given=given)


@pytest.mark.parametrize("profile", ["smoke", "demo", "rehearsal", "paper"])
@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_a_sentcl_reproduce_run_resolves_to_what_it_injected(chapter, profile, tmp_path, capsys):
    """sentcl reproduce injects every value of the profile and its overrides: the notebook's own
    resolution keeps them all, so its runs are what they were before notebooks resolved profiles."""
    defaults = parameters.notebook_parameters(ROOT / "notebooks" / f"{chapter}.ipynb")
    override = next(name for name, value in defaults.items() if type(value) is int)  # -p NAME 7 on an int parameter
    (tmp_path / "data").mkdir()  # the data root a profile that reads one must find
    data = DataChoice(tmp_path / "data", profile == "smoke")
    plan = runner.plan_chapter(ROOT, chapter, profile, [(override, "7")], data, tmp_path)
    assert plan.parameters[override] == 7
    namespace = {**defaults, **plan.injected}
    assert parameters.resolve_parameters(chapter, namespace, given=set(plan.injected)) == plan.parameters
    capsys.readouterr()


@pytest.mark.parametrize("profile", ["smoke", "demo", "rehearsal", "paper"])
@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_papermill_with_only_the_profile_gets_what_sentcl_reproduce_injects(chapter, profile, tmp_path, capsys, monkeypatch):
    """`papermill <nb> out.ipynb -p profile X` resolves to the parameters `sentcl reproduce --profile X`
    runs with, but for the data root and the output folder that reproduce sets itself."""
    monkeypatch.setenv("SENTCL_DATA", str(tmp_path))  # the paper profile's parameter check needs a data root
    plan = runner.plan_chapter(ROOT, chapter, profile, [], DataChoice(tmp_path / "data", False), tmp_path / "out")
    defaults = parameters.notebook_parameters(plan.notebook)
    resolved = parameters.resolve_parameters(chapter, {**defaults, "profile": profile}, given={"profile"})
    assert resolved == {**plan.parameters, "data_dir": None, "out_dir": f"runs/{profile}"}
    capsys.readouterr()


def test_papermill_injected_names_are_read_from_the_kernel_history(monkeypatch):
    class Shell:
        def __init__(self, history: list[str]):
            self.user_ns = {"In": history}

    import IPython

    history = ["", '# Parameters. The values below are the paper\'s\nprofile = "demo"\n',
               '# Parameters\nprofile = "smoke"\nseed = 3\n', "x = 1"]
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell(history))
    assert parameters.papermill_injected_names() == {"profile", "seed"}
    monkeypatch.setattr(IPython, "get_ipython", lambda: Shell(["", 'profile = "demo"\n']))
    assert parameters.papermill_injected_names() == set()
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)
    assert parameters.papermill_injected_names() == set()


def test_under_papermill_the_kernel_sees_which_names_were_injected(tmp_path):
    """The real thing: papermill's injected cell, read back from inside the kernel it ran in."""
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell('# Parameters. Defaults\nprofile = "demo"\nseed = 0\nlr = 0.1')
    first.metadata["tags"] = ["parameters"]
    probe = nbformat.v4.new_code_cell("from sentcl.book.parameters import papermill_injected_names\n"
                                      "print(sorted(papermill_injected_names()))")
    nb.cells = [first, probe]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    subprocess.run([sys.executable, "-m", "papermill", str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                    "-p", "profile", "smoke", "-p", "seed", "0"], check=True, capture_output=True, timeout=300)
    out = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    assert out.cells[-1].outputs[0]["text"].strip() == "['profile', 'seed']"  # seed 0, equal to its default, still given


def test_shipped_parameters_are_a_profile_of_the_shipped_notebook():
    assert parameters.shipped_parameters("rcl") == parameters.chapter_profiles(notebook_file("rcl.ipynb"))["paper"]
    assert parameters.shipped_parameters("rcl", "rehearsal")["base_model"] == "tiny"
    with pytest.raises(ConfigError, match="unknown profile 'fast'"):
        parameters.shipped_parameters("rcl", "fast")
