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

from sentcl.book import parameters
from sentcl.book.profiles import DataChoice
from sentcl.book.publishing import runner
from sentcl.chapters import CHAPTERS
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
        ({"profile": "fast"}, set(), "parameter profile: unknown profile 'fast'; valid: smoke, demo, rehearsal, paper"),
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


@pytest.mark.parametrize("profile", ["smoke", "paper"])
@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_a_sentcl_reproduce_kernel_takes_the_values_it_was_given_without_reading_them_again(chapter, profile, tmp_path,
                                                                                           capsys, monkeypatch):
    """The kernel of a notebook sentcl reproduce runs gets where each value came from (RESOLVED_ENV): it resolves
    to what the runner resolved and checked, reading neither the notebook nor the profiles file nor the input
    history again, and says which values came from the profile and which were given."""
    defaults = parameters.notebook_parameters(ROOT / "notebooks" / f"{chapter}.ipynb")
    override = next(name for name, value in defaults.items() if type(value) is int)
    (tmp_path / "data").mkdir()
    plan = runner.plan_chapter(ROOT, chapter, profile, [(override, "7")], DataChoice(tmp_path / "data", False), tmp_path)
    namespace = {**defaults, **plan.injected}  # what papermill leaves in the kernel
    monkeypatch.setattr(parameters, "notebook_parameters", None)  # not called again
    monkeypatch.setattr(parameters, "read_profiles", None)
    monkeypatch.setattr(parameters, "papermill_injected_names", None)
    monkeypatch.setenv(*next(iter(parameters.resolution(chapter, profile, plan.origins).items())))
    assert parameters.resolve_parameters(chapter, namespace) == plan.parameters
    said = capsys.readouterr().out
    profile_values = sum(origin.startswith("profile") for origin in plan.origins.values())
    assert f"{profile_values} values from the profile" in said
    given = re.search(r"(\d+) given \(([^)]*)\)", said)
    assert given and set(given.group(2).split(", ")) == {override, "profile", "data_dir", "out_dir"}
    assert re.search(rf"^  {override}\s+= 7  \(given \(-p\)\)$", said, re.M)


def test_a_kernel_given_another_chapters_resolution_resolves_its_own(defaults, monkeypatch, capsys):
    """A notebook started by hand from a kernel that inherited another run's variable resolves its own profile."""
    monkeypatch.setenv(*next(iter(parameters.resolution("rcl", "smoke", {"profile": "given (--profile)"}).items())))
    resolved = parameters.resolve_parameters(CHAPTER, {**defaults, "profile": "smoke"}, given={"profile"})
    assert resolved == parameters.resolve_parameters(CHAPTER, {**defaults, "profile": "smoke"}, given={"profile"})
    assert resolved["train_pairs"] == smoke_profile()["train_pairs"]
    monkeypatch.setenv(*next(iter(parameters.resolution(CHAPTER, "smoke", {"nowhere": "default"}).items())))
    with pytest.raises(ConfigError, match="resolved nowhere, which this kernel lacks"):
        parameters.resolve_parameters(CHAPTER, {**defaults, "profile": "smoke"})
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


@pytest.mark.slow
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


# --------------------------------------------------------------------------- checked before anything runs


@pytest.mark.parametrize(("value", "bad"), [(-5, "train_pairs"), (float("inf"), "learning_rate"), ([0, -1], "seeds[1]"),
                                            ({"QQP": -2}, "train_rows['QQP']")])
def test_a_negative_or_infinite_number_is_refused_with_the_types(value, bad):
    default = {"train_pairs": 0, "learning_rate": 2e-5, "seeds": [0], "train_rows": {"QQP": 10}}[bad.split("[")[0]]
    name = bad.split("[")[0]
    with pytest.raises(ConfigError, match=re.escape(f"parameter {bad} must be a finite number >= 0")):
        parameters.check_value(name, value, default, "here")
    assert parameters.check_value("train_pairs", 0, 0, "here") == 0 and parameters.check_value("seeds", [0, 3], [0], "h") == [0, 3]


def test_every_profile_of_every_chapter_passes_the_range_check():
    for chapter in CHAPTERS:
        for values in parameters.chapter_profiles(ROOT / "notebooks" / f"{chapter}.ipynb").values():
            for name, value in values.items():
                parameters.check_range(name, value, chapter)


def test_train_pairs_minus_five_stops_the_resolution_cell(capsys):
    with pytest.raises(ConfigError, match=r"^mnrl_sbert notebook: parameter train_pairs must be a finite number >= 0.*got -5$"):
        parameters.resolve_parameters("mnrl_sbert", {"profile": "smoke", "train_pairs": -5}, given={"profile", "train_pairs"})


@pytest.mark.parametrize(("name", "text", "hint", "not_hint"), [
    ("learning_rate", "fast", "give a number such as 2e-05", "-y"),
    ("sts_tasks", "[STSb]", "pass lists and dicts with -y 'sts_tasks: ...'", "give a number"),
])
def test_the_papermill_hint_fits_the_parameters_type(name, text, hint, not_hint):
    with pytest.raises(ConfigError) as caught:
        parameters.resolve_parameters("mnrl_sbert", {"profile": "smoke", name: text}, given={"profile", name})
    assert hint in str(caught.value) and not_hint not in str(caught.value)


@pytest.mark.parametrize("profile", ["demo", "rehearsal", "paper"])
def test_a_data_dir_that_is_no_folder_fails_in_one_line_in_every_profile_that_reads_data(profile, tmp_path, capsys):
    with pytest.raises(ConfigError, match=r"^data root /nonexistent is not a directory \(from data_dir / --data-dir\)$"):
        parameters.resolve_parameters("mnrl_sbert", {"profile": profile, "data_dir": "/nonexistent", "out_dir": str(tmp_path)},
                                      given={"profile", "data_dir", "out_dir"})


def test_a_data_dir_the_smoke_profile_does_not_read_is_a_stated_warning(capsys):
    parameters.resolve_parameters("mnrl_sbert", {"profile": "smoke", "data_dir": "/nonexistent"}, given={"profile", "data_dir"})
    err = capsys.readouterr().err
    assert err.strip() == ("sentcl: WARNING: data_dir /nonexistent is not read: the smoke profile always runs on the "
                           "project's sample data (data/samples)")
    from sentcl.data.registry import samples_root

    assert parameters.check_data_dir("smoke", str(samples_root())) is None  # what sentcl reproduce injects: no warning


def test_persistent_dir_puts_the_cache_and_the_results_there(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "local-cache"))
    folder = tmp_path / "drive" / "sentcl"
    resolved = parameters.resolve_parameters("mnrl_sbert", {"profile": "smoke", "persistent_dir": str(folder)},
                                             given={"profile", "persistent_dir"})
    assert resolved["out_dir"] == str(folder / "runs" / "smoke")
    from sentcl.paths import cache_root

    assert cache_root() == folder / "cache"
    assert f"persistent storage {folder}" in capsys.readouterr().out
    # an out_dir given explicitly is kept
    resolved = parameters.resolve_parameters("mnrl_sbert", {"profile": "smoke", "persistent_dir": str(folder), "out_dir": "mine"},
                                             given={"profile", "persistent_dir", "out_dir"})
    assert resolved["out_dir"] == "mine"


def test_persistent_dir_drive_mounts_google_drive_on_colab_only(tmp_path, monkeypatch):
    import types

    with pytest.raises(ConfigError, match="only Colab can"):
        parameters.persistent_folder("drive")
    mounted = []

    def mount(where):
        mounted.append(where)
        (Path(where) / "MyDrive").mkdir(parents=True)

    colab = types.ModuleType("google.colab")
    colab.drive = types.SimpleNamespace(mount=mount)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "google", types.ModuleType("google"))
    monkeypatch.setitem(sys.modules, "google.colab", colab)
    monkeypatch.setattr(parameters, "DRIVE_MOUNT", tmp_path / "content" / "drive")
    assert parameters.persistent_folder("drive") == (tmp_path / "content" / "drive" / "MyDrive" / "sentcl").resolve()
    assert parameters.persistent_folder("drive").is_dir() and mounted == [str(tmp_path / "content" / "drive")]  # mounted once


@pytest.mark.parametrize("chapter", list(CHAPTERS))
def test_papermill_help_notebook_lists_every_parameter_without_a_parse_warning(chapter, caplog):
    """What `papermill --help-notebook` reads (papermill's own inspection of the parameters cell)."""
    import logging

    from papermill.translators import PythonTranslator

    path = ROOT / "notebooks" / f"{chapter}.ipynb"
    with caplog.at_level(logging.WARNING, logger="papermill"):
        inspected = PythonTranslator.inspect(nbformat.read(path, as_version=4).cells[0])
    assert [r.getMessage() for r in caplog.records] == []
    assert [p.name for p in inspected] == list(parameters.notebook_parameters(path))


def test_papermill_help_notebook_on_the_command_line():
    proc = subprocess.run([sys.executable, "-m", "papermill", "--help-notebook", str(ROOT / "notebooks" / "mnrl_sbert.ipynb")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "Unable to parse" not in proc.stdout + proc.stderr
    assert re.search(r"^  precision: ", proc.stdout, re.M) and re.search(r"^  persistent_dir: ", proc.stdout, re.M)
