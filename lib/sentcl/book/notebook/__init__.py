"""The book side of a chapter notebook, in one import line.

A notebook imports what it reports through from here (``from sentcl.book.notebook import ChapterRun, Claim``): the
one object it reports through (:class:`~sentcl.book.notebook.chapter_run.ChapterRun`), the claims it adds
(:class:`~sentcl.book.output.claims.Claim`), the measured benchmarks it shows (:func:`measurement`, its own or its
demo's :func:`rate_rule`), :func:`show` for those and for the cost of its paper profile (its chapter module's
``paper_cost()``), and the geometry chapter's figures. What is one chapter's comes from its module
(``sentcl.chapters.<chapter>``), the science from the science packages.

The fifth floor (``tests/test_layout.py``, ``FLOORS``): :mod:`~sentcl.book.notebook.chapter_run` writes the output
folder, counts its plan and draws its tables; only the build floor stands above it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

from tqdm import TqdmWarning

from ..estimates.benchmarks import measurement, rate_rule
from ..output.claims import Claim
from ..output.geometry_files import alignment_uniformity_figure, anisotropy_figure, distinct_models, load_geometry, score_figure
from .chapter_run import ChapterRun

# tqdm.auto warns, when it is first imported in a kernel without ipywidgets (papermill, a plain Jupyter), that its
# bars will be text: that is what the chapters want. The notebook's imports after this one (sentence-transformers)
# import it, before any run exists to quiet it: quieted here, on the import every notebook makes first.
warnings.filterwarnings("ignore", category=TqdmWarning)


def show(parts: Iterable[str | Any]) -> None:
    """Display ``parts`` in order in the notebook: a string as Markdown, anything else (a table) as it is; what a
    chapter module's ``paper_cost()`` or :func:`~sentcl.book.estimates.benchmarks.measurement` returns, for one line
    of a cost or measurement cell."""
    from IPython.display import Markdown, display

    for part in parts:
        display(Markdown(part) if isinstance(part, str) else part)


__all__ = ["ChapterRun", "Claim", "alignment_uniformity_figure", "anisotropy_figure", "distinct_models", "load_geometry",
           "measurement", "rate_rule", "score_figure", "show"]
