"""The book side of a chapter notebook, in one import line.

A notebook imports what it reports through from here (``from sentcl.book.notebook import ChapterRun, Claim``): the
one object it reports through (:class:`~sentcl.book.chapter.ChapterRun`), the claims it adds
(:class:`~sentcl.book.claims.Claim`), the measured benchmark and the cost of its paper profile it shows, and the
geometry chapter's figures. What is one chapter's comes from its module (``sentcl.chapters.<chapter>``), the
science from the science packages.
"""

from __future__ import annotations

from .benchmarks import measurement_frame
from .chapter import ChapterRun
from .claims import Claim
from .cost import chapter_stages, t4_checkpoints, t4_hours
from .geometry import alignment_uniformity_figure, anisotropy_figure, distinct_models, load_geometry, score_figure

__all__ = ["ChapterRun", "Claim", "alignment_uniformity_figure", "anisotropy_figure", "chapter_stages", "distinct_models",
           "load_geometry", "measurement_frame", "score_figure", "t4_checkpoints", "t4_hours"]
