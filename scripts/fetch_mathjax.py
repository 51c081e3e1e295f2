#!/usr/bin/env python3
"""Fetch MathJax 3 from the npm registry into ``book/_vendor/mathjax`` (git-ignored).

The book serves MathJax itself (``_config.yml``: ``mathjax_path`` + ``html_static_path``)
so its pages typeset math offline. The package is fetched with ``npm pack`` (or, without
npm, straight from the registry's tarball URL), checked against the registry's pinned
sha512 integrity, and its ``es5/`` folder (the browser build, fonts included) is unpacked
atomically. Running it again with the same version does nothing.

Usage: python3 scripts/fetch_mathjax.py [DEST]
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = "3.2.2"
# `npm view mathjax@3.2.2 dist.integrity`
INTEGRITY = "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw=="
TARBALL_URL = f"https://registry.npmjs.org/mathjax/-/mathjax-{VERSION}.tgz"
DEFAULT_DEST = Path(__file__).resolve().parents[1] / "book" / "_vendor" / "mathjax"


def download(folder: Path) -> Path:
    """The package tarball, fetched with npm when it is installed, else over HTTPS."""
    if shutil.which("npm"):
        subprocess.run(
            ["npm", "pack", f"mathjax@{VERSION}", "--pack-destination", str(folder), "--silent"],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return folder / f"mathjax-{VERSION}.tgz"
    target = folder / f"mathjax-{VERSION}.tgz"
    with urllib.request.urlopen(TARBALL_URL, timeout=120) as response, open(target, "wb") as fh:
        shutil.copyfileobj(response, fh)
    return target


def check_integrity(tarball: Path) -> None:
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != INTEGRITY:
        raise SystemExit(f"fetch_mathjax: {tarball.name} has integrity {digest}, expected {INTEGRITY}")


def main(argv: list[str]) -> int:
    dest = Path(argv[1]) if len(argv) > 1 else DEFAULT_DEST
    stamp = dest / ".version"
    if stamp.is_file() and stamp.read_text().strip() == VERSION:
        return 0
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest.parent) as tmp:
        tmp_path = Path(tmp)
        tarball = download(tmp_path)
        check_integrity(tarball)
        with tarfile.open(tarball) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("package/es5/") and m.isfile()]
            tar.extractall(tmp_path / "x", members=members, filter="data")
        staged = tmp_path / "x" / "package" / "es5"
        (staged / ".version").write_text(VERSION + "\n")
        old = tmp_path / "old"
        if dest.exists():
            dest.rename(old)  # removed with the temporary folder
        staged.rename(dest)
    print(f"fetch_mathjax: MathJax {VERSION} in {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
