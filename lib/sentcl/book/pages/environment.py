"""The pages read from run records: the environment page (versions, devices, what ran in which
precision, every run's cost) and the introduction's timing table."""

from __future__ import annotations

from datetime import datetime, timezone

from ...chapters import CHAPTERS
from ..markdown import WIDE_PAGE, duration, md, md_table
from ..output.run_records import RunRecord
from ..redaction import public_text
from ..versions import lock_differences


def environment_page(records: list[RunRecord], known: dict[str, str] | None = None) -> str:
    from importlib import metadata

    parts = [
        WIDE_PAGE + "# Environment\n",
        "Generated from the run records of this build (`records/` in the output folder): the versions "
        "and the machine each run used, and what it cost. "
        f"Book built {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC with jupyter-book "
        f"{_version(metadata, 'jupyter-book')}.\n",
    ]
    if not records:
        parts.append("No run records: nothing was run into this build's output folder.\n")
        return "\n".join(parts)
    packages = [p for p in ("python", "torch", "transformers", "sentence-transformers", "sentcl") if p in records[-1].versions]
    parts.append("## Versions and devices\n")
    combos: dict[tuple, list[str]] = {}
    for r in records:
        other = ", ".join(f"{p} {used} (lock {locked})" for p, (used, locked) in lock_differences(r.versions).items()) or "—"
        combos.setdefault((r.device, *(r.versions.get(p, "?") for p in packages), other), []).append(r.name)
    parts.append(
        md_table(["device", *packages, "other than the lock's", "runs"],
                 [[*k, ", ".join(dict.fromkeys(v))] for k, v in combos.items()], full_width=True)
    )
    if any(k[-1] != "—" for k in combos):
        parts.append("Some runs used versions other than those of `requirements/lock.txt` (a hosted runtime keeps its "
                     "own packages where they fall in sentcl's tested ranges): their numbers may differ from a locked "
                     "run's.\n")
    parts.append(precision_section(records))
    parts.append("## Runs\n")
    rows = [
        [r.started[:16].replace("T", " "), r.kind, r.name, r.profile or "—", r.status, duration(r.wall_time_s),
         "—" if r.peak_memory_mb is None else f"{r.peak_memory_mb:.0f} MiB",
         "—" if r.peak_gpu_memory_mb is None else f"{r.peak_gpu_memory_mb:.0f} MiB", r.precision.get("used", "—"),
         f"`{r.run_id}`"]
        for r in records
    ]
    header = ["started (UTC)", "kind", "name", "profile", "status", "wall time", "peak memory", "peak GPU memory",
              "training precision", "run id"]
    parts.append(md_table(header, rows, full_width=True))
    failed = [r for r in records if r.status == "failed"]
    for r in failed:
        parts.append(f"- `{r.run_id}` ({r.name}) failed: {md(public_text(r.error or '', known))}")
    return "\n".join(parts) + "\n"


def precision_section(records: list[RunRecord]) -> str:
    """The environment page's "Precision" section: per chapter run, whether its CPU computes bf16
    natively, and what its kernel encoded and trained in which precision (from the run records)."""
    text = [
        "## Precision\n",
        "`auto`, every chapter's default, is fp32 on every CPU, so that the same build gives the same numbers "
        "on any processor, and bf16 (fp16 on GPUs without bf16) on a GPU; bf16 on a CPU is opt-in. What each "
        "run actually used, as its kernel counted it:\n",
    ]
    rows = []
    for r in records:
        if r.kind != "notebook":
            continue
        uses = [f"{u['what']}: {u['precision']} on {u['device']} ({u['count']:,})" for u in r.precision.get("uses", [])]
        native = r.precision.get("cpu_native_bf16")
        rows.append([r.chapter or r.name, r.profile or "—", md(r.device), "—" if native is None else ("yes" if native else "no"),
                     "<br>".join(md(u) for u in uses) or "not recorded"])
    if not rows:
        return "\n".join(text) + "No chapter run recorded what it ran in which precision.\n"
    return "\n".join(text) + md_table(["chapter", "profile", "device", "CPU native bf16", "what ran in which precision"], rows,
                                       full_width=True)


def timings(records: list[RunRecord]) -> str:
    """The introduction's table: how long each chapter took, where: the latest successful
    notebook run per chapter, profile and device (``records`` oldest first)."""
    latest = {(r.chapter, r.profile, r.device): r for r in records if r.kind == "notebook" and r.status == "ok"}
    done = list(latest.values())
    if not done:
        return "No chapter has run into this build yet, so there are no measured times to show.\n"
    rows = [
        [f"[{r.chapter}]({r.chapter}.md)" if r.chapter in CHAPTERS else (r.chapter or r.name), r.profile or "—",
         md(r.device), duration(r.wall_time_s), "—" if r.peak_memory_mb is None else f"{r.peak_memory_mb:.0f} MiB",
         r.started[:10]]
        for r in done
    ]
    return md_table(["chapter", "profile", "device", "wall time", "peak memory", "measured"], rows)


def _version(metadata, name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "?"


__all__ = ["environment_page", "precision_section", "timings"]
