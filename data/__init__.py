"""The project's data folder, shipped inside the package as ``sentcl._data``.

It holds the dataset registry, the papers' reported values and the small sample
datasets the project writes itself; never any file from a real data root.
"""
