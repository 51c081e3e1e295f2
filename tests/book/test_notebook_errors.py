"""A sentcl error ends a notebook with its one line: no traceback in papermill's log or the saved
notebook (the handler :func:`sentcl.errors.show_in_one_line` registers in the kernel on import), the
traceback back with ``$SENTCL_DEBUG=1``; an error that is not sentcl's keeps its traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

MESSAGE = "parameter x must be int like its default 0, got 'a'"


def _notebook(path: Path, failing: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        nbformat.v4.new_code_cell("x = 0", metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell("import sentcl.errors\nprint('imported')"),
        nbformat.v4.new_code_cell(f"def check():\n    {failing}\n\n\ncheck()"),
        nbformat.v4.new_code_cell("print('not reached')"),
    ]
    nbformat.write(nb, path)
    return path


def _run(tmp_path: Path, failing: str, **env: str) -> tuple[subprocess.CompletedProcess, list]:
    source = _notebook(tmp_path / "in.ipynb", failing)
    environ = {k: v for k, v in os.environ.items() if k != "SENTCL_DEBUG"} | env
    proc = subprocess.run([sys.executable, "-m", "papermill", str(source), str(tmp_path / "out.ipynb"), "--log-output"],
                          capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=300)
    nb = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert proc.returncode != 0 and len(errors) == 1
    assert "not reached" not in proc.stdout + proc.stderr  # the run stopped at the failing cell
    return proc, errors


def test_a_sentcl_error_ends_the_notebook_with_its_one_line(tmp_path):
    proc, [error] = _run(tmp_path, f"raise sentcl.errors.ConfigError({MESSAGE!r})")
    assert error.ename == "ConfigError" and error.traceback == [f"ConfigError: {MESSAGE}"]
    log = proc.stderr
    assert f"ConfigError: {MESSAGE}" in log
    assert "check()" not in log and "----> " not in log and "File " not in log.split("PapermillExecutionError")[1]


@pytest.mark.slow
def test_sentcl_debug_brings_the_traceback_back_and_other_errors_keep_theirs(tmp_path):
    _, [error] = _run(_mk(tmp_path / "debug"), f"raise sentcl.errors.ConfigError({MESSAGE!r})", SENTCL_DEBUG="1")
    assert error.ename == "ConfigError" and len(error.traceback) > 1 and "check()" in "".join(error.traceback)
    _, [error] = _run(_mk(tmp_path / "other"), "raise KeyError('not sentcl')")
    assert error.ename == "KeyError" and len(error.traceback) > 1


def test_outside_a_kernel_nothing_is_registered():
    from sentcl.errors import show_in_one_line

    assert show_in_one_line() is ("IPython" in sys.modules and sys.modules["IPython"].get_ipython() is not None)


def _mk(folder: Path) -> Path:
    folder.mkdir()
    return folder


@pytest.mark.slow
def test_a_chapter_notebook_given_a_data_dir_that_is_no_folder_stops_with_one_line(tmp_path):
    """`papermill notebooks/mnrl_sbert.ipynb out.ipynb -p profile demo -p data_dir /nonexistent`: the
    parameter check (the cell after the install cell) stops the run with the error's one line."""
    root = Path(__file__).resolve().parents[2]
    environ = {k: v for k, v in os.environ.items() if k not in ("SENTCL_DEBUG", "SENTCL_DATA")}
    proc = subprocess.run([sys.executable, "-m", "papermill", str(root / "notebooks" / "mnrl_sbert.ipynb"), "out.ipynb",
                           "-p", "profile", "demo", "-p", "data_dir", "/nonexistent"],
                          capture_output=True, text=True, env=environ, cwd=tmp_path, timeout=300)
    assert proc.returncode != 0
    nb = nbformat.read(tmp_path / "out.ipynb", as_version=4)
    [error] = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    line = "ConfigError: data root /nonexistent is not a directory (from data_dir / --data-dir)"
    assert error.traceback == [line]
    assert proc.stderr.rstrip().endswith(line) and "resolve_parameters" not in proc.stderr
