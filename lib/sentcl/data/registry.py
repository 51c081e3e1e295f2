"""The dataset registry: one YAML file per dataset in ``data/registry/``, plus the loaders.

A registry entry says where a dataset comes from, under which licence, which splits it
has, which files of the data root hold each split and how many records each split must
give. A loader is a function registered with :func:`loader` under the dataset's name; it
reads the split's original files (listed in the entry, found under
``<data root>/<folder>/``) and returns one of the record types of
:mod:`sentcl.data.records`.

Entry schema (``data/registry/<name>.yaml``)::

    name: stsbenchmark            # the key used everywhere (file name without .yaml)
    title: STS Benchmark
    kind: scored_pairs            # scored_pairs | labelled_pairs | triplets | retrieval | sentences
    folder: stsbenchmark          # folder under the data root
    papers: [mnrl_sbert, bsc]     # chapters that use it
    source: https://...           # the original distribution
    citation: Cer et al. 2017 ... # who to cite
    licence: CC BY-SA 4.0 (scores); texts under their sources' licences
    splits:
      test:
        files: [sts-test.csv]     # relative to the folder
        count: 1379               # records the loader must return
        dropped: {}               # what the format defines as droppable, reason -> count
    download:                     # how `sentcl data download` fills the folder
      - action: extract           # save | extract | sts_paste | paste_columns | split_rows
        url: https://...          #   | head_lines | requires (see sentcl.data.download)
        sha256: ...               # of the fetched file, when known
        members: {stsbenchmark/sts-test.csv: sts-test.csv}
    hub:                          # optional (NLI sets): the Hugging Face copy a paper used,
      repo: stanfordnlp/snli      #   tried before the download steps (sentcl.data.download)
      revision: cdb5...           # a commit (40 hex digits): the copy is pinned
      files:                      # layout file -> parquet file of the repository
        snli_1.0_train.jsonl: {path: plain_text/train-00000-of-00001.parquet, sha256: ...}
    notes: free text shown in the datasets appendix

``count: null`` means the expected count is unknown (``sentcl data check`` then reports
the split as UNCHECKED); ``folder: .`` is the data root itself, for a dataset built from
the files of other datasets (AllNLI from SNLI and MultiNLI).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError, DataMissingError
from ..paths import data_root, resource

SAMPLE_MARKER = "SAMPLE_DATA.md"  # present at the top of data/samples, a data root of sample data

ENTRY_KEYS = {
    "name", "title", "kind", "folder", "papers", "source", "citation", "licence",
    "splits", "download", "hub", "notes", "relevance_level", "metrics",
}
SPLIT_KEYS = {"files", "count", "dropped", "corpus", "judgements", "relevant"}
HUB_KEYS = {"repo", "revision", "files"}
HUB_FILE_KEYS = {"path", "sha256"}
SHA1, SHA256 = re.compile("[0-9a-f]{40}"), re.compile("[0-9a-f]{64}")

KINDS = ("scored_pairs", "labelled_pairs", "triplets", "retrieval", "sentences")

# name -> function(entry: DatasetInfo, split: str, files: list[Path], **options) -> record
# ``files`` are the split's files from the registry, resolved under the data root.
LOADERS: dict[str, Callable[..., Any]] = {}


@dataclass(frozen=True)
class SplitInfo:
    files: tuple[str, ...]
    count: int | None
    dropped: dict[str, int] = field(default_factory=dict)
    # retrieval splits only: documents in the corpus, (query, document) judgements in the
    # qrels (grade 0 included) and judgements at or above the entry's relevance_level
    corpus: int | None = None
    judgements: int | None = None
    relevant: int | None = None

    def expected_sizes(self) -> dict[str, int]:
        """The retrieval sizes the registry states (only those it states)."""
        sizes = {"corpus": self.corpus, "judgements": self.judgements, "relevant": self.relevant}
        return {k: v for k, v in sizes.items() if v is not None}


@dataclass(frozen=True)
class HubFile:
    """One file of a Hugging Face dataset repository and the sha256 of its content."""

    path: str
    sha256: str


@dataclass(frozen=True)
class HubSource:
    """The Hugging Face copy of a dataset, pinned to a commit: ``files`` maps a file of the
    dataset's folder (as its splits list it) to the repository file it is converted from."""

    repo: str
    revision: str
    files: dict[str, HubFile]

    def url(self, path: str) -> str:
        """Where a repository file lives (for messages): ``hf://datasets/<repo>@<revision>/<path>``."""
        return f"hf://datasets/{self.repo}@{self.revision}/{path}"


@dataclass(frozen=True)
class DatasetInfo:
    name: str
    title: str
    kind: str
    folder: str
    papers: tuple[str, ...]
    source: str
    citation: str
    licence: str
    splits: dict[str, SplitInfo]
    download: tuple[dict, ...] = ()
    hub: HubSource | None = None
    notes: str = ""
    relevance_level: int = 1  # retrieval: the lowest grade that counts as relevant (trec_eval -l)
    metrics: str = ""  # retrieval: the metrics the papers report on it

    def split(self, split: str | None) -> str:
        """Resolve ``split`` (None means the dataset's only split, or 'test')."""
        if split is None:
            if len(self.splits) == 1:
                return next(iter(self.splits))
            if "test" in self.splits:
                return "test"
            raise ConfigError(f"{self.name}: choose a split from {sorted(self.splits)}")
        if split not in self.splits:
            raise ConfigError(f"{self.name} has no split {split!r}; valid: {sorted(self.splits)}")
        return split


def _parse_entry(path: Path) -> DatasetInfo:
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    required = ("name", "title", "kind", "folder", "source", "licence", "splits")
    missing = [k for k in required if k not in raw]
    if missing:
        raise ConfigError(f"{path}: registry entry lacks {missing}")
    if raw["name"] != path.stem:
        raise ConfigError(f"{path}: name {raw['name']!r} differs from the file name")
    if raw["kind"] not in KINDS:
        raise ConfigError(f"{path}: kind {raw['kind']!r} is not one of {KINDS}")
    unknown = set(raw) - ENTRY_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown keys {sorted(unknown)}; valid: {sorted(ENTRY_KEYS)}")
    splits = {}
    for s, v in raw["splits"].items():
        unknown = set(v) - SPLIT_KEYS
        if unknown:
            raise ConfigError(f"{path}: split {s!r} has unknown keys {sorted(unknown)}; valid: {sorted(SPLIT_KEYS)}")
        splits[s] = SplitInfo(
            files=tuple(v.get("files", ())),
            count=v.get("count"),
            dropped=dict(v.get("dropped") or {}),
            corpus=v.get("corpus"),
            judgements=v.get("judgements"),
            relevant=v.get("relevant"),
        )
    return DatasetInfo(
        name=raw["name"],
        title=raw["title"],
        kind=raw["kind"],
        folder=raw["folder"],
        papers=tuple(raw.get("papers", ())),
        source=raw["source"],
        citation=raw.get("citation", ""),
        licence=raw["licence"],
        splits=splits,
        download=tuple(raw.get("download") or ()),
        hub=_parse_hub(path, raw["hub"], splits) if "hub" in raw else None,
        notes=raw.get("notes", ""),
        relevance_level=int(raw.get("relevance_level", 1)),
        metrics=raw.get("metrics", ""),
    )


def _parse_hub(path: Path, raw: Any, splits: dict[str, SplitInfo]) -> HubSource:
    """The ``hub`` block: known keys only, a commit revision, and only files the splits list."""
    if not isinstance(raw, dict) or set(raw) != HUB_KEYS:
        found = sorted(raw) if isinstance(raw, dict) else type(raw).__name__
        raise ConfigError(f"{path}: hub needs exactly the keys {sorted(HUB_KEYS)}, found {found}")
    if not SHA1.fullmatch(str(raw["revision"])):
        raise ConfigError(f"{path}: hub revision must be a commit (40 hex digits), found {raw['revision']!r}")
    listed = {f for s in splits.values() for f in s.files}
    files = {}
    for to, spec in (raw["files"] or {}).items():
        if to not in listed:
            raise ConfigError(f"{path}: hub file {to!r} is not a file of any split; split files: {sorted(listed)}")
        if not isinstance(spec, dict) or set(spec) != HUB_FILE_KEYS:
            found = sorted(spec) if isinstance(spec, dict) else type(spec).__name__
            raise ConfigError(f"{path}: hub file {to!r} needs exactly the keys {sorted(HUB_FILE_KEYS)}, found {found}")
        if not SHA256.fullmatch(str(spec["sha256"])):
            raise ConfigError(f"{path}: hub file {to!r}: sha256 must be 64 hex digits, found {spec['sha256']!r}")
        files[to] = HubFile(path=spec["path"], sha256=spec["sha256"])
    if not files:
        raise ConfigError(f"{path}: hub lists no files")
    return HubSource(repo=raw["repo"], revision=raw["revision"], files=files)


@functools.cache
def registry() -> dict[str, DatasetInfo]:
    """Every registered dataset, by name, in alphabetical order."""
    folder = resource("registry")
    return {p.stem: _parse_entry(p) for p in sorted(folder.glob("*.yaml"))}


def info(name: str) -> DatasetInfo:
    """The registry entry of one dataset; an unknown name lists the valid ones."""
    reg = registry()
    if name not in reg:
        raise ConfigError(f"unknown dataset {name!r}; registered: {', '.join(reg)}")
    return reg[name]


def loader(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a loader function under one or more dataset names."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for n in names:
            if n in LOADERS:
                raise ConfigError(f"two loaders registered for {n!r}")
            LOADERS[n] = fn
        return fn

    return register


def load(name: str, split: str | None = None, data_dir: str | Path | None = None, **options: Any):
    """Load one split of a registered dataset from the data root.

    ``data_dir`` (or ``$SENTCL_DATA``) is the data root; the dataset is read from its
    ``folder``. Raises :class:`~sentcl.errors.DataMissingError` naming the missing
    folder or file, and :class:`~sentcl.errors.DataFormatError` (file:line) on bad input.
    """
    from . import loaders  # noqa: F401  (importing registers every loader)

    entry = info(name)
    split = entry.split(split)
    root = data_root(data_dir)
    folder = root / entry.folder
    if not folder.is_dir():
        raise DataMissingError(f"{name}: folder {folder} not found (see `sentcl data download {name}`)")
    files = [folder / f for f in entry.splits[split].files]
    absent = [str(f) for f in files if not f.exists()]
    if absent:
        raise DataMissingError(f"{name}/{split}: not found: {', '.join(absent)}")
    if name not in LOADERS:
        raise ConfigError(f"{name} is registered but has no loader")
    record = LOADERS[name](entry, split, files, **options)
    record.sample = (root / SAMPLE_MARKER).exists()
    return record


def samples_root() -> Path:
    """``data/samples``: a data root in the same layout and formats as the real one,
    holding small datasets the project writes itself (smoke profile, offline fallback)."""
    return resource("samples")
