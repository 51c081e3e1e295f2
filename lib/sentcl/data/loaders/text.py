"""Plain sentences, one per line: SimCSE's wiki1m (``simcse_wiki1m/wiki1m_for_simcse*.txt``)."""

from __future__ import annotations

from pathlib import Path

from ..records import Sentences
from ..registry import DatasetInfo, loader
from .common import RecordBuilder, read_lines, require_text


@loader("wiki1m")
def load_sentences(entry: DatasetInfo, split: str, files: list[Path]) -> Sentences:
    """Every line is one sentence, kept as written; a blank line is an error."""
    rows = RecordBuilder(Sentences)
    for path in files:
        for line, text in read_lines(path):
            rows.add(require_text(text, path, line, "1 (the sentence)", strip=False))
    return rows.build(entry, split, files)
