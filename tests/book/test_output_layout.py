"""The output folder's layout is named in one place (sentcl.book.output.layout.Layout): every file the smoke book wrote
under <out> is at a path the layout names."""

from __future__ import annotations

from sentcl.book.output.layout import Layout
from sentcl.chapters import CHAPTERS


def named_paths(out) -> set:
    """Every folder or file the layout names under ``out``, for every chapter."""
    lay = Layout(out)
    paths = {lay.results_dir, lay.claims_dir, lay.geometry_dir, lay.records, lay.records / "precision", lay.book_source,
             lay.lock()}
    for chapter in CHAPTERS:
        paths |= {lay.results(chapter), lay.claims(chapter), lay.evidence(chapter), lay.coverage(chapter),
                  lay.geometry(chapter), lay.figures(chapter), lay.data_used(chapter), lay.notebook(chapter),
                  lay.chapter_files(chapter), lay.lock(chapter)}
    return paths


def test_every_path_the_smoke_book_wrote_is_one_the_layout_names(smoke_book):
    _project, out, status, output = smoke_book
    assert status == 0, output[-3000:]
    named = named_paths(out)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written
    stray = []
    for path in written:
        if not any(path == n or n in path.parents for n in named):
            stray.append(str(path.relative_to(out)))
    # the book's own build (jupyter-book's _build) lives in the book folder the smoke book shares with <out>
    stray = [s for s in stray if not s.startswith("_build/")]
    assert stray == []

