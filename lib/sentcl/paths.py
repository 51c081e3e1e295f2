"""Where things live: the data root, the cache, the project checkout, bundled resources."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Literal, overload

from .errors import ConfigError

DATA_ENV = "SENTCL_DATA"
CACHE_ENV = "SENTCL_CACHE"


@overload
def data_root(data_dir: str | os.PathLike | None = None, required: Literal[True] = True) -> Path: ...
@overload
def data_root(data_dir: str | os.PathLike | None, required: bool) -> Path | None: ...
def data_root(data_dir: str | os.PathLike | None = None, required: bool = True) -> Path | None:
    """The data root: ``data_dir`` if given, else ``$SENTCL_DATA``.

    The data root holds one folder per dataset in the layout of ``../shared/data`` (see
    ``data/registry/``). With ``required=False`` a missing setting returns ``None``
    (callers then fall back to ``data/samples`` and say so).
    """
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(DATA_ENV) or None
    if chosen is None:
        if required:
            raise ConfigError(f"no data root: set the notebook parameter data_dir, pass --data-dir DIR, or set ${DATA_ENV}")
        return None
    path = Path(chosen).expanduser().resolve()
    if not path.is_dir():
        given = "data_dir / --data-dir" if data_dir not in (None, "") else "$" + DATA_ENV
        raise ConfigError(f"data root {path} is not a directory (from {given})")
    return path


def cache_root() -> Path:
    """Root of sentcl's caches (embeddings, artifacts): ``$SENTCL_CACHE`` or ``~/.cache/sentcl``."""
    root = os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "sentcl")
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def resource(*parts: str) -> Path:
    """A file shipped in the project's ``data/`` folder (registry, samples, paper values).

    Works from a checkout (editable install) and from an installed wheel, where ``data/``
    ships as the package ``sentcl._data``.
    """
    return _shipped("sentcl._data", parts)


def notebook_file(name: str) -> Path:
    """A file of the project's ``notebooks/`` folder (a chapter notebook, its profiles file): the
    folder itself in a checkout, the package ``sentcl._notebooks`` in an installed wheel."""
    return _shipped("sentcl._notebooks", (name,))


def benchmark_result(name: str) -> Path:
    """A recorded benchmark result, ``benchmarks/results/<name>``: the folder itself in a checkout,
    the package ``sentcl._benchmarks`` in an installed wheel (the path may not exist: not recorded)."""
    return _shipped("sentcl._benchmarks", (name,))


def _shipped(package: str, parts: tuple[str, ...]) -> Path:
    return Path(str(resources.files(package).joinpath(*parts)))


def project_root(start: str | os.PathLike | None = None) -> Path | None:
    """The sentcl checkout (the folder holding ``_toc.yml`` and ``notebooks/``), or None.

    Searched upwards from ``start`` (default: the working directory), then from the
    installed package (an editable install lives inside the checkout).
    """
    candidates = [Path(start or os.getcwd()).resolve(), Path(__file__).resolve()]
    for begin in candidates:
        for folder in [begin, *begin.parents]:
            if (folder / "_toc.yml").is_file() and (folder / "notebooks").is_dir():
                return folder
    return None
