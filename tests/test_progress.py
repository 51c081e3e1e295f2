"""Progress bars on the terminal of `sentcl reproduce` (sentcl.progress) and the encoder's bar.

The end-to-end check -- a notebook run by `sentcl reproduce` draws its bar on the runner's
terminal and leaves nothing in the executed notebook -- is in tests/book/test_runner.py.
"""

from __future__ import annotations

import io
import os

import pytest
from tqdm import tqdm

from sentcl import progress


@pytest.fixture
def terminal(monkeypatch):
    """$SENTCL_PROGRESS=terminal, with the terminal replaced by a StringIO (not a TTY)."""
    stream = io.StringIO()
    monkeypatch.setenv(progress.PROGRESS_ENV, progress.TERMINAL)
    monkeypatch.delenv(progress.LABEL_ENV, raising=False)
    monkeypatch.setattr(progress, "_STREAM", stream)
    return stream


def test_without_the_runner_it_is_a_text_bar_never_a_widget(monkeypatch):
    monkeypatch.delenv(progress.PROGRESS_ENV, raising=False)
    assert not progress.to_terminal() and not progress.in_kernel()
    bar = progress.progress_bar(range(3), disable=True)
    assert type(bar) is tqdm and list(bar) == [0, 1, 2]
    monkeypatch.setattr(progress, "in_kernel", lambda: True)  # papermill's, Colab's or Jupyter's kernel
    stream = io.StringIO()
    monkeypatch.setattr("sys.stderr", stream)
    bar = progress.progress_bar(range(4), desc="MNRLSBERT", unit="step")
    assert type(bar) is tqdm and bar.mininterval == progress.KERNEL_INTERVAL_S
    assert list(bar) == [0, 1, 2, 3]
    bar.close()
    assert "MNRLSBERT" in stream.getvalue() and "4/4" in stream.getvalue()  # on the kernel's stderr: the cell, papermill's log


def test_under_papermill_a_cells_progress_reaches_its_log_output(tmp_path):
    """`papermill --log-output` logs what the kernel writes to its streams: a training bar drawn
    by a cell shows there (and in the saved cell), without sentcl reproduce."""
    import json
    import subprocess
    import sys

    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from sentcl.progress import progress_bar\n"
        "for _ in progress_bar(range(7), desc='inner work', unit='step'):\n    pass")]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    env = {k: v for k, v in os.environ.items() if k not in (progress.PROGRESS_ENV, progress.LABEL_ENV)}
    proc = subprocess.run([sys.executable, "-m", "papermill", str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb"),
                           "--log-output"], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "inner work" in proc.stderr and "7/7" in proc.stderr
    saved = json.dumps(nbformat.read(tmp_path / "out.ipynb", as_version=4).cells[0].outputs)
    assert "7/7" in saved


def test_under_the_runner_it_draws_on_the_terminal_with_the_chapter(terminal, monkeypatch, capsys):
    monkeypatch.setenv(progress.LABEL_ENV, "mnrl_sbert")
    assert progress.to_terminal()
    bar = progress.progress_bar(range(5), desc="MNRLSBERT", unit="step")
    assert bar.fp is not None and bar.mininterval == progress.LOG_INTERVAL_S  # not a TTY: a log, fewer redraws
    assert list(bar) == [0, 1, 2, 3, 4]
    bar.close()
    drawn = terminal.getvalue()
    assert "mnrl_sbert · MNRLSBERT" in drawn and "5/5" in drawn
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""  # nothing on the process's own stderr (the notebook's)
    bare = progress.progress_bar(total=2, mininterval=0)
    bare.update(2)
    bare.close()
    assert "mnrl_sbert: 100%" in terminal.getvalue()  # no desc: the label alone


def test_the_terminal_is_the_descriptor_sys_stderr_names(monkeypatch):
    """Inside ipykernel, sys.stderr.fileno() is its copy of the original descriptor 2 (the
    terminal), while descriptor 2 itself is a pipe into the notebook."""
    read, write = os.pipe()

    class KernelStderr(io.StringIO):
        def fileno(self):
            return write

    monkeypatch.setattr(progress, "_STREAM", None)
    monkeypatch.setattr("sys.stderr", KernelStderr())
    stream = progress.terminal_stream()
    try:
        stream.write("to the terminal\n")
        stream.flush()
        assert os.read(read, 100) == b"to the terminal\n"
        assert progress.terminal_stream() is stream  # opened once per process
    finally:
        stream.close()
        os.close(read)
        os.close(write)
        monkeypatch.setattr(progress, "_STREAM", None)


@pytest.mark.slow
@pytest.mark.precision
def test_a_long_encoding_reports_every_text_on_the_terminal(terminal, monkeypatch):
    """show_progress=False keeps the notebook clean; under the runner a long encoding still shows
    on the terminal, and the bar counts every text of the forward passes (sentence-transformers'
    own batches: the results do not change). Compares fp32 with fp32: sentence-transformers' own encode
    runs in fp32, so sentcl's is asked for fp32 explicitly (bit-for-bit equality holds only then)."""
    from sentcl import embeddings
    from sentcl.models import tiny_model

    bars, shown = [], []

    def recording(*args, **kwargs):
        shown.append(not kwargs.get("disable", False))
        bars.append(progress.progress_bar(*args, **kwargs))
        return bars[-1]

    monkeypatch.setattr(embeddings, "progress_bar", recording)
    monkeypatch.setattr(progress, "LOG_INTERVAL_S", 0)  # redraw at every batch: update() returns True then
    model = tiny_model(0)
    distinct = [f"sentence number {i}" for i in range(embeddings.PROGRESS_MIN_TEXTS)]
    reference = model.encode(distinct, batch_size=128, convert_to_numpy=True)  # no bar, no hook
    vectors = embeddings.encode(model, distinct * 2, batch_size=128, precision="fp32", cache=False, show_progress=False)
    (bar,) = bars
    assert shown == [True] and bar.n == bar.total == embeddings.PROGRESS_MIN_TEXTS  # duplicates encoded once
    assert "encoding" in terminal.getvalue() and "128/1000" in terminal.getvalue()
    assert (vectors[: len(distinct)] == reference).all()  # counting changes nothing in the embeddings
    monkeypatch.delenv(progress.PROGRESS_ENV)
    again = embeddings.encode(model, distinct, batch_size=128, precision="fp32", cache=False, show_progress=False)
    assert shown == [True, False] and (again == reference).all()  # outside the runner False means no bar
    assert not model._forward_hooks  # the counting hook is removed
