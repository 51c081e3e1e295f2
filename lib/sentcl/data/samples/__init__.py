"""Write ``data/samples/``: small datasets the project makes itself, in the real layout.

``python -m sentcl.data.samples [--out DIR]`` writes a data root in the layout and file
formats of ``../shared/data`` (so the same loaders read it) from sentence templates
defined here: :mod:`~sentcl.data.samples.pairs` (STS, NLI, paraphrase, Chinese, wiki1m)
and :mod:`~sentcl.data.samples.retrieval` (a FAQ set in COUGH's layout, a re-ranking set
in SemEval-2016 Task 3's). No text from any real dataset. The output is deterministic and
the tests compare it byte for byte with the committed copy. Everything loaded from it is
marked ``sample=True`` (the ``SAMPLE_DATA.md`` marker).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from ...io import atomic_write_text
from ..registry import SAMPLE_MARKER, samples_root
from .pairs import build
from .retrieval import write_retrieval_samples

MARKER_TEXT = """\
# Sample data (written by the project, not real data)

This folder is a data root in the layout and file formats of a real one (see the
registry in `data/registry/`), holding small datasets the project generates itself from
sentence templates. The smoke profile and machines without a real data root use it.
Every record loaded from here has `sample=True`, and everything built on it is labelled
as sample data wherever it is shown. Its numbers say nothing about the papers.

Every file here is written by `python -m sentcl.data.samples` (deterministic; the tests
check that the committed files match): the STS, NLI, paraphrase, Chinese and wiki1m
datasets by `sentcl.data.samples.pairs`, the retrieval sets (a FAQ set in COUGH's layout, a
re-ranking set in SemEval-2016 Task 3's layout) by `sentcl.data.samples.retrieval`.
"""


def write(out: str | Path | None = None) -> list[Path]:
    """Write every sample file under ``out`` (default: the project's ``data/samples``):
    the ``SAMPLE_DATA.md`` marker, this module's datasets and the retrieval samples of
    :mod:`sentcl.data.samples.retrieval`; returns the paths written."""
    root = Path(out) if out is not None else samples_root()
    files = {SAMPLE_MARKER: MARKER_TEXT, **build()}
    return [atomic_write_text(root / rel, text) for rel, text in files.items()] + write_retrieval_samples(root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sentcl.data.samples", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", help="the sample data root to write (default: the project's data/samples)")
    args = parser.parse_args(argv)
    paths = write(args.out)
    print(f"wrote {len(paths)} files, {sum(p.stat().st_size for p in paths):,} bytes, under {paths[0].parent}")
    return 0

