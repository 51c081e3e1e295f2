"""The book's pages, written from an output folder: comparison tables (:mod:`~sentcl.book.pages.report`), each
chapter's findings (:mod:`~sentcl.book.pages.findings`), the introduction's answer (:mod:`~sentcl.book.pages.answer`),
the environment page (:mod:`~sentcl.book.pages.environment`) and the generated fragments, scorecard and datasets
appendix (:mod:`~sentcl.book.pages.fragments`).

The fourth floor (``tests/test_layout.py``, ``FLOORS``): it reads the output folder and the estimates.
"""
