#!/usr/bin/env python3
"""Set the project's repository address: ``[project.urls] Repository`` in ``pyproject.toml``, the
default source of every notebook's install cell and the README's install command
(:func:`sentcl.book.publishing.install.set_repository`). The book's Colab buttons take it from
``pyproject.toml`` at build time.

Usage: .venv/bin/python scripts/set_repository.py https://github.com/you/sentcl
"""

from __future__ import annotations

import sys
from pathlib import Path

from sentcl.book.publishing.install import set_repository
from sentcl.errors import SentclError

if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    try:
        changed = set_repository(Path(__file__).resolve().parents[1], sys.argv[1])
    except SentclError as exc:
        sys.exit(f"set_repository: {exc}")
    print("\n".join(f"rewrote {path}" for path in changed) or "already set")
