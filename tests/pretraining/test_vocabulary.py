"""sentcl-mini's vocabulary: trained on the corpus by BERT's own WordPiece pipeline, renumbered so that ids follow
from the tokens alone, tokenizing exactly as the trainer's own tokenizer does, trained once per run."""

from __future__ import annotations

import pytest
from transformers import AutoTokenizer

from sentcl.errors import ConfigError
from sentcl.models import MINILM, resolve_model
from sentcl.pretraining import vocabulary
from sentcl.pretraining.mlm import PretrainConfig
from sentcl.pretraining.vocabulary import SPECIAL, recipe_tokenizer, renumber, run_tokenizer, train_wordpiece, vocabulary_name

TEXTS = [f"The {w} number {i} sat quietly on the mat of house {i % 7}, near a river called {w}ford."
         for i, w in enumerate(["otter", "heron", "willow", "meadow", "lantern", "harbour"] * 60)]


@pytest.fixture(scope="module")
def base():
    return AutoTokenizer.from_pretrained(resolve_model(MINILM), model_max_length=64)


def test_the_ids_are_the_special_tokens_then_the_rest_sorted_and_the_name_hashes_the_tokens(base):
    tokenizer = train_wordpiece(TEXTS, 300, base, 64)
    tokens = sorted(tokenizer.get_vocab(), key=tokenizer.get_vocab().get)
    assert tokens[:5] == list(SPECIAL) and tokens[5:] == sorted(tokens[5:])
    assert (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id,
            tokenizer.mask_token_id) == (0, 1, 2, 3, 4)
    assert tokenizer.name_or_path == vocabulary_name(tokenizer) and tokenizer.name_or_path.startswith(f"sentcl-wordpiece-{len(tokenizer)}-")
    assert vocabulary_name(base) != tokenizer.name_or_path


def test_a_run_trains_its_vocabulary_once_and_a_resumed_run_reads_it_back(tmp_path, monkeypatch):
    first = run_tokenizer(tmp_path, 300, TEXTS, 64)
    assert (tmp_path / "tokenizer" / "tokenizer.json").is_file()

    def refuse(*args):
        raise AssertionError("a resumed run trained its vocabulary again")

    monkeypatch.setattr(vocabulary, "recipe_tokenizer", refuse)
    again = run_tokenizer(tmp_path, 300, TEXTS, 64)
    assert again.get_vocab() == first.get_vocab() and again.name_or_path == first.name_or_path
    assert again("the heron")["input_ids"] == first("the heron")["input_ids"]


def test_renumbering_changes_no_tokenization_and_keeps_bert_s_pipeline(base):
    raw = base.train_new_from_iterator(TEXTS, 300)
    ours = renumber(raw, 64)
    assert set(ours.get_vocab()) == set(raw.get_vocab()) and len(ours) <= 300
    for text in [*TEXTS[:20], "An OTTER, un-heard of!", "Ünïcode café"]:
        assert ours.convert_ids_to_tokens(ours(text)["input_ids"]) == raw.convert_ids_to_tokens(raw(text)["input_ids"])
    encoded = ours("The Heron")["input_ids"]
    assert encoded[0] == ours.cls_token_id and encoded[-1] == ours.sep_token_id
    assert ours.convert_ids_to_tokens(encoded[1:-1]) == ["the", "heron"]  # lower-cased, as BERT uncased


def test_vocab_size_zero_is_all_minilm_s_vocabulary_and_a_tiny_one_is_refused(base):
    assert recipe_tokenizer(0, TEXTS, 64).get_vocab() == base.get_vocab()
    assert recipe_tokenizer(0, TEXTS, 64).name_or_path == MINILM
    with pytest.raises(ConfigError, match="vocab_size 100"):
        PretrainConfig(vocab_size=100)
