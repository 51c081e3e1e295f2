"""``sentcl data download``: fill a data root from the datasets' original sources.

Each registry entry lists download steps (``download:``). A step fetches one or more URLs
and turns them into files of the dataset's folder:

- ``save``: the fetched file is the file ``to``;
- ``extract``: ``members`` of a zip or tar archive (a member is named by its path, or by
  its last path components) become the files they map to;
- ``sts_paste``: SemEval STS archives hold ``STS.gs.<subset>.txt`` (one score per line,
  empty when unscored) beside ``STS.input.<subset>.txt`` (two tab-separated sentences,
  sometimes followed by source columns); each ``subsets`` entry writes
  ``score \\t sentence1 \\t sentence2`` lines, the layout of ``../shared/data``;
- ``paste_columns``: line-aligned files (e-SNLI's ``s1``, ``s2``, ``labels``) pasted into a
  tab-separated file with a ``header``, trailing spaces of each field removed;
- ``split_rows``: a file with ``header`` lines split into consecutive ``parts`` of
  ``rows`` rows each (the last part may omit ``rows``: the rest), each part with the header
  (blank lines at the end of the file are ignored; any other count mismatch is an error);
- ``head_lines``: the first ``lines`` lines of a file of the folder (``from``) as ``to``;
- ``requires``: the dataset is built from other datasets (``datasets``), downloaded first.

The whole download is atomic per file and verified before anything is moved: every URL is
fetched into a temporary folder inside the data root (with a progress bar), its sha256
checked where the registry records one, the steps run there, and every split whose files
were produced is loaded and counted against the registry. Only then are the files moved
into place (a rename each), so an interrupted or failed download leaves the data root as
it was.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from tqdm.auto import tqdm

from ..errors import ConfigError, DataFormatError, SentclError
from ..paths import DATA_ENV
from .registry import DatasetInfo, info, load

CHUNK = 1 << 20


def fetch(url: str, dest: Path, sha256: str | None = None) -> Path:
    """Download ``url`` (http, https or file) to ``dest`` with a progress bar and check
    its sha256 when given; a mismatch is an error naming the URL."""
    try:
        response = urllib.request.urlopen(url, timeout=60)  # noqa: S310 (URLs come from the registry)
    except (OSError, ValueError) as exc:
        raise SentclError(f"cannot download {url}: {exc}") from None
    digest = hashlib.sha256()
    total = int(response.headers.get("Content-Length") or 0) or None
    name = Path(urllib.parse.urlparse(url).path).name
    with response, open(dest, "wb") as out, tqdm(total=total, unit="B", unit_scale=True, desc=name, leave=False) as bar:
        for block in iter(lambda: response.read(CHUNK), b""):
            out.write(block)
            digest.update(block)
            bar.update(len(block))
    if sha256 and digest.hexdigest() != sha256.lower():
        raise DataFormatError(url, None, f"sha256 {sha256}", digest.hexdigest())
    return dest


# --------------------------------------------------------------------------------------
# Archives


def _members(archive: Path) -> tuple[list[str], Any]:
    if zipfile.is_zipfile(archive):
        zf = zipfile.ZipFile(archive)
        return [n for n in zf.namelist() if not n.endswith("/")], zf
    if tarfile.is_tarfile(archive):
        tf = tarfile.open(archive)
        return [m.name for m in tf.getmembers() if m.isfile()], tf
    raise DataFormatError(archive, None, "a zip or tar archive", "neither")


def _find(names: list[str], wanted: str, archive: str) -> str:
    """The member whose path is ``wanted`` or ends with ``/wanted``; exactly one must match."""
    found = [n for n in names if n == wanted or n.endswith("/" + wanted)]
    if len(found) != 1:
        problem = "no such member" if not found else f"{len(found)} members match: {found}"
        raise DataFormatError(archive, None, f"an archive member {wanted!r}", problem)
    return found[0]


def _open_member(handle: Any, member: str) -> IO[bytes]:
    if isinstance(handle, zipfile.ZipFile):
        return handle.open(member)
    extracted = handle.extractfile(member)
    assert extracted is not None  # only regular files are listed
    return extracted


def _read_member(handle: Any, member: str) -> bytes:
    with _open_member(handle, member) as fh:
        return fh.read()


@contextlib.contextmanager
def open_archive(archive: Path) -> Iterator[tuple[list[str], Any]]:
    names, handle = _members(archive)
    try:
        yield names, handle
    finally:
        handle.close()


def _byte_lines(data: bytes) -> list[bytes]:
    """Lines split at ``\n`` only, each keeping its line ending (a lone ``\r`` or other
    Unicode line separators inside a sentence do not split it)."""
    lines = data.split(b"\n")
    last = lines.pop()
    return [line + b"\n" for line in lines] + ([last] if last else [])


def _text_lines(data: bytes, where: str) -> list[str]:
    """The UTF-8 lines of ``data`` without their endings (``\n`` or ``\r\n``)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            where, data.count(b"\n", 0, exc.start) + 1, "utf-8 text", repr(data[exc.start : exc.start + 1])
        ) from None
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


# --------------------------------------------------------------------------------------
# Steps: each writes files into ``folder`` (the staging copy of the dataset's folder).


def _target(folder: Path, rel: str) -> Path:
    """``folder / rel``, its parent folders created (files may live in subfolders)."""
    path = folder / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def step_save(step: dict, sources: list[Path], folder: Path) -> list[str]:
    shutil.copyfile(sources[0], _target(folder, step["to"]))
    return [step["to"]]


def step_extract(step: dict, sources: list[Path], folder: Path) -> list[str]:
    with open_archive(sources[0]) as (names, handle):
        for member, to in step["members"].items():
            with _open_member(handle, _find(names, member, step["url"])) as src, open(_target(folder, to), "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)
    return list(step["members"].values())


def step_sts_paste(step: dict, sources: list[Path], folder: Path) -> list[str]:
    with open_archive(sources[0]) as (names, handle):
        for to, subset in step["subsets"].items():
            gs_name = _find(names, step["gs"].format(subset), step["url"])
            input_name = _find(names, step["input"].format(subset), step["url"])
            gs = _text_lines(_read_member(handle, gs_name), f"{step['url']}!{gs_name}")
            pairs = _text_lines(_read_member(handle, input_name), f"{step['url']}!{input_name}")
            if len(gs) != len(pairs):
                raise DataFormatError(
                    f"{step['url']}!{gs_name}", None, f"{len(pairs)} lines, one per input pair", f"{len(gs)} lines"
                )
            rows = []
            for number, (score, pair) in enumerate(zip(gs, pairs), start=1):
                fields = pair.split("\t")
                if len(fields) < 2:
                    raise DataFormatError(f"{step['url']}!{input_name}", number, "two tab-separated sentences", pair)
                rows.append(f"{score.strip()}\t{fields[0]}\t{fields[1]}\n")
            _target(folder, to).write_text("".join(rows), encoding="utf-8")
    return list(step["subsets"])


def step_paste_columns(step: dict, sources: list[Path], folder: Path) -> list[str]:
    columns = [_text_lines(p.read_bytes(), url) for p, url in zip(sources, step["urls"])]
    if len({len(c) for c in columns}) != 1:
        raise DataFormatError(
            step["urls"][0],
            None,
            "files with the same number of lines",
            str({url: len(c) for url, c in zip(step["urls"], columns)}),
        )
    rows = ["\t".join(step["header"]) + "\n"]
    rows += ["\t".join(field.rstrip(" ") for field in fields) + "\n" for fields in zip(*columns)]
    _target(folder, step["to"]).write_text("".join(rows), encoding="utf-8")
    return [step["to"]]


def step_split_rows(step: dict, sources: list[Path], folder: Path) -> list[str]:
    lines = _byte_lines(sources[0].read_bytes())
    while lines and not lines[-1].strip():  # blank lines at the end of the file are no rows
        lines.pop()
    header, rows = lines[: step["header"]], lines[step["header"] :]
    start = 0
    written = []
    for part in step["parts"]:
        stop = start + part["rows"] if "rows" in part else len(rows)
        if stop > len(rows):
            raise DataFormatError(step["url"], None, f"at least {stop} rows after the header", f"{len(rows)} rows")
        _target(folder, part["to"]).write_bytes(b"".join(header + rows[start:stop]))
        written.append(part["to"])
        start = stop
    if start != len(rows):
        raise DataFormatError(step["url"], None, f"{start} rows after the header", f"{len(rows)} rows")
    return written


def step_head_lines(step: dict, sources: list[Path], folder: Path) -> list[str]:
    with open(folder / step["from"], "rb") as src:
        head = [line for _, line in zip(range(step["lines"]), src)]
    if len(head) < step["lines"]:
        raise DataFormatError(folder / step["from"], None, f"at least {step['lines']} lines", f"{len(head)} lines")
    _target(folder, step["to"]).write_bytes(b"".join(head))
    return [step["to"]]


STEPS = {
    "save": step_save,
    "extract": step_extract,
    "sts_paste": step_sts_paste,
    "paste_columns": step_paste_columns,
    "split_rows": step_split_rows,
    "head_lines": step_head_lines,
}


def _step_urls(step: dict) -> list[tuple[str, str | None]]:
    """(url, sha256 or None) of each file a step fetches: ``url`` (+ ``sha256``) or ``urls``."""
    if "url" in step:
        return [(step["url"], step.get("sha256"))]
    return [(url, None) for url in step.get("urls", [])]


# --------------------------------------------------------------------------------------


def _present(entry: DatasetInfo, root: Path) -> bool:
    return all((root / entry.folder / f).exists() for s in entry.splits.values() for f in s.files)


def _verify(entry: DatasetInfo, staging: Path, produced: set[str]) -> None:
    """Load every split whose files were all produced and compare with the registry."""
    for split, expected in entry.splits.items():
        if not expected.files or not set(expected.files) <= produced:
            continue
        record = load(entry.name, split, staging)
        if expected.count is not None and (len(record) != expected.count or record.dropped != expected.dropped):
            raise DataFormatError(
                staging / entry.folder / expected.files[0],
                None,
                f"{expected.count} records (dropped {expected.dropped or 'none'}) in {entry.name}/{split}",
                f"{len(record)} (dropped {record.dropped or 'none'})",
            )


def download(name: str, data_dir: str | Path | None = None, *, force: bool = False) -> list[Path]:
    """Download one registered dataset into the data root; returns the files written.

    Skips a dataset whose files are all present unless ``force``. ``data_dir`` defaults
    to ``$SENTCL_DATA``; it is created when absent.
    """
    chosen = data_dir if data_dir not in (None, "") else os.environ.get(DATA_ENV)
    if not chosen:
        raise ConfigError(f"no data root: pass --data-dir DIR or set ${DATA_ENV}")
    root = Path(chosen).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    entry = info(name)
    if not entry.download:
        raise ConfigError(f"{name} has no download recipe in its registry entry")
    if _present(entry, root) and not force:
        return []

    written: list[Path] = []
    steps = []
    for step in entry.download:
        action = step.get("action")
        if action == "requires":
            for other in step["datasets"]:
                written += download(other, root, force=force)
        elif action in STEPS:
            steps.append(step)
        else:
            raise ConfigError(f"{name}: unknown download action {action!r}; valid: {sorted(STEPS) + ['requires']}")
    if steps:
        written += _run_steps(entry, steps, root)
    return written


def _run_steps(entry: DatasetInfo, steps: list[dict], root: Path) -> list[Path]:
    """Fetch and convert in a temporary folder inside ``root``, verify, then move into place."""
    written = []
    with tempfile.TemporaryDirectory(prefix=".download-", dir=root) as tmp:
        staging = Path(tmp) / "root"
        folder = staging / entry.folder
        folder.mkdir(parents=True)
        fetched = Path(tmp) / "fetched"
        fetched.mkdir()
        produced: set[str] = set()
        for i, step in enumerate(steps):
            sources = [
                fetch(url, fetched / f"{i}-{j}-{Path(urllib.parse.urlparse(url).path).name}", sha)
                for j, (url, sha) in enumerate(_step_urls(step))
            ]
            produced.update(STEPS[step["action"]](step, sources, folder))
        _verify(entry, staging, produced)
        target = root / entry.folder
        for rel in sorted(produced):
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(folder / rel, dest)
            written.append(dest)
    return written
