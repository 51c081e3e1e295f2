"""IFCL's fusion augmentation: word repetition (ESimCSE's rule on words) and the twins' columns."""

from __future__ import annotations

import numpy as np
import pytest

from sentcl.data.augmentation import fusion_twins, word_repetition
from sentcl.errors import ConfigError


def test_word_repetition_only_doubles_words_and_stays_within_the_rule():
    rng = np.random.default_rng(0)
    text = "one two three four five six seven eight nine ten eleven twelve"
    n = len(text.split())
    seen = set()
    for _ in range(300):
        out = word_repetition(text, 0.32, rng).split()
        # removing consecutive duplicates gives the sentence back: words were only doubled, in place
        collapsed = [w for i, w in enumerate(out) if i == 0 or w != out[i - 1]]
        assert collapsed == text.split()
        added = len(out) - n
        assert 0 <= added <= max(2, int(0.32 * n))
        seen.add(added)
    assert seen == set(range(max(2, int(0.32 * n)) + 1))  # every count of the rule occurs


def test_word_repetition_edge_cases():
    rng = np.random.default_rng(1)
    assert word_repetition("", 0.32, rng) == ""
    assert word_repetition("a", 0.0, rng) in ("a", "a a")  # max(2, ·) allows up to the sentence's one word
    with pytest.raises(ConfigError):
        word_repetition("a b", 1.5, rng)


def test_fusion_twins_columns_seeded_and_simcse_rows():
    texts = ["the cat sat on the mat", "dogs bark", "rain in spain falls mainly"]
    data = fusion_twins(texts, repetition_rate=0.32, seed=3)
    assert data.column_names == ["text", "identical", "fraternal"]
    assert data.columns["identical"] == texts
    assert data.columns["fraternal"] == fusion_twins(texts, seed=3).columns["fraternal"]
    assert any(f != t for f, t in zip(data.columns["fraternal"], texts, strict=True))
    assert fusion_twins(texts, fraternal=False).column_names == ["text", "identical"]
    with pytest.raises(ConfigError):
        fusion_twins([])
