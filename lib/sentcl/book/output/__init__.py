"""The output folder ``<out>``: what a run writes and every later step reads.

:mod:`~sentcl.book.output.layout` names every path under ``<out>`` (the one place that builds them); the others
read and write one kind of file there: :mod:`~sentcl.book.output.results` (paper values and our results),
:mod:`~sentcl.book.output.run_records` (run records), :mod:`~sentcl.book.output.evidence` (per-item scores and
training health), :mod:`~sentcl.book.output.claims` (the orderings and their verdicts) and
:mod:`~sentcl.book.output.geometry_files` (every model's alignment, uniformity and anisotropy, and their figures).

The book package's second floor (``tests/test_layout.py``, ``FLOORS``): above its ground (the chapter object,
the profiles, markdown), below everything that reads an output folder.
"""
