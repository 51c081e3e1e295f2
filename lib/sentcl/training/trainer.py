"""The trainer: one loop for every chapter (see :mod:`sentcl.training` for why it is our own).

::

    model = load_encoder("sentence-transformers/all-MiniLM-L6-v2")
    data = TrainingData.from_record(load("snli", "dev").with_label("entailment"), labels=False)
    config = TrainingConfig(batch_size=12, optimizer="adam", learning_rate=2e-5, warmup_ratio=0.1,
                            eval_fraction=0.1, metric_for_best="spearman", seed=0)
    trainer = Trainer(model, MultipleNegativesRankingLoss, data, config, sampler=NoDuplicatesBatchSampler(),
                      evaluator=dev_evaluator("STSb", load("stsbenchmark", "dev")))  # sentcl.evaluation.scoring
    result = trainer.train("runs/mnrl")     # or trainer.train_cached(): in the artifact cache

Run the same lines again after a crash or a kill and training continues from the last
checkpoint in ``runs/mnrl``; run them after it finished and the trained model is loaded.

Output folder
    ``checkpoints/``  model, loss, optimizer, scheduler, gradient scaler, sampler and callback
        state, every process's random generators, the trainer's counters and history, the
        current epoch's batches; ``best/``  the weights of the best evaluation so far (with
        ``metric_for_best``); their files: :mod:`sentcl.training.checkpoint`;
    ``model/``  the run's model in sentence-transformers format: the best evaluation's weights
        with ``metric_for_best``, else the last ones;
    ``trainer_state.json``  written last: the history (losses, evaluations) and the summary.
    Checkpoints and best weights are removed once ``model/`` and ``trainer_state.json`` exist.

Why this module is long: the loop, one optimizer step (tokenisation, forward, gradient caching,
gathering over processes, mixed precision, clipping, the optimizer and scheduler) and model
selection all work on the trainer's model, loss, optimizer and state. What needs none of these
lives apart: the files of checkpoints and of the output folder, and the training state, in
:mod:`~sentcl.training.checkpoint`; the learning-rate schedule and when a step logs, evaluates,
checkpoints or stops early, in :mod:`~sentcl.training.config`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.losses.merged_forward import embed_columns
from torch import nn
from tqdm import tqdm  # the type of the bar sentcl.progress makes

from sentcl.artifacts import ArtifactCache, Stage
from sentcl.data.records import TrainingData
from sentcl.embeddings import encode as encode_texts
from sentcl.errors import ConfigError
from sentcl.hashing import stable_hash
from sentcl.io import atomic_directory, atomic_path
from sentcl.models import compile_encoder, fingerprint, restore_encoder, speed_options, unpad_encoder
from sentcl.precision import autocast, note_use, resolve_precision, tf32
from sentcl.progress import progress_bar
from sentcl.training import checkpoint, distributed
from sentcl.training.callbacks import Callback
from sentcl.training.checkpoint import TrainerState
from sentcl.training.config import OPT_IN, TrainingConfig
from sentcl.training.distributed import Processes
from sentcl.training.gradcache import backward_through_chunks, chunk_features, embed_without_graph
from sentcl.training.health import mean_cosine, probe_sentences, training_health
from sentcl.training.optim import UncorrectedAdam
from sentcl.training.prefetch import BatchInputs, Features, to_device
from sentcl.training.samplers import BatchSampler, RandomBatchSampler

BATCH_EXTRAS = ("ids",)
"""The per-row values beyond texts and labels the trainer can pass to a loss (see :mod:`sentcl.losses`)."""
Evaluator = Callable[[SentenceTransformer], dict[str, float]]
"""``model -> {metric name: value}``, e.g. :func:`sentcl.evaluation.scoring.dev_evaluator` (a task scored on a dev
set); called in evaluation mode."""
_RESULT_ONLY = ("log_steps", "keep_checkpoints", "checkpoint_steps", "checkpoint_minutes")
"""Options that do not change the trained model: left out of the run's key."""
PROBE_START_FILE = "probe_start.npy"
"""The starting model's embeddings of the health probe, in the run's output folder."""


@dataclass
class TrainingResult:
    """What :meth:`Trainer.train` returns (and ``trainer_state.json`` holds)."""

    output_dir: Path
    model_dir: Path
    global_step: int
    epochs: int
    best_metric: float | None
    best_step: int | None
    stopped_early: bool
    evaluations: list[dict[str, Any]]
    losses: list[dict[str, Any]]
    resumed_from_step: int | None = None
    """The checkpoint this process continued from (None: it started afresh or found the run finished)."""
    health: dict[str, Any] | None = None
    """Did it train (:mod:`sentcl.training.health`): steps, learning rate, loss per term, cosine to its
    start, ``active`` and ``reason``; None for a run finished before health was recorded."""
    run: dict[str, Any] | None = None
    """What this call's training was and cost (``precision``: the one its steps ran in, ``wall_time_s``,
    ``rows_trained_by_this_process``, ``pairs_per_s``, ``processes``, and what it wrote to resume and to
    keep the best model: ``checkpoints`` and ``best_weights``, each ``{"count", "bytes", "seconds"}``);
    None when the run was found finished and only loaded. Whether it resumed: :attr:`resumed_from_step`."""

    @property
    def trained(self) -> bool:
        """True when this call trained (from scratch or from a checkpoint), False when it only loaded."""
        return self.run is not None

    @property
    def final_metrics(self) -> dict[str, Any]:
        """The last evaluation (empty without evaluations)."""
        return dict(self.evaluations[-1]) if self.evaluations else {}

    @property
    def best_metrics(self) -> dict[str, Any]:
        """The evaluation at ``best_step`` (empty without model selection)."""
        return next((dict(e) for e in self.evaluations if e["step"] == self.best_step), {})


class Trainer:
    """Trains a SentenceTransformer with any sentcl loss and batch sampler; resumable.

    Args:
        model: the encoder to train (in place).
        loss: a loss module built on ``model`` (a :class:`~sentcl.losses.SentclLoss` or a
            sentence-transformers loss), or a callable ``model -> loss`` that the trainer calls
            under ``config.seed``, so that a loss's own weights (SBERT's classifier) start the
            same in every run.
        data: the training rows (:class:`TrainingData`).
        config: hyperparameters (:class:`TrainingConfig`).
        sampler: decides each epoch's batches (default :class:`RandomBatchSampler`).
        evaluator: ``model -> {metric: value}`` on a dev set, run on the schedule of
            ``config.eval_fraction`` / ``config.eval_steps`` and at the end.
        callbacks: :class:`~sentcl.training.callbacks.Callback` objects (their state is checkpointed).
        name: names the run in progress bars (and in the run record a chapter writes around it).
        show_progress: a progress bar with loss, learning rate and pairs/s.

    The loss contract (columns, labels, batch extras such as ``ids`` from :data:`BATCH_EXTRAS`,
    ``compute_loss_from_embeddings`` for gradient caching and several processes, a loss's own
    parameter groups and state) is written once, in :mod:`sentcl.losses.base`.
    """

    def __init__(
        self,
        model: SentenceTransformer,
        loss: nn.Module | Callable[[SentenceTransformer], nn.Module],
        data: TrainingData,
        config: TrainingConfig | None = None,
        *,
        sampler: BatchSampler | None = None,
        evaluator: Evaluator | None = None,
        callbacks: Sequence[Callback] = (),
        name: str = "train",
        show_progress: bool = True,
    ) -> None:
        if not isinstance(data, TrainingData):
            raise ConfigError(f"data must be TrainingData (see TrainingData.from_record), got {type(data).__name__}")
        self.model = model
        self.config = config or TrainingConfig()
        self.data = data
        if isinstance(loss, nn.Module):
            self.loss = loss
        elif callable(loss):
            with torch.random.fork_rng(devices=_cuda_devices()):
                torch.manual_seed(self.config.seed)
                self.loss = loss(model)
            if not isinstance(self.loss, nn.Module):
                raise ConfigError(f"the loss factory returned a {type(self.loss).__name__}, not a torch module")
        else:
            raise ConfigError(f"loss must be a loss module or a callable model -> loss, got {type(loss).__name__}")
        self.extras = tuple(getattr(self.loss, "batch_extras", ()))
        unknown = sorted(set(self.extras) - set(BATCH_EXTRAS))
        if unknown:
            raise ConfigError(
                f"{type(self.loss).__name__} asks for batch extras {unknown}; the trainer provides {list(BATCH_EXTRAS)}"
            )
        self.sampler = sampler if sampler is not None else RandomBatchSampler()
        self.evaluator = evaluator
        self.callbacks = list(callbacks)
        names = [cb.name for cb in self.callbacks]
        if len(set(names)) != len(names):
            raise ConfigError(f"callback names must be distinct (their state is saved by name), got {names}")
        self.name = name
        self.show_progress = show_progress
        self.procs = Processes(device=model.device)
        self.precision = resolve_precision(self.config.precision, model.device)
        """The precision the steps run in: ``config.precision`` resolved on the model's device."""
        self.scaler: torch.amp.GradScaler | None = None
        self.state: TrainerState  # set by train(), like the optimizer: what callbacks read
        self.output_dir: Path  # set by train()
        self._initial_fingerprint: str | None = None
        self._plan: list[np.ndarray] | None = None
        self._groups: list[dict[str, Any]] | None = None  # optimizer parameter groups, set up by train()
        self._unread: list[list[tuple[torch.Tensor, dict[str, torch.Tensor]]]] = []
        """Per optimizer step since the losses were last read, per batch its loss and the loss's terms, on the
        device: read in one transfer where the loop needs them (:meth:`_read_losses`), not after every step."""
        self._writes = {"checkpoints": _Written(), "best_weights": _Written()}
        self._checkpoint_clock = 0.0  # time.perf_counter() at the last checkpoint (or the start of this call)
        self._checkpointed_best: int | None = None  # the best step the newest checkpoint on disk names
        self._writer = checkpoint.CheckpointWriter()  # checkpoints written off the loop
        self._writing_best: tuple[int | None, ...] = ()  # the best step the checkpoint being written names
        self._trained = False
        self._inputs = BatchInputs(self._host_features, self.procs.device)

    # ------------------------------------------------------------------ identity

    def describe(self) -> dict[str, Any]:
        """Everything that decides the trained model: the configuration (less output-only options),
        the loss and its options, the sampler and its options, the data and the initial weights."""
        if self._initial_fingerprint is None:
            self._initial_fingerprint = fingerprint(self.model)
        get_config = getattr(self.loss, "get_config_dict", None)
        config = {k: v for k, v in self.config.to_dict().items()
                  if k not in _RESULT_ONLY and not (k in OPT_IN and v is False)}
        return {
            "config": config | {"precision": self.precision},
            "loss": {
                "class": f"{type(self.loss).__module__}.{type(self.loss).__qualname__}",
                "options": get_config() if get_config is not None else None,
            },
            "sampler": self.sampler.config(),
            "data": {
                "name": self.data.name,
                "rows": len(self.data),
                "columns": self.data.column_names,
                "fingerprint": self.data.fingerprint(),
            },
            "initial_model": self._initial_fingerprint,
        }

    def stage(self, name: str = "train", upstream: Sequence[Stage] = ()) -> Stage:
        """This run as an artifact-cache stage (its key changes with anything :meth:`describe` covers)."""
        return Stage(name, self.describe(), upstream=tuple(upstream))

    def train_cached(
        self, cache: ArtifactCache | None = None, stage_name: str = "train", upstream: Sequence[Stage] = ()
    ) -> TrainingResult:
        """:meth:`train` inside the artifact cache: reuse a finished identical run, resume an interrupted one."""
        cache = cache or ArtifactCache()
        stage = self.stage(stage_name, upstream)
        built: list[TrainingResult] = []
        # the finished run is loaded from its final folder; one that does not load is trained again
        result = cache.load_or_build(stage, lambda work: built.append(self.train(work)), self.train, resume=True)
        if built:  # this call trained it: say what that cost
            result.run, result.resumed_from_step = built[0].run, built[0].resumed_from_step
        return result

    # ------------------------------------------------------------------ training

    def train(self, output_dir: str | os.PathLike) -> TrainingResult:
        """Train into ``output_dir``: fresh, continued from its last checkpoint, or loaded when finished."""
        self.output_dir = Path(output_dir)
        self._setup_processes()
        run_key = stable_hash(self.describe())
        finished = checkpoint.read_finished(self.output_dir, run_key)
        if finished is not None:
            self.state = finished
            model = SentenceTransformer(str(self.output_dir / "model"), device=str(self.model.device))
            self.model.load_state_dict(model.state_dict())
            return self._result(None, health=checkpoint.read_health(self.output_dir))
        if self._trained:
            raise ConfigError("this Trainer has trained its model already: build a new Trainer (and model) for another run")
        started = time.perf_counter()
        already = speed_options(self.model)
        if self.config.unpadded:
            unpad_encoder(self.model)
        if self.config.compile:
            compile_encoder(self.model)
        try:
            with tf32(self.config.tf32, self.precision, self.procs.device):
                try:
                    resumed_from = self._prepare(run_key)
                    rows = self._loop()
                    health = self._finish()
                finally:  # a checkpoint being written is finished and counted before this returns, even on an error
                    with contextlib.suppress(Exception):
                        self._checkpoint_written()
        finally:  # the model leaves as it came, padded and eager: as the same weights loaded from the cache (issue 45)
            restore_encoder(self.model, tuple(o for o in speed_options(self.model) if o not in already))
        self._trained = True
        seconds = time.perf_counter() - started
        note_use("training runs", self.precision, self.procs.device)
        return self._result(
            resumed_from,
            health=health,
            run={
                "precision": self.precision,
                "wall_time_s": round(seconds, 3),
                "rows_trained_by_this_process": rows,
                "pairs_per_s": round(rows / seconds, 3) if seconds > 0 else None,
                "processes": self.procs.world_size,
                **{what: written.record() for what, written in self._writes.items()},
            },
        )

    def _gradients(
        self, batches: Sequence[Sequence[int] | np.ndarray], ahead: Sequence[np.ndarray] = ()
    ) -> list[tuple[torch.Tensor, dict[str, torch.Tensor]]]:
        """:meth:`step_gradients`, without reading the losses: per batch its loss and the loss's terms
        (:attr:`sentcl.losses.SentclLoss.term_tensors`), detached, on the device; the batches ``ahead``
        are tokenised meanwhile (:class:`~sentcl.training.prefetch.BatchInputs`)."""
        if self._groups is None:
            self._setup_processes()
        self.model.train()
        self.loss.train()
        for p in self._params:
            p.grad = None
        losses = []
        for k, rows in enumerate(batches):
            features = self._inputs.take(np.asarray(rows, dtype=np.int64))
            if k == 0:
                self._inputs.ahead(ahead)
            value = self._backward(np.asarray(rows, dtype=np.int64), features, 1.0 / len(batches))
            losses.append((value, dict(getattr(self.loss, "term_tensors", {}))))
        self._reduce_gradients()
        return losses

    def step_gradients(self, batches: Sequence[Sequence[int] | np.ndarray]) -> float:
        """The gradients one optimizer step computes from ``batches`` (lists of row indices into the
        data, accumulated as ``gradient_accumulation_steps`` batches are), with gradient caching,
        gathering and summing over processes as in training; left in the parameters' ``.grad``
        (zeroed first). Returns the batches' mean loss. No optimizer step is taken."""
        return _step_means(_read([self._gradients(batches)]))[0][0]

    def encode(self, texts: Sequence[str], batch_size: int = 64, precision: str = "auto") -> np.ndarray:
        """Embeddings of ``texts`` by the current model (evaluation mode, no gradients, no cache),
        without touching the training's random state: for re-encoding samplers and callbacks."""
        with self.inference():
            return encode_texts(
                self.model, list(texts), batch_size=batch_size, precision=precision, cache=False, show_progress=False
            )

    @contextlib.contextmanager
    def inference(self) -> Iterator[None]:
        """Evaluation mode, no gradients, random generators forked (restored afterwards)."""
        modes = [(m, m.training) for m in [*self.model.modules(), *self.loss.modules()]]
        try:
            with torch.no_grad(), torch.random.fork_rng(devices=_cuda_devices()):
                self.model.eval()
                yield
        finally:
            for module, training in modes:
                module.training = training

    # ------------------------------------------------------------------ setup and resume

    def _setup_processes(self) -> None:
        """Join the process group (if launched by torchrun/accelerate) and check the loss can run there."""
        self.procs = distributed.setup(self.model.device)
        self._inputs.device = self.procs.device
        if self.procs.distributed:
            self.model.to(self.procs.device)
            self.loss.to(self.procs.device)
            self.precision = resolve_precision(self.config.precision, self.procs.device)
        embeds_itself = self.procs.distributed or self.config.gradient_cache_chunk is not None
        if embeds_itself and not callable(getattr(self.loss, "compute_loss_from_embeddings", None)):
            raise ConfigError(
                f"{type(self.loss).__name__} has no compute_loss_from_embeddings, which gradient caching "
                "and training on several processes need"
            )
        self._groups = self._parameter_groups()

    def _prepare(self, run_key: str) -> int | None:
        cfg = self.config
        checkpoint.seed_everything(cfg.seed + self.procs.rank)
        self.sampler.seed(cfg.seed)
        self.model.train()
        self.loss.train()
        self.optimizer = self._build_optimizer()
        self.scaler = torch.amp.GradScaler(self.procs.device.type) if self.precision == "fp16" else None
        latest = checkpoint.load_newest_intact_checkpoint(self.output_dir, run_key, self.procs.world_size)
        if latest is None and self.procs.is_main:  # where the model starts: what its health is measured from
            with atomic_path(self.output_dir / PROBE_START_FILE) as tmp, open(tmp, "wb") as fh:
                np.save(fh, self._probe())
        if latest is None:
            self._plan = self._plan_epoch()
            steps_per_epoch = cfg.optimizer_steps(len(self._plan))
            total = cfg.total_steps(steps_per_epoch)
            self.state = TrainerState(run_key, self.procs.world_size, total, steps_per_epoch)
            self.scheduler = self._build_scheduler(total)
            resumed_from = None
        else:
            resumed_from = self._restore(*latest)
        for cb in self.callbacks:
            cb.on_train_begin(self)
        return resumed_from

    def _parameter_groups(self) -> list[dict[str, Any]]:
        """Optimizer groups: weight matrices (weight decay), biases and LayerNorm weights (none),
        then the loss's own ``parameter_groups()``; sets the parameter lists the step uses."""
        cfg = self.config
        model_ids = {id(p) for p in self.model.parameters()}
        custom = [dict(g, params=list(g["params"])) for g in getattr(self.loss, "parameter_groups", list)()]
        custom_ids = {id(p) for group in custom for p in group["params"]}
        own = {id(p) for p in self.loss.parameters() if id(p) not in model_ids}
        if not custom_ids <= own:
            raise ConfigError(f"{type(self.loss).__name__}.parameter_groups() may only list the loss's own parameters")
        decay: list[nn.Parameter] = []
        no_decay: list[nn.Parameter] = []
        seen = set(custom_ids)
        for module in [*self.model.modules(), *self.loss.modules()]:
            for pname, p in module.named_parameters(recurse=False):
                if p.requires_grad and id(p) not in seen:
                    seen.add(id(p))
                    (no_decay if pname == "bias" or isinstance(module, nn.LayerNorm) else decay).append(p)
        groups: list[dict[str, Any]] = [
            {"params": decay, "weight_decay": cfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}
        ]
        groups = [g for g in groups if g["params"]] + custom
        self._params = [p for g in groups for p in g["params"]]
        self._model_params = [p for p in self._params if id(p) in model_ids]
        self._loss_params = [p for p in self._params if id(p) not in model_ids]
        return groups

    def _build_optimizer(self) -> torch.optim.Optimizer:
        cfg = self.config
        # the fused kernel (as the HF trainer's default "adamw_torch_fused"): one pass over all parameters
        fused = all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in self._params)
        kwargs: dict[str, Any] = {"lr": cfg.learning_rate, "betas": cfg.adam_betas, "eps": cfg.adam_epsilon, "fused": fused}
        assert self._groups is not None  # train() set the processes and the parameter groups up first
        if not cfg.adam_bias_correction:
            return UncorrectedAdam(self._groups, lr=cfg.learning_rate, betas=cfg.adam_betas, eps=cfg.adam_epsilon,
                                   weight_decay=cfg.weight_decay, adamw=cfg.optimizer == "adamw")
        if cfg.optimizer == "adamw":
            return torch.optim.AdamW(self._groups, weight_decay=cfg.weight_decay, **kwargs)
        return torch.optim.Adam(self._groups, **kwargs)

    def _build_scheduler(self, total_steps: int) -> torch.optim.lr_scheduler.LambdaLR:
        return torch.optim.lr_scheduler.LambdaLR(self.optimizer, self.config.schedule(total_steps))

    def _plan_epoch(self) -> list[np.ndarray]:
        plan = None
        if self.procs.is_main:
            encode = self.encode if self.sampler.reencodes else None
            plan = self.sampler.epoch_batches(self.data, self.config.batch_size, encode)
        return distributed.broadcast(plan, self.procs)

    def _restore(self, folder: Path, state: TrainerState, tree: dict[str, Any]) -> int:
        self.state = state
        self.model.load_state_dict(tree["model"])
        checkpoint.load_loss_own_state(self.loss, self.model, tree["loss"], folder)
        # the scheduler first: building it sets the groups' learning rate to that of step 0, which
        # the optimizer's state then overwrites with the rate the interrupted run was at
        self.scheduler = self._build_scheduler(self.state.total_steps)
        self.optimizer.load_state_dict(tree["optimizer"])
        self.scheduler.load_state_dict(tree["scheduler"])
        if self.scaler is not None:
            self.scaler.load_state_dict(tree["scaler"])
        self.sampler.load_state_dict(tree["sampler"])
        for cb in self.callbacks:
            if cb.name in tree["callbacks"]:
                cb.load_state_dict(tree["callbacks"][cb.name])
        checkpoint.set_rng_state(tree["rng"][self.procs.rank])
        self._plan = checkpoint.unpack_plan(tree["plan"])
        self._checkpointed_best = state.best_step
        return self.state.global_step

    # ------------------------------------------------------------------ the loop

    def _loop(self) -> int:
        """Train until done; returns the number of rows this process trained on."""
        st, cfg = self.state, self.config
        bar = progress_bar(
            total=st.total_steps,
            initial=st.global_step,
            unit="step",
            desc=self.name,
            dynamic_ncols=True,
            disable=not (self.show_progress and self.procs.is_main),
        )
        rows_total, rows_window, window_start = 0, 0, time.perf_counter()
        self._checkpoint_clock = window_start
        read_every_step = any(cb.reads_step_loss for cb in self.callbacks)
        self._inputs.start()
        try:
            while not st.done:
                if self._plan is None:
                    self._plan = self._plan_epoch()
                    st.batches_done = 0
                plan = self._plan
                epoch_steps = cfg.optimizer_steps(len(plan))
                while st.batches_done < len(plan) and not st.done:
                    accumulate = cfg.gradient_accumulation_steps
                    group = plan[st.batches_done : st.batches_done + accumulate]
                    self._inputs.ahead(group)
                    self._unread.append(self._optimizer_step(group, ahead=plan[st.batches_done + accumulate :][:accumulate]))
                    self._inputs.settle()  # the tokenizer is free for evaluations, callbacks and samplers
                    rows = sum(len(b) for b in group)
                    rows_total, rows_window = rows_total + rows, rows_window + rows
                    st.batches_done += len(group)
                    st.global_step += 1
                    if read_every_step:
                        self._read_losses()
                    progress = st.epoch + st.batches_done / len(plan)
                    epoch_end = st.batches_done == len(plan)
                    last = st.global_step >= st.total_steps or (epoch_end and st.epoch + 1 == cfg.epochs)
                    for cb in self.callbacks:
                        cb.on_step_end(self)
                    minutes_since = None
                    if cfg.due_to_log(st.global_step, last=last):
                        self._read_losses()
                        now = time.perf_counter()
                        self._log(progress, bar, pairs_per_s=rows_window / max(now - window_start, 1e-9))
                        rows_window, window_start = 0, now
                        # every process checkpoints together: the first one's clock decides
                        minutes_since = distributed.broadcast((now - self._checkpoint_clock) / 60, self.procs)
                    evaluate = cfg.due_to_evaluate(
                        st.global_step,
                        cfg.optimizer_steps(st.batches_done),
                        epoch_steps,
                        last=last,
                        evaluator=self.evaluator is not None,
                    )
                    if evaluate:
                        self._read_losses()
                        self._evaluate(progress, bar)
                    if epoch_end:
                        st.epoch += 1
                        self._plan = None
                    if last or st.stopped_early:
                        st.done = True
                    if cfg.due_to_checkpoint(st.global_step, done=st.done, minutes_since=minutes_since):
                        self._read_losses()
                        self._save_checkpoint()
                    bar.update(1)
        finally:
            self._inputs.close()
            bar.close()
        return rows_total

    def _read_losses(self) -> None:
        """Add the losses of the steps since the last read to the running means (and the loss's terms to
        their sums), read from the device in one transfer: the loop's one host-device sync, at logging,
        evaluation and checkpoint steps (every step for a callback that :attr:`~Callback.reads_step_loss`)."""
        st = self.state
        for value, terms in _step_means(_read(self._unread)):
            st.loss_since_log.add(value)
            st.loss_since_eval.add(value)
            for term, term_value in terms.items():
                st.terms_sum_since_log[term] = st.terms_sum_since_log.get(term, 0.0) + term_value
        self._unread = []

    def _optimizer_step(
        self, group: list[np.ndarray], ahead: Sequence[np.ndarray] = ()
    ) -> list[tuple[torch.Tensor, dict[str, torch.Tensor]]]:
        """One optimizer step over ``group`` (the accumulated batches), tokenising the batches ``ahead`` (the next
        step's) meanwhile; returns their losses, unread (:meth:`_gradients`)."""
        losses = self._gradients(group, ahead)
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)
        if self.config.max_grad_norm is not None:
            nn.utils.clip_grad_norm_(self._params, self.config.max_grad_norm)
        stepped = True
        if self.scaler is not None:
            scale = self.scaler.get_scale()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            stepped = self.scaler.get_scale() >= scale  # a lowered scale means inf/nan gradients: step skipped
        else:
            self.optimizer.step()
        self._last_lr = self.scheduler.get_last_lr()[0]  # the rate this step used (the first group's)
        if stepped:  # as the HF trainer: a step the scaler skipped does not advance the schedule
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return losses

    def _reduce_gradients(self) -> None:
        """Sum the model's gradients over the processes; average the loss's own (already complete)."""
        distributed.all_reduce_gradients(self._model_params, self.procs, average=False)
        distributed.all_reduce_gradients(self._loss_params, self.procs, average=True)

    def _backward(self, rows: np.ndarray, features: Features, weight: float) -> torch.Tensor:
        """Loss of the batch ``rows`` (this process's share of its columns tokenised on the device: ``features``)
        and its gradients (times ``weight``); returns the batch's loss (detached, unread)."""
        device, chunk = self.procs.device, self.config.gradient_cache_chunk
        labels = None
        if self.data.labels is not None:
            labels = to_device(np.asarray(self.data.labels[rows]), device)
        extras = {name: to_device(np.asarray(self.data.ids[rows]), device) for name in self.extras}  # "ids", the one extra
        local = distributed.shard(rows, self.procs)
        with self._autocast():
            if not (self.procs.distributed or chunk):
                value = self.loss(features, labels, **extras)
                self._scaled_backward(value * weight)
                return value.detach()
            cached = []
            if not len(local):
                dim = self.model.get_embedding_dimension()
                if dim is None:
                    raise ConfigError("the model does not report its embedding dimension (a process with no rows needs it)")
                leaves = [torch.zeros(0, dim, device=device, requires_grad=True) for _ in self.data.columns]
            elif chunk:
                for column in features:
                    chunks = chunk_features(column, chunk)
                    embeddings, states = embed_without_graph(self.model, chunks)
                    cached.append((chunks, states, embeddings.detach().requires_grad_()))
                leaves = [leaf for _, _, leaf in cached]
            else:
                leaves = embed_columns(self.model, features)
            gathered = [distributed.gather_rows(e, self.procs) for e in leaves]
            value = self.loss.compute_loss_from_embeddings(gathered, labels, **extras)  # type: ignore[operator]  # checked by _setup_processes; nn.Module types attributes as Tensor | Module
        self._scaled_backward(value * weight)
        with self._autocast():
            for chunks, states, leaf in cached:
                if leaf.grad is not None:  # a column the loss does not use has no gradient to pass on
                    backward_through_chunks(self.model, chunks, states, leaf.grad)
        return value.detach()

    def _host_features(self, rows: np.ndarray) -> Features:
        """This process's share of the batch ``rows``, each column tokenised by the model, on the host."""
        local = distributed.shard(rows, self.procs)
        return [self.model.preprocess(texts) for texts in self.data.batch_texts(local)] if len(local) else []

    def _autocast(self):
        return autocast(self.precision, self.procs.device)

    def _scaled_backward(self, value: torch.Tensor) -> None:
        (self.scaler.scale(value) if self.scaler is not None else value).backward()

    # ------------------------------------------------------------------ logging, evaluation

    def _log(self, progress: float, bar: tqdm, pairs_per_s: float) -> None:
        st = self.state
        steps = st.loss_since_log.count
        entry: dict[str, Any] = {
            "step": st.global_step,
            "epoch": round(progress, 6),
            "loss": st.loss_since_log.take(),
            "lr": self._last_lr,
        }
        if st.terms_sum_since_log:
            entry["terms"] = {term: total / steps for term, total in st.terms_sum_since_log.items()}
            st.terms_sum_since_log = {}
        st.losses.append(entry)
        bar.set_postfix(loss=f"{entry['loss']:.4f}", lr=f"{entry['lr']:.2e}", pairs_per_s=f"{pairs_per_s:.1f}")

    def _evaluate(self, progress: float, bar: tqdm) -> None:
        st, cfg = self.state, self.config
        metrics: dict[str, float] = {}
        if self.evaluator is not None and self.procs.is_main:
            with self.inference():
                metrics = _checked_metrics(self.evaluator(self.model))
        metrics = distributed.broadcast(metrics, self.procs)
        entry = {"step": st.global_step, "epoch": round(progress, 6), **metrics, "train_loss": st.loss_since_eval.take()}
        st.evaluations.append(entry)
        if cfg.metric_for_best is not None:
            value = entry.get(cfg.metric_for_best)
            if value is None:
                raise ConfigError(
                    f"metric_for_best {cfg.metric_for_best!r} is not among the evaluation's metrics: {sorted(entry)}"
                )
            if cfg.improves(value, st.best_metric):
                st.best_metric, st.best_step = value, st.global_step
                if self.procs.is_main:
                    with self._writes["best_weights"].timed() as written:
                        written.add(checkpoint.save_best(self.output_dir, st.global_step, self.model.state_dict(), entry))
                    # the best weights the newest checkpoint names stay until a newer checkpoint names these
                    checkpoint.prune_best(self.output_dir, st.best_step, self._checkpointed_best, *self._writing_best)
            elif cfg.due_to_stop(st.global_step, st.best_step):
                st.stopped_early = True
        for cb in self.callbacks:
            cb.on_evaluate(self, entry)
        shown = {k: v for k, v in entry.items() if k not in ("step", "epoch") and isinstance(v, float)}
        bar.write(f"step {st.global_step} (epoch {progress:.2f}): " + ", ".join(f"{k} {v:.4f}" for k, v in shown.items()))

    # ------------------------------------------------------------------ saving

    def _save_checkpoint(self) -> None:
        rngs = distributed.all_gather_objects(checkpoint.rng_state(), self.procs)
        if self.procs.is_main:
            parts = {
                "plan": checkpoint.pack_plan(self._plan),
                "model": self.model.state_dict(),
                "loss": checkpoint.loss_own_state(self.loss, self.model),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "scaler": self.scaler.state_dict() if self.scaler is not None else None,
                "sampler": self.sampler.state_dict(),
                "callbacks": {cb.name: cb.state_dict() for cb in self.callbacks},
                "rng": rngs,
            }
            with self._writes["checkpoints"].timed():  # the loop waits: the previous write, the copy to host memory
                self._checkpoint_written()
                self._writer.save(self.output_dir, self.state, parts, keep=self.config.keep_checkpoints)
                self._writing_best = (self.state.best_step,)
        distributed.barrier(self.procs)
        self._checkpoint_clock = time.perf_counter()

    def _checkpoint_written(self) -> None:
        """Wait for the checkpoint being written (raising its error), count it, and remove the best weights that
        no checkpoint on disk names any more."""
        self._writer.wait()
        for folder, seconds in self._writer.written:
            self._writes["checkpoints"].add(folder, background_seconds=seconds)
        self._writer.written.clear()
        if self._writing_best:
            self._checkpointed_best, self._writing_best = self._writing_best[0], ()
            checkpoint.prune_best(self.output_dir, self.state.best_step, self._checkpointed_best)

    def _finish(self) -> dict[str, Any] | None:
        """Write the run's model and its finished state with its health (returned; None off the main process)."""
        st = self.state
        self._checkpoint_written()
        if st.best_step is not None:
            self.model.load_state_dict(checkpoint.load_best(self.output_dir, st.best_step))
        distributed.barrier(self.procs)
        health = None
        if self.procs.is_main:
            with atomic_directory(self.output_dir / "model") as tmp:
                self.model.save(str(tmp), create_model_card=False)
            start = self.output_dir / PROBE_START_FILE
            moved = mean_cosine(self._probe(), np.load(start)) if start.is_file() else None
            health = training_health(self.config, st.total_steps, st.global_step, st.losses, moved,
                                     chance=getattr(self.loss, "chance_level", None))
            checkpoint.write_finished(self.output_dir, st, self.describe(), health)
        for cb in self.callbacks:
            cb.on_train_end(self)
        distributed.barrier(self.procs)
        return health

    def _probe(self) -> np.ndarray:
        """The current model's fp32 embeddings of the health probe (:func:`sentcl.training.health.probe_sentences`)."""
        return self.encode(list(probe_sentences()), precision="fp32")

    def _result(
        self, resumed_from: int | None, run: dict[str, Any] | None = None, health: dict[str, Any] | None = None
    ) -> TrainingResult:
        st = self.state
        return TrainingResult(
            output_dir=self.output_dir,
            model_dir=self.output_dir / "model",
            global_step=st.global_step,
            epochs=st.epoch,
            best_metric=st.best_metric,
            best_step=st.best_step,
            stopped_early=st.stopped_early,
            evaluations=[dict(e) for e in st.evaluations],
            losses=[dict(e) for e in st.losses],
            resumed_from_step=resumed_from,
            health=health,
            run=run,
        )


class _Written:
    """How many files of one kind (checkpoints, best weights) a run wrote, their bytes and seconds."""

    def __init__(self) -> None:
        self.count, self.bytes, self.seconds, self.background_seconds = 0, 0, 0.0, 0.0

    @contextlib.contextmanager
    def timed(self) -> Iterator[_Written]:
        started = time.perf_counter()
        try:
            yield self
        finally:
            self.seconds += time.perf_counter() - started

    def add(self, folder: Path, background_seconds: float = 0.0) -> None:
        """Count the folder just written, its files' bytes, and the seconds a background thread spent writing it."""
        self.count += 1
        self.bytes += sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())
        self.background_seconds += background_seconds

    def record(self) -> dict[str, Any]:
        """``count``, ``bytes``, ``seconds`` (the training loop waited) and ``background_seconds`` (written meanwhile)."""
        return {"count": self.count, "bytes": self.bytes, "seconds": round(self.seconds, 3),
                "background_seconds": round(self.background_seconds, 3)}


def _read(unread: list[list[tuple[torch.Tensor, dict[str, torch.Tensor]]]]) -> list[list[tuple[float, dict[str, float]]]]:
    """The losses and terms of :meth:`Trainer._gradients` (per step, per batch) as Python floats, read in one
    transfer from the device: each value as ``float(tensor)`` reads it (via float64, which holds every
    float32, bfloat16 and float16 value exactly)."""
    flat = [t for step in unread for value, terms in step for t in (value, *terms.values())]
    numbers = iter(torch.stack([t.double().reshape(()) for t in flat]).tolist() if flat else [])
    return [[(next(numbers), {name: next(numbers) for name in terms}) for _, terms in step] for step in unread]


def _step_means(steps: list[list[tuple[float, dict[str, float]]]]) -> list[tuple[float, dict[str, float]]]:
    """Per optimizer step, the mean loss of its batches and the mean of each term (a term a batch lacks counts 0)."""
    out = []
    for batches in steps:
        values, terms = [v for v, _ in batches], [t for _, t in batches]
        out.append((sum(values) / len(values), {name: sum(t.get(name, 0.0) for t in terms) / len(terms) for name in terms[0]}))
    return out


def _checked_metrics(metrics: Any) -> dict[str, float]:
    if not isinstance(metrics, dict):
        raise ConfigError(f"the evaluator must return a dict of metric name -> number, got {type(metrics).__name__}")
    out = {}
    for key, value in metrics.items():
        if key in ("step", "epoch", "train_loss") or not isinstance(key, str):
            raise ConfigError(f"the evaluator returned the metric name {key!r}, which is reserved or not a string")
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
            raise ConfigError(f"the evaluator returned {key!r} = {value!r}; expected a number")
        out[key] = float(value)
    return out


def _cuda_devices() -> list[int]:
    return [torch.cuda.current_device()] if torch.cuda.is_available() else []


__all__ = ["BATCH_EXTRAS", "Evaluator", "Trainer", "TrainingResult"]
