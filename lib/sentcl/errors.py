"""Errors that carry what went wrong, where, and what was expected.

Every error the library raises on purpose is a :class:`SentclError`; the command line
prints it as one line (no traceback) and exits with status 2. In a notebook (a Jupyter or
Colab kernel, papermill's) the same holds: importing this module in an IPython kernel
registers :func:`show_in_one_line`, so a cell that raises a SentclError ends the run with
``<ErrorName>: <message>`` as its only output, in the saved notebook and in papermill's log;
``$SENTCL_DEBUG=1`` (:data:`DEBUG_ENV`) shows the full traceback instead.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from os import PathLike
from typing import Literal, TypeVar, overload

T = TypeVar("T")

DEBUG_ENV = "SENTCL_DEBUG"
"""Set to 1 to see the traceback of a sentcl error in a notebook (by default: its one line)."""


class SentclError(Exception):
    """Base class of the errors sentcl raises on purpose."""


class DataFormatError(SentclError, ValueError):
    """A data file does not have the expected format.

    The message names the file, the line (1-based, as an editor shows it), what was
    expected and what was found, e.g.::

        sts/2015/images.test.tsv:17: expected a numeric gold score in column 1, found 'abc'
    """

    def __init__(self, path: str | PathLike, line: int | None, expected: str, found: str | None = None):
        self.path = str(path)
        self.line = line
        self.expected = expected
        self.found = found
        where = self.path if line is None else f"{self.path}:{line}"
        msg = f"{where}: expected {expected}"
        if found is not None:
            shown = found if len(found) <= 80 else found[:77] + "..."
            msg += f", found {shown!r}"
        super().__init__(msg)


class DataMissingError(SentclError, FileNotFoundError):
    """A dataset (or one of its files) is not in the data root."""


class ConfigError(SentclError, ValueError):
    """A parameter, profile or option is invalid; the message lists the valid choices."""


class OutputError(SentclError, OSError):
    """An output file (e.g. ``sentcl evaluate --json``) cannot be written; the message names it and why."""


# --------------------------------------------------------------------------- shared validators
# One wording for every invalid option, wherever it is checked (losses, trainer configuration,
# encoders, evaluators): what the option is, what is allowed, what was given.


def check_choice(name: str, value: T, choices: Sequence[object]) -> T:
    """``value`` if it is one of ``choices``, else ``ConfigError("unknown <name> <value>; choose one of …")``."""
    if value not in choices:
        raise ConfigError(f"unknown {name} {value!r}; choose one of {', '.join(map(str, choices))}")
    return value


def check_number(
    name: str, value: object, *, low: float | None = None, high: float | None = None, low_open: bool = False
) -> float:
    """``value`` as a float if it is a finite real number (not a bool) in ``[low, high]`` (``(low, high]``
    with ``low_open``; an absent bound is unbounded), else a ConfigError naming the interval."""
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
    ok = math.isfinite(number)
    if ok and low is not None:
        ok = number > low if low_open else number >= low
    if ok and high is not None:
        ok = number <= high
    if not ok:
        bounds = f"{'(' if low_open else '['}{low if low is not None else '-inf'}, {high if high is not None else 'inf'}"
        bounds += "]" if high is not None else ")"
        raise ConfigError(f"{name} must be a number in {bounds}, got {value!r}")
    return float(number)


@overload
def check_positive_int(name: str, value: object, *, optional: Literal[False] = False) -> int: ...
@overload
def check_positive_int(name: str, value: object, *, optional: bool) -> int | None: ...
def check_positive_int(name: str, value: object, *, optional: bool = False) -> int | None:
    """``value`` if it is an integer ≥ 1 (not a bool; None too when ``optional``), else a ConfigError."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{name} must be a positive integer{' or None' if optional else ''}, got {value!r}")
    return value


# --------------------------------------------------------------------------- in a notebook


def _one_line(shell, etype, value, tb, tb_offset=None) -> None:
    """IPython's handler for a SentclError: the error's one line as the cell's error output (the
    full traceback when ``$SENTCL_DEBUG`` is set). The cell still fails: papermill stops there."""
    if os.environ.get(DEBUG_ENV, "").strip() not in ("", "0"):
        shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    else:
        shell._showtraceback(etype, value, [f"{etype.__name__}: {value}"])


def show_in_one_line() -> bool:
    """In a running IPython (a notebook kernel), show every :class:`SentclError` a cell raises as its
    one line, no traceback (:data:`DEBUG_ENV` brings the traceback back). Returns whether a kernel
    was found; a kernel whose custom exception handler is someone else's is left alone."""
    if "IPython" not in sys.modules:  # never imports IPython into a plain Python
        return False
    shell = sys.modules["IPython"].get_ipython()
    if shell is None or not hasattr(shell, "_showtraceback"):
        return False
    if shell.custom_exceptions in ((), (SentclError,)):
        shell.set_custom_exc((SentclError,), _one_line)
    return True


show_in_one_line()
