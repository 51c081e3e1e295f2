"""The README's `sentcl reproduce` and `papermill` examples, as written: each `sentcl reproduce` line
runs with `--check` (every parameter, the profile and the data root checked as a run would, nothing
run; `D` and an absent ../shared/data become a temporary data root), each papermill line's `-p`
parameters exist in its notebook with values of their type, and `--help-notebook` runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sentcl import cli
from sentcl.book.parameters import notebook_parameters, parse_value

ROOT = Path(__file__).resolve().parents[2]


def _commands(program: str) -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S)
    lines = [line.split("  #")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if re.match(rf"^(\S+=\S+ )?(\.venv/bin/)?{program}\b", line)]


@pytest.mark.slow
def test_the_readmes_sentcl_reproduce_examples_pass_the_check(tmp_path, monkeypatch, capsys):
    """Each command through sentcl's own entry point (``sentcl.cli.main``) in this process: the first one as the
    installed ``sentcl`` script, to show the script is the same command."""
    commands = _commands("sentcl reproduce")
    assert any("-p " in c for c in commands) and len(commands) >= 3
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.chdir(ROOT)
    for i, command in enumerate(commands):
        argv = shlex.split(command)[1:]
        argv = [str(data) if a == "D" or (a == "../shared/data" and not (ROOT / a).is_dir()) else a for a in argv]
        if "--check" not in argv:  # --check runs nothing: it takes the place of --no-book
            argv = [a for a in argv if a != "--no-book"] + ["--check"]
        if i == 0:
            proc = subprocess.run([str(Path(sys.executable).with_name("sentcl")), *argv], cwd=ROOT, capture_output=True,
                                  text=True, timeout=300)
            code, out, err = proc.returncode, proc.stdout, proc.stderr
        else:
            code = cli.main(argv)
            out, err = capsys.readouterr()
        assert code == 0, f"{command}: {err}"
        assert "checked, nothing run" in out


def test_the_readmes_papermill_examples_name_parameters_the_notebooks_have():
    commands = _commands("papermill")
    assert len(commands) >= 3
    for command in commands:
        argv = shlex.split(command)[1:]
        if argv[0] == "--help-notebook":
            proc = subprocess.run([sys.executable, "-m", "papermill", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0 and "Unable to parse" not in proc.stdout + proc.stderr, command
            continue
        notebook = ROOT / argv[0] if (ROOT / argv[0]).is_file() else ROOT / "notebooks" / "mnrl_sbert.ipynb"  # NB: any chapter
        defaults = notebook_parameters(notebook)
        for i, arg in enumerate(argv):
            if arg == "-p":
                name, text = argv[i + 1], argv[i + 2]
                assert name in defaults, f"{command}: the notebook has no parameter {name}"
                parse_value(name, text, defaults[name], command)
