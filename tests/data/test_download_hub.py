"""``sentcl data download`` with the Hugging Face copies of SNLI and MultiNLI, without the network.

The hub cannot be reached here, so each test lays parquet files out in a Hugging Face cache in
tmp exactly as ``huggingface_hub`` leaves them (``datasets--<org>--<name>/blobs/<sha256>``,
``snapshots/<commit>/<path>`` linking to the blob, ``refs/main``), points the client at it and
runs offline (``HF_HUB_OFFLINE``): ``hf_hub_download`` itself resolves the files, and the
conversion to the official JSON-lines layout, the verification against the registry counts and
the move into the data root all run for real. The parquet files are built from the project's
sample NLI files (label ids 0/1/2, -1 for the rows without a gold label).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import json
import os
import sys
import warnings
import zipfile
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.data import download as download_module
from sentcl.data import info, load, registry, samples_root
from sentcl.data.download import HubUnavailableWarning, download, step_outputs
from sentcl.data.registry import HubFile, HubSource
from sentcl.errors import ConfigError, DataFormatError

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
hub_constants = pytest.importorskip("huggingface_hub.constants")

SAMPLES = samples_root()
LABEL_IDS = {"entailment": 0, "neutral": 1, "contradiction": 2, "-": -1}
registry_module = importlib.import_module("sentcl.data.registry")


def with_entries(monkeypatch, *entries):
    """Register variants of real entries (same name, so the real loader reads them)."""
    table = {**registry(), **{e.name: e for e in entries}}
    monkeypatch.setattr(registry_module, "registry", lambda: table)


def leftovers(root: Path) -> list[str]:
    return [p.name for p in root.glob(".download-*")]


@pytest.fixture
def hub_cache(tmp_path, monkeypatch) -> Path:
    """An empty Hugging Face cache in tmp, used offline by huggingface_hub."""
    cache = tmp_path / "hf-cache" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    return cache


def nli_parquet(jsonl: Path, path: Path, columns: dict | None = None) -> Path:
    """The Hugging Face NLI layout of an official JSON-lines file: premise, hypothesis, label id
    (``columns`` replaces some of them), written in row groups of 100 rows (read in batches)."""
    rows = [json.loads(line) for line in jsonl.read_text(encoding="utf-8").splitlines()]
    values = {
        "premise": [r["sentence1"] for r in rows],
        "hypothesis": [r["sentence2"] for r in rows],
        "label": [LABEL_IDS[r["gold_label"]] for r in rows],
        **(columns or {}),
    }
    types = {"premise": pa.string(), "hypothesis": pa.string(), "label": pa.int64()}
    pq.write_table(pa.table({c: pa.array(v, types[c]) for c, v in values.items()}), path, row_group_size=100)
    return path


def cache_file(cache: Path, hub: HubSource, repo_path: str, source: Path) -> None:
    """Put ``source`` in the cache as ``huggingface_hub`` stores a downloaded repository file."""
    data = source.read_bytes()
    repo = cache / f"datasets--{hub.repo.replace('/', '--')}"
    blob = repo / "blobs" / hashlib.sha256(data).hexdigest()
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_bytes(data)
    pointer = repo / "snapshots" / hub.revision / repo_path
    pointer.parent.mkdir(parents=True, exist_ok=True)
    pointer.symlink_to(os.path.relpath(blob, pointer.parent))
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(hub.revision)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def hub_variant(name: str, parquet: Path, steps: list[dict], counts: dict):
    """The real entry with its real hub repository and revision, the test's parquet file (its
    sha256) for the train file, other download steps and the sample counts."""
    entry = info(name)
    [(to, real)] = entry.hub.files.items()
    hub = dataclasses.replace(entry.hub, files={to: HubFile(real.path, sha(parquet))})
    splits = {s: dataclasses.replace(entry.splits[s], count=c, dropped=d) for s, (c, d) in counts.items()}
    return dataclasses.replace(entry, hub=hub, download=tuple(steps), splits=splits)


def archive(path: Path, members: dict[str, Path | bytes]) -> str:
    with zipfile.ZipFile(path, "w") as zf:
        for name, source in members.items():
            zf.writestr(name, source if isinstance(source, bytes) else source.read_bytes())
    return path.as_uri()


def snli_setup(tmp_path, hub_cache, monkeypatch, *, archive_url: str | None = None, columns=None):
    """SNLI whose train file is in the hub cache; its archive step reads ``archive_url``
    (default: a file that does not exist, so the step must not run)."""
    parquet = nli_parquet(SAMPLES / "snli/snli_1.0_train.jsonl", tmp_path / "snli-train.parquet", columns)
    steps = [
        {
            "action": "extract",
            "url": archive_url or (tmp_path / "absent.zip").as_uri(),
            "members": {"snli_1.0/snli_1.0_train.jsonl": "snli_1.0_train.jsonl"},
        }
    ]
    entry = hub_variant("snli", parquet, steps, {"train": (360, {"no_gold_label": 4})})
    cache_file(hub_cache, entry.hub, entry.hub.files["snli_1.0_train.jsonl"].path, parquet)
    with_entries(monkeypatch, entry)
    return entry, parquet


# --------------------------------------------------------------------------------------


def test_snli_train_comes_from_the_hub_copy(tmp_path, hub_cache, monkeypatch):
    _, parquet = snli_setup(tmp_path, hub_cache, monkeypatch)
    root = tmp_path / "root"
    with warnings.catch_warnings():
        warnings.simplefilter("error", HubUnavailableWarning)
        written = download("snli", root)
    assert written == [root / "snli/snli_1.0_train.jsonl"] and leftovers(root) == []
    # the official JSON-lines layout, row for row
    lines = [json.loads(line) for line in written[0].read_text(encoding="utf-8").splitlines()]
    hub_rows = pq.read_table(parquet).to_pylist()
    assert len(lines) == len(hub_rows) == 364
    assert all(set(line) == {"gold_label", "sentence1", "sentence2"} for line in lines)
    names = {v: k for k, v in LABEL_IDS.items()}
    assert [line["gold_label"] for line in lines] == [names[r["label"]] for r in hub_rows]
    # the loader drops exactly the hub's -1 rows, and reads what the official file gives
    record, official = load("snli", "train", root), load("snli", "train", SAMPLES)
    minus_one = sum(r["label"] == -1 for r in hub_rows)
    assert minus_one == 4 and record.dropped == {"no_gold_label": minus_one}
    assert (record.sentences1, record.sentences2) == (official.sentences1, official.sentences2)
    assert record.labels.tolist() == official.labels.tolist() and record.label_counts() == official.label_counts()


def test_multinli_train_from_the_hub_dev_from_the_archive_fetched_once(tmp_path, hub_cache, monkeypatch):
    folder = SAMPLES / "multinli"
    parquet = nli_parquet(folder / "multinli_1.0_train.jsonl", tmp_path / "mnli-train.parquet")
    url = archive(
        tmp_path / "multinli_1.0.zip",
        {
            "multinli_1.0/multinli_1.0_train.jsonl": b"not the train file the hub gives\n",
            "multinli_1.0/multinli_1.0_dev_matched.jsonl": folder / "multinli_1.0_dev_matched.jsonl",
            "multinli_1.0/multinli_1.0_dev_mismatched.jsonl": folder / "multinli_1.0_dev_mismatched.jsonl",
        },
    )
    steps = [{**step, "url": url, "sha256": sha(Path(url.removeprefix("file://")))} for step in info("multinli").download]
    assert len(steps) == 2  # the registry splits the archive's train member from its dev members
    counts = {"train": (120, {}), "dev_matched": (30, {"no_gold_label": 2}), "dev_mismatched": (30, {"no_gold_label": 2})}
    entry = hub_variant("multinli", parquet, steps, counts)
    cache_file(hub_cache, entry.hub, entry.hub.files["multinli_1.0_train.jsonl"].path, parquet)
    with_entries(monkeypatch, entry)
    fetched = []
    real_fetch = download_module.fetch
    monkeypatch.setattr(download_module, "fetch", lambda u, dest, sha256=None: fetched.append(u) or real_fetch(u, dest, sha256))
    root = tmp_path / "root"
    written = download("multinli", root)
    assert sorted(p.name for p in written) == [
        "multinli_1.0_dev_matched.jsonl", "multinli_1.0_dev_mismatched.jsonl", "multinli_1.0_train.jsonl"
    ]
    assert fetched == [url]
    for name in ("dev_matched", "dev_mismatched"):
        assert (root / f"multinli/multinli_1.0_{name}.jsonl").read_bytes() == (folder / f"multinli_1.0_{name}.jsonl").read_bytes()
    train = load("multinli", "train", root)
    assert len(train) == 120 and train.sentences1 == load("multinli", "train", SAMPLES).sentences1


def test_unreachable_hub_falls_back_to_the_archive_with_a_warning(tmp_path, hub_cache, monkeypatch, capsys):
    url = archive(tmp_path / "snli_1.0.zip", {"snli_1.0/snli_1.0_train.jsonl": SAMPLES / "snli/snli_1.0_train.jsonl"})
    snli_setup(tmp_path, hub_cache, monkeypatch, archive_url=url)
    for child in hub_cache.iterdir():  # the hub's file is not cached, and the hub is offline
        child.rename(tmp_path / child.name)
    root = tmp_path / "root"
    with pytest.warns(HubUnavailableWarning, match=r"stanfordnlp/snli: the Hugging Face hub cannot be reached \(.*offline"):
        [written] = download("snli", root)
    assert written.read_bytes() == (SAMPLES / "snli/snli_1.0_train.jsonl").read_bytes()
    # the command line says so under the dataset's name
    assert main(["data", "download", "snli", "--data-dir", str(tmp_path / "root2")]) == 0
    out = capsys.readouterr().out
    assert "snli: note: stanfordnlp/snli: the Hugging Face hub cannot be reached" in out and "snli: 1 files written" in out


@pytest.mark.parametrize("module", ["huggingface_hub", "pyarrow.parquet"])
def test_a_missing_package_falls_back_to_the_archive(tmp_path, hub_cache, monkeypatch, module):
    url = archive(tmp_path / "snli_1.0.zip", {"snli_1.0/snli_1.0_train.jsonl": SAMPLES / "snli/snli_1.0_train.jsonl"})
    snli_setup(tmp_path, hub_cache, monkeypatch, archive_url=url)
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.warns(HubUnavailableWarning, match=rf"stanfordnlp/snli: {module} is not installed; using the original archives"):
        [written] = download("snli", tmp_path / "root")
    assert written.read_bytes() == (SAMPLES / "snli/snli_1.0_train.jsonl").read_bytes()


def test_no_hub_uses_the_archive_even_when_the_hub_copy_is_there(tmp_path, hub_cache, monkeypatch, capsys):
    url = archive(tmp_path / "snli_1.0.zip", {"snli_1.0/snli_1.0_train.jsonl": SAMPLES / "snli/snli_1.0_train.jsonl"})
    snli_setup(tmp_path, hub_cache, monkeypatch, archive_url=url)
    root = tmp_path / "root"
    assert main(["data", "download", "snli", "--no-hub", "--data-dir", str(root)]) == 0
    assert "note:" not in capsys.readouterr().out
    assert (root / "snli/snli_1.0_train.jsonl").read_bytes() == (SAMPLES / "snli/snli_1.0_train.jsonl").read_bytes()


def test_a_hub_file_with_another_sha256_is_an_error_and_moves_nothing(tmp_path, hub_cache, monkeypatch):
    entry, parquet = snli_setup(tmp_path, hub_cache, monkeypatch)
    other = dataclasses.replace(entry, hub=dataclasses.replace(
        entry.hub, files={"snli_1.0_train.jsonl": HubFile(entry.hub.files["snli_1.0_train.jsonl"].path, "0" * 64)}))
    with_entries(monkeypatch, other)
    root = tmp_path / "root"
    where = f"hf://datasets/stanfordnlp/snli@{entry.hub.revision}/plain_text/train-00000-of-00001.parquet"
    with pytest.raises(DataFormatError, match=rf"{where}: expected sha256 0{{64}}, found '{sha(parquet)}'"):
        download("snli", root)
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"label": [0] * 363 + [3]}, r"row 364: expected a label id 0-2 or -1, found '3'"),
        ({"label": [0] * 150 + [None] + [0] * 213}, r"row 151: expected a label id 0-2 or -1, found 'None'"),
        ({"premise": ["p"] * 250 + [None] + ["p"] * 113}, r"row 251: expected a string in column premise, found 'None'"),
    ],
)
def test_bad_hub_rows_are_named(tmp_path, hub_cache, monkeypatch, columns, message):
    snli_setup(tmp_path, hub_cache, monkeypatch, columns=columns)
    root = tmp_path / "root"
    where = r"hf://datasets/stanfordnlp/snli@[0-9a-f]{40}/plain_text/train-00000-of-00001\.parquet "
    with pytest.raises(DataFormatError, match=where + message):
        download("snli", root)
    assert list(root.iterdir()) == []


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("wrong columns", r"expected columns \['premise', 'hypothesis', 'label'\], found \"no \['premise', 'hypothesis'\]"),
        ("not parquet", r"other.parquet: expected a parquet file, found "),
    ],
)
def test_a_hub_file_that_is_not_an_nli_parquet_file_is_an_error(tmp_path, hub_cache, monkeypatch, content, message):
    entry, _ = snli_setup(tmp_path, hub_cache, monkeypatch)
    parquet = tmp_path / "other.parquet"
    if content == "wrong columns":
        pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"], "label": [0]}), parquet)
    else:
        parquet.write_text('{"gold_label": "entailment"}\n')
    repo_path = "plain_text/other.parquet"
    hub = dataclasses.replace(entry.hub, files={"snli_1.0_train.jsonl": HubFile(repo_path, sha(parquet))})
    cache_file(hub_cache, hub, repo_path, parquet)
    with_entries(monkeypatch, dataclasses.replace(entry, hub=hub))
    with pytest.raises(DataFormatError, match=message):
        download("snli", tmp_path / "root")


def test_a_step_writing_hub_files_and_others_is_refused(tmp_path, hub_cache, monkeypatch):
    """The archive's train member in one step with the dev members would overwrite the hub's copy."""
    parquet = nli_parquet(SAMPLES / "multinli/multinli_1.0_train.jsonl", tmp_path / "mnli-train.parquet")
    members = {m: to for step in info("multinli").download for m, to in step["members"].items()}
    steps = [{"action": "extract", "url": (tmp_path / "absent.zip").as_uri(), "members": members}]
    entry = hub_variant("multinli", parquet, steps, {"train": (120, {})})
    cache_file(hub_cache, entry.hub, entry.hub.files["multinli_1.0_train.jsonl"].path, parquet)
    with_entries(monkeypatch, entry)
    with pytest.raises(ConfigError, match=r"multinli: a extract step writes \['multinli_1.0_train.jsonl'\] \(from the hub\) and"):
        download("multinli", tmp_path / "root")


# --------------------------------------------------------------------------------------
# The registry's hub entries


def test_the_registry_pins_the_hub_copies_the_paper_used():
    snli, mnli = info("snli").hub, info("multinli").hub
    assert (snli.repo, snli.revision) == ("stanfordnlp/snli", "cdb5c3d5eed6ead6e5a341c8e56e669bb666725b")
    assert (mnli.repo, mnli.revision) == ("nyu-mll/multi_nli", "da70db2af9d09693783c3320c4249840212ee221")
    assert {to: f.path for to, f in snli.files.items()} == {"snli_1.0_train.jsonl": "plain_text/train-00000-of-00001.parquet"}
    assert {to: f.path for to, f in mnli.files.items()} == {"multinli_1.0_train.jsonl": "data/train-00000-of-00001.parquet"}


def test_every_hub_file_has_an_archive_fallback_that_writes_only_hub_files():
    """Without the hub the same layout comes from the archives; with it, whole steps are skipped."""
    with_hub = [e for e in registry().values() if e.hub]
    assert {e.name for e in with_hub} == {"snli", "multinli"}
    for entry in with_hub:
        outputs = [set(step_outputs(s)) for s in entry.download if s["action"] != "requires"]
        from_hub = set(entry.hub.files)
        assert from_hub <= set().union(*outputs), entry.name
        assert all(o <= from_hub or not (o & from_hub) for o in outputs), entry.name
