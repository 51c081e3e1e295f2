"""The recorded benchmark results, shipped inside the package as ``sentcl._benchmarks``.

The chapter notebooks' cost cells and the chapter pages' GPU-memory notes read them there
(:func:`sentcl.paths.benchmark_result`), so they show outside a checkout too.
"""
