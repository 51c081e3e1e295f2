r"""Text-level augmentation: IFCL's fusion augmentation, which gives every sentence two twins.

IFCL (Xiao, Li & Chen 2023; slides, "How to generate the Identical and Fraternal Twins?") pairs
each sentence with an **identical twin**, "the most similar positive", and a **fraternal twin**,
"the diverse pair with less semantic distortions". The slides do not say how either is made; the
reading here (the chapter's "Assumptions"):

- the identical twin is the sentence itself: encoded a second time, it differs from the first
  encoding only by the encoder's dropout noise (SimCSE's positive, the closest a positive gets);
- the fraternal twin *fuses* two augmentations: word repetition (ESimCSE, Wu et al. 2022: a few
  randomly chosen words are doubled, which changes the length and the surface but hardly the
  meaning) on the text, and dropout noise when it is encoded.

:func:`word_repetition` is ESimCSE's rule on whitespace words: it doubles
``randint(0, max(2, int(rate · n)))`` distinct words of an n-word sentence (ESimCSE applies the same
rule to sub-word tokens, with rate 0.32). :func:`fusion_twins` draws every twin once, with a seed,
so a run's data (and a resumed run's) is fixed by its parameters.

:func:`entailment_twins` is a second source of fraternal twins, for an encoder that has already
learned what word repetition teaches (the demo's all-MiniLM-L6-v2 tells a sentence from its repeated
copy at a loss near 0 before training): an NLI premise's fraternal twin is a hypothesis it entails,
a human-written positive that says less, in other words.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import ConfigError, check_number
from .records import TrainingData


def word_repetition(text: str, rate: float, rng: np.random.Generator) -> str:
    """``text`` with ``randint(0, max(2, int(rate · n)))`` of its n words (distinct positions, drawn
    with ``rng``) written twice; whitespace is normalised to single spaces."""
    rate = check_number("repetition rate", rate, low=0.0, high=1.0)
    words = text.split()
    if not words:
        return text
    count = min(len(words), int(rng.integers(0, max(2, int(rate * len(words))) + 1)))
    doubled = set(rng.choice(len(words), size=count, replace=False).tolist()) if count else set()
    return " ".join(w for i, word in enumerate(words) for w in ((word, word) if i in doubled else (word,)))


def fusion_twins(
    texts: Sequence[str], *, repetition_rate: float = 0.32, seed: int = 0, fraternal: bool = True, name: str = "twins"
) -> TrainingData:
    """Training rows ``(text, identical, fraternal)`` for IFCL: the identical twin is the text itself,
    the fraternal twin its word repetition (drawn with ``seed``); ``fraternal=False`` gives
    ``(text, identical)``, unsupervised SimCSE's rows."""
    texts = list(texts)
    if not texts:
        raise ConfigError(f"{name}: no sentences to make twins of")
    columns = {"text": texts, "identical": texts}
    if fraternal:
        rng = np.random.default_rng([int(seed), 0x7731])
        columns["fraternal"] = [word_repetition(t, repetition_rate, rng) for t in texts]
    return TrainingData(columns=columns, name=name)


def entailment_twins(pairs: TrainingData, *, fraternal: bool = True, name: str = "entailment twins") -> TrainingData:
    """Training rows ``(text, identical, fraternal)`` from NLI entailment pairs (columns ``anchor``,
    ``positive``: premise, hypothesis, :func:`sentcl.data.nli.prepare_nli`): the text and its identical
    twin are the premise, the fraternal twin the first hypothesis it entails (a premise with several
    keeps one, so that no premise is a false negative of itself in a batch); ``fraternal=False`` gives
    ``(text, identical)``, unsupervised SimCSE's rows on the same premises."""
    if list(pairs.columns)[:2] != ["anchor", "positive"]:
        raise ConfigError(f"{pairs.name}: entailment twins need (anchor, positive) pairs, got columns {list(pairs.columns)}")
    first: dict[str, str] = {}
    for premise, hypothesis in zip(pairs.columns["anchor"], pairs.columns["positive"], strict=True):
        first.setdefault(premise, hypothesis)
    if not first:
        raise ConfigError(f"{name}: no entailment pairs to make twins of")
    texts = list(first)
    columns = {"text": texts, "identical": texts}
    if fraternal:
        columns["fraternal"] = list(first.values())
    return TrainingData(columns=columns, name=name)


__all__ = ["entailment_twins", "fusion_twins", "word_repetition"]
