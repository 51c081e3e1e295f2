"""An on-disk store of fixed per-example embeddings: fp16, memory-mapped, addressed by example id.

RCL's augmented embeddings (Tan et al. 2022, Algorithm 1, line 4) are the embeddings of every
query and index sentence of the training set by an entropy model; the final model's loss
(Eq. 3) looks up those of each batch's rows by their example ids. Any fixed per-example target
can live here.

Layout of a store folder::

    store.json        columns, ids count, dimension, dtype, what encoded it, rows written so far
    ids.npy           the example ids (int64), in the order the rows were written
    <column>.npy      one (n, dim) float16 .npy file per column, rows in the order of ids.npy

**Memory.** :func:`write_store` encodes ``chunk_rows`` texts at a time (16,384 by default: large
enough that sorting a chunk by length pads about as little as sorting all texts, so the store writes
at nearly plain encoding's speed; 50 MB of fp32 rows at dimension 768) and writes each chunk
with plain file writes at its offset (not through a writable memory map, whose dirty pages
would count in the process's resident memory), so peak memory is one chunk of embeddings,
whatever the size of the data. Reading memory-maps the files; a lookup touches only its rows.

**Resume.** After every chunk the files are flushed and ``store.json`` records the rows done
(atomically), so a killed writer continues where it stopped: call :func:`write_store` on the
same folder with the same arguments. Give it the work folder of an artifact-cache stage
(:meth:`sentcl.artifacts.ArtifactCache.get_or_build` with ``resume=True``) and the finished
store appears in one rename.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, DataFormatError, DataMissingError, check_positive_int
from ..hashing import stable_hash, texts_hash
from ..io import atomic_write_json, read_json, report_damaged
from ..progress import progress_bar

STORE_FILE = "store.json"
IDS_FILE = "ids.npy"
DTYPE = np.float16

Encode = Callable[[Sequence[str]], np.ndarray]


def write_store(
    folder: str | os.PathLike,
    encode: Encode,
    ids: Sequence[int] | np.ndarray,
    columns: Mapping[str, Sequence[str]],
    *,
    description: Mapping[str, Any] | None = None,
    chunk_rows: int = 16384,
    show_progress: bool = True,
) -> EmbeddingStore:
    """Encode every text of ``columns`` with ``encode`` into an fp16 store in ``folder``; resumable.

    Args:
        folder: the store's folder (created; an interrupted write there is continued).
        encode: ``texts -> (len(texts), dim)`` float array (e.g. :func:`sentcl.embeddings.embedder`
            of an entropy model with ``cache=False``).
        ids: one distinct integer per row: the example ids the rows are looked up by.
        columns: column name -> texts (one per id), e.g. ``{"query": premises, "index": hypotheses}``.
        description: what encoded the texts (model fingerprint...); part of the store's fingerprint.
        chunk_rows: texts encoded and written at a time (bounds the memory).
    """
    folder = Path(folder)
    check_positive_int("chunk_rows", chunk_rows)
    ids = np.asarray(ids)
    if ids.ndim != 1 or ids.dtype.kind not in "iu" or len(np.unique(ids)) != len(ids):
        raise ConfigError(f"ids must be distinct integers, one per row (got dtype {ids.dtype}, shape {ids.shape})")
    if not columns:
        raise ConfigError("a store needs at least one column")
    for name, texts in columns.items():
        if len(texts) != len(ids):
            raise ConfigError(f"column {name!r} has {len(texts)} texts for {len(ids)} ids")
    fingerprint = stable_hash(
        {
            "ids": hashlib.sha256(np.ascontiguousarray(ids, dtype=np.int64).tobytes()).hexdigest(),
            "columns": {name: texts_hash(list(texts)) for name, texts in columns.items()},
            "description": dict(description or {}),
        }
    )
    folder.mkdir(parents=True, exist_ok=True)
    meta = _read_meta(folder) if (folder / STORE_FILE).is_file() else None
    if meta is not None and meta["fingerprint"] != fingerprint:
        raise ConfigError(f"{folder} holds another store (fingerprint {meta['fingerprint']}, asked for {fingerprint})")
    problem = _damage(folder, meta) if meta is not None else None
    if problem is not None:  # a file of the interrupted write was truncated: its rows cannot be trusted
        report_damaged(folder, problem, "writing the store again from its first row")
        meta = None
    if meta is None:
        probe = np.asarray(encode([next(iter(columns.values()))[0]] if len(ids) else []))
        dim = int(probe.shape[1]) if probe.ndim == 2 else 0
        np.save(folder / IDS_FILE, ids.astype(np.int64))
        for name in columns:
            np.lib.format.open_memmap(folder / f"{name}.npy", mode="w+", dtype=DTYPE, shape=(len(ids), dim)).flush()
        meta = {
            "fingerprint": fingerprint,
            "n": len(ids),
            "dim": dim,
            "dtype": "float16",
            "columns": list(columns),
            "description": dict(description or {}),
            "rows_done": {name: 0 for name in columns},
        }
        atomic_write_json(folder / STORE_FILE, meta)
    total = len(ids) * len(columns)
    done = sum(meta["rows_done"].values())
    bar = progress_bar(total=total, initial=done, desc="augmented embeddings", unit="text", disable=not show_progress)
    try:
        for name, texts in columns.items():
            path = folder / f"{name}.npy"
            offset, row_bytes = _data_offset(path), meta["dim"] * np.dtype(DTYPE).itemsize
            with open(path, "r+b") as fh:
                start = meta["rows_done"][name]
                while start < len(ids):
                    stop = min(start + chunk_rows, len(ids))
                    vectors = np.asarray(encode(list(texts[start:stop])))
                    if vectors.shape != (stop - start, meta["dim"]):
                        raise ConfigError(f"encode returned shape {vectors.shape}, expected {(stop - start, meta['dim'])}")
                    fh.seek(offset + start * row_bytes)
                    fh.write(np.ascontiguousarray(vectors, dtype=DTYPE).tobytes())
                    fh.flush()
                    os.fsync(fh.fileno())
                    meta["rows_done"][name] = start = stop
                    atomic_write_json(folder / STORE_FILE, meta)
                    bar.update(len(vectors))
    finally:
        bar.close()
    return EmbeddingStore(folder)


class EmbeddingStore:
    """A finished store (see the module docstring), opened read-only with memory maps."""

    def __init__(self, folder: str | os.PathLike) -> None:
        self.path = Path(folder)
        meta = _read_meta(self.path)
        unfinished = {k: v for k, v in meta["rows_done"].items() if v != meta["n"]}
        if unfinished:
            raise ConfigError(f"the store {self.path} is unfinished (rows written: {unfinished} of {meta['n']})")
        problem = _damage(self.path, meta)
        if problem is not None:
            raise DataFormatError(self.path, None, "an embedding store whose files hold every row", problem)
        self.meta = meta
        self.columns: list[str] = list(meta["columns"])
        self.fingerprint: str = meta["fingerprint"]
        self.dim: int = int(meta["dim"])
        self.ids = np.load(self.path / IDS_FILE)
        self._sorter = np.argsort(self.ids, kind="stable")
        self._sorted = self.ids[self._sorter]
        self._arrays = {name: np.load(self.path / f"{name}.npy", mmap_mode="r") for name in self.columns}

    def __len__(self) -> int:
        return len(self.ids)

    def rows_of(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The row positions of example ``ids``; an id the store lacks is a ConfigError naming it."""
        ids = np.asarray(ids, dtype=np.int64)
        where = np.searchsorted(self._sorted, ids)
        where = np.minimum(where, max(len(self._sorted) - 1, 0))
        found = self._sorted[where] == ids if len(self._sorted) else np.zeros(len(ids), dtype=bool)
        if not found.all():
            raise ConfigError(f"the store {self.path} has no rows for the example ids {ids[~found][:5].tolist()}")
        return self._sorter[where]

    def lookup(self, column: str, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The float16 embeddings of ``column`` for example ``ids``, shape ``(len(ids), dim)``."""
        if column not in self._arrays:
            raise ConfigError(f"the store {self.path} has the columns {self.columns}, not {column!r}")
        return np.asarray(self._arrays[column][self.rows_of(ids)])

    def array(self, column: str) -> np.ndarray:
        """The whole column as a read-only memory map, rows in the order of :attr:`ids`."""
        return self._arrays[column]


def _read_meta(folder: Path) -> dict[str, Any]:
    path = folder / STORE_FILE
    if not path.is_file():
        raise DataMissingError(f"{path}: no such file (expected an embedding store's store.json)")
    meta = read_json(path, "an embedding store's description")
    missing = {"fingerprint", "n", "dim", "columns", "rows_done"} - set(meta)
    if missing:
        raise DataFormatError(path, None, f"the keys {sorted(missing)} of an embedding store")
    return meta


def _damage(folder: Path, meta: dict[str, Any]) -> str | None:
    """What is wrong with a store's files (None: nothing): the ids or a column file missing, unreadable
    or not of the size its ``n`` rows of ``dim`` fp16 values need."""
    expected = {IDS_FILE: (meta["n"],), **{f"{name}.npy": (meta["n"], meta["dim"]) for name in meta["columns"]}}
    for name, shape in expected.items():
        path = folder / name
        try:
            array = np.load(path, mmap_mode="r")
        except FileNotFoundError:
            return f"{name} is missing"
        except (OSError, ValueError, EOFError) as exc:  # numpy refuses a file shorter than its header says
            return f"{name} is unreadable ({exc})"
        if array.shape != shape:
            return f"{name} holds shape {array.shape}, expected {shape}"
    return None


def _data_offset(path: Path) -> int:
    with open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        read_header(fh)
        return fh.tell()


__all__ = ["EmbeddingStore", "write_store"]
