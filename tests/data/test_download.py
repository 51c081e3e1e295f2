"""``sentcl data download`` without the network: sources are archives and files the tests
build in tmp, served by a local HTTP server or as file:// URLs.

- every step kind on sample data (custom registry entries with local URLs);
- sha256 mismatch and wrong counts leave the data root untouched;
- the real registry recipes, run against "original" archives rebuilt from
  ../shared/data, reproduce its files byte for byte (and the sha256 the registry records
  for pinned mirrors are checked for real).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import http.server
import importlib
import io
import shutil
import tarfile
import threading
import urllib.request
import zipfile
from pathlib import Path

import pytest

from sentcl.cli import main
from sentcl.data import info, load, registry, samples_root
from sentcl.data.download import STEPS, download, step_outputs
from sentcl.errors import ConfigError, DataFormatError

SAMPLES = samples_root()
# the module (sentcl.data.registry the attribute is the function of the same name)
registry_module = importlib.import_module("sentcl.data.registry")


@pytest.fixture
def served(tmp_path):
    """(folder, base URL): files put in the folder are served over HTTP on localhost."""
    folder = tmp_path / "served"
    folder.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    handler.log_message = lambda *a, **k: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield folder, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def with_entries(monkeypatch, *entries):
    """Register variants of real entries (same name, so the real loader reads them)."""
    table = {**registry(), **{e.name: e for e in entries}}
    monkeypatch.setattr(registry_module, "registry", lambda: table)


def variant(name: str, steps: list[dict], counts: dict):
    """A real entry with other download steps and the sample counts, and no Hugging Face copy
    (tests/data/test_download_hub.py covers those): ``counts`` maps a split to its record
    count, or to (count, dropped)."""
    entry = info(name)
    splits = {}
    for split, value in counts.items():
        count, dropped = value if isinstance(value, tuple) else (value, {})
        splits[split] = dataclasses.replace(entry.splits[split], count=count, dropped=dropped)
    return dataclasses.replace(entry, download=tuple(steps), splits=splits, hub=None)


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def make_targz(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        for name, data in members.items():
            info_ = tarfile.TarInfo(name)
            info_.size = len(data)
            tf.addfile(info_, io.BytesIO(data))
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def leftovers(root: Path) -> list[str]:
    return [p.name for p in root.glob(".download-*")]


# --------------------------------------------------------------------------------------
# Every step kind, on the project's sample data


def test_save_and_extract_from_zip_and_targz(tmp_path, served, monkeypatch):
    folder, base = served
    sick = SAMPLES / "sick2014"
    shutil.copy(sick / "SICK_train.txt", folder)
    make_zip(tmp_path / "trial.zip", {"SICK/SICK_trial.txt": (sick / "SICK_trial.txt").read_bytes()})
    make_targz(
        folder / "test.tar.gz", {"data/x/SICK_test_annotated.txt": (sick / "SICK_test_annotated.txt").read_bytes()}
    )
    steps = [
        {
            "action": "save",
            "url": f"{base}/SICK_train.txt",
            "sha256": sha(sick / "SICK_train.txt"),
            "to": "SICK_train.txt",
        },
        {
            "action": "extract",
            "url": (tmp_path / "trial.zip").as_uri(),
            "members": {"SICK_trial.txt": "SICK_trial.txt"},
        },
        {
            "action": "extract",
            "url": f"{base}/test.tar.gz",
            "members": {"x/SICK_test_annotated.txt": "SICK_test_annotated.txt"},
        },
    ]
    with_entries(monkeypatch, variant("sickr", steps, {"train": 60, "trial": 20, "test": 40}))
    root = tmp_path / "root"
    written = download("sickr", root)
    assert sorted(p.name for p in written) == ["SICK_test_annotated.txt", "SICK_train.txt", "SICK_trial.txt"]
    for p in written:
        assert p.read_bytes() == (sick / p.name).read_bytes()
    assert len(load("sickr", "test", root)) == 40
    assert leftovers(root) == []
    assert download("sickr", root) == []  # present: nothing to do
    assert len(download("sickr", root, force=True)) == 3


def test_sha256_mismatch_leaves_the_data_root_untouched(tmp_path, served, monkeypatch):
    folder, base = served
    shutil.copy(SAMPLES / "sick2014/SICK_train.txt", folder)
    steps = [{"action": "save", "url": f"{base}/SICK_train.txt", "sha256": "0" * 64, "to": "SICK_train.txt"}]
    with_entries(monkeypatch, variant("sickr", steps, {"train": 60}))
    root = tmp_path / "root"
    with pytest.raises(
        DataFormatError, match=rf"{base}/SICK_train.txt: expected sha256 0{{64}}, found '[0-9a-f]{{64}}'"
    ):
        download("sickr", root)
    assert list(root.iterdir()) == []


def test_wrong_count_after_download_moves_nothing(tmp_path, served, monkeypatch):
    folder, base = served
    shutil.copy(SAMPLES / "sick2014/SICK_train.txt", folder)
    steps = [{"action": "save", "url": f"{base}/SICK_train.txt", "to": "SICK_train.txt"}]
    with_entries(monkeypatch, variant("sickr", steps, {"train": 61}))
    root = tmp_path / "root"
    with pytest.raises(DataFormatError, match=r"expected 61 records .* in sickr/train, found '60"):
        download("sickr", root)
    assert list(root.iterdir()) == []


def test_unreachable_url_is_a_one_line_error(tmp_path, monkeypatch, capsys):
    steps = [{"action": "save", "url": (tmp_path / "nowhere.txt").as_uri(), "to": "SICK_train.txt"}]
    with_entries(monkeypatch, variant("sickr", steps, {"train": 60}))
    assert main(["data", "download", "sickr", "--data-dir", str(tmp_path / "root")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sentcl: error: cannot download file://") and err.count("\n") == 1


def test_split_rows_head_lines_and_paste_columns(tmp_path, served, monkeypatch):
    folder, base = served
    # MRPC: the official train file is brmson's train + val (header once)
    train = (SAMPLES / "mrpc/msr-para-train.tsv").read_bytes()
    val = (SAMPLES / "mrpc/msr-para-val.tsv").read_bytes()
    (folder / "msr_paraphrase_train.txt").write_bytes(train + val.split(b"\n", 1)[1])
    mrpc = variant(
        "mrpc",
        [
            {
                "action": "split_rows",
                "url": f"{base}/msr_paraphrase_train.txt",
                "header": 1,
                "parts": [{"to": "msr-para-train.tsv", "rows": 60}, {"to": "msr-para-val.tsv"}],
            }
        ],
        {"train": 60, "dev": 20},
    )
    # wiki1m: the full file, and its prefix derived from it
    shutil.copy(SAMPLES / "simcse_wiki1m/wiki1m_for_simcse.txt", folder)
    wiki = variant(
        "wiki1m",
        [
            {"action": "save", "url": f"{base}/wiki1m_for_simcse.txt", "to": "wiki1m_for_simcse.txt"},
            {
                "action": "head_lines",
                "from": "wiki1m_for_simcse.txt",
                "lines": 100,
                "to": "wiki1m_for_simcse.first_lines.txt",
            },
        ],
        {"train": 200, "prefix": 100},
    )
    # SNLI dev: e-SNLI's s1/s2/labels files, each sentence followed by a space
    rows = [line.split("\t") for line in (SAMPLES / "snli/snli_1.0_dev.tokenized.tsv").read_text().splitlines()[1:]]
    for i, name in enumerate(("s1.dev", "s2.dev", "labels.dev")):
        (folder / name).write_text("".join(r[i] + (" " if i < 2 else "") + "\n" for r in rows))
    snli = variant(
        "snli",
        [
            {
                "action": "paste_columns",
                "urls": [f"{base}/s1.dev", f"{base}/s2.dev", f"{base}/labels.dev"],
                "header": ["premise", "hypothesis", "label"],
                "to": "snli_1.0_dev.tokenized.tsv",
            }
        ],
        {"dev": 60},
    )
    with_entries(monkeypatch, mrpc, wiki, snli)
    root = tmp_path / "root"
    for name in ("mrpc", "wiki1m", "snli"):
        for path in download(name, root):
            rel = path.relative_to(root)
            assert path.read_bytes() == (SAMPLES / rel).read_bytes(), rel


def test_sts_paste_keeps_unscored_rows_and_drops_source_columns(tmp_path, served, monkeypatch):
    folder, base = served
    entry = info("sts15")
    members = {}
    for rel in entry.splits["test"].files:
        subset = rel.split(".test.")[0]
        lines = (SAMPLES / "sts/2015" / rel).read_text().splitlines()
        members[f"test_evaluation_task2a/STS.gs.{subset}.txt"] = "".join(
            ln.split("\t")[0] + "\r\n" for ln in lines
        ).encode()
        members[f"test_evaluation_task2a/STS.input.{subset}.txt"] = "".join(
            "\t".join(ln.split("\t")[1:]) + "\tsource-a\tsource-b\n" for ln in lines
        ).encode()
    make_zip(folder / "STS2015-en-test.zip", members)
    [step] = entry.download
    with_entries(
        monkeypatch,
        variant("sts15", [{**step, "url": f"{base}/STS2015-en-test.zip"}], {"test": (40, {"unscored": 15})}),
    )
    root = tmp_path / "root"
    written = download("sts15", root)
    assert len(written) == 5
    for path in written:
        assert path.read_bytes() == (SAMPLES / "sts/2015" / path.name).read_bytes()


def test_every_registry_recipe_produces_every_split_file():
    """A download yields the complete layout: every file a split lists is written by a step
    (or comes from the datasets a `requires` step names), without the hub."""
    for name, entry in registry().items():
        if not entry.download:
            continue
        produced, required = set(), []
        for step in entry.download:
            if step["action"] == "requires":
                required += step["datasets"]
            else:
                assert step["action"] in STEPS, f"{name}: {step['action']}"
                produced.update(step_outputs(step))
        for other in required:
            produced.update(f"{info(other).folder}/{f}" for s in info(other).splits.values() for f in s.files)
        wanted = {f for s in entry.splits.values() for f in s.files}
        assert wanted <= produced, f"{name}: no step writes {sorted(wanted - produced)}"


def test_step_outputs_are_what_the_steps_write(tmp_path, served, monkeypatch):
    """step_outputs (what a skipped step would have written) matches what the step writes."""
    folder, base = served
    shutil.copy(SAMPLES / "sick2014/SICK_train.txt", folder)
    step = {"action": "save", "url": f"{base}/SICK_train.txt", "to": "SICK_train.txt"}
    with_entries(monkeypatch, variant("sickr", [step], {"train": 60}))
    written = download("sickr", tmp_path / "root")
    assert [p.name for p in written] == step_outputs(step) == ["SICK_train.txt"]
    with pytest.raises(ConfigError, match="unknown download action 'fetch'"):
        step_outputs({"action": "fetch"})


# --------------------------------------------------------------------------------------
# The real recipes, against "originals" rebuilt from ../shared/data


@pytest.mark.realdata
def test_real_recipes_reproduce_the_shared_layout(shared_data, tmp_path, monkeypatch):
    """STS12-16 from official-style zips (gs + input files), STS-B from its tar.gz, and
    SICK, CNSD and SimCLUE from their pinned mirrors, whose registry sha256 are checked."""
    originals = tmp_path / "originals"
    originals.mkdir()
    url_map: dict[str, Path] = {}
    for name in ("sts12", "sts13", "sts14", "sts15", "sts16"):
        entry = info(name)
        [step] = entry.download
        members = {}
        for rel, subset in step["subsets"].items():
            lines = (shared_data / entry.folder / rel).read_text(encoding="utf-8").splitlines()
            members["gold/" + step["gs"].format(subset)] = "".join(ln.split("\t")[0] + "\n" for ln in lines).encode()
            members["gold/" + step["input"].format(subset)] = "".join(
                "\t".join(ln.split("\t")[1:]) + "\n" for ln in lines
            ).encode()
        url_map[step["url"]] = make_zip(originals / f"{name}.zip", members)
    [step] = info("stsbenchmark").download
    url_map[step["url"]] = make_targz(
        originals / "Stsbenchmark.tar.gz",
        {member: (shared_data / "stsbenchmark" / to).read_bytes() for member, to in step["members"].items()},
    )
    for name in ("sickr", "cnsd_stsb", "simclue"):
        for step in info(name).download:
            url_map[step["url"]] = shared_data / info(name).folder / step["to"]

    real_urlopen = urllib.request.urlopen
    monkeypatch.setattr(urllib.request, "urlopen", lambda url, timeout=None: real_urlopen(url_map[url].as_uri()))
    root = tmp_path / "root"
    for name in ("sts12", "sts13", "sts14", "sts15", "sts16", "stsbenchmark", "sickr", "cnsd_stsb", "simclue"):
        written = download(name, root)
        assert written, name
        for path in written:
            rel = path.relative_to(root)
            assert path.read_bytes() == (shared_data / rel).read_bytes(), rel
    assert main(["data", "check", "--data-dir", str(root), "sts12", "sts15", "sts16", "sickr"]) == 0
