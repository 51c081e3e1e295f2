"""Progress bars that reach the terminal of ``sentcl reproduce``, not the notebook.

A chapter notebook run by ``sentcl reproduce`` (papermill) runs in a Jupyter kernel, whose
``sys.stderr`` is captured into the notebook: a training bar there would show nothing in the
terminal ("13/22 cells" for minutes) and clutter the saved notebook. :func:`progress_bar` is
``tqdm`` with one difference: when ``$SENTCL_PROGRESS`` is ``terminal`` (the runner sets it for
the kernels it starts), the bar is drawn on the terminal the kernel was started from, and the
notebook's outputs get nothing. Anywhere else (Jupyter by hand, Colab, a script, the tests) it
is ``tqdm.auto.tqdm``, unchanged.

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
    this process's notebook (``$SENTCL_PROGRESS=terminal``), else ``tqdm.auto.tqdm`` as usual.

    On the terminal, the description starts with ``$SENTCL_PROGRESS_LABEL`` when set, and a
    terminal that is not a TTY (a log file) is redrawn every :data:`LOG_INTERVAL_S` seconds.
    """
    if not to_terminal():
        from tqdm.auto import tqdm

        return tqdm(iterable, **tqdm_kwargs)
    from tqdm import tqdm

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


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, OSError, ValueError):
        return False


__all__ = ["LABEL_ENV", "PROGRESS_ENV", "TERMINAL", "progress_bar", "terminal_stream", "to_terminal"]
