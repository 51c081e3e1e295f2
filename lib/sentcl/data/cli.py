"""``sentcl data ...``: list the registered datasets, check a data root, download datasets."""

from __future__ import annotations

import argparse
import warnings

from ..paths import data_root
from .registry import registry


def register(subparsers, name: str = "data", summary: str = "inspect, check and download datasets") -> None:
    parser = subparsers.add_parser(name, help=summary, description=summary)
    sub = parser.add_subparsers(dest="data_command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("list", help="the registered datasets, their splits and expected counts")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser(
        "check",
        help="verify a data root against the expected counts",
        description="Load every split of the registered datasets (or of NAME ...) from the data root and compare "
        "record and dropped-row counts with the registry. Missing datasets are listed but are not a failure; "
        "the exit status is 1 only when something present is wrong (WRONG COUNT or ERROR).",
    )
    p.add_argument("names", nargs="*", metavar="NAME", help="datasets to check (default: all)")
    p.add_argument("--data-dir", help="the data root (default: $SENTCL_DATA)")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser(
        "download",
        help="fill a data root from the original sources (needs internet)",
        description="Download datasets from their original sources into the data root, in the layout of "
        "../shared/data: each file is fetched to a temporary folder, its sha256 verified where the registry "
        "knows it, converted where the layout is derived, loaded and counted, and only then moved into place. "
        "SNLI and MultiNLI train come from the Hugging Face copies the MNRL-SBERT paper used (pinned commit "
        "and sha256), or from the original archives when the hub cannot be reached.",
    )
    p.add_argument("names", nargs="+", metavar="NAME", help="datasets to download, or 'all'")
    p.add_argument("--data-dir", help="the data root (default: $SENTCL_DATA); created if absent")
    p.add_argument("--force", action="store_true", help="download again even when the files are present")
    p.add_argument("--no-hub", dest="hub", action="store_false",
                   help="use the original archives even where the registry names a Hugging Face copy")
    p.set_defaults(func=cmd_download)


def cmd_list(args: argparse.Namespace) -> int:
    rows = [("name", "kind", "folder", "splits (expected count)", "title")]
    for entry in registry().values():
        splits = ", ".join(f"{s} {'?' if v.count is None else v.count}" for s, v in entry.splits.items())
        rows.append((entry.name, entry.kind, entry.folder, splits, entry.title))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    for row in rows:
        print("  ".join(row[i].ljust(widths[i]) for i in range(4)) + "  " + row[4])
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from .check import check, format_table, summary

    root = data_root(args.data_dir)
    results = check(root, args.names)
    print(format_table(results))
    print()
    print(summary(results, root))
    return 1 if any(r.failed for r in results) else 0


def cmd_download(args: argparse.Namespace) -> int:
    """Download the named datasets. With ``all``: datasets without a recipe are listed and
    skipped, and a failing dataset is reported without stopping the others. A warning raised
    while a dataset downloads (e.g. the hub could not be reached) is printed under its name."""
    from ..errors import SentclError
    from .download import HubUnavailableWarning, download

    everything = args.names == ["all"]
    names = list(registry()) if everything else args.names
    failed, skipped = [], []
    for name in names:
        if everything and not registry()[name].download:
            skipped.append(name)
            continue
        error: SentclError | None = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", HubUnavailableWarning)
            try:
                written = download(name, args.data_dir, force=args.force, hub=args.hub)
            except SentclError as exc:
                error = exc
        for warning in caught:
            print(f"{name}: note: {warning.message}")
        if error is not None:
            if not everything:
                raise error
            print(f"{name}: FAILED: {error}")
            failed.append(name)
            continue
        print(f"{name}: {len(written)} files written" if written else f"{name}: already present")
        for path in written:
            print(f"  {path}")
    if skipped:
        print("no download recipe (see their registry notes): " + ", ".join(skipped))
    if failed:
        print("failed: " + ", ".join(failed))
    return 1 if failed else 0
