"""sentcl-mini's WordPiece vocabulary, trained on its own corpus with the ``tokenizers`` library.

Why not the 30,522-token vocabulary all-MiniLM-L6-v2 ships: on the corpus' 1.2 M tokens, 6,678 of
its tokens never occur and 20,667 occur fewer than 10 times. The MLM head is tied to the input
embeddings, so every step's softmax pushes the rows of tokens it never predicts the same way, away from
the hidden states (Gao et al. 2019's "representation degeneration"; an argument, not measured here),
and those are the content words an STS pair turns on. A vocabulary trained on the corpus (8,192 tokens by default) sees its
median token about 50 times, and the embedding table falls from 7.8 M to 2.1 M parameters.

The trainer is BERT's own pipeline (lower-casing, BERT's pre-tokenizer, ``##`` continuations,
``[CLS]``/``[SEP]`` templates) through transformers' ``train_new_from_iterator``. Its ids vary between
runs (observed: equally frequent candidates come out in a varying order), so :func:`train_wordpiece` renumbers the tokens: the five
special tokens first, then the rest sorted. A WordPiece lookup is by string, so the numbering changes no
tokenization. Which tokens it keeps can vary too where merges tie at the cut-off: on the real corpus,
five runs in separate processes kept the same 8,192, but on a small repetitive corpus they differ. So
the vocabulary a run trains is part of its state: :func:`run_tokenizer` saves it in the run's folder
and a resumed run reads it back, and the shipped ``tokenizer.json`` is the record (its sha256 in the card).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..hashing import stable_hash
from ..io import atomic_directory

SPECIAL = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def train_wordpiece(texts: Sequence[str], vocab_size: int, base, model_max_length: int):
    """A WordPiece tokenizer of ``vocab_size`` tokens trained on ``texts`` with ``base``'s pipeline
    (a BERT tokenizer), :func:`renumber`-ed."""
    return renumber(base.train_new_from_iterator(list(texts), vocab_size), model_max_length)


def renumber(trained, model_max_length: int):
    """``trained``'s tokens under ids that follow from the tokens alone (the special tokens, then the rest
    sorted), as a BERT tokenizer; its ``name_or_path`` names the vocabulary (:func:`vocabulary_name`)."""
    from transformers import BertTokenizer

    tokens = set(trained.get_vocab())
    vocab = {token: i for i, token in enumerate([*SPECIAL, *sorted(tokens - set(SPECIAL))])}
    tokenizer = BertTokenizer(vocab=vocab, do_lower_case=True, model_max_length=model_max_length)
    tokenizer.name_or_path = vocabulary_name(tokenizer)
    return tokenizer


def vocabulary_name(tokenizer) -> str:
    """A trained vocabulary's name: its size and a hash of its tokens."""
    return f"sentcl-wordpiece-{len(tokenizer)}-{stable_hash(sorted(tokenizer.get_vocab()), 12)}"


def recipe_tokenizer(vocab_size: int, train: Sequence[str], model_max_length: int):
    """The recipe's tokenizer: a WordPiece vocabulary of ``vocab_size`` tokens trained on ``train``, or, at 0,
    the one all-MiniLM-L6-v2 ships (named by the model, not by where this machine keeps it)."""
    from transformers import AutoTokenizer

    from ..models import MINILM, resolve_model

    base = AutoTokenizer.from_pretrained(resolve_model(MINILM), model_max_length=model_max_length)
    base.name_or_path = MINILM
    return train_wordpiece(train, vocab_size, base, model_max_length) if vocab_size else base


def run_tokenizer(work: Path, vocab_size: int, train: Sequence[str], model_max_length: int):
    """:func:`recipe_tokenizer`, trained once per run: saved in ``work/tokenizer`` and read back from there
    when the run resumes, so a resumed run never meets a vocabulary that broke a tie the other way."""
    from transformers import AutoTokenizer

    folder = work / "tokenizer"
    if not vocab_size:
        return recipe_tokenizer(0, train, model_max_length)
    if folder.is_dir():
        tokenizer = AutoTokenizer.from_pretrained(folder, model_max_length=model_max_length)
        tokenizer.name_or_path = vocabulary_name(tokenizer)
        return tokenizer
    tokenizer = recipe_tokenizer(vocab_size, train, model_max_length)
    with atomic_directory(folder) as tmp:
        tokenizer.save_pretrained(tmp)
    return tokenizer
