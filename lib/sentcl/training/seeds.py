"""One configuration trained with several seeds, and what a table reports of them.

Chernyavskiy et al. (2022, §5.2), after Thakur et al. (2021): "due to instability, we did seed
optimization, running each experiment five times and selecting the best one (on dev)". A miniature
reports every seed instead, as the mean and standard deviation over them, so that it can tell an
effect from seed noise. :func:`train_seeds` does both (:data:`SEED_SUMMARIES`):

- ``"best on dev"``: train every seed (each run keeps its best evaluation on the dev data,
  ``metric_for_best``), score only the model of the seed whose dev score is best;
- ``"mean"``: train and score every seed.

A row that fine-tunes another row's model (Table 5's "Fine-tuning MSE with BSC") starts seed k from
the model :func:`train_seeds` saved for seed k of that row (``save_to``): seed k's own model under
``"mean"``, the best seed's under ``"best on dev"``. Each scored seed carries the training runs its
model rests on (its own run first, then those of the model it started from), whose health decides
whether a claim about the row can be tested (:mod:`sentcl.training.health`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sentence_transformers import SentenceTransformer

from sentcl.errors import ConfigError, check_choice
from sentcl.training.health import describe_health
from sentcl.training.trainer import Trainer, TrainingResult

SEED_SUMMARIES = ("best on dev", "mean")


def check_seed_summary(seed_summary: str, seeds: Sequence[int], select_on_dev: bool) -> None:
    """Refuse, before any work, a summary that cannot be computed: an unknown one, no seeds, or the best
    of several seeds on dev without dev scores to pick it by."""
    if seed_summary not in SEED_SUMMARIES:
        raise ConfigError(f"seed_summary = {seed_summary!r}: expected one of {', '.join(map(repr, SEED_SUMMARIES))}")
    if not seeds:
        raise ConfigError("seeds = []: expected at least one seed")
    if seed_summary == "best on dev" and len(seeds) > 1 and not select_on_dev:
        raise ConfigError(f"seed_summary = 'best on dev' with seeds {list(seeds)} needs select_on_dev = True (a dev score "
                          "per seed to pick the best by); use seed_summary = 'mean' or one seed")


@dataclass(frozen=True)
class SavedModel:
    """A trained model kept for a row that starts from it: its folder and the training runs it rests on."""

    folder: str
    runs: tuple[TrainingResult, ...]


@dataclass
class SeedRuns:
    """What :func:`train_seeds` gives for one row."""

    seed_summary: str
    seeds: list[int]
    scores: dict[int, Any] = field(default_factory=dict)
    """The scored seeds -> ``score(model)``: every seed (``"mean"``) or the one kept (``"best on dev"``)."""
    runs: dict[int, list[TrainingResult]] = field(default_factory=dict)
    """Every seed -> the training runs its model rests on, its own first."""
    dev: dict[int, float | None] = field(default_factory=dict)
    """Every seed -> its best dev score (None without model selection)."""
    saved: dict[int, SavedModel] = field(default_factory=dict)
    """Seed k -> the model a row fine-tuning this one starts seed k from (with ``save_to``)."""
    dev_metric: str | None = None
    """The dev metric the seeds were compared on (``config.metric_for_best``; None without model selection)."""
    kept: int | None = None
    """The seed whose model the row reports under ``"best on dev"`` (None under ``"mean"``)."""
    trained_on: str = ""
    """The training data's name."""
    rows: int = 0
    """Its rows."""

    def rests(self) -> dict[int, list[TrainingResult]]:
        """The scored seeds -> the training runs each scored model rests on (a row's training evidence)."""
        return {seed: self.runs[seed] for seed in self.scores}

    def note(self) -> str:
        """What the row's value is of its seeds, for the results file."""
        if self.seed_summary == "mean":
            return f"mean ± std over seeds {self.seeds}"
        return f"seed {self.kept} of {self.seeds}, the best on dev" if len(self.seeds) > 1 else f"seed {self.seeds[0]}"

    def describe(self) -> str:
        """One line: the training rows, which seeds were scored, the dev scores."""
        on_dev = ("; dev " + self.dev_metric + ": " + ", ".join(f"seed {s} {v:.4f}" for s, v in self.dev.items())
                  if self.dev_metric else "")
        kept = f"seed {self.kept} kept" if self.seed_summary == "best on dev" else "every seed scored"
        return f"{self.rows:,} rows of {self.trained_on}, {kept}{on_dev}"


def train_seeds(
    trainer_for: Callable[[int, str | None], Trainer],
    seeds: Sequence[int],
    *,
    seed_summary: str = "mean",
    score: Callable[[SentenceTransformer], Any] | None = None,
    starts_from: Mapping[int, SavedModel] | None = None,
    save_to: str | Path | None = None,
    train: Callable[[Trainer], TrainingResult] | None = None,
    log: Callable[[str], None] | None = print,
) -> SeedRuns:
    """Train one configuration with every seed and score what ``seed_summary`` reports (module doc).

    ``trainer_for(seed, start)`` builds seed ``seed``'s trainer, its model loaded from ``start`` (the
    folder of the model it fine-tunes, from ``starts_from``; None: the base model); ``train`` runs it
    (default :meth:`Trainer.train_cached`; a chapter passes ``ChapterRun.train``, which writes run
    records). The dev score of a seed is its run's best evaluation of ``config.metric_for_best`` (None
    without one); the best on dev is the first seed with the highest (or, ``greater_is_better=False``,
    lowest) score. ``score(model)`` scores a kept model; ``save_to`` saves the models a later row starts
    from (``<save_to>/seed<k>``). ``log`` gets one line of health per seed."""
    check_choice("seed_summary", seed_summary, SEED_SUMMARIES)
    if not seeds:
        raise ConfigError("train_seeds: no seeds")
    starts_from = starts_from or {}
    out = SeedRuns(seed_summary, list(seeds))
    best: tuple[int, SentenceTransformer] | None = None
    for seed in seeds:
        start = starts_from.get(seed)
        trainer = trainer_for(seed, None if start is None else start.folder)
        result = train(trainer) if train is not None else trainer.train_cached()
        metric = trainer.config.metric_for_best
        out.dev_metric, out.trained_on, out.rows = metric, trainer.data.name, len(trainer.data)
        out.dev[seed] = result.best_metrics.get(metric) if metric else None
        out.runs[seed] = [result, *(start.runs if start is not None else ())]
        if log is not None:
            log(f"{trainer.name}: {describe_health(result.health)}")
        if seed_summary == "mean":
            if score is not None:
                out.scores[seed] = score(trainer.model)
            if save_to is not None:
                out.saved[seed] = SavedModel(_save(trainer.model, save_to, seed), tuple(out.runs[seed]))
        elif best is None or _better(out.dev[seed], out.dev[best[0]], trainer.config.greater_is_better):
            best = (seed, trainer.model)
        del trainer
    if best is not None:
        seed, model = best
        out.kept = seed
        if score is not None:
            out.scores[seed] = score(model)
        if save_to is not None:
            kept = SavedModel(_save(model, save_to, seed), tuple(out.runs[seed]))
            out.saved = dict.fromkeys(seeds, kept)
    return out


def _better(value: float | None, best: float | None, greater_is_better: bool) -> bool:
    if value is None or best is None:
        return False
    return value > best if greater_is_better else value < best


def _save(model: SentenceTransformer, folder: str | Path, seed: int) -> str:
    path = Path(folder).resolve() / f"seed{seed}"
    model.save(str(path))
    return str(path)


__all__ = ["SEED_SUMMARIES", "SavedModel", "SeedRuns", "check_seed_summary", "train_seeds"]
