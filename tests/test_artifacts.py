"""The artifact cache: hits, invalidation of exactly the dependent stages, atomic builds."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from sentcl.artifacts import MANIFEST, ArtifactCache, Stage
from sentcl.errors import ConfigError
from sentcl.io import atomic_directory


class Counting:
    """A builder that writes a file and counts its calls."""

    def __init__(self, text: str = "x") -> None:
        self.calls = 0
        self.text = text

    def __call__(self, work: Path) -> None:
        self.calls += 1
        (work / "out.txt").write_text(self.text)


def pipeline(phi: float = 0.01, lr: float = 2e-5, metric: str = "spearman") -> tuple[Stage, Stage, Stage]:
    """entropy model -> augmented embeddings -> final evaluation (as in the RCL chapter)."""
    entropy = Stage("entropy-model", {"phi": phi})
    store = Stage("augmented-embeddings", {"dtype": "float16"}, upstream=(entropy,))
    final = Stage("rcl-model", {"lr": lr, "metric": metric}, upstream=(store,))
    return entropy, store, final


def test_hit_reuses_without_building(tmp_path):
    cache = ArtifactCache(tmp_path)
    stage = Stage("train", {"lr": 2e-5, "path": Path("/data/snli")})
    build = Counting()
    first = cache.get_or_build(stage, build)
    second = cache.get_or_build(Stage("train", {"path": "/data/snli", "lr": 2e-5}), build)  # same config, other order
    assert build.calls == 1 and first == second
    assert (first / "out.txt").read_text() == "x"
    manifest = cache.manifest(stage)
    assert manifest["key"] == stage.key and manifest["config"] == {"lr": 2e-5, "path": "/data/snli"}
    assert first == tmp_path / "train" / stage.key


def test_changed_parameter_invalidates_only_its_dependents(tmp_path):
    cache = ArtifactCache(tmp_path)
    entropy, store, final = pipeline()
    for stage in (entropy, store, final):
        cache.get_or_build(stage, Counting())
    # a downstream-only change: the entropy model and the store are reused
    e2, s2, f2 = pipeline(lr=3e-5)
    assert (e2.key, s2.key) == (entropy.key, store.key) and f2.key != final.key
    assert cache.has(e2) and cache.has(s2) and not cache.has(f2)
    # an upstream change invalidates every stage after it
    e3, s3, f3 = pipeline(phi=0.02)
    assert e3.key != entropy.key and s3.key != store.key and f3.key != final.key
    assert not any(cache.has(s) for s in (e3, s3, f3))
    # and the old ones stay available
    assert all(cache.has(s) for s in (entropy, store, final))


def test_failed_build_leaves_no_finished_stage(tmp_path):
    cache = ArtifactCache(tmp_path)
    stage = Stage("eval", {"k": 1})

    def fails(work: Path) -> None:
        (work / "half.txt").write_text("half")
        raise RuntimeError("killed")

    with pytest.raises(RuntimeError):
        cache.get_or_build(stage, fails)
    assert not cache.has(stage) and not cache.path(stage).exists()
    # without resume the next build starts from an empty folder ...
    seen = []
    cache.get_or_build(stage, lambda work: seen.append(sorted(os.listdir(work))))
    assert seen == [[]]


def test_resume_keeps_the_work_folder(tmp_path):
    cache = ArtifactCache(tmp_path)
    stage = Stage("train", {"k": 1})

    def first_attempt(work: Path) -> None:
        (work / "checkpoint").write_text("step 10")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        cache.get_or_build(stage, first_attempt, resume=True)
    found = []
    path = cache.get_or_build(stage, lambda work: found.append((work / "checkpoint").read_text()), resume=True)
    assert found == ["step 10"] and (path / "checkpoint").is_file() and (path / MANIFEST).is_file()
    assert not cache.work_dir(stage).exists()


def test_cached_json_and_remove(tmp_path):
    cache = ArtifactCache(tmp_path)
    stage = Stage("sts-eval", {"model": "abc"})
    calls = []

    def compute():
        calls.append(1)
        return {"spearman": np.float64(0.5), "per_task": {"STS12": 0.4}}

    assert cache.cached_json(stage, compute) == {"spearman": 0.5, "per_task": {"STS12": 0.4}}
    assert cache.cached_json(stage, compute) == {"spearman": 0.5, "per_task": {"STS12": 0.4}}
    assert len(calls) == 1
    cache.remove(stage)
    cache.cached_json(stage, compute)
    assert len(calls) == 2


def test_default_root_is_under_the_sentcl_cache():
    assert ArtifactCache().root == Path(os.environ["SENTCL_CACHE"]) / "artifacts"


@pytest.mark.parametrize(
    ("config", "message"),
    [({"f": object()}, "not JSON data"), ({"x": float("nan")}, "finite"), ({1: "a"}, "keys must be strings")],
)
def test_configs_must_be_plain_data(config, message):
    with pytest.raises(ConfigError, match=message):
        Stage("s", config)


def test_stage_names_are_folder_names():
    with pytest.raises(ConfigError, match="folder name"):
        Stage("../escape", {})


def test_atomic_directory_replaces_or_leaves_untouched(tmp_path):
    target = tmp_path / "model"
    with atomic_directory(target) as tmp:
        (tmp / "a.json").write_text(json.dumps(1))
    assert (target / "a.json").read_text() == "1"
    with pytest.raises(ValueError, match="interrupted"):  # noqa: PT012 - the interrupted block is what is tested
        with atomic_directory(target) as tmp:
            (tmp / "a.json").write_text("2")
            raise ValueError("interrupted")
    assert (target / "a.json").read_text() == "1"
    with atomic_directory(target) as tmp:
        (tmp / "b.json").write_text("3")
    assert sorted(os.listdir(target)) == ["b.json"]
    assert sorted(os.listdir(tmp_path)) == ["model"]  # no temporary folders left behind


def test_a_damaged_stage_is_said_and_built_again(tmp_path, capfd):
    """The manifest lists every file with its size: a file truncated, grown or removed, or the manifest
    itself half-written, makes the stage damaged: one line, then built again (never returned as it is)."""
    cache = ArtifactCache(tmp_path)
    stage = Stage("train", {"lr": 2e-5})
    build = Counting("the built text")
    folder = cache.get_or_build(stage, build)
    assert cache.manifest(stage)["files"] == {"out.txt": len("the built text")}
    damages = {
        "truncated": lambda: (folder / "out.txt").write_text("the"),
        "grown": lambda: (folder / "out.txt").write_text("the built text, and more"),
        "removed": lambda: (folder / "out.txt").unlink(),
        "half-written manifest": lambda: (folder / MANIFEST).write_text('{"name": "tr'),
    }
    for calls, (what, damage) in enumerate(damages.items(), start=2):
        damage()
        assert cache.damage(stage) is not None, what
        capfd.readouterr()
        assert cache.get_or_build(stage, build) == folder and build.calls == calls, what
        (line,) = capfd.readouterr().err.strip().splitlines()
        assert line.startswith(f"sentcl: damaged file {folder}: ") and line.endswith("building stage 'train' again"), what
        assert (folder / "out.txt").read_text() == "the built text" and cache.damage(stage) is None


def test_load_or_build_discards_a_stage_that_does_not_load(tmp_path, capfd):
    cache = ArtifactCache(tmp_path)
    stage = Stage("result", {"k": 1})
    build = Counting('{"metric": 1.5}')

    def load(folder: Path) -> float:
        return json.loads((folder / "out.txt").read_text())["metric"]

    assert cache.load_or_build(stage, build, load) == 1.5 and build.calls == 1
    (cache.path(stage) / "out.txt").write_text("#" * len('{"metric": 1.5}'))  # same size, not JSON: passes the size check
    capfd.readouterr()
    assert cache.load_or_build(stage, build, load) == 1.5 and build.calls == 2
    assert "does not load (JSONDecodeError" in capfd.readouterr().err
    broken = Counting("not JSON")  # built by this call and still unloadable: a real error, raised
    with pytest.raises(json.JSONDecodeError):
        cache.load_or_build(Stage("result", {"k": 2}), broken, load)
    assert broken.calls == 1


BUILDER = """
import json, os, sys, time
from pathlib import Path
from sentcl.artifacts import ArtifactCache, Stage
root, log, go = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
(go.parent / f"ready-{os.getpid()}").touch()  # imported: both start asking together
while not go.exists():
    time.sleep(0.01)
def build(work):
    with open(log, "a") as fh:
        fh.write(f"built by {os.getpid()}\\n")
    time.sleep(1.0)
    (work / "out.txt").write_text(str(os.getpid()))
asked = time.time()
path = ArtifactCache(root).get_or_build(Stage("train", {"k": 1}), build)
print(json.dumps({"pid": os.getpid(), "asked": asked, "got": time.time(), "path": str(path)}))
"""


def test_two_processes_on_one_cache_build_a_stage_once(tmp_path):
    """Two commands on one cache (e.g. two ``sentcl reproduce --executor ray`` or two Ray tasks of one stage): the
    stage lock makes the second wait for the first's build and load it; the stage is built once."""
    import subprocess
    import sys
    import time

    log, go = tmp_path / "builds.log", tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, "-c", BUILDER, str(tmp_path / "cache"), str(log), str(go)],
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    deadline = time.time() + 120
    while len(list(tmp_path.glob("ready-*"))) < 2 and time.time() < deadline:
        time.sleep(0.01)
    go.touch()
    seen = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    builds = log.read_text().splitlines()
    assert len(builds) == 1, builds  # built once
    builder = int(builds[0].split()[-1])
    waiter = next(s for s in seen if s["pid"] != builder)
    built = next(s for s in seen if s["pid"] == builder)
    assert waiter["asked"] < built["got"] and waiter["got"] >= built["got"] - 0.05  # it asked while the other built, and waited
    assert seen[0]["path"] == seen[1]["path"]
    assert (Path(seen[0]["path"]) / "out.txt").read_text() == str(builder)
