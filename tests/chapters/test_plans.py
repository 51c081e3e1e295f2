"""Each chapter's smoke notebook builds exactly the artifacts its plan names (sentcl.book.estimates.plan): the smoke book runs
on a cache of its own (tests/conftest.py), so every ``<chapter>.*`` stage in it was built by that chapter's notebook.

To check one chapter alone: ``SENTCL_CACHE=/tmp/c sentcl reproduce --profile smoke --only rcl --no-book --out /tmp/o``,
then ``python tests/chapters/test_plans.py rcl /tmp/c``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sentcl.artifacts import MANIFEST
from sentcl.book.parameters import shipped_parameters
from sentcl.chapters import CHAPTERS

PLANNED = [name for name, c in CHAPTERS.items() if c.plan is not None and len(c.plan(shipped_parameters(name, "smoke")))]
NOT_YET: set[str] = set()
"""Chapters whose notebooks do not yet build through a named plan (their plan only counts the cost): a ratchet, so
that a chapter that gains one is checked here and none loses its own."""


def built_stages(cache: Path, chapter: str) -> set[str]:
    """The ``<chapter>.*`` artifact stages finished in the cache root ``cache`` (one name per stage; a stage built
    under two keys, e.g. with two configurations, is listed once and counted by :func:`keys_per_stage`)."""
    artifacts = cache / "artifacts"
    return {p.parent.parent.name for p in artifacts.glob(f"{chapter}.*/*/{MANIFEST}")}


def keys_per_stage(cache: Path, chapter: str) -> dict[str, int]:
    return {d.name: len(list(d.glob(f"*/{MANIFEST}"))) for d in (cache / "artifacts").glob(f"{chapter}.*")}


def compare(cache: Path, chapter: str) -> list[str]:
    """What differs between the smoke plan of ``chapter`` and the stages its notebook built in ``cache``."""
    planned = CHAPTERS[chapter].plan(shipped_parameters(chapter, "smoke")).names
    built = built_stages(cache, chapter)
    problems = [f"planned, not built: {n}" for n in planned if n not in built]
    problems += [f"built, not planned: {n}" for n in sorted(built - set(planned))]
    problems += [f"built under {k} keys: {n}" for n, k in keys_per_stage(cache, chapter).items() if k > 1]
    return problems


def test_which_chapters_plan_their_artifacts_by_name():
    assert set(CHAPTERS) - set(PLANNED) == NOT_YET


@pytest.mark.parametrize("chapter", PLANNED)
def test_the_smoke_notebook_builds_exactly_its_plan(smoke_book, chapter):
    _project, out, status, output = smoke_book
    assert status == 0, output[-3000:]
    cache = out.parent / "cache"
    assert (cache / "artifacts").is_dir(), f"no artifact cache at {cache}"
    assert compare(cache, chapter) == []


if __name__ == "__main__":
    found = compare(Path(sys.argv[2]), sys.argv[1])
    print("\n".join(found) or f"{sys.argv[1]}: the cache holds exactly its smoke plan's stages")
    sys.exit(1 if found else 0)
