"""sentcl-mini's pretraining: the masked-only loss equals BertForMaskedLM's, packing and batches, a killed
run resumes exactly, the export loads in fp32, and ``sentcl pretrain`` runs the whole path on a tiny corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from transformers import AutoTokenizer, BertForMaskedLM, DataCollatorForLanguageModeling

from sentcl.cli import main
from sentcl.errors import ConfigError, DataMissingError, SentclError
from sentcl.models import MINILM, fingerprint, load_encoder, resolve_model
from sentcl.pretraining.card import verify
from sentcl.pretraining.mlm import (
    Architecture,
    PretrainConfig,
    batch_rows,
    export_encoder,
    masked_batch,
    mlm_loss,
    pack,
    pretrain,
)

TINY = Architecture(layers=2, hidden=32, heads=2, intermediate=64, positions=32)
TEXTS = [f"the cat number {i} sat on the mat of house {i % 7} near the river" for i in range(300)]


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(resolve_model(MINILM), model_max_length=32)


def _config(**kw) -> PretrainConfig:
    base = {"tokens": 16 * 32 * 8, "batch_size": 16, "seq_len": 32, "eval_every": 3, "checkpoint_every": 2, "architecture": TINY,
            "learning_rate": 5e-3, "vocab_size": 0}
    return PretrainConfig(**{**base, **kw})


def test_the_masked_only_loss_is_bert_for_masked_lms_loss(tokenizer):
    torch.manual_seed(0)
    model = BertForMaskedLM(TINY.bert_config(len(tokenizer))).eval()
    collator = DataCollatorForLanguageModeling(tokenizer)
    ids, labels = masked_batch(collator, pack(TEXTS, tokenizer, 32, 0)[:8], (0, 1))
    assert 0.1 < float((labels != -100).float().mean()) < 0.2  # about 15 % of the positions carry a loss
    with torch.no_grad():
        ours = mlm_loss(model, ids, labels)
        theirs = model(input_ids=ids, labels=labels).loss
        # a plausible wrong variant: the mean over every position (labels of unmasked tokens = the tokens)
        every = model(input_ids=ids, labels=torch.where(labels == -100, ids, labels)).loss
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-6)
    assert abs(float(every) - float(ours)) > 1e-3


def test_special_tokens_are_never_masked(tokenizer):
    collator = DataCollatorForLanguageModeling(tokenizer, mlm_probability=0.9)
    rows = pack(TEXTS, tokenizer, 32, 0)[:16]
    _, labels = masked_batch(collator, rows, (0, 0))
    special = (rows == tokenizer.cls_token_id) | (rows == tokenizer.sep_token_id)
    assert special.any() and (labels.numpy()[special] == -100).all()


def test_pack_joins_texts_with_sep_behind_one_cls_per_row(tokenizer):
    rows = pack(TEXTS[:40], tokenizer, 16, seed=0)
    assert rows.shape[1] == 16 and (rows[:, 0] == tokenizer.cls_token_id).all()
    stream = rows[:, 1:].reshape(-1).tolist()
    order = np.random.default_rng(0).permutation(40)
    expected = [t for i in order for t in (*tokenizer(TEXTS[i], add_special_tokens=False)["input_ids"], tokenizer.sep_token_id)]
    assert stream == expected[: len(stream)] and len(expected) - len(stream) < 15


def test_each_epoch_visits_every_row_once_in_a_new_order():
    rows, batch = 10, 4
    seen = np.concatenate([batch_rows(step, batch, rows, seed=3) for step in range(5)])  # 20 positions = 2 epochs
    assert sorted(seen[:10]) == list(range(10)) and sorted(seen[10:]) == list(range(10))
    assert list(seen[:10]) != list(seen[10:])
    assert (batch_rows(2, batch, rows, seed=3) == batch_rows(2, batch, rows, seed=3)).all()


def test_a_killed_run_resumes_exactly(tokenizer, tmp_path):
    config = _config()
    model, whole = pretrain(TEXTS[:280], TEXTS[280:], tokenizer, tmp_path / "a", config, show_progress=False)
    _, first = pretrain(TEXTS[:280], TEXTS[280:], tokenizer, tmp_path / "b", config, show_progress=False, stop_after=3)
    assert first.steps == 3
    resumed_model, resumed = pretrain(TEXTS[:280], TEXTS[280:], tokenizer, tmp_path / "b", config, show_progress=False)
    assert resumed.resumed_from == 3 and resumed.losses == whole.losses and resumed.heldout == whole.heldout
    for (name, a), (_, b) in zip(model.state_dict().items(), resumed_model.state_dict().items(), strict=True):
        assert torch.equal(a, b), name
    assert whole.losses[-1] < whole.losses[0] - 0.5  # it learns
    # a checkpoint of another run (another seed) is not resumed
    _, other = pretrain(TEXTS[:280], TEXTS[280:], tokenizer, tmp_path / "b", _config(seed=1), show_progress=False)
    assert other.resumed_from is None


def test_the_export_loads_in_fp32_with_the_trained_weights_and_the_same_pooler_every_time(tokenizer, tmp_path):
    torch.manual_seed(0)
    model = BertForMaskedLM(TINY.bert_config(len(tokenizer)))
    export_encoder(model, tokenizer, tmp_path / "enc", seed=0)
    assert json.loads((tmp_path / "enc" / "config.json").read_text())["dtype"] == "float32"
    one, two = load_encoder(tmp_path / "enc", pooling="mean"), load_encoder(tmp_path / "enc", pooling="mean")
    weights = one[0].auto_model.state_dict()
    assert all(t.dtype == torch.float32 for t in weights.values())
    trained = model.bert.embeddings.word_embeddings.weight.detach()
    torch.testing.assert_close(weights["embeddings.word_embeddings.weight"], trained.half().float(), rtol=0, atol=0)
    assert fingerprint(one) == fingerprint(two)


def test_the_config_refuses_what_cannot_run():
    with pytest.raises(ConfigError, match="seq_len 256 exceeds"):
        PretrainConfig(seq_len=256)
    with pytest.raises(ConfigError, match="learning_rate"):
        PretrainConfig(learning_rate=0.0)


def test_a_tokenizer_that_is_not_the_configured_vocabulary_is_refused(tokenizer, tmp_path):
    with pytest.raises(ConfigError, match="a tokenizer of 30,522 tokens for vocab_size 8192"):
        pretrain(TEXTS[:280], TEXTS[280:], tokenizer, tmp_path, _config(vocab_size=8192), show_progress=False)


def test_sentcl_pretrain_runs_the_whole_path_on_a_tiny_corpus_and_verify_catches_damage(tmp_path, capsys):
    """``make test`` runs the whole pretraining path in seconds: corpus (the project's sample data), training,
    export, zero-shot scores, card; then ``--verify`` passes, and fails in one line on a damaged or missing file."""
    out, work = tmp_path / "mini", tmp_path / "work"
    from sentcl.data import samples_root

    status = main(["pretrain", "--data-dir", str(samples_root()), "--sources", "wiki1m/prefix", "stsbenchmark/train",
                   "--out", str(out), "--work", str(work), "--tokens", "4096", "--batch-size", "8", "--seq-len", "16",
                   "--eval-every", "8", "--architecture", "layers=2,hidden=32,heads=2,intermediate=64,positions=16",
                   "--zero-shot-tasks", "STSb", "--vocab-size", "400"])
    assert status == 0
    card = verify(out)
    assert card["vocab_size"] <= 400 and card["tokenizer"].startswith("sentcl-wordpiece-")
    assert AutoTokenizer.from_pretrained(out).get_vocab() == AutoTokenizer.from_pretrained(work / "tokenizer").get_vocab()
    assert set(card["sha256"]) == {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
    assert card["result"]["steps"] == 32 and card["result"]["heldout"][-1][0] == 32
    assert set(card["zero_shot"]) == {"sentcl-mini (this model)", "the same BERT at its random initialisation",
                                      "all-MiniLM-L6-v2 (sentence-trained reference)"}
    assert "--tokens 4096" in card["command"] and (work / "half" / "model.safetensors").is_file()
    assert "Held-out MLM loss" in (out / "README.md").read_text()
    assert main(["pretrain", "--verify", "--out", str(out)]) == 0
    model = out / "model.safetensors"
    model.write_bytes(model.read_bytes()[:-1] + b"\0")
    with pytest.raises(SentclError, match=r"model\.safetensors is damaged: .* rebuild sentcl-mini with `sentcl pretrain"):
        verify(out)
    model.unlink()
    capsys.readouterr()
    with pytest.raises(DataMissingError, match=r"model\.safetensors is missing; rebuild sentcl-mini with `sentcl pretrain"):
        verify(out)
    assert main(["pretrain", "--verify", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sentcl: error: ") and "model.safetensors is missing" in err
