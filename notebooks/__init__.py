"""The chapter notebooks and their profiles files, shipped inside the package as ``sentcl._notebooks``.

A notebook run outside a checkout (Colab, papermill on an installed sentcl) reads its parameters
cell's defaults and its profile from here (:func:`sentcl.book.parameters.resolve_parameters`).
"""
