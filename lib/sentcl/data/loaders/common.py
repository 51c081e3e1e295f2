"""Reading helpers shared by the loaders: line numbers on every error.

Every problem in an input file becomes a :class:`~sentcl.errors.DataFormatError` that
names the file, the 1-based line and what was expected — never a traceback from inside
a parser.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from ...errors import ConfigError, DataFormatError
from ...progress import progress_bar
from ..records import LabelledPairs, ScoredPairs, Sentences, Triplets
from ..registry import DatasetInfo

# The three NLI classes, in the order SNLI, MultiNLI and SICK-E use everywhere (label ids 0, 1, 2).
NLI_LABELS = ("entailment", "neutral", "contradiction")

PROGRESS_BYTES = 50_000_000  # files larger than this show a progress bar while they are read

Quoting = Literal[0, 1, 2, 3]  # csv.QUOTE_MINIMAL, QUOTE_ALL, QUOTE_NONNUMERIC or QUOTE_NONE


def read_lines(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, line)`` without the line ending.

    A byte sequence that is not valid ``encoding`` raises a DataFormatError naming the
    line it is on (``utf-8-sig`` strips a leading byte-order mark). The file is streamed;
    files over ``PROGRESS_BYTES`` show a progress bar.
    """
    size = path.stat().st_size
    with open(path, "rb") as fh, progress_bar(
        total=size, unit="B", unit_scale=True, desc=f"reading {path.name}", disable=size < PROGRESS_BYTES, leave=False
    ) as bar:
        for number, raw in enumerate(fh, start=1):
            bar.update(len(raw))
            raw = raw.removesuffix(b"\n").removesuffix(b"\r")
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
    quoting: Quoting = csv.QUOTE_NONE,
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
        at = numbered[min(reader.line_num, len(numbered)) - 1][0] if numbered else 1
        raise DataFormatError(path, at, "well-formed quoted CSV", str(exc)) from None


def parse_score(value: str, path: Path, line: int, what: str = "a numeric score") -> float:
    """A finite float, or a DataFormatError naming the line."""
    try:
        score = float(value)
    except ValueError:
        raise DataFormatError(path, line, what, value) from None
    if not math.isfinite(score):
        raise DataFormatError(path, line, what, value)
    return score


def require_text(value: str, path: Path, line: int, column: str, *, strip: bool = True) -> str:
    """The text of a field, stripped unless ``strip=False``; an empty (or all-blank)
    sentence is an error naming the column.

    Evaluation sets keep their text exactly as distributed (``strip=False``): the
    published scores of a model are only reproduced on untouched text.
    """
    if not value.strip():
        raise DataFormatError(path, line, f"a non-empty sentence in column {column}", value)
    return value.strip() if strip else value


def require_pair(path: Path, line: int, values: tuple[str, str], columns: tuple[str, str]) -> tuple[str, str]:
    """The two sentences of a pair exactly as distributed (``require_text(..., strip=False)``
    on each, in order): an empty or all-blank sentence is an error naming its column."""
    first, second = (require_text(value, path, line, column, strip=False) for value, column in zip(values, columns, strict=True))
    return first, second


def check_range(value: float, low: float, high: float, path: Path, line: int, what: str) -> float:
    """``value`` if ``low <= value <= high``, else a DataFormatError naming the line."""
    if not low <= value <= high:
        raise DataFormatError(path, line, f"{what} between {low:g} and {high:g}", repr(value))
    return value


def read_jsonl(path: Path, encoding: str = "utf-8") -> Iterator[tuple[int, dict]]:
    """Yield ``(line_number, object)`` of a JSON-lines file (one JSON object per line).

    Blank lines are skipped; a line that is not a complete JSON object (e.g. a file cut
    inside a string) raises a DataFormatError naming the line.
    """
    for number, line in read_lines(path, encoding):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(path, number, "a complete JSON object", f"{exc.msg} (column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise DataFormatError(path, number, "a JSON object", type(obj).__name__)
        yield number, obj


def json_field(obj: dict, key: str, path: Path, line: int) -> str:
    """The string value of ``key`` in a JSON record; a missing key or a non-string value
    is a DataFormatError naming the line and the key."""
    if key not in obj:
        raise DataFormatError(path, line, f"a field {key!r}", f"only {sorted(obj)}")
    value = obj[key]
    if not isinstance(value, str):
        raise DataFormatError(path, line, f"a string in field {key!r}", repr(value))
    return value


R = TypeVar("R", ScoredPairs, LabelledPairs, Triplets, Sentences)


class RecordBuilder(Generic[R]):
    """Collects a loader's rows and dropped counts, then builds the record: the one place a
    row-by-row loader turns what it read into a :class:`ScoredPairs`, :class:`LabelledPairs`,
    :class:`Triplets` or :class:`Sentences`.

    ``add`` takes one row's values in the order of the record type's ``ROW_FIELDS``
    (ScoredPairs: sentence1, sentence2, score, subset; LabelledPairs: sentence1, sentence2,
    label id; Triplets: anchor, positive, negative; Sentences: text). ``dropped`` counts the
    rows the format says to drop, by reason; reasons counted zero times are left out of the
    record. ``fixed`` are the record's other fields (LabelledPairs' ``label_names``)::

        rows = RecordBuilder(ScoredPairs)
        rows.add("A man sings.", "A man is singing.", 4.6, "MSRvid")
        rows.dropped["unscored"] += 1
        record = rows.build(entry, split, files)
    """

    def __init__(self, record_type: type[R], **fixed: Any):
        self.record_type: type[R] = record_type
        self.fixed = fixed
        self.columns: tuple[list, ...] = tuple([] for _ in record_type.ROW_FIELDS)
        self.dropped: Counter = Counter()

    def add(self, *values: Any) -> None:
        """Append one row (one value per field of ``ROW_FIELDS``, in that order)."""
        if len(values) != len(self.columns):
            raise ConfigError(f"a {self.record_type.__name__} row has {len(self.columns)} values "
                              f"{self.record_type.ROW_FIELDS}, got {len(values)}")
        for column, value in zip(self.columns, values, strict=True):
            column.append(value)

    def build(self, entry: DatasetInfo, split: str, files: list[Path]) -> R:
        """The record of ``entry``'s ``split`` read from ``files`` (its ``sources``)."""
        rows: dict[str, Any] = dict(zip(self.record_type.ROW_FIELDS, self.columns, strict=True))
        return self.record_type(
            name=entry.name,
            split=split,
            **rows,
            **self.fixed,
            sources=[str(p) for p in files],
            dropped={reason: n for reason, n in self.dropped.items() if n},
        )


def _name(delimiter: str) -> str:
    return {"\t": "tab", ",": "comma", "|": "pipe"}.get(delimiter, repr(delimiter))
