"""Reading helpers shared by the loaders: line numbers on every error.

Every problem in an input file becomes a :class:`~sentcl.errors.DataFormatError` that
names the file, the 1-based line and what was expected — never a traceback from inside
a parser.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Iterator

from ...errors import DataFormatError


def read_lines(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without the line ending.

    A byte sequence that is not valid ``encoding`` raises a DataFormatError naming the
    line it is on (``utf-8-sig`` strips a leading byte-order mark).
    """
    data = path.read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    for number, raw in enumerate(lines, start=1):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        codec = encoding if number == 1 else encoding.replace("-sig", "")
        try:
            yield number, raw.decode(codec)
        except UnicodeDecodeError as exc:
            raise DataFormatError(
                path, number, f"{encoding} text", f"byte {raw[exc.start:exc.start + 1]!r} at column {exc.start + 1}"
            ) from None


def read_delimited(
    path: Path,
    delimiter: str = "\t",
    *,
    min_fields: int,
    quoting: int = csv.QUOTE_NONE,
    encoding: str = "utf-8",
    header: list[str] | None = None,
) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, fields)`` of a delimited file.

    With ``header`` the first line must equal it (after stripping surrounding spaces)
    and is not yielded. A row with fewer than ``min_fields`` fields is an error. With
    ``csv.QUOTE_MINIMAL`` a quoted field may span lines; the number is then the line
    the record starts on.
    """
    text_lines = read_lines(path, encoding)
    numbered: list[tuple[int, str]] = list(text_lines)
    if header is not None:
        if not numbered:
            raise DataFormatError(path, 1, f"a header line {delimiter.join(header)!r}", "an empty file")
        first = [h.strip() for h in numbered[0][1].split(delimiter)]
        if first[: len(header)] != header:
            raise DataFormatError(path, 1, f"header columns {header}", numbered[0][1])
        numbered = numbered[1:]
    if quoting == csv.QUOTE_NONE:
        for number, line in numbered:
            fields = line.split(delimiter)
            if len(fields) < min_fields:
                raise DataFormatError(path, number, f"at least {min_fields} {_name(delimiter)}-separated fields", line)
            yield number, fields
        return
    # Quoted CSV: let the csv module join multi-line records; track starting line numbers.
    reader = csv.reader((line + "\n" for _, line in numbered), delimiter=delimiter, quoting=quoting, strict=True)
    consumed = 0
    try:
        for fields in reader:
            number = numbered[consumed][0]
            consumed = reader.line_num
            if len(fields) < min_fields:
                raise DataFormatError(path, number, f"at least {min_fields} {_name(delimiter)}-separated fields", delimiter.join(fields))
            yield number, fields
    except csv.Error as exc:
        line = numbered[min(reader.line_num, len(numbered)) - 1][0] if numbered else 1
        raise DataFormatError(path, line, "well-formed quoted CSV", str(exc)) from None


def parse_score(value: str, path: Path, line: int, what: str = "a numeric score") -> float:
    """A finite float, or a DataFormatError naming the line."""
    try:
        score = float(value)
    except ValueError:
        raise DataFormatError(path, line, what, value) from None
    if not math.isfinite(score):
        raise DataFormatError(path, line, what, value)
    return score


def require_text(value: str, path: Path, line: int, column: str) -> str:
    """The stripped text of a field; an empty sentence is an error naming the column."""
    text = value.strip()
    if not text:
        raise DataFormatError(path, line, f"a non-empty sentence in column {column}", value)
    return text


def _name(delimiter: str) -> str:
    return {"\t": "tab", ",": "comma", "|": "pipe"}.get(delimiter, repr(delimiter))
