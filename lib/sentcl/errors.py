"""Errors that carry what went wrong, where, and what was expected.

Every error the library raises on purpose is a :class:`SentclError`; the command line
prints it as one line (no traceback) and exits with status 2.
"""

from __future__ import annotations

from os import PathLike


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
