"""sentcl records to and from Hugging Face ``datasets.Dataset``.

:func:`to_hf` hands a record to anything that reads ``datasets`` (sentence-transformers' own
``SentenceTransformerTrainer``, ``Dataset.push_to_hub``); :func:`from_hf` reads a dataset
(one of the hub's, or one :func:`to_hf` made) into a sentcl record. The columns:

====================  ====================================================================
record                columns
====================  ====================================================================
``ScoredPairs``       ``sentence1``, ``sentence2``, ``score`` (float64), ``subset``
``LabelledPairs``     ``sentence1``, ``sentence2``, ``label`` (a ``ClassLabel`` whose names
                      are the record's ``label_names``)
``Triplets``          ``anchor``, ``positive``, ``negative``
``Sentences``         ``text``
``TrainingData``      its text columns in order, ``label`` when it has labels (int64 or
                      float32, as the labels are), ``id`` (int64)
====================  ====================================================================

Round trips are exact: the dataset keeps the record's name (``info.dataset_name``), split
(``dataset.split``) and provenance (``sources``, ``dropped`` and the sample-data flag, as JSON
in ``info.description``), so ``from_hf(to_hf(record), kind)`` gives the record back, texts,
numbers, label names and provenance included.

:func:`from_hf` takes ``columns`` to read other column names (``{"sentence1": "premise",
"sentence2": "hypothesis"}`` for ``stanfordnlp/snli``). On the hub a label of ``-1`` marks a
row without a (gold) label: such rows of a labelled-pairs dataset are dropped and counted in
``dropped["no_gold_label"]``, as sentcl's NLI loader counts SNLI's ``-`` rows. ``datasets``
is imported only when these functions run (the ``hf`` extra installs it); a missing column
or a column of the wrong type is a :class:`~sentcl.errors.ConfigError` naming the column
and what was expected.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..errors import ConfigError
from .records import LabelledPairs, ScoredPairs, Sentences, TrainingData, Triplets

# kind -> (required columns, optional columns); the record kinds of the registry plus TrainingData
KINDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "scored_pairs": (("sentence1", "sentence2", "score"), ("subset",)),
    "labelled_pairs": (("sentence1", "sentence2", "label"), ()),
    "triplets": (("anchor", "positive", "negative"), ()),
    "sentences": (("text",), ()),
    "training_data": ((), ("label", "id")),
}
NO_LABEL = -1  # the hub's label for a row without one
TEXT_DTYPES = ("string", "large_string")
PROVENANCE_KEY = "sentcl"  # the key of the provenance object in info.description

Record = ScoredPairs | LabelledPairs | Triplets | Sentences | TrainingData


def _datasets():
    try:
        import datasets
    except ImportError:
        raise ConfigError(
            "sentcl.data.hf needs the `datasets` package: pip install 'sentcl[hf]' (or pip install datasets)"
        ) from None
    return datasets


# --------------------------------------------------------------------------------------
# to_hf


def to_hf(record: Record):
    """The record as a ``datasets.Dataset`` (columns in the module docstring's table)."""
    datasets = _datasets()
    text = datasets.Value("string")
    if isinstance(record, TrainingData):
        return _training_data_to_hf(record, datasets)
    if isinstance(record, ScoredPairs):
        columns = {"sentence1": record.sentences1, "sentence2": record.sentences2, "score": record.scores.tolist(),
                   "subset": record.subsets}
        features = {"sentence1": text, "sentence2": text, "score": datasets.Value("float64"), "subset": text}
    elif isinstance(record, LabelledPairs):
        columns = {"sentence1": record.sentences1, "sentence2": record.sentences2, "label": record.labels.tolist()}
        features = {"sentence1": text, "sentence2": text, "label": datasets.ClassLabel(names=list(record.label_names))}
    elif isinstance(record, Triplets):
        columns = {"anchor": record.anchors, "positive": record.positives, "negative": record.negatives}
        features = dict.fromkeys(columns, text)
    elif isinstance(record, Sentences):
        columns, features = {"text": record.texts}, {"text": text}
    else:
        raise ConfigError(
            f"cannot convert a {type(record).__name__} to a datasets.Dataset; "
            "expected ScoredPairs, LabelledPairs, Triplets, Sentences or TrainingData"
        )
    provenance = {"sources": list(record.sources), "dropped": dict(record.dropped), "sample": bool(record.sample)}
    info = datasets.DatasetInfo(
        dataset_name=record.name,
        description=json.dumps({PROVENANCE_KEY: provenance}, ensure_ascii=False),
        features=datasets.Features(features),
    )
    return datasets.Dataset.from_dict(columns, info=info, split=record.split)


def _training_data_to_hf(data: TrainingData, datasets):
    clash = [c for c in data.columns if c in KINDS["training_data"][1]]
    if clash:
        raise ConfigError(f"{data.name}: text columns {clash} clash with the label/id columns; rename them first")
    columns: dict[str, list] = dict(data.columns)
    features = dict.fromkeys(data.columns, datasets.Value("string"))
    if data.labels is not None:
        columns["label"] = data.labels.tolist()
        features["label"] = datasets.Value("int64" if data.labels.dtype.kind == "i" else "float32")
    columns["id"] = data.ids.tolist()
    features["id"] = datasets.Value("int64")
    info = datasets.DatasetInfo(dataset_name=data.name, features=datasets.Features(features))
    return datasets.Dataset.from_dict(columns, info=info)


# --------------------------------------------------------------------------------------
# from_hf


def from_hf(
    dataset,
    kind: str,
    *,
    name: str | None = None,
    split: str | None = None,
    columns: Mapping[str, str] | None = None,
    label_names: Sequence[str] | None = None,
) -> Record:
    """A sentcl record (``kind``: scored_pairs, labelled_pairs, triplets, sentences or
    training_data) from one split of a Hugging Face dataset.

    Args:
        dataset: a ``datasets.Dataset`` (one split: ``load_dataset(...)["train"]``).
        name, split: the record's name and split; default: the dataset's ``info.dataset_name``
            and ``split`` (what :func:`to_hf` stores).
        columns: sentcl column -> dataset column, for the columns named otherwise (e.g.
            ``{"sentence1": "premise", "sentence2": "hypothesis"}``). For ``training_data`` its
            text columns (in order), else every column but ``label`` and ``id``.
        label_names: labelled pairs whose ``label`` is an integer column, not a ``ClassLabel``.
    """
    datasets = _datasets()
    if not isinstance(dataset, datasets.Dataset):
        raise ConfigError(f"from_hf reads one split, a datasets.Dataset; got a {type(dataset).__name__} (pick a split)")
    if kind not in KINDS:
        raise ConfigError(f"kind={kind!r}; valid: {sorted(KINDS)}")
    required, optional = KINDS[kind]
    mapping = dict(columns or {})
    if kind != "training_data":
        unknown = sorted(set(mapping) - set(required) - set(optional))
        if unknown:
            raise ConfigError(f"columns: no {kind} column {unknown}; valid: {list(required + optional)}")
    for target in mapping.values():
        if target not in dataset.column_names:
            raise ConfigError(f"columns: the dataset has no column {target!r}; it has {dataset.column_names}")
    reader = _Reader(dataset, datasets, mapping)
    if kind == "training_data":
        return _training_data(reader, mapping, name)
    name = name or dataset.info.dataset_name
    split = split or (str(dataset.split) if dataset.split is not None else None)
    if not name or not split:
        raise ConfigError("from_hf: pass name= and split= (the dataset does not record them)")
    provenance = _provenance(dataset.info.description)
    dropped = Counter(provenance.get("dropped", {}))
    meta: dict[str, Any] = {"name": name, "split": split, "sources": list(provenance.get("sources", [])),
            "sample": bool(provenance.get("sample", False))}
    if kind == "scored_pairs":
        n = len(dataset)
        record: ScoredPairs | LabelledPairs | Triplets | Sentences = ScoredPairs(
            sentences1=reader.texts("sentence1"), sentences2=reader.texts("sentence2"), scores=np.asarray(reader.scores("score")),
            subsets=reader.texts("subset") if reader.has("subset") else [name] * n, **meta,
        )
    elif kind == "labelled_pairs":
        labels, names = reader.labels("label", label_names)
        keep = [i for i, label in enumerate(labels) if label != NO_LABEL]
        dropped["no_gold_label"] += len(labels) - len(keep)
        s1, s2 = reader.texts("sentence1"), reader.texts("sentence2")
        record = LabelledPairs(
            sentences1=[s1[i] for i in keep], sentences2=[s2[i] for i in keep], labels=np.asarray([labels[i] for i in keep]),
            label_names=names, **meta,
        )
    elif kind == "triplets":
        record = Triplets(anchors=reader.texts("anchor"), positives=reader.texts("positive"),
                          negatives=reader.texts("negative"), **meta)
    else:
        record = Sentences(texts=reader.texts("text"), **meta)
    record.dropped = {reason: n for reason, n in dropped.items() if n}
    return record


def _training_data(reader: _Reader, mapping: dict[str, str], name: str | None) -> TrainingData:
    special = KINDS["training_data"][1]
    text_columns = [c for c in mapping if c not in special] or [
        c for c in reader.dataset.column_names if c not in {reader.column(s) for s in special}
    ]
    if not text_columns:
        raise ConfigError(f"training data needs at least one text column; the dataset has {reader.dataset.column_names}")
    return TrainingData(
        columns={c: reader.texts(c) for c in text_columns},
        labels=reader.numbers("label", "an integer or float label column") if reader.has("label") else None,
        ids=reader.numbers("id", "an integer id column", integers=True) if reader.has("id") else None,  # type: ignore[arg-type]  # None: ids 0 … n-1
        name=name or reader.dataset.info.dataset_name or "train",
    )


def _provenance(description: str | None) -> dict[str, Any]:
    """The provenance :func:`to_hf` stored, or nothing (a hub dataset's description is prose)."""
    try:
        stored = json.loads(description or "")
    except ValueError:
        return {}
    return stored.get(PROVENANCE_KEY, {}) if isinstance(stored, dict) else {}


class _Reader:
    """Reads sentcl columns out of a dataset, checking each column's type and values."""

    def __init__(self, dataset, datasets, mapping: dict[str, str]):
        self.dataset, self.datasets, self.mapping = dataset, datasets, mapping

    def column(self, name: str) -> str:
        return self.mapping.get(name, name)

    def has(self, name: str) -> bool:
        return self.column(name) in self.dataset.column_names

    def _feature(self, name: str, expected: str):
        column = self.column(name)
        if column not in self.dataset.column_names:
            raise ConfigError(f"column {column!r}: missing, expected {expected}; the dataset has {self.dataset.column_names}")
        return column, self.dataset.features[column]

    def _values(self, column: str, expected: str) -> list:
        values = list(self.dataset[column])
        for row, value in enumerate(values):
            if value is None:
                raise ConfigError(f"column {column!r}: row {row} is empty (None), expected {expected}")
        return values

    def texts(self, name: str) -> list[str]:
        expected = "a string column"
        column, feature = self._feature(name, expected)
        if not isinstance(feature, self.datasets.Value) or feature.dtype not in TEXT_DTYPES:
            raise ConfigError(f"column {column!r}: expected {expected}, found {feature}")
        return self._values(column, "a string")

    def numbers(self, name: str, expected: str, *, integers: bool = False) -> np.ndarray:
        column, feature = self._feature(name, expected)
        dtype = feature.dtype if isinstance(feature, (self.datasets.Value, self.datasets.ClassLabel)) else None
        allowed = ("int", "uint") if integers else ("int", "uint", "float")
        if dtype is None or not dtype.startswith(allowed):
            raise ConfigError(f"column {column!r}: expected {expected}, found {feature}")
        return np.asarray(self._values(column, "a number"), dtype=np.float64 if dtype.startswith("float") else np.int64)

    def scores(self, name: str) -> list[float]:
        column = self.column(name)
        scores = self.numbers(name, "a float or integer score column").astype(np.float64)
        bad = next((i for i, s in enumerate(scores) if not math.isfinite(s)), None)
        if bad is not None:
            raise ConfigError(f"column {column!r}: row {bad} is {scores[bad]}, expected a finite score")
        return scores.tolist()

    def labels(self, name: str, label_names: Sequence[str] | None) -> tuple[list[int], tuple[str, ...]]:
        """Label ids (``-1``: no label) and the label names: a ClassLabel's own, or
        ``label_names`` for an integer column (both given: they must agree)."""
        column, feature = self._feature(name, "a ClassLabel or integer label column")
        if isinstance(feature, self.datasets.ClassLabel):
            names = tuple(feature.names)
            if label_names is not None and tuple(label_names) != names:
                raise ConfigError(
                    f"column {column!r}: label_names {list(label_names)} differ from its ClassLabel names {list(names)}"
                )
        elif label_names is None:
            raise ConfigError(f"column {column!r}: expected a ClassLabel column, found {feature}; "
                              "pass label_names= for an integer label column")
        else:
            names = tuple(label_names)
        labels = self.numbers(name, "a ClassLabel or integer label column", integers=True).tolist()
        bad = next((i for i, label in enumerate(labels) if not (label == NO_LABEL or 0 <= label < len(names))), None)
        if bad is not None:
            raise ConfigError(f"column {column!r}: row {bad} has label {labels[bad]}, expected -1 (none) or 0-{len(names) - 1}")
        return labels, names
