"""Cached model folders outside the artifact stages (the tiny encoders, re-pooled transformers) are
checked before they are loaded: a truncated file is said in one line and the folder built again."""

from __future__ import annotations

import gc
import json

import pytest
import torch
from safetensors.torch import save_file

from sentcl import models
from sentcl.artifacts import FILE_LIST, cached_folder, folder_damage, safetensors_damage


def _truncate(path, keep: int) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:keep])


def test_safetensors_damage_reads_the_header_alone(tmp_path):
    path = tmp_path / "model.safetensors"
    save_file({"w": torch.ones(64, 64)}, str(path))
    assert safetensors_damage(path) is None
    size = path.stat().st_size
    _truncate(path, size - 100)
    assert safetensors_damage(path) == f"{size - 100:,} bytes, its header describes {size:,}"
    _truncate(path, 4)
    assert safetensors_damage(path) == "no header"
    path.write_bytes((10**9).to_bytes(8, "little") + b"{}")  # what a SafetensorError "invalid header length" reads
    assert "too short for its header" in safetensors_damage(path)


def test_cached_folder_builds_once_then_rebuilds_a_damaged_copy(tmp_path, capsys):
    builds = []

    def build(folder):
        builds.append(folder)
        save_file({"w": torch.arange(1000, dtype=torch.float32)}, str(folder / "model.safetensors"))
        (folder / "config.json").write_text("{}")

    target = tmp_path / "models" / "m"
    assert cached_folder(target, build) == target and len(builds) == 1
    assert json.loads((target / FILE_LIST).read_text()) == {"config.json": 2, "model.safetensors": (target / "model.safetensors").stat().st_size}
    assert cached_folder(target, build) == target and len(builds) == 1  # found intact: not built again
    (target / "config.json").write_text("{}   ")  # another size than listed
    assert folder_damage(target) == f"config.json has 5 bytes, {FILE_LIST} 2"
    cached_folder(target, build)
    assert len(builds) == 2 and folder_damage(target) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"sentcl: damaged file {target}: config.json has 5 bytes")
    assert err.rstrip().endswith("building it again")


def test_a_folder_written_before_file_lists_is_checked_on_its_safetensors_then_listed(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir()
    save_file({"w": torch.ones(100)}, str(folder / "model.safetensors"))
    assert folder_damage(folder) is None and (folder / FILE_LIST).is_file()
    (folder / FILE_LIST).unlink()
    _truncate(folder / "model.safetensors", 200)
    assert folder_damage(folder).startswith("model.safetensors: 200 bytes, its header describes")


@pytest.mark.parametrize("damage", ["truncate", "remove"])
def test_a_damaged_tiny_model_is_rebuilt_with_the_same_weights(tmp_path, monkeypatch, capsys, damage):
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path))
    expected = models.fingerprint(models.tiny_model(0))  # the model (its weights may map the file) is gone before the damage
    gc.collect()
    weights = next(iter(models.tiny_checkpoint(0).glob("*.safetensors")))
    if damage == "truncate":
        _truncate(weights, weights.stat().st_size // 2)
    else:
        weights.unlink()
    again = models.tiny_model(0)  # no SafetensorError: the folder is built again
    assert "sentcl: damaged file" in capsys.readouterr().err
    assert models.fingerprint(again) == expected
