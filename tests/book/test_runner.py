"""`sentcl reproduce`: parameter validation, profiles, failures, summary (sentcl.book.publishing.runner)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from sentcl import cli
from sentcl.book.output.run_records import read_run_records
from sentcl.book.profiles import DataChoice
from sentcl.book.publishing import runner
from sentcl.errors import ConfigError
from sentcl.progress import LABEL_ENV, PROGRESS_ENV

PARAMS = 'profile = "demo"\ndata_dir = None\nout_dir = "runs/manual"\nseed = 0\nlr = 2e-5\nepochs = 1\nuse_fp16 = False\nmodel = "tiny"\nlayers = [1, 2]\nextra = None'
PROFILES = "smoke: {epochs: 2, model: tiny-random}\ndemo: {}\nrehearsal: {}\npaper: {lr: 3.0e-5, use_fp16: true, layers: [12]}\n"
EMPTY_PROFILES = "smoke: {}\ndemo: {}\nrehearsal: {}\npaper: {}\n"


def write_notebook(path: Path, params: str = PARAMS, cells: list[str] = (), title: str = "A chapter", profiles: str | None = PROFILES) -> Path:
    """A chapter notebook: the tagged parameters cell, a title, then code cells."""
    nb = nbformat.v4.new_notebook()
    first = nbformat.v4.new_code_cell(params)
    first.metadata["tags"] = ["parameters"]
    nb.cells = [first, nbformat.v4.new_markdown_cell(f"# {title}"), *(nbformat.v4.new_code_cell(c) for c in cells)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, path)
    if profiles is not None:
        path.with_suffix(".profiles.yaml").write_text(profiles)
    return path


def make_project(root: Path) -> Path:
    """The smallest checkout the runner accepts: _toc.yml and notebooks/."""
    (root / "notebooks").mkdir(parents=True)
    (root / "_toc.yml").write_text("format: jb-book\nroot: book/intro\n")
    return root


# --------------------------------------------------------------------------- parameters


def test_notebook_parameters_reads_the_tagged_first_cell(tmp_path):
    params = runner.notebook_parameters(write_notebook(tmp_path / "a.ipynb", params=PARAMS + "\nn: int = 3"))
    assert params == {"profile": "demo", "data_dir": None, "out_dir": "runs/manual", "seed": 0, "lr": 2e-5, "epochs": 1,
                      "use_fp16": False, "model": "tiny", "layers": [1, 2], "extra": None, "n": 3}


@pytest.mark.parametrize(
    ('params', 'message'),
    [
        (PARAMS + "\nimport os", "line 11: expected NAME = literal, found 'import os'"),
        (PARAMS + "\nbatch = 4 * 8", "line 11: batch must be a literal, found '4 * 8'"),
        (PARAMS + "\nx = (", "parameters cell line"),
        ('profile = "demo"\nseed = 1', "must define data_dir, out_dir"),
    ],
)
def test_parameters_cell_errors(tmp_path, params, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        runner.notebook_parameters(write_notebook(tmp_path / "a.ipynb", params=params))


def test_the_parameters_cell_must_come_first_and_be_tagged(tmp_path):
    path = write_notebook(tmp_path / "a.ipynb")
    nb = nbformat.read(path, as_version=4)
    nb.cells[0].metadata["tags"] = []
    nbformat.write(nb, path)
    with pytest.raises(ConfigError, match="first cell must be the code cell tagged 'parameters'"):
        runner.notebook_parameters(path)
    nb.cells.insert(0, nbformat.v4.new_markdown_cell("# Title first"))
    nb.cells[1].metadata["tags"] = ["parameters"]
    nbformat.write(nb, path)
    with pytest.raises(ConfigError, match="first cell"):
        runner.notebook_parameters(path)


@pytest.mark.parametrize(
    ('text', 'default', 'expected'),
    [
        ("true", False, True), ("No", True, False), ("0", True, False),
        ("3", 1, 3), ("3e-5", 2e-5, 3e-5), ("4", 2e-5, 4.0),
        ("bert-base", "tiny", "bert-base"), ("12", "tiny", "12"),
        ("[3, 4]", [1], [3, 4]), ("null", None, None), ("7", None, 7), ("x", None, "x"),
        ("[1, 2]", (0,), [1, 2]),
        # JSON before YAML: YAML 1.1 reads 2e-05 (no dot, as json.dumps writes it) as a string
        ('{"STSb": 2e-05}', {"STSb": 3e-5}, {"STSb": 2e-05}), ("{STSb: 3.0e-5}", {"STSb": 2e-5}, {"STSb": 3e-5}),
    ],
)
def test_p_values_are_typed_like_the_default(text, default, expected):
    value = runner.parse_value("x", text, default)
    assert value == expected and type(value) is type(expected)


@pytest.mark.parametrize(
    ('text', 'default', 'message'),
    [("maybe", False, "is a bool"), ("2.5", 1, "must be int"), ("fast", 1e-3, "must be float"), ("3", [1], "must be list"),
     ("{STSb: 2e-05}", {"STSb": 3e-5}, r"x\['STSb'\] must be float")],
)
def test_p_values_of_the_wrong_type_are_errors(text, default, message):
    with pytest.raises(ConfigError, match=message):
        runner.parse_value("x", text, default)


def test_profile_values_are_checked_against_the_defaults(tmp_path):
    path = write_notebook(tmp_path / "a.ipynb")
    defaults = runner.notebook_parameters(path)
    profiles = runner.read_profiles(path.with_suffix(".profiles.yaml"), defaults)
    assert profiles == {"smoke": {"epochs": 2, "model": "tiny-random"}, "demo": {}, "rehearsal": {},
                        "paper": {"lr": 3e-5, "use_fp16": True, "layers": [12]}}
    bad = {
        "smoke: {epoch: 2}\ndemo: {}\nrehearsal: {}\npaper: {}\n": "unknown parameter 'epoch'; did you mean 'epochs'? valid: profile, data_dir",
        "smoke: {epochs: two}\ndemo: {}\nrehearsal: {}\npaper: {}\n": "parameter epochs must be int like its default 1, got 'two'",
        "smoke: {use_fp16: 1}\ndemo: {}\nrehearsal: {}\npaper: {}\n": "parameter use_fp16 must be bool",
        "smoke: {out_dir: x}\ndemo: {}\nrehearsal: {}\npaper: {}\n": "out_dir is set by sentcl reproduce (--out)",
        "smoke: {}\ndemo: {}\n": "missing: ['rehearsal', 'paper']",
        "smoke: {}\ndemo: {}\nrehearsal: {}\npaper: {}\nfast: {}\n": "unknown: ['fast']",
        "smoke: [1]\ndemo: {}\nrehearsal: {}\npaper: {}\n": "profile smoke must map parameter names",
    }
    for body, message in bad.items():
        path.with_suffix(".profiles.yaml").write_text(body)
        with pytest.raises(ConfigError, match=re.escape(message)):
            runner.read_profiles(path.with_suffix(".profiles.yaml"), defaults)
    path.with_suffix(".profiles.yaml").unlink()
    with pytest.raises(ConfigError, match="not found"):
        runner.read_profiles(path.with_suffix(".profiles.yaml"), defaults)


def test_plan_merges_defaults_profile_overrides_and_the_runners_three(tmp_path):
    root = make_project(tmp_path)
    write_notebook(root / "notebooks" / "bsc.ipynb")
    data = DataChoice(tmp_path / "data", False)
    plan = runner.plan_chapter(root, "bsc", "paper", [("seed", "7"), ("lr", "1e-4")], data, tmp_path / "out")
    assert plan.injected == {"lr": 1e-4, "use_fp16": True, "layers": [12], "seed": 7, "profile": "paper",
                             "data_dir": str(tmp_path / "data"), "out_dir": str(tmp_path / "out")}
    assert plan.parameters["epochs"] == 1 and plan.parameters["model"] == "tiny" and plan.parameters["seed"] == 7
    assert plan.executed == tmp_path / "out" / "notebooks" / "bsc.ipynb"
    with pytest.raises(ConfigError, match=re.escape("-p sede (notebooks/bsc.ipynb): unknown parameter 'sede'; did you mean 'seed'?")):
        runner.plan_chapter(root, "bsc", "paper", [("sede", "7")], data, tmp_path / "out")
    with pytest.raises(ConfigError, match="data_dir is set with --data-dir"):
        runner.plan_chapter(root, "bsc", "paper", [("data_dir", "/x")], data, tmp_path / "out")


# --------------------------------------------------------------------------- the command


def test_reproduce_refuses_bad_input_before_running_anything(tmp_path, monkeypatch, capsys):
    root = make_project(tmp_path / "proj")
    write_notebook(root / "notebooks" / "bsc.ipynb")
    write_notebook(root / "notebooks" / "rcl.ipynb", params=PARAMS.replace("epochs", "n_epochs"), profiles=EMPTY_PROFILES)
    monkeypatch.chdir(root)
    out = tmp_path / "out"
    # epochs is valid for bsc but not for rcl: refused for both, nothing runs
    assert cli.main(["reproduce", "--profile", "smoke", "--out", str(out), "--no-book", "--only", "bsc", "rcl", "-p", "epochs", "3"]) == 2
    err = capsys.readouterr().err
    assert "sentcl: error:" in err and "notebooks/rcl.ipynb" in err and "unknown parameter 'epochs'" in err
    assert "did you mean 'n_epochs'?" in err
    assert not (out / "notebooks").exists()
    assert cli.main(["reproduce", "--only", "mnrl", "--no-book"]) == 2
    assert "unknown chapter(s) ['mnrl']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--profile", "fast"])
    # the executor's options: Ray's only with --executor ray, counts of 1 or more
    assert cli.main(["reproduce", "--no-book", "--address", "auto"]) == 2
    assert "--address: only with --executor ray" in capsys.readouterr().err
    assert cli.main(["reproduce", "--no-book", "--executor", "ray", "--runs-per-gpu", "0"]) == 2
    assert "--runs-per-gpu 0: must be 1 or more" in capsys.readouterr().err
    assert not (out / "notebooks").exists()


@pytest.mark.slow
def test_a_failing_notebook_is_reported_and_the_others_still_run(tmp_path, monkeypatch, capsys):
    root = make_project(tmp_path / "proj")
    write_notebook(root / "notebooks" / "bsc.ipynb", cells=["x = 1", "y = x + seed\nz = y / 0\nprint(z)"])
    write_notebook(root / "notebooks" / "rcl.ipynb", cells=["import os\nprint(profile, os.environ['SENTCL_RUN_ID'])"])
    monkeypatch.chdir(root)
    for name in (PROGRESS_ENV, LABEL_ENV):
        monkeypatch.delenv(name, raising=False)
    out = tmp_path / "out"
    status = cli.main(["reproduce", "--profile", "smoke", "--out", str(out), "--no-book", "-p", "seed", "5"])
    captured = capsys.readouterr()
    assert status == 1
    assert re.search(r"FAILED bsc: cell \d+ \(In \[\d+\]\) raised ZeroDivisionError: division by zero", captured.err)
    assert "    | y = x + seed\n    | z = y / 0" in captured.err
    assert "1 notebook(s) failed: bsc" in captured.err
    summary = captured.out[captured.out.index("chapter "):]
    assert re.search(r"bsc\s+failed\s+[\d.]+ s", summary) and re.search(r"rcl\s+ok\s+[\d.]+ s\s+\d+ MiB", summary)
    assert (out / "notebooks" / "bsc.ipynb").is_file()  # kept, with the error in it
    executed = nbformat.read(out / "notebooks" / "rcl.ipynb", as_version=4)
    printed = executed.cells[-1].outputs[0]["text"].split()
    records = {json.loads(p.read_text())["name"]: json.loads(p.read_text()) for p in (out / "records").glob("*.json")}
    assert printed == ["smoke", records["rcl"]["run_id"]]  # the kernel sees the run id of its record
    assert records["bsc"]["status"] == "failed" and "ZeroDivisionError" in records["bsc"]["error"]
    assert records["rcl"]["status"] == "ok" and records["rcl"]["parameters"]["seed"] == 5 and records["rcl"]["seed"] == 5
    assert records["rcl"]["parameters"]["epochs"] == 2  # from the smoke profile
    assert records["rcl"]["peak_memory_mb"] > 10 and records["rcl"]["config"]["sample"] is True
    assert PROGRESS_ENV not in os.environ and LABEL_ENV not in os.environ  # set for the kernels only


@pytest.mark.slow
def test_progress_inside_a_cell_reaches_the_terminal_not_the_notebook(tmp_path):
    """A bar drawn by a cell (training, encoding) shows on the terminal running sentcl reproduce,
    named by its chapter, and the executed notebook keeps only the cell's own output. Run as a
    separate process without pytest's marker, so that the kernel captures its descriptor 2 into
    the notebook as it does under `make book`."""
    root = make_project(tmp_path / "proj")
    cell = ("from sentcl.progress import progress_bar\n"
            "for _ in progress_bar(range(7), desc='inner work', unit='step', mininterval=0):\n    pass\n"
            "print('cell done')")
    write_notebook(root / "notebooks" / "bsc.ipynb", cells=[cell])
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", PROGRESS_ENV, LABEL_ENV)}
    proc = subprocess.run(
        [sys.executable, "-m", "sentcl", "reproduce", "--profile", "smoke", "--out", str(out), "--no-book", "--only", "bsc"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "bsc · inner work" in proc.stderr and "7/7" in proc.stderr
    executed = nbformat.read(out / "notebooks" / "bsc.ipynb", as_version=4)
    outputs = json.dumps([c.get("outputs", []) for c in executed.cells if c.cell_type == "code"])
    assert "cell done" in outputs and "inner work" not in outputs and "7/7" not in outputs


def test_demo_without_a_data_root_warns_that_it_falls_back_to_sample_data(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(make_project(tmp_path / "proj"))
    monkeypatch.delenv("SENTCL_DATA", raising=False)
    assert cli.main(["reproduce", "--out", str(tmp_path / "out"), "--no-book"]) == 0
    captured = capsys.readouterr()
    assert "sentcl: WARNING: no data root" in captured.err and "falls back" in captured.err
    assert "no notebook yet (notebooks/mnrl_sbert.ipynb)" in captured.out
    assert cli.main(["reproduce", "--profile", "paper", "--no-book"]) == 2
    assert "the paper profile needs the real data" in capsys.readouterr().err


# --------------------------------------------------------------------------- one run per output folder


def _sentcl(root: Path, *args: str, **popen) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_CURRENT_TEST", PROGRESS_ENV, LABEL_ENV)}
    return subprocess.Popen([sys.executable, "-m", "sentcl", *args], cwd=root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)


@pytest.mark.slow
def test_a_second_run_on_the_same_output_folder_stops_at_once_and_damages_nothing(tmp_path):
    """Two `sentcl reproduce` on one --out: the second stops at once with one line naming the folder
    and the run holding it; the first finishes with its own results."""
    root = make_project(tmp_path / "proj")
    go = tmp_path / "go"
    cell = ("import time, pathlib\n"
            f"pathlib.Path(out_dir, 'started').write_text('1')\n"
            f"while not pathlib.Path({str(go)!r}).exists():\n    time.sleep(0.2)\n"
            "pathlib.Path(out_dir, 'result.txt').write_text(f'first run, seed {seed}')")
    write_notebook(root / "notebooks" / "bsc.ipynb", cells=[cell])
    out = tmp_path / "out"
    args = ("reproduce", "--profile", "smoke", "--out", str(out), "--no-book", "--only", "bsc")
    first = _sentcl(root, *args, "-p", "seed", "1")
    try:
        deadline = time.monotonic() + 120
        while not (out / "started").exists():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.2)
        second = _sentcl(root, *args, "-p", "seed", "2")
        _, err = second.communicate(timeout=60)
        assert second.returncode == 2
        (line,) = err.strip().splitlines()
        assert line.startswith(f"sentcl: error: the output folder {out} is in use by pid {first.pid} (sentcl reproduce")
        assert "-p seed 1" in line and "write to another folder" in line
    finally:
        go.write_text("go")
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert (out / "result.txt").read_text() == "first run, seed 1"
    assert [r.parameters["seed"] for r in read_run_records(out / "records")] == [1]  # one record: the first's


@pytest.mark.slow
def test_a_notebook_run_on_its_own_claims_its_chapter(tmp_path):
    """A chapter notebook run outside `sentcl reproduce` (papermill, Jupyter) claims its chapter of the
    output folder for as long as its kernel lives; a runner for that chapter then stops at once, and
    the same kernel may start the chapter again."""
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time\nfrom sentcl.book.notebook.chapter_run import ChapterRun\n"
         f"ChapterRun('bsc', profile='smoke', data_dir=None, out_dir={str(out)!r})\n"
         f"ChapterRun('bsc', profile='smoke', data_dir=None, out_dir={str(out)!r})  # run again in one kernel\n"
         "print('claimed', flush=True)\nsys.stdin.readline()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "claimed", holder.stderr.read()
        root = make_project(tmp_path / "proj")
        write_notebook(root / "notebooks" / "bsc.ipynb")
        proc = _sentcl(root, "reproduce", "--profile", "smoke", "--out", str(out), "--no-book", "--only", "bsc")
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2
        assert f"the output folder {out} (chapter bsc) is in use by pid {holder.pid} (notebook bsc" in err
        assert not (out / "notebooks").exists()
    finally:
        holder.communicate("done\n", timeout=30)


def test_the_command_reads_its_chapters_without_importing_sentence_transformers():
    """`sentcl reproduce` (its runner, every chapter module, their plans, the output folder's readers) imports no
    sentence-transformers: that takes seconds, which every command paid before its first line (12 s for --help, 5 s
    now here); the notebooks and the tasks that train import it where they use it."""
    code = ("import sys\nimport sentcl.book.publishing.runner, sentcl.chapters, sentcl.cli\n"
            "from sentcl.chapters import CHAPTERS\n"
            "assert CHAPTERS and all(spec.plan for spec in CHAPTERS.values() if spec.build)\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('sentence_transformers', 'transformers')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
