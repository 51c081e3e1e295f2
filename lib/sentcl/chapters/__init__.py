"""The book's chapters, one module each, and the one registry of them.

A chapter's module (``sentcl/chapters/<name>.py``) holds everything that is that chapter's and not its
notebook's story: its title, the data its paper rows need, its GPU-memory rows, its measured records, its plan
of runs, as its ``CHAPTER`` (a :class:`sentcl.book.chapter_spec.Chapter`). The book's generic modules read
these objects and never name a chapter. :data:`CHAPTERS` lists them in book order; :func:`chapter` finds one.

Adding a chapter: write ``notebooks/<name>.ipynb`` and ``sentcl/chapters/<name>.py`` with its ``CHAPTER``,
and list it here.
"""

from __future__ import annotations

from ..book.chapter_spec import Chapter
from ..errors import ConfigError
from . import bsc, geometry, ifcl, mnrl_sbert, rcl

CHAPTERS: dict[str, Chapter] = {c.name: c for c in (mnrl_sbert.CHAPTER, bsc.CHAPTER, rcl.CHAPTER, ifcl.CHAPTER,
                                                    geometry.CHAPTER)}
"""Every chapter by name, in book order; a chapter's notebook is ``notebooks/<name>.ipynb``."""


def chapter(name: str) -> Chapter:
    """The chapter called ``name``; an unknown name is a ConfigError naming the chapters."""
    try:
        return CHAPTERS[name]
    except KeyError:
        raise ConfigError(f"unknown chapter {name!r}; chapters: {', '.join(CHAPTERS)}") from None


__all__ = ["CHAPTERS", "Chapter", "chapter"]
