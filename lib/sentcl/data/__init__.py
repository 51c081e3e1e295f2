"""Datasets: one local layout, a registry, loaders into a few record types.

``load(name, split, data_dir)`` reads a registered dataset from a data root (the layout
of ``../shared/data``); ``samples_root()`` is the project's own small sample data root
(written by ``python -m sentcl.data.samples``). :mod:`sentcl.data.check` verifies a data
root against the registry's expected counts and :mod:`sentcl.data.download` fills one from
the original sources; both are behind ``sentcl data check|download`` (:mod:`.cli`).
"""

from .records import LabelledPairs, RetrievalSet, ScoredPairs, Sentences, TrainingData, Triplets
from .registry import DatasetInfo, info, load, registry, samples_root

__all__ = [
    "DatasetInfo",
    "LabelledPairs",
    "RetrievalSet",
    "ScoredPairs",
    "Sentences",
    "TrainingData",
    "Triplets",
    "info",
    "load",
    "registry",
    "samples_root",
]
