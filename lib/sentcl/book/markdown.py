"""MyST markdown for the generated pages: plain text made safe, tables that scroll sideways, raw HTML
fragments, durations. Every generated page (:mod:`sentcl.book.pages.fragments`, :mod:`sentcl.book.pages.environment`)
writes its markdown through these."""

from __future__ import annotations

import html
from typing import Any

from .redaction import public_text

WIDE_PAGE = "---\nhtml_theme.sidebar_secondary.remove: true\n---\n\n"  # front matter: no contents panel, full width


def raw_html(fragment: str) -> str:
    lines = [line for line in fragment.splitlines() if line.strip()]
    return "```{raw} html\n" + "\n".join(lines) + "\n```\n"


def md(text: Any) -> str:
    """Plain text made safe inside MyST markdown (no math, no table breaks, no local paths)."""
    text = public_text(text)
    return html.escape(text, quote=False).replace("$", r"\$").replace("|", r"\|").replace("\n", " ").strip()


def md_table(header: list[str], rows: list[list[str]], full_width: bool = False, css_class: str = "") -> str:
    """A markdown table in a box that scrolls sideways when the table is wider than the page
    (``sentcl-wide`` in ``book/_static/sentcl.css``); ``full_width`` (only on a page without
    the contents panel, :data:`WIDE_PAGE`) lets it use the right margin too; ``css_class`` names the
    box for the stylesheet and the page tests (e.g. ``sentcl-findings``)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    classes = " ".join(c for c in ("full-width" if full_width else "", "sentcl-wide", css_class) if c)
    return f":::{{div}} {classes}\n\n" + "\n".join(lines) + "\n:::\n"


def full_width(fragment: str) -> str:
    """A page fragment that may use the right margin (only on a :data:`WIDE_PAGE`)."""
    return ":::{div} full-width\n\n" + fragment + "\n:::\n"


def duration(seconds: float | None) -> str:
    """Seconds as '42 s', '3 min 05 s' or '2 h 10 min'."""
    if seconds is None:
        return "—"
    minutes, sec = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    if hours:
        return f"{hours} h {minutes:02d} min"
    return f"{minutes} min {sec:02d} s" if minutes else f"{seconds:.0f} s"


__all__ = ["WIDE_PAGE", "duration", "full_width", "md", "md_table", "raw_html"]
