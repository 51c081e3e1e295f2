"""What a published page may say about the machine that built it: no local paths.

Every page, table note, run record shown, executed notebook and caption goes through this module, the
one place that keeps machine paths off the book. The data roots, the output folder and the checkout
are named, never shown (:data:`DATA_ROOT_LABEL`, :data:`OUT_LABEL`, :data:`SAMPLES_LABEL`, ``.``:
:func:`local_paths` says which path is which), and any other absolute path is cut to its last part
(:func:`public_text`). A run's description of its own data (:func:`describe_data`, written into the
results files) names the data root the same way.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

DATA_ROOT_LABEL = "$SENTCL_DATA"  # how a page names a real data root (its local path is not published)
OUT_LABEL = "<out>"  # how a page names the output folder
SAMPLES_LABEL = "data/samples"  # the project's sample data

# An absolute local path: POSIX (/a/b, ~/a, file:///a) or Windows (C:\\a). Not a URL's path
# (preceded by ':' or '/'), a ratio or unit (1/2, pairs/s: preceded by a word character),
# nor an HTML closing tag (</td>).
_PATH_STOP = r"\s/\\,;:'\"`()\[\]{}<>|*?"
_LOCAL_PATH = re.compile(
    rf"(?<![\w.~/\\:<>=@-])(?:file://)?(?:~?/(?:[^{_PATH_STOP}]+/?)+|[A-Za-z]:\\(?:[^{_PATH_STOP}]+\\?)+)"
)


def public_text(text: object, known: Mapping[str, str] | None = None, generic: bool = True) -> str:
    """``text`` without local absolute paths, for a published page.

    Each path in ``known`` (an absolute path -> the words to show instead, e.g. the data
    root -> ``$SENTCL_DATA``: :func:`local_paths`) is replaced first, the longest first, so a path
    under a known one keeps its relative part; then, unless ``generic`` is False (HTML, whose
    attributes may hold paths that are links), any other absolute path becomes ``…/<its last part>``
    (``/home/me/shared/data`` -> ``…/data``).
    """
    text = "" if text is None else str(text)
    for path in sorted(known or {}, key=len, reverse=True):
        label = (known or {})[path]
        path = path.rstrip("/\\") or path
        text = re.sub(re.escape(path) + r"(?=$|[/\\\s\"',;:)\]}<>`]|\.(?!\w))", lambda _m, label=label: label, text)  # type: ignore[misc]  # mypy cannot type a lambda's default
    return _LOCAL_PATH.sub(_last_part, text) if generic else text


def _last_part(match: re.Match) -> str:
    parts = [p for p in re.split(r"[/\\]", match.group(0)) if p and p not in ("~", "file:")]
    return "…/" + parts[-1] if parts and not parts[-1].endswith(":") else "…"


def local_paths(root: Path, out: Path, data_roots: Iterable[Path] = ()) -> dict[str, str]:
    """The local paths a page may meet, each with the words it shows instead: the checkout (``.``),
    the output folder (``<out>``), the sample data (``data/samples``) and every real data root a run
    read (``$SENTCL_DATA``)."""
    from ..data import samples_root

    known: dict[str, str] = {}
    samples = Path(samples_root())
    for path, label in ((root, "."), (out, OUT_LABEL), (samples, SAMPLES_LABEL)):
        known[str(path)] = known[str(Path(path).resolve())] = label
    for data_root in data_roots:
        label = SAMPLES_LABEL if data_root.resolve() == samples.resolve() else DATA_ROOT_LABEL
        known[str(data_root)] = known[str(data_root.resolve())] = label
    return known


def data_root_label(data_root: Path, root: Path | None = None) -> str:
    """How a page names a data root (markdown): ``data/samples`` for the project's sample data, a path
    relative to the checkout for one inside it, else ``$SENTCL_DATA`` and the folder's name."""
    from ..data import samples_root

    resolved = Path(data_root).resolve()
    if resolved == Path(samples_root()).resolve():
        return f"`{SAMPLES_LABEL}` (the project's sample data)"
    if root is not None and resolved.is_relative_to(Path(root).resolve()):
        return f"`{resolved.relative_to(Path(root).resolve()).as_posix()}` (in the checkout)"
    name = resolved.name.replace("`", "'")
    return f"`{DATA_ROOT_LABEL}` (the real data root, a folder named `{name}`)"


def describe_data(root: Path, sample: bool) -> str:
    """A run's own words for the data it read (written into results files, so no path in it)."""
    return f"sample data ({SAMPLES_LABEL})" if sample else f"real data from the data root ({DATA_ROOT_LABEL}, folder '{Path(root).name}')"


def public_output(output: dict, known: Mapping[str, str] | None) -> None:
    """Replace local paths in one notebook cell output, in place (HTML: only the known paths)."""
    if output.get("output_type") == "stream":
        output["text"] = public_text(output.get("text", ""), known)
    elif output.get("output_type") == "error":
        output["evalue"] = public_text(output.get("evalue", ""), known)
        output["traceback"] = [public_text(line, known) for line in output.get("traceback", [])]
    data = output.get("data") or {}
    for mime in list(data):
        if mime in ("text/plain", "text/markdown", "text/latex"):
            data[mime] = public_text(_joined(data[mime]), known)
        elif mime == "text/html":  # a table from before the book had sentcl.css was full-width: under the contents panel
            html_text = _joined(data[mime]).replace('class="sentcl-table full-width"', 'class="sentcl-table"')
            data[mime] = public_text(html_text, known, generic=False)


def public_json(value: Any, known: Mapping[str, str] | None) -> Any:
    """Every string in a JSON-like value with local paths replaced."""
    if isinstance(value, str):
        return public_text(value, known)
    if isinstance(value, dict):
        return {k: public_json(v, known) for k, v in value.items()}
    if isinstance(value, list):
        return [public_json(v, known) for v in value]
    return copy.deepcopy(value)


def _joined(value: Any) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


__all__ = [
    "DATA_ROOT_LABEL",
    "OUT_LABEL",
    "SAMPLES_LABEL",
    "data_root_label",
    "describe_data",
    "local_paths",
    "public_json",
    "public_output",
    "public_text",
]
