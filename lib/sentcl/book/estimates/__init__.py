"""What a profile's plan of runs will cost and need, before anything runs.

:mod:`~sentcl.book.estimates.plan` (every stage a chapter builds, from its resolved parameters),
:mod:`~sentcl.book.estimates.cost` (a plan's optimizer steps and hours), :mod:`~sentcl.book.estimates.coverage`
(which paper cells a run can fill with its data), :mod:`~sentcl.book.estimates.gpu_memory` (the paper
profile's peak GPU memory) and :mod:`~sentcl.book.estimates.benchmarks` (the measured records they rest on).

The third floor (``tests/test_layout.py``, ``FLOORS``): it reads the output folder's files, never a page.
"""
