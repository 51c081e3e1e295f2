"""Files written safely: atomic writes (a temporary file or folder beside the target, then a
rename: a crash never leaves a half-written file that a later step would read), a lock file
for read-merge-write cycles shared between processes, JSON read with file:line errors, and the
one line that says a damaged file was found and what is done instead of reading it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in the target's folder; rename it onto ``path`` on success.

    The caller writes the temporary path however it likes (``np.save``, ``torch.save``,
    ``safetensors``...). On an exception the temporary file is removed and the target
    is left untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual mode
    try:
        yield tmp_path
        with open(tmp_path, "rb") as fh:  # flush the data to disk before the rename
            os.fsync(fh.fileno())
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding=encoding)
    return Path(path)


def atomic_write_json(path: str | os.PathLike, obj: Any, indent: int = 2) -> Path:
    """Write ``obj`` as JSON to ``path`` atomically (keys kept in insertion order)."""
    return atomic_write_text(path, json.dumps(obj, indent=indent, ensure_ascii=False, default=str) + "\n")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temporary folder beside ``path``; on success it replaces ``path`` in one rename.

    Every file written into it is flushed to disk before the rename, so a crash leaves either
    the old folder or the complete new one, never a half-written one. An existing ``path`` is
    first renamed aside and removed after the new folder is in place. On an exception the
    temporary folder is removed and ``path`` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        fsync_tree(tmp)
        old = None
        if path.exists():
            old = path.with_name(f".{path.name}.old-{os.getpid()}-{time.monotonic_ns()}")
            os.rename(path, old)
        os.rename(tmp, path)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def fsync_tree(folder: Path) -> None:
    """Flush every file and folder under ``folder`` to disk (before a rename makes it final)."""
    for sub, _dirs, files in os.walk(folder):
        for name in files:
            with open(os.path.join(sub, name), "rb") as fh:
                os.fsync(fh.fileno())
        fd = os.open(sub, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def file_lock(path: str | os.PathLike) -> Iterator[None]:
    """Hold an exclusive lock (``flock``) on the lock file ``path`` for the ``with`` block.

    Another process asking for the same lock waits; the lock is released when the block ends or
    the process dies (a killed run never leaves a stale lock). The folder is created if needed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


_HELD: dict[Path, int] = {}  # lock files this process holds until it ends: path -> open descriptor


def claim(lock: str | os.PathLike, what: str, holder: dict[str, Any], *, for_process: bool = False) -> Path:
    """Take the lock file ``lock`` at once (``flock``, non-blocking), or raise an
    :class:`~sentcl.errors.OutputError` naming ``what`` and the run that holds it (``holder`` as that
    run wrote it: pid, command, started). Released by :func:`release`, or when the process ends;
    with ``for_process`` a second claim by the same process is a no-op (a notebook run twice in one
    kernel). Returns the lock's path."""
    from .errors import OutputError

    path = Path(lock).resolve()
    if path in _HELD:
        if for_process:
            return path
        raise OutputError(f"{what} is already claimed by this process")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.read(fd, 4096).decode("utf-8", "replace")
        os.close(fd)
        try:
            info = json.loads(other)
            by = f"pid {info['pid']} ({info['command']}, started {info['started']})"
        except (ValueError, KeyError, TypeError):
            by = "another process"
        raise OutputError(f"{what} is in use by {by}: wait for it to finish, or write to another folder") from None
    os.ftruncate(fd, 0)
    os.write(fd, json.dumps(holder).encode("utf-8"))
    _HELD[path] = fd
    return path


def release(lock: Path) -> None:
    """Give back a lock :func:`claim` took (its path as :func:`claim` returned it)."""
    fd = _HELD.pop(lock, None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def read_json(path: str | os.PathLike, what: str = "JSON") -> Any:
    """The JSON value in ``path``; a malformed file is a :class:`~sentcl.errors.DataFormatError`
    naming the file, the line and ``what`` was expected, a missing one a
    :class:`~sentcl.errors.DataMissingError`."""
    from .errors import DataFormatError, DataMissingError

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataMissingError(f"{path}: no such file (expected {what})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, what, exc.msg) from None


def report_damaged(path: str | os.PathLike, problem: str, action: str) -> None:
    """Say on stderr, in one line, that ``path`` is damaged (``problem``) and what is done instead
    (``action``: "recomputing it", "left out"...). Damaged files are never read: the caller
    recomputes them or leaves them out, and says which through this line."""
    print(f"sentcl: damaged file {path}: {problem}; {action}", file=sys.stderr, flush=True)
