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

An entry with a ``hub`` block (SNLI, MultiNLI) names the Hugging Face copy of some of its
files, the copy the MNRL-SBERT paper trained on. Those files are fetched first, with
``huggingface_hub.hf_hub_download`` at the pinned commit (into the usual Hugging Face cache,
so ``HF_HUB_OFFLINE``, ``HF_HUB_CACHE`` and ``HF_ENDPOINT`` apply), their sha256 checked,
and each parquet file written as the official JSON-lines file the NLI loader reads (label
ids 0/1/2 -> entailment/neutral/contradiction, -1 -> ``-``, no gold label). A step whose
every file the hub gave is then skipped. When the hub cannot be reached, or
``huggingface_hub``/``pyarrow`` is not installed, a :class:`HubUnavailableWarning` says so
and the original archives are used; any other hub error is an error. Reading the repository
files rather than ``datasets.load_dataset`` pins exact files (commit and sha256), needs no
``datasets`` and leaves no second, Arrow copy of the data in the ``datasets`` cache.

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
import itertools
import json
import os
import shutil
import tarfile
import tempfile
import urllib.parse
import urllib.request
import warnings
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from ..errors import ConfigError, DataFormatError, SentclError
from ..hashing import file_sha256
from ..paths import DATA_ENV
from ..progress import progress_bar
from .loaders.common import NLI_LABELS
from .loaders.nli import NO_GOLD_LABEL
from .registry import DatasetInfo, HubSource, info, load

CHUNK = 1 << 20

# The columns of the Hugging Face NLI copies and their "no gold label" id.
HUB_NLI_COLUMNS = ("premise", "hypothesis", "label")
HUB_NO_LABEL = -1


class HubUnavailableWarning(UserWarning):
    """The Hugging Face copy could not be fetched (hub unreachable, package missing); the
    original archives are used instead."""


def fetch(url: str, dest: Path, sha256: str | None = None) -> Path:
    """Download ``url`` (http, https or file) to ``dest`` with a progress bar and check
    its sha256 when given; a mismatch is an error naming the URL."""
    try:
        response = urllib.request.urlopen(url, timeout=60)
    except (OSError, ValueError) as exc:
        raise SentclError(f"cannot download {url}: {exc}") from None
    digest = hashlib.sha256()
    total = int(response.headers.get("Content-Length") or 0) or None
    name = Path(urllib.parse.urlparse(url).path).name
    with response, open(dest, "wb") as out, progress_bar(total=total, unit="B", unit_scale=True, desc=name, leave=False) as bar:
        for block in iter(lambda: response.read(CHUNK), b""):
            out.write(block)
            digest.update(block)
            bar.update(len(block))
    check_sha256(url, digest.hexdigest(), sha256)
    return dest


def check_sha256(where: str, found: str, expected: str | None) -> None:
    """A DataFormatError naming ``where`` when ``found`` is not the ``expected`` sha256 (if any)."""
    if expected and found != expected.lower():
        raise DataFormatError(where, None, f"sha256 {expected}", found)


# --------------------------------------------------------------------------------------
# The Hugging Face copies


def fetch_hub(hub: HubSource) -> dict[str, Path]:
    """The hub's files, fetched into the Hugging Face cache and checked: layout file ->
    local parquet file. Empty, with a :class:`HubUnavailableWarning`, when the hub cannot be
    reached (and the files are not cached) or ``huggingface_hub``/``pyarrow`` is missing."""
    try:
        import pyarrow.parquet  # noqa: F401  (needed to convert; checked before downloading)
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError
    except ImportError as exc:
        warnings.warn(f"{hub.repo}: {exc.name} is not installed; using the original archives", HubUnavailableWarning,
                      stacklevel=3)
        return {}
    local = {}
    for to, file in hub.files.items():
        try:
            local[to] = Path(hf_hub_download(hub.repo, file.path, repo_type="dataset", revision=hub.revision))
        except LocalEntryNotFoundError as exc:  # no connection (or HF_HUB_OFFLINE) and not in the cache
            reason = exc.__cause__ or exc  # the connection error or OfflineModeIsEnabled behind it, when there is one
            warnings.warn(f"{hub.repo}: the Hugging Face hub cannot be reached ({reason}); using the original archives",
                          HubUnavailableWarning, stacklevel=3)
            return {}
        except (EntryNotFoundError, HfHubHTTPError) as exc:
            raise SentclError(f"cannot download {hub.url(file.path)}: {exc}") from None
        check_sha256(hub.url(file.path), file_sha256(local[to], CHUNK), file.sha256)
    return local


def hub_nli_to_jsonl(parquet: Path, dest: Path, where: str) -> None:
    """Write a Hugging Face NLI parquet file (``premise``, ``hypothesis``, ``label``) as an
    official JSON-lines file (``gold_label``, ``sentence1``, ``sentence2``), row for row and
    text untouched: label ids 0/1/2 become entailment/neutral/contradiction and -1 (no gold
    label) the loader's ``-``, which it drops and counts. ``where`` names the file in errors."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        source = pq.ParquetFile(parquet)
    except pa.ArrowException as exc:
        raise DataFormatError(where, None, "a parquet file", str(exc)) from None
    names = source.schema_arrow.names
    missing = [c for c in HUB_NLI_COLUMNS if c not in names]
    if missing:
        raise DataFormatError(where, None, f"columns {list(HUB_NLI_COLUMNS)}", f"no {missing} in {names}")
    row = 0
    with source, open(dest, "w", encoding="utf-8") as out:
        for batch in source.iter_batches(columns=list(HUB_NLI_COLUMNS)):  # streamed: MultiNLI train is 214 MB
            premises, hypotheses, labels = (batch.column(c).to_pylist() for c in HUB_NLI_COLUMNS)
            for premise, hypothesis, label in zip(premises, hypotheses, labels, strict=True):
                row += 1
                out.write(json.dumps(_hub_nli_row(premise, hypothesis, label, f"{where} row {row}"), ensure_ascii=False))
                out.write("\n")


def _hub_nli_row(premise: object, hypothesis: object, label: object, where: str) -> dict[str, object]:
    """One hub row as an official JSON-lines object; a bad value is an error naming the row."""
    for column, text in (("premise", premise), ("hypothesis", hypothesis)):
        if not isinstance(text, str):
            raise DataFormatError(where, None, f"a string in column {column}", repr(text))
    if label == HUB_NO_LABEL:
        gold = NO_GOLD_LABEL
    elif isinstance(label, int) and 0 <= label < len(NLI_LABELS):
        gold = NLI_LABELS[label]
    else:
        raise DataFormatError(where, None, f"a label id 0-{len(NLI_LABELS) - 1} or -1", repr(label))
    return {"gold_label": gold, "sentence1": premise, "sentence2": hypothesis}


# --------------------------------------------------------------------------------------
# Archives


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
    """The archive's file members and its open handle (zip or tar), closed on leaving."""
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            yield [n for n in zf.namelist() if not n.endswith("/")], zf
    elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            yield [m.name for m in tf.getmembers() if m.isfile()], tf
    else:
        raise DataFormatError(archive, None, "a zip or tar archive", "neither")


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


def step_save(step: dict, sources: list[Path], folder: Path) -> None:
    shutil.copyfile(sources[0], _target(folder, step["to"]))


def step_extract(step: dict, sources: list[Path], folder: Path) -> None:
    with open_archive(sources[0]) as (names, handle):
        for member, to in step["members"].items():
            with _open_member(handle, _find(names, member, step["url"])) as src, open(_target(folder, to), "wb") as out:
                shutil.copyfileobj(src, out, CHUNK)


def step_sts_paste(step: dict, sources: list[Path], folder: Path) -> None:
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
            for number, (score, pair) in enumerate(zip(gs, pairs, strict=True), start=1):
                fields = pair.split("\t")
                if len(fields) < 2:
                    raise DataFormatError(f"{step['url']}!{input_name}", number, "two tab-separated sentences", pair)
                rows.append(f"{score.strip()}\t{fields[0]}\t{fields[1]}\n")
            _target(folder, to).write_text("".join(rows), encoding="utf-8")


def step_paste_columns(step: dict, sources: list[Path], folder: Path) -> None:
    columns = [_text_lines(p.read_bytes(), url) for p, url in zip(sources, step["urls"], strict=True)]
    if len({len(c) for c in columns}) != 1:
        raise DataFormatError(
            step["urls"][0],
            None,
            "files with the same number of lines",
            str({url: len(c) for url, c in zip(step["urls"], columns, strict=True)}),
        )
    rows = ["\t".join(step["header"]) + "\n"]
    rows += ["\t".join(field.rstrip(" ") for field in fields) + "\n" for fields in zip(*columns, strict=True)]
    _target(folder, step["to"]).write_text("".join(rows), encoding="utf-8")


def step_split_rows(step: dict, sources: list[Path], folder: Path) -> None:
    lines = _byte_lines(sources[0].read_bytes())
    while lines and not lines[-1].strip():  # blank lines at the end of the file are no rows
        lines.pop()
    header, rows = lines[: step["header"]], lines[step["header"] :]
    start = 0
    for part in step["parts"]:
        stop = start + part["rows"] if "rows" in part else len(rows)
        if stop > len(rows):
            raise DataFormatError(step["url"], None, f"at least {stop} rows after the header", f"{len(rows)} rows")
        _target(folder, part["to"]).write_bytes(b"".join(header + rows[start:stop]))
        start = stop
    if start != len(rows):
        raise DataFormatError(step["url"], None, f"{start} rows after the header", f"{len(rows)} rows")


def step_head_lines(step: dict, sources: list[Path], folder: Path) -> None:
    with open(folder / step["from"], "rb") as src:
        head = list(itertools.islice(src, step["lines"]))
    if len(head) < step["lines"]:
        raise DataFormatError(folder / step["from"], None, f"at least {step['lines']} lines", f"{len(head)} lines")
    _target(folder, step["to"]).write_bytes(b"".join(head))


STEPS = {
    "save": step_save,
    "extract": step_extract,
    "sts_paste": step_sts_paste,
    "paste_columns": step_paste_columns,
    "split_rows": step_split_rows,
    "head_lines": step_head_lines,
}


def step_outputs(step: dict) -> list[str]:
    """The files (relative to the dataset's folder) a step writes."""
    action = step["action"]
    if action in ("save", "paste_columns", "head_lines"):
        return [step["to"]]
    if action == "extract":
        return list(step["members"].values())
    if action == "sts_paste":
        return list(step["subsets"])
    if action == "split_rows":
        return [part["to"] for part in step["parts"]]
    raise ConfigError(f"unknown download action {action!r}; valid: {[*sorted(STEPS), 'requires']}")


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


def download(name: str, data_dir: str | Path | None = None, *, force: bool = False, hub: bool = True) -> list[Path]:
    """Download one registered dataset into the data root; returns the files written.

    Skips a dataset whose files are all present unless ``force``. ``data_dir`` defaults
    to ``$SENTCL_DATA``; it is created when absent. With ``hub`` (the default) the files the
    entry's ``hub`` block names come from the Hugging Face copy when it can be reached;
    ``hub=False`` uses the original archives only.
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
                written += download(other, root, force=force, hub=hub)
        elif action in STEPS:
            steps.append(step)
        else:
            raise ConfigError(f"{name}: unknown download action {action!r}; valid: {[*sorted(STEPS), 'requires']}")
    hub_files = fetch_hub(entry.hub) if hub and entry.hub else {}
    if hub_files:
        steps = _steps_besides_hub(entry, steps, set(hub_files))
    if steps or hub_files:
        written += _run_steps(entry, steps, root, hub_files)
    return written


def _steps_besides_hub(entry: DatasetInfo, steps: list[dict], from_hub: set[str]) -> list[dict]:
    """The steps still needed once the hub gave ``from_hub``: a step that writes only such
    files is skipped; one that writes some of them and other files is a registry error (it
    would overwrite the hub's copy), to be split into two steps."""
    needed = []
    for step in steps:
        outputs = set(step_outputs(step))
        if outputs <= from_hub:
            continue
        if outputs & from_hub:
            raise ConfigError(
                f"{entry.name}: a {step['action']} step writes {sorted(outputs & from_hub)} (from the hub) and "
                f"{sorted(outputs - from_hub)}; split it into two steps"
            )
        needed.append(step)
    return needed


def _run_steps(entry: DatasetInfo, steps: list[dict], root: Path, hub_files: dict[str, Path]) -> list[Path]:
    """Convert the hub's files, fetch and run the steps, all in a temporary folder inside
    ``root``; verify, then move into place. A URL that several steps read is fetched once."""
    written = []
    with tempfile.TemporaryDirectory(prefix=".download-", dir=root) as tmp:
        staging = Path(tmp) / "root"
        folder = staging / entry.folder
        folder.mkdir(parents=True)
        fetched = Path(tmp) / "fetched"
        fetched.mkdir()
        produced: set[str] = set()
        for to, parquet in hub_files.items():
            assert entry.hub is not None  # hub_files come from it
            hub_nli_to_jsonl(parquet, _target(folder, to), entry.hub.url(entry.hub.files[to].path))
            produced.add(to)
        by_url: dict[str, Path] = {}
        for step in steps:
            sources = []
            for url, sha in _step_urls(step):
                if url not in by_url:
                    by_url[url] = fetch(url, fetched / f"{len(by_url)}-{Path(urllib.parse.urlparse(url).path).name}", sha)
                sources.append(by_url[url])
            STEPS[step["action"]](step, sources, folder)
            produced.update(step_outputs(step))
        _verify(entry, staging, produced)
        target = root / entry.folder
        for rel in sorted(produced):
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            os.replace(folder / rel, dest)
            written.append(dest)
    return written
