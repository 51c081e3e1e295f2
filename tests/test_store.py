"""The augmented-embedding store (sentcl.embeddings.store): fp16 rows by example id, resumable writes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sentcl.embeddings import EmbeddingStore, encode, write_store
from sentcl.errors import ConfigError, DataFormatError
from sentcl.models import tiny_model


def fake_encoder(dim=8):
    calls = []

    def encode(texts):
        calls.append(list(texts))
        return np.stack([np.random.default_rng(abs(hash(t)) % 2**32).normal(size=dim) for t in texts]).astype(np.float32)

    encode.calls = calls
    return encode


def columns(n):
    return {"query": [f"q{k}" for k in range(n)], "index": [f"i{k}" for k in range(n)]}


def test_rows_are_looked_up_by_example_id_in_fp16(tmp_path):
    enc = fake_encoder()
    ids = np.array([5, 3, 9, 1, 7])
    cols = columns(5)
    store = write_store(tmp_path / "s", enc, ids, cols, chunk_rows=2, show_progress=False)
    assert store.array("query").dtype == np.float16 and store.array("query").shape == (5, 8)
    got = store.lookup("index", [9, 5, 9])
    want = enc([cols["index"][2], cols["index"][0], cols["index"][2]]).astype(np.float16)
    np.testing.assert_array_equal(got, want)
    reopened = EmbeddingStore(tmp_path / "s")
    np.testing.assert_array_equal(reopened.lookup("query", [1]), enc(["q3"]).astype(np.float16))
    assert isinstance(store.array("query"), np.memmap)
    with pytest.raises(ConfigError, match=r"no rows for the example ids \[2\]"):
        store.lookup("query", [1, 2])
    with pytest.raises(ConfigError, match="not 'other'"):
        store.lookup("other", [1])


def test_an_interrupted_write_resumes_without_re_encoding_finished_chunks(tmp_path):
    ids, cols = np.arange(10), columns(10)

    class Killed(Exception):
        pass

    enc = fake_encoder()
    calls = {"n": 0}

    def dying(texts):
        calls["n"] += 1
        if calls["n"] == 4:  # the probe, then two chunks, then the "kill"
            raise Killed
        return enc(texts)

    with pytest.raises(Killed):
        write_store(tmp_path / "s", dying, ids, cols, chunk_rows=3, show_progress=False)
    meta = json.loads((tmp_path / "s" / "store.json").read_text())
    assert meta["rows_done"] == {"query": 6, "index": 0}
    with pytest.raises(ConfigError, match="unfinished"):
        EmbeddingStore(tmp_path / "s")
    again = fake_encoder()
    store = write_store(tmp_path / "s", again, ids, cols, chunk_rows=3, show_progress=False)
    assert [t for call in again.calls for t in call] == cols["query"][6:] + cols["index"]  # nothing re-encoded
    full = write_store(tmp_path / "whole", fake_encoder(), ids, cols, chunk_rows=3, show_progress=False)
    for column in ("query", "index"):
        np.testing.assert_array_equal(store.array(column), full.array(column))


def test_a_store_description_without_its_keys_names_the_file_and_the_keys(tmp_path):
    write_store(tmp_path / "s", fake_encoder(), np.arange(3), columns(3), show_progress=False)
    meta = json.loads((tmp_path / "s" / "store.json").read_text())
    del meta["dim"], meta["rows_done"]
    (tmp_path / "s" / "store.json").write_text(json.dumps(meta))
    with pytest.raises(DataFormatError, match=r"store\.json: expected the keys \['dim', 'rows_done'\] of an embedding store"):
        EmbeddingStore(tmp_path / "s")


def test_another_store_in_the_folder_is_an_error(tmp_path):
    write_store(tmp_path / "s", fake_encoder(), np.arange(3), columns(3), show_progress=False)
    with pytest.raises(ConfigError, match="holds another store"):
        write_store(tmp_path / "s", fake_encoder(), np.arange(3), columns(3), description={"model": "x"}, show_progress=False)
    with pytest.raises(ConfigError, match="distinct"):
        write_store(tmp_path / "t", fake_encoder(), [1, 1, 2], columns(3), show_progress=False)


def test_a_model_store_matches_plain_encoding_to_fp16_precision(tmp_path):
    model = tiny_model(seed=0)
    cols = columns(6)
    store = write_store(tmp_path / "s", lambda t: encode(model, t, cache=False, precision="fp32"), np.arange(6), cols,
                        chunk_rows=4, show_progress=False)
    plain = encode(model, cols["query"], cache=False, precision="fp32")
    np.testing.assert_allclose(store.lookup("query", np.arange(6)).astype(np.float32), plain, rtol=2e-3, atol=2e-3)


def test_a_truncated_store_is_refused_and_an_interrupted_one_written_again(tmp_path, capfd):
    """A finished store whose column file was truncated is never opened (an error naming the file);
    an interrupted write whose files were truncated starts over, said in one line, and ends equal to
    a store written in one go."""
    ids, cols = np.arange(10), columns(10)
    whole = write_store(tmp_path / "whole", fake_encoder(), ids, cols, chunk_rows=3, show_progress=False)
    damaged = tmp_path / "damaged"
    write_store(damaged, fake_encoder(), ids, cols, chunk_rows=3, show_progress=False)
    column = damaged / "index.npy"
    column.write_bytes(column.read_bytes()[:-40])
    with pytest.raises(DataFormatError, match=r"damaged: expected an embedding store whose files hold every row, found .index.npy is unreadable"):
        EmbeddingStore(damaged)

    class Killed(Exception):
        pass

    def dying(texts, calls=[]):  # noqa: B006 - counts the calls across the write
        calls.append(1)
        if len(calls) == 3:
            raise Killed
        return fake_encoder()(texts)

    partial = tmp_path / "partial"
    with pytest.raises(Killed):
        write_store(partial, dying, ids, cols, chunk_rows=3, show_progress=False)
    column = partial / "query.npy"
    column.write_bytes(column.read_bytes()[:200])
    capfd.readouterr()
    again = fake_encoder()
    store = write_store(partial, again, ids, cols, chunk_rows=3, show_progress=False)
    (line,) = capfd.readouterr().err.strip().splitlines()
    assert line.startswith(f"sentcl: damaged file {partial}: query.npy is unreadable") and "from its first row" in line
    assert [t for call in again.calls[1:] for t in call] == cols["query"] + cols["index"]  # everything encoded again
    for name in ("query", "index"):
        np.testing.assert_array_equal(store.array(name), whole.array(name))


@pytest.mark.slow
def test_a_damaged_augmented_store_in_the_cache_is_written_again(tmp_path, capfd):
    """RCL's store of an entropy model's embeddings (an artifact-cache stage): a truncated column file is
    said in one line and the store written again, equal to the first."""
    from sentcl.artifacts import ArtifactCache
    from sentcl.data import TrainingData
    from sentcl.data.registry import load, samples_root
    from sentcl.training.entropy_models import augmented_store

    data = TrainingData.from_record(load("snli", "train", samples_root()).with_label("entailment"), labels=False)
    cache, model = ArtifactCache(tmp_path), tiny_model(0)
    first = augmented_store(model, data, cache=cache, precision="fp32", show_progress=False)
    expected = np.array(first.array("query"))
    column = first.path / "query.npy"
    column.write_bytes(column.read_bytes()[:-64])
    capfd.readouterr()
    again = augmented_store(model, data, cache=cache, precision="fp32", show_progress=False)
    (line,) = [line for line in capfd.readouterr().err.splitlines() if line.startswith("sentcl")]
    assert "query.npy has" in line and "building stage 'augmented-embeddings' again" in line
    np.testing.assert_array_equal(again.array("query"), expected)
