"""The artifact cache: a finished stage is reused instead of recomputed.

A *stage* is one step of a chapter's pipeline whose output is worth keeping: a trained
model, an embedding store, an evaluation. It is named, configured by a JSON-able mapping
(every parameter that decides its output) and fed by zero or more upstream stages::

    entropy = Stage("entropy-model", {"phi": 0.01, "training": cfg.to_dict()}, upstream=(base,))
    store = Stage("augmented-embeddings", {"dtype": "float16"}, upstream=(entropy,))
    final = Stage("rcl-model", {"training": cfg.to_dict()}, upstream=(store,))

Its **key** is :func:`sentcl.hashing.stable_hash` of its name, its configuration and its
upstream stages' keys. So a changed parameter changes the key of its own stage and of every
stage downstream of it (their keys contain its key), while the stages upstream of it keep
their keys and are reused: only what depends on the change is recomputed.

Layout, under ``cache_root()/artifacts`` or a given root::

    <name>/<key>/             the finished stage: whatever its builder wrote, plus
    <name>/<key>/artifact.json    the manifest (name, key, configuration, upstream keys, build time)
    <name>/.<key>.partial/    the work folder of a build in progress (or interrupted)
    <name>/.<key>.lock        serialises concurrent builders of the same stage

A stage is finished exactly when ``<name>/<key>/`` exists: the builder writes into the work
folder, the manifest is written last, and the folder is renamed into place (atomic on one
file system). A build that fails or is killed leaves no finished stage behind. With
``resume=True`` its work folder is kept for the next attempt (the trainer continues from its
last checkpoint there); otherwise the next attempt starts from an empty folder.

**Damage.** The manifest lists every file of the stage with its size. A finished stage whose
files no longer match (a file truncated, removed, or grown) is damaged: :meth:`ArtifactCache.get_or_build`
says so in one line (:func:`sentcl.io.report_damaged`) and builds it again instead of returning it.
A caller that finds a stage unreadable when it loads it (a load check) calls
:meth:`ArtifactCache.discard` and builds again.

**Cached folders outside the stages** (the tiny encoders and re-pooled transformers that
:mod:`sentcl.models` keeps under ``cache_root()/models``) go through :func:`cached_folder`: each keeps
the list of its files' sizes (:data:`FILE_LIST`), and every ``*.safetensors`` file's header must
describe the bytes the file holds; a folder that fails either check (a full disk, a killed sync) is
said in one line and built again, never handed to a loader that would fail with a deserialisation
error.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import Any, TypeVar

import numpy as np

from .errors import ConfigError, DataFormatError, DataMissingError
from .hashing import stable_hash
from .io import atomic_directory, atomic_write_json, file_lock, fsync_tree, read_json, report_damaged
from .paths import cache_root

MANIFEST = "artifact.json"
"""The manifest file every finished stage holds (written last, before the rename)."""
FILE_LIST = ".sentcl-files.json"
"""The list of a :func:`cached_folder`'s files and their sizes, written when it is built."""
RESULT = "result.json"
"""The file :meth:`ArtifactCache.cached_json` keeps a JSON result in."""
KEY_VERSION = 1
"""Part of every key: bump it when the meaning of stored artifacts changes, to invalidate them all."""

T = TypeVar("T")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def jsonable(value: Any, where: str = "config") -> Any:
    """``value`` as plain JSON data (dicts with string keys, lists, str, int, float, bool, None).

    Paths become strings, tuples and numpy arrays lists, numpy scalars Python numbers. Anything
    else raises :class:`~sentcl.errors.ConfigError`: an object would hash by its ``repr`` and
    could give two different keys to the same configuration, or one key to two different ones.
    """
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(float(value)):
            raise ConfigError(f"{where}: {value!r} is not a finite number")
        return float(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ConfigError(f"{where}: keys must be strings, found {k!r}")
            out[k] = jsonable(v, f"{where}.{k}")
        return out
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise ConfigError(
        f"{where}: {type(value).__name__} is not JSON data; describe it by its parameters "
        "(strings, numbers, lists, dicts) so that the cache key is stable"
    )


@dataclass(frozen=True)
class Stage:
    """One cacheable step: a name, the configuration that decides its output, its upstream stages."""

    name: str
    config: Mapping[str, Any] = field(default_factory=dict)
    upstream: tuple[Stage, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigError(f"stage name {self.name!r} must be letters, digits, '_', '.' or '-' (a folder name)")
        object.__setattr__(self, "config", jsonable(self.config, f"stage {self.name!r} config"))
        upstream = tuple(self.upstream)
        for up in upstream:
            if not isinstance(up, Stage):
                raise ConfigError(f"stage {self.name!r}: upstream entries must be Stage objects, got {type(up).__name__}")
        object.__setattr__(self, "upstream", upstream)

    @property
    def key(self) -> str:
        """Hash of the name, the configuration and the upstream stages' keys (in order)."""
        return stable_hash(
            {
                "version": KEY_VERSION,
                "stage": self.name,
                "config": self.config,
                "upstream": [[up.name, up.key] for up in self.upstream],
            }
        )

    def describe(self) -> dict[str, Any]:
        """The manifest's description of the stage."""
        return {
            "name": self.name,
            "key": self.key,
            "config": self.config,
            "upstream": [{"name": up.name, "key": up.key} for up in self.upstream],
        }


class ArtifactCache:
    """Finished stages under ``root`` (default ``cache_root()/artifacts``); see the module docstring."""

    def __init__(self, root: str | os.PathLike | None = None) -> None:
        self.root = Path(root) if root is not None else cache_root() / "artifacts"

    def path(self, stage: Stage) -> Path:
        """Where ``stage`` lives once finished (it may not exist yet)."""
        return self.root / stage.name / stage.key

    def work_dir(self, stage: Stage) -> Path:
        """The folder a build of ``stage`` writes into before it is renamed to :meth:`path`."""
        return self.root / stage.name / f".{stage.key}.partial"

    def has(self, stage: Stage) -> bool:
        """Whether ``stage`` is finished."""
        return (self.path(stage) / MANIFEST).is_file()

    def manifest(self, stage: Stage) -> dict[str, Any]:
        """The manifest of a finished stage."""
        path = self.path(stage) / MANIFEST
        if not path.is_file():
            raise ConfigError(f"stage {stage.name!r} ({stage.key}) is not in the cache at {self.root}")
        return read_json(path, "an artifact manifest")

    def damage(self, stage: Stage) -> str | None:
        """What is wrong with the finished ``stage``'s files (None: nothing, or not finished): a file the
        manifest lists missing or of another size, or an unreadable manifest. Manifests written
        before files were listed are not checked."""
        folder = self.path(stage)
        if not folder.is_dir():
            return None
        try:
            listed = read_json(folder / MANIFEST, "an artifact manifest").get("files")
        except (DataFormatError, DataMissingError, AttributeError) as exc:
            return f"unreadable manifest ({exc})"
        return _size_damage(folder, listed or {}, "the manifest")

    def discard(self, stage: Stage, problem: str) -> None:
        """Remove a finished ``stage`` found damaged (e.g. unloadable), saying so in one line; the next
        :meth:`get_or_build` builds it again."""
        report_damaged(self.path(stage), problem, f"building stage {stage.name!r} again")
        self.remove(stage)

    def get_or_build(self, stage: Stage, build: Callable[[Path], Any], *, resume: bool = False) -> Path:
        """The folder of ``stage``: the cached one, or one ``build(work_dir)`` fills now.

        ``build`` writes the stage's files into the folder it is given; its return value is
        ignored. When it returns, the manifest is added and the folder renamed into place. A
        concurrent build of the same stage (another process) is waited for, then reused.

        Args:
            resume: keep what an interrupted earlier build left in the work folder (for builders
                that continue from it, like the trainer's checkpoints); otherwise it is emptied.
        """
        final = self.path(stage)
        if self.has(stage) and self.damage(stage) is None:
            return final
        with self._locked(stage):
            problem = self.damage(stage)
            if problem is not None:
                report_damaged(final, problem, f"building stage {stage.name!r} again")
                shutil.rmtree(final)
            elif self.has(stage):  # built by another process while we waited for the lock
                return final
            work = self.work_dir(stage)
            if work.exists() and not resume:
                shutil.rmtree(work)
            work.mkdir(parents=True, exist_ok=True)
            started = time.perf_counter()
            build(work)
            manifest = {
                **stage.describe(),
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "build_time_s": round(time.perf_counter() - started, 3),
                "files": _file_sizes(work),
            }
            atomic_write_json(work / MANIFEST, manifest)
            fsync_tree(work)  # everything on disk before the rename makes it a finished stage
            if final.exists():  # a folder without a manifest: debris of a manual copy, never a finished stage
                shutil.rmtree(final)
            os.rename(work, final)
        return final

    def load_or_build(
        self, stage: Stage, build: Callable[[Path], Any], load: Callable[[Path], T], *, resume: bool = False
    ) -> T:
        """``load(folder)`` of ``stage``, cached or built now (:meth:`get_or_build`). A cached stage that
        ``load`` cannot read is damaged (a load check): it is discarded, said in one line, built again
        and loaded; a stage built by this call that does not load raises (a real error)."""
        built: list[bool] = []

        def building(work: Path) -> None:
            built.append(True)
            build(work)

        folder = self.get_or_build(stage, building, resume=resume)
        try:
            return load(folder)
        except Exception as exc:
            if built:
                raise
            self.discard(stage, f"it does not load ({type(exc).__name__}: {str(exc)[:200]})")
        return load(self.get_or_build(stage, build, resume=resume))

    def cached_json(self, stage: Stage, compute: Callable[[], Any]) -> Any:
        """A JSON result (e.g. an evaluation's metrics): read from the cache, or ``compute()`` and stored."""

        def build(work: Path) -> None:
            atomic_write_json(work / RESULT, jsonable(compute(), f"result of stage {stage.name!r}"))

        return self.load_or_build(stage, build, lambda folder: read_json(folder / RESULT, "a JSON result"))

    def remove(self, stage: Stage) -> None:
        """Forget ``stage`` (its finished folder and any work folder); downstream stages are untouched."""
        with self._locked(stage):
            for folder in (self.path(stage), self.work_dir(stage)):
                if folder.exists():
                    shutil.rmtree(folder)

    def _locked(self, stage: Stage):
        return file_lock(self.root / stage.name / f".{stage.key}.lock")


def _file_sizes(folder: Path, skip: str = MANIFEST) -> dict[str, int]:
    """Every file under ``folder`` (but ``skip``, the list itself) -> its size in bytes, by its path relative to ``folder``."""
    return {
        path.relative_to(folder).as_posix(): path.stat().st_size
        for path in sorted(folder.rglob("*"))
        if path.is_file() and path.name != skip
    }


def _size_damage(folder: Path, listed: Mapping[str, int], where: str) -> str | None:
    """The first file of ``listed`` (path under ``folder`` -> size, from ``where``) missing or of another size."""
    for name, size in listed.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size:,} bytes, {where} {size:,}"
    return None


# --------------------------------------------------------------------------- cached folders


def cached_folder(folder: str | os.PathLike, build: Callable[[Path], Any]) -> Path:
    """``folder``, a cached folder of files (a model checkpoint), checked: when it is missing, or damaged
    (:func:`folder_damage`, said in one line), ``build(tmp)`` fills a fresh folder that replaces it in one
    rename (:func:`sentcl.io.atomic_directory`), with the list of its files' sizes (:data:`FILE_LIST`)."""
    folder = Path(folder)
    if folder.is_dir():
        problem = folder_damage(folder)
        if problem is None:
            return folder
        report_damaged(folder, problem, "building it again")
    with atomic_directory(folder) as tmp:
        build(tmp)
        atomic_write_json(tmp / FILE_LIST, _file_sizes(tmp, skip=FILE_LIST))
    return folder


def folder_damage(folder: Path) -> str | None:
    """What is wrong with a cached folder (None: nothing): a file its :data:`FILE_LIST` lists missing or of
    another size, or a ``*.safetensors`` file shorter than its header says (:func:`safetensors_damage`). A
    folder written before the list existed is checked on its safetensors files, then given its list."""
    listed_path = folder / FILE_LIST
    listed = None
    if listed_path.is_file():
        try:
            listed = dict(read_json(listed_path, "a cached folder's file list"))
        except (DataFormatError, DataMissingError, TypeError, ValueError) as exc:
            return f"unreadable {FILE_LIST} ({exc})"
    problem = _size_damage(folder, listed or {}, FILE_LIST)
    if problem is not None:
        return problem
    for path in sorted(folder.rglob("*.safetensors")):
        problem = safetensors_damage(path)
        if problem is not None:
            return f"{path.relative_to(folder).as_posix()}: {problem}"
    if listed is None:
        sizes = _file_sizes(folder, skip=FILE_LIST)
        if not sizes:
            return "it holds no files"
        atomic_write_json(listed_path, sizes)
    return None


def safetensors_damage(path: Path) -> str | None:
    """What is wrong with a safetensors file (None: nothing found), from its header alone: 8 bytes giving the
    header's length, the header (JSON: each tensor's byte range), then the tensors' bytes. A file cut short
    (a full disk, a killed copy) holds fewer bytes than its header describes."""
    size = path.stat().st_size
    try:
        with path.open("rb") as f:
            length = int.from_bytes(f.read(8), "little") if size >= 8 else -1
            if not 0 < length <= size - 8:
                return f"{size:,} bytes, too short for its header (of {length:,} bytes)" if length > 0 else "no header"
            header = json.loads(f.read(length))
    except (OSError, ValueError) as exc:
        return f"unreadable header ({exc})"
    ends = [entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__" and isinstance(entry, dict)
            and "data_offsets" in entry]
    needed = 8 + length + max(ends, default=0)
    return None if size >= needed else f"{size:,} bytes, its header describes {needed:,}"


__all__ = ["FILE_LIST", "MANIFEST", "RESULT", "ArtifactCache", "Stage", "cached_folder", "folder_damage", "jsonable",
           "safetensors_damage"]
