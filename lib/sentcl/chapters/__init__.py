"""The book's chapters, one package each, and the one registry of them.

A chapter's package (``sentcl/chapters/<name>/``) holds everything that is that chapter's and not its
notebook's story: its title, the data its paper rows need, its GPU-memory rows, its measured records, its plan
of runs and its recipes (BSC's variants, the geometry chapter's comparison of methods), as its ``CHAPTER`` (a
:class:`sentcl.book.chapter_spec.Chapter`). The book's generic modules read these objects and never name a chapter.
:data:`CHAPTERS` finds them (every package here with a ``CHAPTER``; no list names them), in book order
(:attr:`~sentcl.book.chapter_spec.Chapter.order`); :func:`chapter` finds one.

Adding a chapter: ``docs/extending.md`` (its package with ``CHAPTER``, its paper values ``data/papers/<name>.csv``, its notebook
and profiles, its page; ``tests/test_extending.py`` follows the recipe).
"""

from __future__ import annotations

import importlib
import pkgutil

from ..book.chapter_spec import Chapter
from ..errors import ConfigError


def discover(package: str) -> dict[str, Chapter]:
    """Every ``CHAPTER`` of the packages inside ``package`` (a module beside them is not a chapter), by name, in book
    order; a package whose ``CHAPTER`` is missing or named otherwise is a ConfigError naming it."""
    found = []
    for info in pkgutil.iter_modules(importlib.import_module(package).__path__):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{package}.{info.name}")
        spec = getattr(module, "CHAPTER", None)
        if not isinstance(spec, Chapter) or spec.name != info.name:
            raise ConfigError(f"{module.__name__}: a chapter package defines CHAPTER, a Chapter named {info.name!r}")
        found.append(spec)
    return {c.name: c for c in sorted(found, key=lambda c: (c.order, c.name))}


CHAPTERS: dict[str, Chapter] = discover(__name__)
"""Every chapter by name, in book order; a chapter's notebook is ``notebooks/<name>.ipynb``."""


def chapter(name: str) -> Chapter:
    """The chapter called ``name``; an unknown name is a ConfigError naming the chapters."""
    try:
        return CHAPTERS[name]
    except KeyError:
        raise ConfigError(f"unknown chapter {name!r}; chapters: {', '.join(CHAPTERS)}") from None


__all__ = ["CHAPTERS", "Chapter", "chapter", "discover"]
