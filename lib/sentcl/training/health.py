"""Did a model train? The health of a training run: steps, learning rate, loss per term, distance moved.

A model that did not move is no evidence about the objective that trained it: a comparison resting on
it compares its starting point. Every finished run of :class:`~sentcl.training.Trainer` gets a health
record (in ``trainer_state.json``, in :attr:`~sentcl.training.TrainingResult.health` and in the run
record a chapter writes), with

``planned_steps``, ``trained_steps``
    the optimizer steps the schedule was built for and those taken (early stopping ends a run sooner);
``peak_lr``, ``max_lr``, ``final_lr``
    the schedule's highest learning rate over the planned steps, the highest one a taken step used,
    and the last step's (the model's parameter groups; a loss's own groups, e.g. a trainable
    temperature, may differ);
``steps_at_half_peak``, ``share_at_half_peak``
    the taken steps whose rate was at least half the peak, and their share of the planned steps (a
    whole run with 10 % linear warm-up and linear decay spends 50 % of its steps there);
``loss_start``, ``loss_end``
    the mean training loss of the first and of the last logged window (``log_steps`` steps), with the
    loss's terms where its objective has several (``{"loss": ..., "Eq. 1": ..., "regulators": ...}``:
    each term's contribution to the loss, so that the terms add up to it);
``start_cosine``
    the mean cosine, over the :func:`probe_sentences`, between the embeddings of the trained model
    (the one the run returns: the best evaluation's weights under model selection) and those of the
    model it started from, both in fp32;
``active``, ``reason``
    False with the reasons when the run cannot count as evidence: it barely moved
    (``start_cosine`` ≥ :data:`STILL_COSINE`), its loss was already about zero at the first logged
    window (≤ :data:`SOLVED_LOSS`: the objective was solved before training began), or fewer than
    :data:`MIN_SHARE_AT_HALF_PEAK` of its planned steps ran at half its peak rate or more (it stopped
    inside its warm-up, say). A run that early stopping ended *after* it reached its peak rate (RCL's
    entropy models: stopped once their loss no longer falls, by design long before the planned epoch
    ends) is judged on the steps it took instead: at least :data:`MIN_SHARE_AT_HALF_PEAK` of them at
    half the peak rate or more;
``fell``, ``fall``, ``fall_se``
    per loss term (``"loss"`` and each of its terms), whether it fell beyond its window-to-window noise
    (:func:`loss_fell`): with w_1 … w_W the means of the logged windows (``log_steps`` steps each), the
    noise of one window's mean is estimated by von Neumann's mean square successive difference,
    σ̂² = Σ_j (w_j − w_{j−1})² / (2 (W − 1)) (a slow trend inflates it little), the standard error of
    w_1 − w_W is σ̂ √2, and the term *fell* when w_1 − w_W > :data:`FELL_BY` × σ̂ √2; None (not judged)
    with fewer than :data:`MIN_WINDOWS` windows. ``fall`` = w_1 − w_W, ``fall_se`` = σ̂ √2;
``chance``, ``at_chance``
    the loss of a model that ranks or classifies at random (the loss module's ``chance_level``: ln k
    for a k-way softmax classifier, ln of the candidates per anchor for in-batch InfoNCE; None where
    the objective has none) and whether the last window's loss is within :data:`CHANCE_TOLERANCE` of it;
``learned``, ``learned_reason``
    True when the loss fell and did not end at chance; False with the reason otherwise (it rose, stayed
    within its noise, could not be judged from too few windows, or sits at chance). A model that moved
    but did not learn (SBERT's softmax loss at ln 3 while its encoder drifts) is no evidence about its
    objective either: the claims resting on it are not tested (:meth:`sentcl.book.output.evidence.RowEvidence.inactive`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..data.registry import load, samples_root
from .config import TrainingConfig

STILL_COSINE = 0.999
"""A model whose embeddings keep a mean cosine of at least this to its start's barely moved."""
SOLVED_LOSS = 1e-3
"""A loss at or below this at the first logged window: the objective had nothing left to teach."""
MIN_SHARE_AT_HALF_PEAK = 0.2
"""The share of planned steps a run must spend at ≥ half its peak learning rate (a full linear run: 0.5)."""
PROBE_SIZE = 128
FELL_BY = 2.0
"""A loss fell when its first window's mean exceeds its last's by more than this many standard errors."""
MIN_WINDOWS = 4
"""Fewer logged windows than this leave the window-to-window noise unmeasured: the fall is not judged."""
CHANCE_TOLERANCE = 0.05
"""A last window within this fraction of the chance level (above or below) sits at chance."""


@functools.lru_cache(maxsize=1)
def probe_sentences() -> tuple[str, ...]:
    """The fixed probe on which every model's movement is measured: the first :data:`PROBE_SIZE`
    distinct sentences of the project's sample STS-B (train, dev, test; ``data/samples``, shipped with
    the package), the same for every profile and every data root."""
    texts: list[str] = []
    for split in ("train", "dev", "test"):
        pairs = load("stsbenchmark", split, samples_root())
        texts += [*pairs.sentences1, *pairs.sentences2]
    return tuple(list(dict.fromkeys(texts))[:PROBE_SIZE])


def mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """The mean over rows of the cosine between ``a[i]`` and ``b[i]``."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    norms = np.maximum(np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1), 1e-12)
    return float(((a * b).sum(axis=1) / norms).mean())


def training_health(
    config: TrainingConfig,
    planned_steps: int,
    trained_steps: int,
    losses: Sequence[dict[str, Any]],
    start_cosine: float | None,
    *,
    chance: float | None = None,
) -> dict[str, Any]:
    """The health record of a run (module doc): ``config`` and ``planned_steps`` give its schedule,
    ``losses`` its log entries (``{"step", "loss", "terms"?}``), ``start_cosine`` how far it moved,
    ``chance`` its loss at chance (the loss module's ``chance_level``; None: none known)."""
    schedule = config.schedule(planned_steps)
    factors = np.array([schedule(s) for s in range(planned_steps)], dtype=np.float64)
    taken = factors[:trained_steps]
    peak = float(factors.max()) if len(factors) else 0.0
    at_half = int((taken >= 0.5 * peak).sum()) if peak > 0 else 0
    share = at_half / planned_steps if planned_steps else 0.0
    lr = config.learning_rate
    health: dict[str, Any] = {
        "planned_steps": int(planned_steps),
        "trained_steps": int(trained_steps),
        "peak_lr": lr * peak,
        "max_lr": lr * float(taken.max()) if len(taken) else 0.0,
        "final_lr": lr * float(taken[-1]) if len(taken) else 0.0,
        "steps_at_half_peak": at_half,
        "share_at_half_peak": round(share, 4),
        "loss_start": _window(losses[0]) if losses else None,
        "loss_end": _window(losses[-1]) if losses else None,
        "start_cosine": start_cosine,
    }
    reasons = []
    stopped_after_peak = 0 < trained_steps < planned_steps and peak > 0 and float(taken.max()) >= peak * (1 - 1e-9)
    judged, of = (at_half / trained_steps, "taken") if stopped_after_peak else (share, "planned")
    if start_cosine is not None and start_cosine >= STILL_COSINE:
        reasons.append(f"barely moved: mean cosine {start_cosine:.5f} to its start (>= {STILL_COSINE})")
    if losses and losses[0]["loss"] is not None and losses[0]["loss"] <= SOLVED_LOSS:
        reasons.append(f"loss {losses[0]['loss']:.2g} at step {losses[0]['step']}: the objective was already solved")
    if judged < MIN_SHARE_AT_HALF_PEAK:
        reasons.append(f"{at_half} of {trained_steps if of == 'taken' else planned_steps} {of} steps at >= half the "
                       f"peak learning rate ({judged:.0%} < {MIN_SHARE_AT_HALF_PEAK:.0%})")
    return health | {"active": not reasons, "reason": "; ".join(reasons)} | learning(losses, chance)


def loss_fell(windows: Sequence[float]) -> tuple[bool | None, float, float]:
    """``(fell, fall, fall_se)`` of a loss whose logged windows have the means ``windows`` (module doc:
    fell when w_1 − w_W > :data:`FELL_BY` × σ̂ √2, σ̂ from the successive differences; None with fewer
    than :data:`MIN_WINDOWS` windows)."""
    w = np.asarray(windows, dtype=np.float64)
    if len(w) < MIN_WINDOWS:
        return None, float(w[0] - w[-1]) if len(w) else float("nan"), float("nan")
    fall = float(w[0] - w[-1])
    se = float(np.sqrt(np.sum(np.diff(w) ** 2) / (2 * (len(w) - 1))) * np.sqrt(2))
    return bool(fall > FELL_BY * se), fall, se


def learning(losses: Sequence[dict[str, Any]], chance: float | None = None) -> dict[str, Any]:
    """The learned fields of a health record (module doc) from a run's log entries."""
    windows = [_window(entry) for entry in losses if entry.get("loss") is not None]
    terms = list(dict.fromkeys(k for w in windows for k in w if k != "step"))
    judged = {term: loss_fell([w[term] for w in windows if term in w]) for term in terms}
    end = windows[-1]["loss"] if windows else None
    at_chance = None if chance is None or end is None else bool(abs(end - chance) <= CHANCE_TOLERANCE * chance)
    fell, fall, se = judged.get("loss", (None, float("nan"), float("nan")))
    if fell is None:
        why = f"only {len(windows)} logged loss window{'s' if len(windows) != 1 else ''}: too few to judge whether " \
              f"its loss fell (at least {MIN_WINDOWS})"
    elif not fell:
        why = (f"its loss {'rose' if fall < 0 else 'did not fall beyond its window-to-window noise'}: "
               f"{windows[0]['loss']:.4g} -> {end:.4g} (fall {fall:+.3g}, {FELL_BY:g} standard errors {FELL_BY * se:.3g})")
    else:
        why = ""
    if at_chance:
        why = "; ".join(filter(None, [why, f"its loss {end:.4g} ends at its chance level {chance:.4g}"]))
    return {"fell": {t: f for t, (f, _, _) in judged.items()}, "fall": {t: d for t, (_, d, _) in judged.items()},
            "fall_se": {t: e for t, (_, _, e) in judged.items()}, "chance": chance, "at_chance": at_chance,
            "learned": not why, "learned_reason": why}


def learning_judged(health: Mapping[str, Any]) -> bool:
    """Whether a health record's ``learned`` is a judgement (its loss's fall was measured, or it ends at
    chance) rather than "too few logged windows to judge"."""
    return (health.get("fell") or {}).get("loss", False) is not None or bool(health.get("at_chance"))


def _learned_text(health: Mapping[str, Any]) -> str:
    if health["learned"]:
        return "yes"
    return f"{'no' if learning_judged(health) else 'not judged'}: {health['learned_reason']}"


def describe_health(health: dict[str, Any] | None) -> str:
    """One line for a notebook: steps, loss first -> last, cosine to the start, and whether it trained."""
    if health is None:
        return "no health record (a run finished before health was recorded)"
    start, end = health["loss_start"] or {}, health["loss_end"] or {}
    cosine = "—" if health["start_cosine"] is None else f"{health['start_cosine']:.4f}"
    text = (f"{health['trained_steps']} of {health['planned_steps']} steps"
            f"{' (stopped early)' if health['trained_steps'] < health['planned_steps'] else ''} "
            f"({health['steps_at_half_peak']} at >= half the peak lr {health['peak_lr']:.2g}); loss {start.get('loss', float('nan')):.4g} -> "
            f"{end.get('loss', float('nan')):.4g}; cosine to its start {cosine}")
    text += "; active" if health["active"] else f"; INACTIVE: {health['reason']}"
    if "learned" in health:
        text += f"; learned (its loss fell): {_learned_text(health)}"
    return text


def health_table(runs: Mapping[str, dict[str, Any] | None]) -> pd.DataFrame:
    """A table of health records (``{name: health}``), one row per run: steps taken of those planned,
    whether early stopping ended it, the peak learning rate and the steps at half of it or more, the loss
    and each of its terms in the first -> the last logged window, the cosine to its start, and whether it
    is active (or why not). A :class:`pandas.DataFrame` indexed by name; each chapter shows it under its
    training cell (the page's "did it train?" table reads the run records)."""
    rows = {}
    for name, h in runs.items():
        if h is None:
            rows[name] = {"active": "no health record"}
            continue
        start, end = h["loss_start"] or {}, h["loss_end"] or {}
        row = {"steps": f"{h['trained_steps']} of {h['planned_steps']}",
               "stopped early": "yes" if h["trained_steps"] < h["planned_steps"] else "no",
               "peak lr": f"{h['peak_lr']:.2g}", "steps at >= half the peak lr": h["steps_at_half_peak"]}
        for term in [k for k in start if k != "step"]:
            row[f"{term}: first -> last window"] = f"{start[term]:.4g} -> {end.get(term, float('nan')):.4g}"
        row["cosine to its start"] = "—" if h["start_cosine"] is None else f"{h['start_cosine']:.4f}"
        row["active"] = "yes" if h["active"] else f"no: {h['reason']}"
        if "learned" in h:
            row["learned (loss fell)"] = _learned_text(h)
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def _window(entry: dict[str, Any]) -> dict[str, Any]:
    """A log entry's loss and terms: ``{"step", "loss", <term>: ...}``."""
    return {"step": entry["step"], "loss": entry["loss"], **entry.get("terms", {})}


__all__ = [
    "CHANCE_TOLERANCE",
    "FELL_BY",
    "MIN_SHARE_AT_HALF_PEAK",
    "MIN_WINDOWS",
    "SOLVED_LOSS",
    "STILL_COSINE",
    "describe_health",
    "health_table",
    "learning",
    "learning_judged",
    "loss_fell",
    "mean_cosine",
    "probe_sentences",
    "training_health",
]
