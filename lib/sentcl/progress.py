"""Progress bars that reach whoever runs the notebook: the terminal of ``sentcl reproduce``, the log
of ``papermill --log-output``, the cell on Colab or Jupyter.

:func:`progress_bar` is ``tqdm`` with two differences:

- when ``$SENTCL_PROGRESS`` is ``terminal`` (``sentcl reproduce`` sets it for the kernels it
  starts), the bar is drawn on the terminal the kernel was started from, and the notebook's
  outputs get nothing: a chapter notebook's kernel captures ``sys.stderr`` into the notebook,
  where a training bar would show nothing in the terminal ("13/22 cells" for minutes) and clutter
  the saved notebook;
- in any other Jupyter kernel (papermill, Colab, Jupyter) it is a text bar on the kernel's
  ``sys.stderr``, never a widget: text reaches papermill's ``--log-output`` (which logs the
  kernel's streams; a widget sends none) and shows in a Colab or Jupyter cell alike, redrawn at
  most every :data:`KERNEL_INTERVAL_S` seconds so that a long run leaves a readable log.

Outside a kernel (a script, the tests) it is plain ``tqdm``.

The terminal: an ipykernel forwards its file descriptor 2 into the notebook (a pipe it
watches) and keeps a copy of the original one, which ``sys.stderr.fileno()`` returns; outside
a kernel that is simply descriptor 2. ``$SENTCL_PROGRESS_LABEL`` (the chapter, set by the
runner) prefixes each bar's description, so the terminal says whose work it is.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import Any, TextIO

PROGRESS_ENV = "SENTCL_PROGRESS"
LABEL_ENV = "SENTCL_PROGRESS_LABEL"
TERMINAL = "terminal"
LOG_INTERVAL_S = 10.0
"""Seconds between redraws when the terminal is not a TTY (a log file): fewer lines in the log."""
KERNEL_INTERVAL_S = 1.0
"""Seconds between redraws in a Jupyter kernel: live in a cell, at most a line a second per bar in
papermill's log and in the saved notebook."""

_STREAM: TextIO | None = None


def to_terminal() -> bool:
    """Whether progress bars go to the terminal of ``sentcl reproduce`` (``$SENTCL_PROGRESS=terminal``)."""
    return os.environ.get(PROGRESS_ENV, "").strip().lower() == TERMINAL


def terminal_stream() -> TextIO:
    """A text stream on the terminal this process was started from (bypassing an ipykernel's
    capture of descriptor 2), opened once per process."""
    global _STREAM
    if _STREAM is None or _STREAM.closed:
        fd = None
        with contextlib.suppress(AttributeError, OSError, ValueError, io.UnsupportedOperation):
            fd = sys.stderr.fileno()  # inside ipykernel: its copy of the original descriptor 2
        if fd is None:
            fd = sys.__stderr__.fileno() if sys.__stderr__ is not None else 2
        _STREAM = os.fdopen(os.dup(fd), "w", buffering=1, encoding="utf-8", errors="replace")
    return _STREAM


def progress_bar(iterable: Any = None, **tqdm_kwargs: Any):
    """A tqdm progress bar (same arguments): on the terminal of ``sentcl reproduce`` when it runs
    this process's notebook (``$SENTCL_PROGRESS=terminal``), else a text bar on ``sys.stderr``.

    On the terminal, the description starts with ``$SENTCL_PROGRESS_LABEL`` when set, and a
    terminal that is not a TTY (a log file) is redrawn every :data:`LOG_INTERVAL_S` seconds. In
    a Jupyter kernel the text bar is redrawn every :data:`KERNEL_INTERVAL_S` seconds.
    """
    from tqdm import tqdm

    if not to_terminal():
        if in_kernel():
            tqdm_kwargs.setdefault("mininterval", KERNEL_INTERVAL_S)
        return tqdm(iterable, **tqdm_kwargs)
    stream = terminal_stream()
    tqdm_kwargs.setdefault("file", stream)
    label = os.environ.get(LABEL_ENV, "").strip()
    if label:
        desc = tqdm_kwargs.get("desc")
        tqdm_kwargs["desc"] = f"{label} · {desc}" if desc else label
    if not _isatty(tqdm_kwargs["file"]):
        tqdm_kwargs.setdefault("mininterval", LOG_INTERVAL_S)
    else:
        tqdm_kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, **tqdm_kwargs)


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (papermill's, Colab's, Jupyter's): an IPython shell with a kernel."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


__all__ = ["LABEL_ENV", "PROGRESS_ENV", "TERMINAL", "in_kernel", "progress_bar", "terminal_stream", "to_terminal"]
