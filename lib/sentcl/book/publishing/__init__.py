"""Building the book: ``sentcl reproduce`` (:mod:`~sentcl.book.publishing.runner`) runs the chapter notebooks with
papermill, in process or with their plans built first on a Ray cluster (:mod:`~sentcl.book.publishing.executor`), then
writes the HTML book (:mod:`~sentcl.book.publishing.site`); :mod:`~sentcl.book.publishing.install` keeps the repository
setting, the notebooks' install cell and the release wheel.

The top floor (``tests/test_layout.py``, ``FLOORS``): it runs the notebooks and builds the pages, and nothing
below imports it.
"""
