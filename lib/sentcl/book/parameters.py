"""A chapter notebook's parameters: its ``parameters`` cell, its profiles file, and the values a run gets.

Each chapter notebook starts with a code cell tagged ``parameters`` holding only ``NAME = literal``
lines: the paper's setting, among them ``profile``, ``data_dir`` and ``out_dir``. Beside it,
``notebooks/<chapter>.profiles.yaml`` gives what each profile changes::

    smoke: {model: tiny-random, max_steps: 4}
    demo: {}
    paper: {model: bert-base-uncased, batch_size: 12}

Both ship inside the package (``sentcl._notebooks``, :func:`sentcl.paths.notebook_file`), so a
notebook run outside a checkout -- on Colab, or by papermill on an installed sentcl -- finds them.

Two ways to run a notebook get the same values:

- ``sentcl reproduce`` (:mod:`sentcl.book.publishing.runner`) reads the profile here, checks every value
  before anything runs, and injects them all with papermill;
- a notebook run any other way (``papermill nb.ipynb out.ipynb -p profile smoke``, Jupyter,
  Colab) resolves its own profile in the cell after the install cell:
  ``globals().update(resolve_parameters("<chapter>", globals()))`` (:func:`resolve_parameters`).
  A parameter given explicitly keeps its value; every other one takes the profile's value.
"""

from __future__ import annotations

import ast
import difflib
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..paths import CACHE_ENV, notebook_file
from .profiles import NAMES, policy, resolve_data

PARAMETERS_TAG = "parameters"
INJECTED = {"profile": "--profile", "data_dir": "--data-dir", "out_dir": "--out"}
"""The parameters ``sentcl reproduce`` sets from its own options (never from a profile file)."""
PERSISTENT = "persistent_dir"
"""The parameter that puts the cache and the output folder on storage that outlives the machine."""
COLAB_DRIVE = "drive"
"""The value of :data:`PERSISTENT` that means Google Drive on Colab, mounted when asked."""
DRIVE_MOUNT = Path("/content/drive")
"""Where Colab mounts Google Drive (the persistent folder is ``MyDrive/sentcl`` under it)."""
PAPERMILL_HEADER = "# Parameters"
"""The first line of the cell papermill injects after the parameters cell (its default comment)."""
RESOLVED_ENV = "SENTCL_RESOLVED"
"""Set by ``sentcl reproduce`` for the kernel of the notebook it runs (:func:`resolution`): the chapter, the profile
and where each parameter's value came from, which it resolved and checked before anything ran. The notebook's
resolution cell then takes the values papermill injected as they are: a profile is read and checked once per run
(not again in the kernel: no notebook or profiles file parsed twice, no input history read)."""


# --------------------------------------------------------------------------- the cell and the profiles


def notebook_parameters(path: Path) -> dict[str, Any]:
    """The parameters cell of a notebook: name -> default value, in cell order.

    The first cell must be a code cell tagged ``parameters`` holding only assignments of
    literals (numbers, strings, booleans, None, lists, tuples, dicts).
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    if not nb.cells or PARAMETERS_TAG not in nb.cells[0].get("metadata", {}).get("tags", []):
        raise ConfigError(f"{path}: the first cell must be the code cell tagged {PARAMETERS_TAG!r}")
    cell = nb.cells[0]
    if cell.cell_type != "code":
        raise ConfigError(f"{path}: the {PARAMETERS_TAG!r} cell must be a code cell")
    try:
        tree = ast.parse(cell.source)
    except SyntaxError as exc:
        raise ConfigError(f"{path}: parameters cell line {exc.lineno}: {exc.msg}") from None
    params: dict[str, Any] = {}
    for node in tree.body:
        target, value = _assignment(node)
        if target is None or value is None:
            raise ConfigError(f"{path}: parameters cell line {node.lineno}: expected NAME = literal, found {ast.unparse(node)!r}")
        try:
            params[target] = ast.literal_eval(value)
        except ValueError:
            raise ConfigError(
                f"{path}: parameters cell line {node.lineno}: {target} must be a literal, found {ast.unparse(value)!r}"
            ) from None
    missing = [name for name in INJECTED if name not in params]
    if missing:
        raise ConfigError(f"{path}: the parameters cell must define {', '.join(missing)} (set by sentcl reproduce)")
    return params


def _assignment(node: ast.stmt) -> tuple[str | None, ast.expr | None]:
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
        return node.targets[0].id, node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
        return node.target.id, node.value
    return None, None


def check_value(name: str, value: Any, default: Any, where: str) -> Any:
    """``value`` if it has the type of ``default`` (ints are accepted for floats and
    become floats; a tuple default takes a list, injected as a list because papermill
    writes lists, not tuples; a None default accepts anything; a dict whose default's values
    share one type has each entry checked against it) and is in range (:func:`check_range`),
    else a ConfigError."""
    return check_range(name, _check_type(name, value, default, where), where)


def check_range(name: str, value: Any, where: str) -> Any:
    """``value`` if every number in it (itself, or an entry of a list or dict) is finite and not negative,
    else a ConfigError naming the parameter. Every number of a chapter's parameters cell is a count, a
    size, a rate, a ratio, a step, an index or a seed: none is negative, so this is checked with the types,
    before anything runs (a negative ``train_pairs`` used to fail only after the data had loaded)."""
    entries = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, entry in entries:
        check_range(f"{name}[{key!r}]", entry, where)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and not (math.isfinite(value) and value >= 0):
        raise ConfigError(f"{where}: parameter {name} must be a finite number >= 0 (every number of the parameters cell is "
                          f"a count, size, rate, step or seed), got {value!r}")
    return value


def _check_type(name: str, value: Any, default: Any, where: str) -> Any:
    if default is None:
        return value
    expected = type(default)
    if expected is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if expected is tuple and isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, dict) and isinstance(default, dict) and len({type(v) for v in default.values()}) == 1:
        # a dict whose default holds one type of value (rates, row counts, names): every entry of that type
        sample = next(iter(default.values()))
        return {key: _check_type(f"{name}[{key!r}]", v, sample, where) for key, v in value.items()}
    if isinstance(value, expected) and not (expected is int and isinstance(value, bool)):
        return value
    raise ConfigError(
        f"{where}: parameter {name} must be {expected.__name__} like its default {default!r}, got {value!r}"
    )


def parse_value(name: str, text: str, default: Any, where: str = "-p") -> Any:
    """Convert a ``-p NAME VALUE`` string to the type of the parameter's default."""
    if isinstance(default, bool):
        low = text.strip().lower()
        if low in ("true", "yes", "1", "on"):
            return True
        if low in ("false", "no", "0", "off"):
            return False
        raise ConfigError(f"{where}: parameter {name} is a bool; give true or false, not {text!r}")
    if isinstance(default, str):
        return text
    if isinstance(default, (int, float)):
        try:
            return type(default)(text)
        except ValueError:
            raise ConfigError(f"{where}: parameter {name} must be {type(default).__name__}, got {text!r}") from None
    try:  # JSON first: YAML 1.1 reads a JSON number such as 2e-05 (no dot) as a string
        value = json.loads(text)
    except ValueError:
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            raise ConfigError(f"{where}: parameter {name}: cannot read {text!r} as a value") from None
    return check_value(name, value, default, where)


def unknown_parameter(name: str, valid: dict[str, Any], where: str) -> ConfigError:
    close = difflib.get_close_matches(name, list(valid), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return ConfigError(f"{where}: unknown parameter {name!r}{hint} valid: {', '.join(valid)}")


def read_profiles(path: Path, defaults: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """A chapter's profile file: profile -> {parameter: value}, checked against the
    notebook's parameters (names and types). All four profiles must be present."""
    if not path.is_file():
        raise ConfigError(f"{path} not found: each chapter lists its smoke, demo, rehearsal and paper parameters there")
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping profile -> parameters")
    unknown = [p for p in raw if p not in NAMES]
    missing = [p for p in NAMES if p not in raw]
    if unknown or missing:
        raise ConfigError(f"{path}: profiles must be exactly {', '.join(NAMES)} (unknown: {unknown}, missing: {missing})")
    profiles = {}
    for profile, values in raw.items():
        values = values or {}
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: profile {profile} must map parameter names to values")
        checked = {}
        for name, value in values.items():
            where = f"{path} ({profile})"
            if name in INJECTED:
                raise ConfigError(f"{where}: {name} is set by sentcl reproduce ({INJECTED[name]}), not by a profile")
            if name not in defaults:
                raise unknown_parameter(name, defaults, where)
            checked[name] = check_value(name, value, defaults[name], where)
        profiles[profile] = checked
    return profiles



def chapter_profiles(notebook: Path) -> dict[str, dict[str, Any]]:
    """Every parameter of ``notebook`` per profile: its defaults with the profile's values over them
    and ``profile`` the profile's name (what a run of that profile sees when nothing else is given;
    ``data_dir`` and ``out_dir`` keep their defaults)."""
    defaults = notebook_parameters(notebook)
    by_profile = read_profiles(notebook.with_suffix(".profiles.yaml"), defaults)
    return {profile: {**defaults, **values, "profile": profile} for profile, values in by_profile.items()}


def shipped_parameters(chapter: str, profile: str = "paper") -> dict[str, Any]:
    """Every parameter of ``chapter``'s notebook in ``profile``, from the notebook and profiles file shipped with
    sentcl (:func:`chapter_profiles` of :func:`sentcl.paths.notebook_file`): what a run of that profile computes
    with, for the pages that count or cost it."""
    policy(profile)
    return chapter_profiles(notebook_file(f"{chapter}.ipynb"))[profile]


# --------------------------------------------------------------------------- inside a notebook


def resolve_parameters(chapter: str, namespace: Mapping[str, Any], *, given: Iterable[str] | None = None) -> dict[str, Any]:
    """The values a chapter notebook runs with, resolved from its profile, printed; returns
    ``{name: value}`` for every parameter (a notebook cell does ``globals().update(...)``).

    ``namespace`` holds the notebook's current values (its ``globals()``). A parameter counts as
    given explicitly, and keeps its value, when papermill injected it (``given``: by default the
    names assigned by papermill's injected cell, read from this IPython kernel's input history) or
    when its value differs from the parameters cell's default (a Colab user's edit of that cell).
    Every other parameter takes the value of ``profile``'s block in the chapter's profiles file,
    else keeps the default; ``out_dir`` None becomes ``runs/<profile>``. Defaults and profiles are
    read from the copy shipped with sentcl (:func:`sentcl.paths.notebook_file`).

    Persistent storage: where the notebook has the :data:`PERSISTENT` parameter and it is set (a
    folder, or ``"drive"``: Google Drive on Colab, :func:`persistent_folder`), the artifact cache
    (``$SENTCL_CACHE``: trained models and the checkpoints of unfinished runs) goes to its ``cache/``
    and ``out_dir`` None to its ``runs/<profile>``, so that a run cut off with its machine (a recycled
    Colab VM) continues from there when run again.

    The one ambiguity: outside IPython there is no injected cell to read, so a value given
    explicitly but equal to the parameters cell's default (the paper's) is taken as not given,
    and the profile's value wins. ``sentcl reproduce`` injects every value of the profile, so its
    runs resolve to exactly what it injected.

    Raises :class:`~sentcl.errors.ConfigError` for an unknown profile, an injected name the
    parameters cell does not define, a value of the wrong type or out of range, naming the
    parameter, or a data root the profile reads that is not a folder (:func:`check_data_dir`; a
    data_dir the profile does not read is a warning).
    """
    by_runner = resolved_by_runner(chapter, namespace) if given is None else None
    if by_runner is not None:  # sentcl reproduce resolved and checked them: papermill injected its values
        origins = by_runner
        resolved, profile = {name: namespace[name] for name in origins}, namespace["profile"]
    else:
        resolved, origins = _resolve(chapter, namespace, given)
        profile = resolved["profile"]
    storage = persistent_folder(resolved[PERSISTENT]) if resolved.get(PERSISTENT) else None
    if storage is not None:  # the cache and the results outlive the machine: a rerun on a fresh one resumes there
        os.environ[CACHE_ENV] = str(storage / "cache")
    if resolved["out_dir"] is None:
        resolved["out_dir"], origins["out_dir"] = (
            (f"runs/{profile}", "default: runs/<profile>") if storage is None
            else (str(storage / "runs" / profile), f"default: {PERSISTENT}/runs/<profile>"))
    print(describe_resolution(chapter, profile, resolved, origins))
    if storage is not None:
        print(f"persistent storage {storage}: the cache (trained models, checkpoints, embeddings) in {storage / 'cache'}, "
              f"the results in {resolved['out_dir']}; run the notebook again with the same parameters after a "
              "disconnect and it continues from there")
    unread = check_data_dir(profile, resolved["data_dir"]) if by_runner is None else None  # else checked by the runner
    if unread:
        print(f"sentcl: WARNING: {unread}", file=sys.stderr, flush=True)
    return resolved


def _resolve(chapter: str, namespace: Mapping[str, Any], given: Iterable[str] | None) -> tuple[dict[str, Any], dict[str, str]]:
    """The values and their origins (:func:`resolve_parameters`) from the shipped notebook's parameters cell and
    profiles file, each given value checked against its default's type and range."""
    notebook = notebook_file(f"{chapter}.ipynb")
    defaults = notebook_parameters(notebook)
    given = set(papermill_injected_names() if given is None else given)
    unknown = sorted(given - set(defaults))
    if unknown:
        raise unknown_parameter(unknown[0], defaults, f"{chapter} notebook (papermill -p)")
    profile = namespace.get("profile", defaults["profile"])
    policy(profile, f"{chapter} notebook, parameter profile")
    profile_values = read_profiles(notebook.with_suffix(".profiles.yaml"), defaults)[profile]
    resolved, origins = {}, {}
    for name, default in defaults.items():
        value = namespace.get(name, default)
        if name in given or not _same(value, default):
            resolved[name], origins[name] = _checked(name, value, default, chapter), "given"
        elif name in profile_values:
            resolved[name], origins[name] = profile_values[name], f"profile {profile}"
        else:
            resolved[name], origins[name] = default, "default"
    return resolved, origins


def resolution(chapter: str, profile: str, origins: Mapping[str, str]) -> dict[str, str]:
    """The environment ``sentcl reproduce`` gives the kernel of ``chapter``'s notebook (:data:`RESOLVED_ENV`): the
    parameters it resolved and checked with ``profile``, each with where its value came from."""
    return {RESOLVED_ENV: json.dumps({"chapter": chapter, "profile": profile, "origins": dict(origins)})}


def resolved_by_runner(chapter: str, namespace: Mapping[str, Any]) -> dict[str, str] | None:
    """Where each parameter's value came from, as ``sentcl reproduce`` resolved them for this kernel
    (:data:`RESOLVED_ENV`), or None: not run by it, or run for another chapter or profile (a notebook started
    by hand from a kernel that inherited the variable). A parameter it resolved that the kernel lacks is a
    ConfigError (papermill injected other values than it said)."""
    raw = os.environ.get(RESOLVED_ENV)
    if not raw:
        return None
    found = json.loads(raw)
    if found["chapter"] != chapter or namespace.get("profile") != found["profile"]:
        return None
    missing = sorted(set(found["origins"]) - set(namespace))
    if missing:
        raise ConfigError(f"{chapter} notebook: sentcl reproduce resolved {', '.join(missing)}, which this kernel lacks")
    return dict(found["origins"])


def persistent_folder(value: str) -> Path:
    """The folder a run keeps its cache and results in (the :data:`PERSISTENT` parameter), created:
    ``"drive"`` on Colab is Google Drive (``MyDrive/sentcl``; the drive is mounted first, which asks
    the user once), anything else a folder path. A ConfigError in one line when it cannot be."""
    if not isinstance(value, str):
        raise ConfigError(f"parameter {PERSISTENT} must be a folder or {COLAB_DRIVE!r}, got {value!r}")
    if value == COLAB_DRIVE:
        try:
            from google.colab import drive
        except ImportError:
            raise ConfigError(f"{PERSISTENT} {COLAB_DRIVE!r} mounts Google Drive, which only Colab can; "
                              "give a folder on persistent storage instead") from None
        if not (DRIVE_MOUNT / "MyDrive").is_dir():
            drive.mount(str(DRIVE_MOUNT))
        folder = DRIVE_MOUNT / "MyDrive" / "sentcl"
    else:
        folder = Path(value).expanduser()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{PERSISTENT} {value}: cannot create the folder {folder} ({exc.strerror})") from None
    return folder.resolve()


def check_data_dir(profile: str, data_dir: Any, given: str = "data_dir") -> str | None:
    """Check the data root a run of ``profile`` reads before anything runs: a ConfigError in one line
    when the profile reads it and it is not a folder (or the paper profile has none: ``data_dir``,
    ``$SENTCL_DATA``); the warning to show when it is given to a profile that never reads it (smoke runs
    on the project's sample data), else None. ``given``: how the user set it, for the warning."""
    from ..data.registry import samples_root

    if (policy(profile).data == "samples" and data_dir not in (None, "")
            and Path(data_dir).resolve() != samples_root().resolve()):
        return f"{given} {data_dir} is not read: the {profile} profile always runs on the project's sample data (data/samples)"
    resolve_data(profile, data_dir)
    return None


def describe_resolution(chapter: str, profile: str, values: Mapping[str, Any], origins: Mapping[str, str]) -> str:
    """The resolved parameters as text: a summary line, then ``name = value  (where from)`` per parameter."""
    given = [name for name, origin in origins.items() if origin.startswith("given")]
    from_profile = sum(origin.startswith("profile") for origin in origins.values())
    lines = [f"{chapter}, profile {profile}: {from_profile} values from the profile (notebooks/{chapter}.profiles.yaml "
             f"as shipped with sentcl), {len(given)} given ({', '.join(given) or 'none'}), "
             f"the other {len(values) - from_profile - len(given)} the parameters cell's"]
    width = max(len(name) for name in values)
    lines += [f"  {name:<{width}} = {value!r}  ({origins[name]})" for name, value in values.items()]
    return "\n".join(lines)


def papermill_injected_names() -> set[str]:
    """The names assigned by the cell papermill injected into this kernel's run (the newest input
    that starts with papermill's ``# Parameters`` line), from IPython's input history; empty
    outside IPython or when nothing was injected (Jupyter, Colab)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return set()
    shell = get_ipython()
    history = shell.user_ns.get("In", []) if shell is not None else []
    for source in reversed(history):
        if source.lstrip().split("\n", 1)[0].rstrip() == PAPERMILL_HEADER:
            try:
                tree = ast.parse(source)
            except SyntaxError:
                return set()
            return {name for name in (_assignment(node)[0] for node in tree.body) if name}
    return set()


def _same(value: Any, default: Any) -> bool:
    return type(value) is type(default) and value == default


def _checked(name: str, value: Any, default: Any, chapter: str) -> Any:
    try:
        return check_value(name, value, default, f"{chapter} notebook")
    except ConfigError as exc:
        raise ConfigError(f"{exc}{_papermill_hint(name, value, default)}") from None


def _papermill_hint(name: str, value: Any, default: Any) -> str:
    """How to give ``name`` with papermill, when ``value`` looks like text papermill's ``-p`` passed as it was
    (it reads numbers and True/False, everything else stays text): the hint that fits the parameter's type."""
    if not isinstance(value, str) or isinstance(default, str) or default is None:
        return ""
    if isinstance(default, (list, tuple, dict)):
        return f"; papermill -p gives text: pass lists and dicts with -y '{name}: ...'"
    if isinstance(default, bool):
        return f"; give -p {name} True or -p {name} False"
    return f"; papermill -p reads {value!r} as text, not as a {type(default).__name__}: give a number such as {default!r}"
