"""Fixtures shared by the book's tests: rows scored by fake encoders of chosen quality, with per-item
scores and training health, for the claims and the pages built on them."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from sentcl.data.records import ScoredPairs
from sentcl.evaluation.scoring import score

N_PAIRS = 300
GOLD = np.random.default_rng(0).uniform(0, 5, N_PAIRS)
DATASETS = {"STSb": "stsbenchmark", "SICK-R": "sickr", "STS12": "sts12"}


def sts_record(n: int = N_PAIRS, name: str = "stsbenchmark") -> ScoredPairs:
    return ScoredPairs(name=name, split="test", sentences1=[f"a{i}" for i in range(n)],
                       sentences2=[f"b{i}" for i in range(n)], scores=GOLD[:n].copy(), subsets=["all"] * n)


def embedder_with(noise: float, seed: int):
    """A fake encoder whose pair cosines follow the gold score plus noise of the given size: less noise,
    a better model. Deterministic per (noise, seed)."""
    rng = np.random.default_rng(int(noise * 1000) * 31 + seed)
    target = np.clip(GOLD / 5 + rng.normal(0, noise, N_PAIRS), -0.99, 0.99)

    def embed(texts):
        out = []
        for t in texts:
            c = target[int(t[1:])]
            out.append([1.0, 0.0] if t[0] == "a" else [c, math.sqrt(1 - c * c)])
        return np.asarray(out)

    return embed


def scored(noise: float, seed: int, keys=("STSb",), n: int = N_PAIRS):
    """{task key: TaskScores} of a fake encoder of quality ``noise``, seed ``seed``."""
    embed = embedder_with(noise, seed)
    return score(embed, {key: sts_record(n, DATASETS[key]) for key in keys})


def done(active: bool = True, name: str = "m", steps: int = 60, learned: bool = True):
    """What ChapterRun.record_scores reads of a TrainingResult: its health."""
    reason = "" if active else "barely moved: mean cosine 1.00000 to its start"
    learned_reason = "" if learned else "its loss rose: 0.041 -> 0.096 (fall -0.055, 2 standard errors 0.02)"
    return SimpleNamespace(health={"name": name, "active": active, "reason": reason, "learned": learned,
                                   "learned_reason": learned_reason, "trained_steps": steps,
                                   "planned_steps": steps, "peak_lr": 2e-5, "share_at_half_peak": 0.5,
                                   "loss_start": {"step": 10, "loss": 2.0}, "loss_end": {"step": steps, "loss": 1.0},
                                   "start_cosine": 0.95})


@pytest.fixture
def fake():
    """The fake scoring kit: ``fake.scored(noise, seed, keys)``, ``fake.done(active, name)``, ``fake.record(n)``."""
    return SimpleNamespace(scored=scored, done=done, record=sts_record, embedder=embedder_with, n=N_PAIRS)
