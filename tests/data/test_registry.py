"""The registry entries of the STS, NLI, paraphrase, Chinese and wiki1m datasets: complete,
with a loader, and using the folder names of ../shared/data."""

from __future__ import annotations

import re

import pytest
import yaml

from sentcl.data import info, registry
from sentcl.data.loaders import common
from sentcl.data.registry import LOADERS, _parse_entry, load
from sentcl.errors import ConfigError
from sentcl.paths import resource

DATASETS = [
    "sts12",
    "sts13",
    "sts14",
    "sts15",
    "sts16",
    "stsbenchmark",
    "sickr",
    "sicke",
    "snli",
    "multinli",
    "allnli",
    "mrpc",
    "qqp",
    "cnsd_stsb",
    "simclue",
    "wiki1m",
]
# The expected counts, independent of the YAML files: SOURCES.md of ../shared/data for what
# it holds; the official releases (Hugging Face `snli`, `multi_nli`, `glue/qqp` builds, the
# MNRL-SBERT paper's 942,854 / 314,315) for the rest.
EXPECTED = {
    "sts12": {"test": (3108, {})},
    "sts13": {"test": (1500, {})},
    "sts14": {"test": (3750, {})},
    "sts15": {"test": (3000, {"unscored": 5500})},
    "sts16": {"test": (1186, {"unscored": 7997})},
    "stsbenchmark": {"train": (5749, {}), "dev": (1500, {}), "test": (1379, {})},
    "sickr": {"train": (4500, {}), "trial": (500, {}), "test": (4927, {}), "all": (9927, {})},
    "sicke": {"train": (4500, {}), "trial": (500, {}), "test": (4927, {})},
    "snli": {"train": (549367, {"no_gold_label": 785}), "dev": (9842, {}), "test": (9824, {})},
    "multinli": {
        "train": (392702, {}),
        "dev_matched": (9815, {"no_gold_label": 185}),
        "dev_mismatched": (9832, {"no_gold_label": 168}),
    },
    "allnli": {"train": (None, {"no_gold_label": 785})},
    "mrpc": {"train": (3576, {}), "dev": (500, {}), "test": (1725, {})},
    "qqp": {"train": (363846, {}), "dev": (40430, {})},
    "cnsd_stsb": {"train": (5231, {}), "dev": (1458, {}), "test": (1361, {})},
    "simclue": {"test": (28031, {}), "train_1w": (10000, {})},
    "wiki1m": {"train": (1000000, {}), "prefix": (11914, {})},
}


def test_mnrl_sbert_paper_counts_follow_from_the_registry():
    """SNLI + MultiNLI train = 942,854 rows (no-gold-label rows included)."""
    snli, mnli = info("snli").splits["train"], info("multinli").splits["train"]
    assert snli.count + sum(snli.dropped.values()) + mnli.count + sum(mnli.dropped.values()) == 942_854


@pytest.mark.parametrize("name", DATASETS)
def test_entry_is_complete(name):
    entry = info(name)
    assert name in LOADERS
    assert entry.title and entry.source and entry.citation and entry.licence and entry.notes
    assert {s: (v.count, v.dropped) for s, v in entry.splits.items()} == EXPECTED[name]
    assert all(v.files for v in entry.splits.values())
    assert entry.download, f"{name} has no download recipe"
    for step in entry.download:
        if "sha256" in step:
            assert re.fullmatch("[0-9a-f]{64}", step["sha256"])
        for url in [step["url"]] if "url" in step else step.get("urls", []):
            assert url.startswith(("http://", "https://"))


@pytest.mark.realdata
@pytest.mark.parametrize("name", DATASETS)
def test_folder_names_are_those_of_the_shared_data_root(shared_data, name):
    entry = info(name)
    present = [f for s in entry.splits.values() for f in s.files if (shared_data / entry.folder / f).exists()]
    if name in ("multinli", "qqp", "allnli"):
        assert present == []  # not in ../shared/data
    else:
        assert (shared_data / entry.folder).is_dir() and present


def test_every_registered_dataset_has_a_loader():
    assert set(registry()) <= set(LOADERS), sorted(set(registry()) - set(LOADERS))


def test_unknown_names_and_splits_list_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown dataset 'sts17'; registered: .*sts12"):
        load("sts17", data_dir=tmp_path)
    with pytest.raises(ConfigError, match=r"stsbenchmark has no split 'validation'; valid: \['dev', 'test', 'train'\]"):
        load("stsbenchmark", "validation", tmp_path)
    with pytest.raises(ConfigError, match="wiki1m: choose a split"):
        load("wiki1m", data_dir=tmp_path)


def test_nli_label_order_is_the_standard_one():
    assert common.NLI_LABELS == ("entailment", "neutral", "contradiction")


def write_entry(tmp_path, name: str, **changes):
    """The real entry's YAML with ``changes`` (None deletes a key), as ``<tmp>/<name>.yaml``."""
    raw = yaml.safe_load((resource("registry") / f"{name}.yaml").read_text(encoding="utf-8"))
    for key, value in changes.items():
        if value is None:
            raw.pop(key)
        else:
            raw[key] = value
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


def test_every_registry_file_parses_and_unknown_keys_are_rejected(tmp_path):
    assert _parse_entry(write_entry(tmp_path, "snli")) == info("snli")
    with pytest.raises(ConfigError, match=r"snli.yaml: unknown keys \['mirror'\]; valid: \[.*'hub'"):
        _parse_entry(write_entry(tmp_path, "snli", mirror="x"))
    raw_hub = yaml.safe_load((resource("registry") / "snli.yaml").read_text(encoding="utf-8"))["hub"]
    with pytest.raises(ConfigError, match=r"hub needs exactly the keys \['files', 'repo', 'revision'\], found \['branch', "):
        _parse_entry(write_entry(tmp_path, "snli", hub={**raw_hub, "branch": "main"}))
    with pytest.raises(ConfigError, match=r"hub revision must be a commit \(40 hex digits\), found 'main'"):
        _parse_entry(write_entry(tmp_path, "snli", hub={**raw_hub, "revision": "main"}))
    [(to, spec)] = raw_hub["files"].items()
    with pytest.raises(ConfigError, match=rf"hub file '{to}' needs exactly the keys \['path', 'sha256'\], found \['md5', "):
        _parse_entry(write_entry(tmp_path, "snli", hub={**raw_hub, "files": {to: {**spec, "md5": "x"}}}))
    with pytest.raises(ConfigError, match=r"sha256 must be 64 hex digits"):
        _parse_entry(write_entry(tmp_path, "snli", hub={**raw_hub, "files": {to: {**spec, "sha256": "abc"}}}))
    with pytest.raises(ConfigError, match=r"hub file 'snli_1.0_validation.jsonl' is not a file of any split"):
        _parse_entry(write_entry(tmp_path, "snli", hub={**raw_hub, "files": {"snli_1.0_validation.jsonl": spec}}))
    with pytest.raises(ConfigError, match=r"hub lists no files"):
        _parse_entry(write_entry(tmp_path, "snli", hub={**raw_hub, "files": {}}))
    raw_split = yaml.safe_load((resource("registry") / "snli.yaml").read_text(encoding="utf-8"))["splits"]
    raw_split["train"]["size"] = 1
    with pytest.raises(ConfigError, match=r"split 'train' has unknown keys \['size'\]"):
        _parse_entry(write_entry(tmp_path, "snli", splits=raw_split))
