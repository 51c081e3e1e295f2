"""Verify a data root against the registry: every split's record count and dropped rows.

:func:`check` loads every split of every registered dataset (or of the named ones) from a
data root and compares what the loader returns with the registry's expected ``count``
and ``dropped``. Each split gets one status:

- ``ok``: loaded, and the counts are the registry's;
- ``MISSING``: a folder or file of the split is not in the data root (not an error:
  a data root may hold only some datasets; ``sentcl data download`` fills it);
- ``WRONG COUNT``: loaded, but the number of records or of dropped rows differs;
- ``ERROR``: the loader refused the files (the one-line error says file, line, what);
- ``UNCHECKED``: loaded, but the registry has no expected count to compare with;
- ``SAMPLE``: loaded from the project's sample data root, whose small counts are not
  the registry's (they are checked by the tests instead).

Only ``WRONG COUNT`` and ``ERROR`` make a check fail: something present is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataMissingError, SentclError
from ..paths import data_root
from .records import RetrievalSet
from .registry import SAMPLE_MARKER, info, load, registry

OK, MISSING, WRONG_COUNT, ERROR, UNCHECKED, SAMPLE = "ok", "MISSING", "WRONG COUNT", "ERROR", "UNCHECKED", "SAMPLE"
FAILING = (WRONG_COUNT, ERROR)


@dataclass
class SplitCheck:
    """The result of checking one split of one dataset."""

    dataset: str
    split: str
    expected: int | None
    found: int | None
    status: str
    expected_dropped: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    message: str = ""

    @property
    def failed(self) -> bool:
        return self.status in FAILING


def check_split(name: str, split: str, root: Path) -> SplitCheck:
    """Load one split from ``root`` and compare it with the registry."""
    expected = info(name).splits[split]
    result = SplitCheck(name, split, expected.count, None, OK, dict(expected.dropped))
    try:
        record = load(name, split, root)
    except DataMissingError as exc:
        result.status, result.message = MISSING, str(exc)
        return result
    except SentclError as exc:
        result.status, result.message = ERROR, str(exc)
        return result
    result.found, result.dropped = len(record), dict(record.dropped)
    sizes = expected.expected_sizes()
    found_sizes = retrieval_sizes(record, info(name).relevance_level) if sizes else {}
    if record.sample:
        result.status = SAMPLE
    elif expected.count is None:
        result.status, result.message = UNCHECKED, "the registry has no expected count for this split"
    elif result.found != expected.count or result.dropped != result.expected_dropped:
        result.status = WRONG_COUNT
        result.message = (
            f"expected {expected.count} records (dropped {expected.dropped or 'none'}), "
            f"found {result.found} (dropped {result.dropped or 'none'})"
        )
    elif found_sizes != sizes:
        result.status = WRONG_COUNT
        result.message = f"expected {sizes}, found {found_sizes}"
    return result


def retrieval_sizes(record: RetrievalSet, relevance_level: int) -> dict[str, int]:
    """Corpus size, judgements and relevant judgements of a retrieval record."""
    grades = [g for judged in record.qrels.values() for g in judged.values()]
    return {
        "corpus": len(record.corpus),
        "judgements": len(grades),
        "relevant": sum(g >= relevance_level for g in grades),
    }


def check(data_dir: str | Path | None = None, names: list[str] | None = None) -> list[SplitCheck]:
    """Check every split of the named datasets (default: all registered) in a data root."""
    root = data_root(data_dir)
    names = list(names) if names else list(registry())
    for name in names:
        info(name)  # an unknown name fails before any work, listing the valid ones
    return [check_split(name, split, root) for name in names for split in info(name).splits]


def missing_datasets(results: list[SplitCheck]) -> tuple[list[str], list[str]]:
    """(datasets with every split missing, datasets with only some splits missing)."""
    by_name: dict[str, list[SplitCheck]] = {}
    for r in results:
        by_name.setdefault(r.dataset, []).append(r)
    wholly = [n for n, rs in by_name.items() if all(r.status == MISSING for r in rs)]
    partly = [n for n, rs in by_name.items() if n not in wholly and any(r.status == MISSING for r in rs)]
    return wholly, partly


def format_table(results: list[SplitCheck]) -> str:
    """A plain-text table: dataset, split, expected, found, dropped, status (+ message)."""

    def dropped_text(d: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in d.items()) or "-"

    rows = [("dataset", "split", "expected", "found", "dropped (found)", "status")]
    for r in results:
        rows.append(
            (
                r.dataset,
                r.split,
                "?" if r.expected is None else str(r.expected),
                "-" if r.found is None else str(r.found),
                dropped_text(r.dropped) if r.found is not None else "-",
                r.status if r.status not in (ERROR, WRONG_COUNT) else f"{r.status}: {r.message}",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(5)]
    lines = []
    for row in rows:
        cells = [row[i].rjust(widths[i]) if i in (2, 3) else row[i].ljust(widths[i]) for i in range(5)]
        lines.append("  ".join([*cells, row[5]]).rstrip())
    lines.insert(1, "-" * max(len(line) for line in lines))
    return "\n".join(lines)


def summary(results: list[SplitCheck], root: Path) -> str:
    """Lines naming what is missing and what is wrong, after the table."""
    wholly, partly = missing_datasets(results)
    failed = [f"{r.dataset}/{r.split}" for r in results if r.failed]
    present = len({r.dataset for r in results} - set(wholly))
    lines = [
        f"data root {root}{' (sample data)' if (root / SAMPLE_MARKER).exists() else ''}: "
        f"{present} of {len({r.dataset for r in results})} datasets present"
    ]
    if wholly:
        lines.append("missing datasets: " + ", ".join(wholly))
    if partly:
        lines.append(
            "missing splits: "
            + ", ".join(
                f"{n} ({', '.join(r.split for r in results if r.dataset == n and r.status == MISSING)})" for n in partly
            )
        )
    if wholly or partly:
        lines.append("fill them with `sentcl data download NAME --data-dir DIR` (needs internet)")
    if failed:
        lines.append("WRONG: " + ", ".join(failed))
    return "\n".join(lines)
