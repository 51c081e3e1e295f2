"""Training state on disk: tensors in safetensors, everything else in JSON.

A checkpoint holds nested state (model weights, optimizer moments, the scheduler's step, random
generator states, the loss's and the sampler's state, the trainer's counters and history).
:func:`save_state` splits such a tree in two files:

``state.safetensors``
    every tensor (and numpy array), under its path in the tree (``optimizer/state/3/exp_avg``);
``state.json``
    the tree itself, with each tensor replaced by ``{"__tensor__": path}``. Dicts with
    non-string keys (the optimizer's parameter indices) and tuples are tagged so that they come
    back as they were: ``{"__dict__": [[key, value], ...]}``, ``{"__tuple__": [...]}``.

Nothing is pickled: a checkpoint can be read without running code from it. Values other than
tensors, arrays, dicts, lists, tuples, str, int, float, bool and None are refused.

A run's output folder (:class:`~sentcl.training.Trainer`), kept here so that the trainer's loop
holds no file names:

``checkpoints/checkpoint-<step, 8 digits>/``
    a checkpoint tree (:func:`save_checkpoint`): ``format`` (:data:`CHECKPOINT_FORMAT`),
    ``trainer`` (:meth:`TrainerState.to_dict`) and the parts the trainer gives it (``plan``,
    ``model``, ``loss``, ``optimizer``, ``scheduler``, ``scaler``, ``sampler``, ``callbacks``,
    ``rng``); the newest ``keep_checkpoints`` are kept;
``best/step-<step, 8 digits>/``
    the weights of the best evaluation so far, and that evaluation in ``best.json``;
``trainer_state.json`` (:data:`STATE_FILE`)
    written once the run's model is: the final :class:`TrainerState` and the run's description.
    Then the checkpoints and best weights are removed (:func:`write_finished`).

Changing the names or the tree makes existing checkpoints unreadable: raise
:data:`CHECKPOINT_FORMAT` then.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import threading
import time
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.torch
import torch
from torch import nn

from sentcl.errors import ConfigError, DataFormatError
from sentcl.io import atomic_directory, atomic_write_json, read_json, report_damaged

TENSORS_FILE = "state.safetensors"
TREE_FILE = "state.json"
STATE_FILE = "trainer_state.json"
"""The finished run's state, in its output folder."""
CHECKPOINT_FORMAT = 1
"""The version of the checkpoint tree (its ``format`` entry); checkpoints of another are refused."""

_TAGS = ("__tensor__", "__ndarray__", "__dict__", "__tuple__")


def save_state(folder: str | Path, tree: Any) -> None:
    """Write ``tree`` into ``folder`` as :data:`TENSORS_FILE` + :data:`TREE_FILE` (see module doc).

    The files are written in place: write into a temporary folder and rename it (the trainer
    uses :func:`sentcl.io.atomic_directory`) for an atomic checkpoint.
    """
    _write_state(Path(folder), *_snapshot(tree))


def _snapshot(tree: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """``tree`` encoded (module doc) with a host copy of each of its tensors: what the files will hold, whatever
    happens to the tree's tensors afterwards."""
    tensors: dict[str, torch.Tensor] = {}
    return _encode(tree, "", tensors), tensors


def _write_state(folder: Path, encoded: Any, tensors: dict[str, torch.Tensor]) -> None:
    safetensors.torch.save_file(tensors, str(folder / TENSORS_FILE))
    (folder / TREE_FILE).write_text(json.dumps(encoded, indent=1), encoding="utf-8")


def load_state(folder: str | Path, device: str | torch.device = "cpu") -> Any:
    """The tree :func:`save_state` wrote into ``folder`` (tensors on ``device``)."""
    folder = Path(folder)
    for name in (TENSORS_FILE, TREE_FILE):
        if not (folder / name).is_file():
            raise DataFormatError(folder / name, None, "a checkpoint file written by sentcl's trainer", "no such file")
    try:
        tensors = safetensors.torch.load_file(str(folder / TENSORS_FILE), device=str(device))
    except (safetensors.SafetensorError, OSError) as exc:  # truncated or corrupt
        raise DataFormatError(folder / TENSORS_FILE, None, "a readable safetensors file", str(exc)) from None
    return _decode(read_json(folder / TREE_FILE, "JSON training state"), tensors, folder)


def _encode(value: Any, path: str, tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, (torch.Tensor, np.ndarray)):
        key = path or "/"
        if key in tensors:
            raise ConfigError(f"two tensors of the training state share the name {key!r} (keys 0 and '0' in one dict?)")
    if isinstance(value, torch.Tensor):
        # a copy of its own: safetensors refuses tensors that share memory (tied weights)
        tensors[key] = value.detach().to("cpu", copy=True).contiguous()
        return {"__tensor__": key}
    if isinstance(value, np.ndarray):
        tensors[key] = torch.from_numpy(np.array(value, copy=True, order="C"))
        return {"__ndarray__": key}
    if isinstance(value, dict):
        if all(isinstance(k, str) and k not in _TAGS for k in value):
            return {k: _encode(v, f"{path}/{k}", tensors) for k, v in value.items()}
        items = [
            [_encode(k, f"{path}/#key{i}", tensors), _encode(v, f"{path}/{k}", tensors)]
            for i, (k, v) in enumerate(value.items())
        ]
        return {"__dict__": items}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, f"{path}/{i}", tensors) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, f"{path}/{i}", tensors) for i, v in enumerate(value)]
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    raise ConfigError(f"cannot store a {type(value).__name__} at {path or '/'} in a checkpoint (tensors and JSON data only)")


def _decode(value: Any, tensors: dict[str, torch.Tensor], folder: Path) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:
            (tag, inner), = value.items()
            if tag in ("__tensor__", "__ndarray__"):
                if inner not in tensors:
                    raise DataFormatError(folder / TENSORS_FILE, None, f"a tensor named {inner!r}", "none")
                return tensors[inner] if tag == "__tensor__" else tensors[inner].numpy()
            if tag == "__dict__":
                return {_decode(k, tensors, folder): _decode(v, tensors, folder) for k, v in inner}
            if tag == "__tuple__":
                return tuple(_decode(v, tensors, folder) for v in inner)
        return {k: _decode(v, tensors, folder) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v, tensors, folder) for v in value]
    return value


def rng_state() -> dict[str, Any]:
    """The state of every global random generator: Python's, NumPy's, torch's CPU and CUDA ones."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(legacy=False),
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`rng_state` returned (after a round trip through a checkpoint)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"].cpu())
    if state["cuda"]:
        if not torch.cuda.is_available() or torch.cuda.device_count() != len(state["cuda"]):
            raise ConfigError(
                f"the checkpoint holds the random state of {len(state['cuda'])} CUDA device(s); "
                f"this process sees {torch.cuda.device_count() if torch.cuda.is_available() else 0}"
            )
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and torch's (CPU and CUDA) global generators with ``seed``.

    Call it before building anything random (a loss with its own trainable weights, e.g.
    SBERT's softmax classifier); the trainer calls it again at the start of training, so that
    dropout draws the same masks in every run with the same seed.
    """
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)  # seeds every CUDA device too


# ---------------------------------------------------------------------------------- the trainer's state


@dataclass
class RunningMean:
    """The mean of the values added since the last :meth:`take`: a log entry's or an evaluation's
    training loss is the mean over the optimizer steps since the previous entry or evaluation."""

    total: float = 0.0
    count: int = 0

    def add(self, value: float) -> None:
        self.total += value
        self.count += 1

    def take(self) -> float | None:
        """The mean of the values added (None when there were none), and start over."""
        mean = self.total / self.count if self.count else None
        self.total, self.count = 0.0, 0
        return mean


_RUNNING_MEANS = {"log": "loss_since_log", "eval": "loss_since_eval"}
"""Which :class:`TrainerState` running mean is saved as ``loss_sum_since_<key>`` / ``steps_since_<key>``."""


@dataclass
class TrainerState:
    """The trainer's counters and history: saved in every checkpoint and in ``trainer_state.json``."""

    run_key: str
    world_size: int
    total_steps: int
    steps_per_epoch: int
    epoch: int = 0
    """Epochs completed."""
    batches_done: int = 0
    """Batches of the current epoch's plan already trained on."""
    global_step: int = 0
    """Optimizer steps taken."""
    best_metric: float | None = None
    best_step: int | None = None
    stopped_early: bool = False
    done: bool = False
    losses: list[dict[str, Any]] = field(default_factory=list)
    """Every ``log_steps`` steps: step, epoch, mean training loss since the previous entry, the
    learning rate of the entry's last step (of the first parameter group), and for a loss with
    several terms their means (``terms``)."""
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    """Every evaluation: step, epoch, the evaluator's metrics, ``train_loss`` since the previous one."""
    terms_sum_since_log: dict[str, float] = field(default_factory=dict)
    """The sums of the loss's terms (:attr:`sentcl.losses.SentclLoss.last_terms`) over the steps since the
    last entry of :attr:`losses` (the count is that of :attr:`loss_since_log`); a checkpoint written
    before terms were logged has none."""
    loss_since_log: RunningMean = field(default_factory=RunningMean)
    """The training losses of the steps since the last entry of :attr:`losses`."""
    loss_since_eval: RunningMean = field(default_factory=RunningMean)
    """The training losses of the steps since the last evaluation."""

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON data, each running mean as its sum and count (``loss_sum_since_log``,
        ``steps_since_log``, ``loss_sum_since_eval``, ``steps_since_eval``: the keys checkpoints
        have always had)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _RUNNING_MEANS.values()}
        for key, name in _RUNNING_MEANS.items():
            mean = getattr(self, name)
            out[f"loss_sum_since_{key}"], out[f"steps_since_{key}"] = mean.total, mean.count
        return out

    @classmethod
    def from_dict(cls, saved: dict[str, Any]) -> TrainerState:
        """The state :meth:`to_dict` returned, read back from a checkpoint or ``trainer_state.json``."""
        saved = dict(saved)
        means: dict[str, Any] = {
            name: RunningMean(saved.pop(f"loss_sum_since_{key}"), saved.pop(f"steps_since_{key}"))
            for key, name in _RUNNING_MEANS.items()
        }
        return cls(**saved, **means)


# ---------------------------------------------------------------------------------- a run's output folder


def checkpoints(output_dir: str | os.PathLike) -> list[Path]:
    """The complete checkpoints in ``output_dir``, oldest first (temporary folders are not listed)."""
    folder = Path(output_dir) / "checkpoints"
    return sorted(p for p in folder.glob("checkpoint-*") if p.is_dir()) if folder.is_dir() else []


def latest_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint in ``output_dir``, or None."""
    found = checkpoints(output_dir)
    return found[-1] if found else None


def save_checkpoint(output_dir: str | os.PathLike, state: TrainerState, parts: dict[str, Any], keep: int) -> Path:
    """Write the checkpoint of ``state.global_step`` into ``output_dir`` (atomically: a kill leaves
    the previous ones complete), then remove all but the newest ``keep``. ``parts`` are the tree's
    entries beside ``format`` and ``trainer`` (see the module doc). Returns the checkpoint's folder."""
    return _write_checkpoint(output_dir, state.global_step, _snapshot(_checkpoint_tree(state, parts)), keep)


def _checkpoint_tree(state: TrainerState, parts: dict[str, Any]) -> dict[str, Any]:
    return {"format": CHECKPOINT_FORMAT, "trainer": state.to_dict(), **parts}


def _write_checkpoint(output_dir: str | os.PathLike, step: int, snapshot: tuple[Any, dict[str, torch.Tensor]], keep: int) -> Path:
    folder = Path(output_dir) / "checkpoints" / f"checkpoint-{step:08d}"
    with atomic_directory(folder) as tmp:
        _write_state(tmp, *snapshot)
    for old in checkpoints(output_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


class CheckpointWriter:
    """Writes checkpoints off the training loop: :meth:`save` copies the tree to host memory in the caller's thread
    (the training may then change its tensors) and writes the files, atomically, and prunes the old checkpoints in
    a background thread, one checkpoint at a time (a second :meth:`save` waits for the first). A kill mid-write
    leaves the previous checkpoints complete, as :func:`save_checkpoint`. :meth:`wait` before anything that reads
    or removes the checkpoints; it raises the write's error, if any."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.pending_step: int | None = None
        """The step of the checkpoint being written (None: none)."""
        self.written: list[tuple[Path, float]] = []
        """Each checkpoint written: its folder and the seconds the background write took."""

    def save(self, output_dir: str | os.PathLike, state: TrainerState, parts: dict[str, Any], keep: int) -> None:
        self.wait()
        snapshot = _snapshot(_checkpoint_tree(state, parts))
        step = self.pending_step = state.global_step

        def write() -> None:
            started = time.perf_counter()
            try:
                self.written.append((_write_checkpoint(output_dir, step, snapshot, keep), time.perf_counter() - started))
            except BaseException as exc:  # noqa: BLE001  # handed to the training thread by wait(), which raises it
                self._error = exc

        self._thread = threading.Thread(target=write, name="sentcl-checkpoint")
        self._thread.start()

    def wait(self) -> None:
        """Until the checkpoint being written is on disk; raises its error."""
        if self._thread is not None:
            self._thread.join()
            self._thread, self.pending_step = None, None
        error, self._error = self._error, None
        if error is not None:
            raise error


def load_newest_intact_checkpoint(
    output_dir: str | os.PathLike, run_key: str, world_size: int
) -> tuple[Path, TrainerState, dict[str, Any]] | None:
    """The newest checkpoint in ``output_dir`` that loads (:func:`load_checkpoint`): its folder, state and
    parts; None when there is none. A damaged one (a truncated or corrupt file) is said in one line and
    removed, and the one before it tried: a resumed run never starts from garbage."""
    for folder in reversed(checkpoints(output_dir)):
        try:
            return folder, *load_checkpoint(folder, run_key, world_size)
        except DataFormatError as exc:
            report_damaged(folder, str(exc), "removed; resuming from the checkpoint before it, if any")
            shutil.rmtree(folder, ignore_errors=True)
    return None


def load_checkpoint(folder: Path, run_key: str, world_size: int) -> tuple[TrainerState, dict[str, Any]]:
    """The state and the other parts of the checkpoint in ``folder``, refused unless it is of the run
    ``run_key`` (configuration, loss, sampler, data and initial model) and of ``world_size`` processes."""
    tree = load_state(folder)
    saved = tree.pop("trainer", None)
    if tree.pop("format", None) != CHECKPOINT_FORMAT or not isinstance(saved, dict) or saved.get("run_key") != run_key:
        raise ConfigError(
            f"{folder.parent.parent} holds checkpoints of another run (a different configuration, loss, sampler, "
            "data or initial model): give this run its own output folder, or delete that one to start over"
        )
    if saved["world_size"] != world_size:
        raise ConfigError(
            f"{folder} was written by {saved['world_size']} process(es); resume it with the same number "
            f"(this run has {world_size})"
        )
    return TrainerState.from_dict(saved), tree


def pack_plan(plan: list[np.ndarray] | None) -> dict[str, torch.Tensor] | None:
    """An epoch's batches (row indices) as two tensors: the rows in order and the batches' offsets."""
    if plan is None:
        return None
    offsets = np.cumsum([0] + [len(b) for b in plan])
    return {"rows": torch.from_numpy(np.concatenate(plan)), "offsets": torch.from_numpy(offsets)}


def unpack_plan(packed: dict[str, torch.Tensor] | None) -> list[np.ndarray] | None:
    """The batches :func:`pack_plan` packed."""
    if packed is None:
        return None
    return list(np.split(packed["rows"].numpy(), packed["offsets"].numpy()[1:-1]))


def loss_own_state(loss: nn.Module, model: nn.Module) -> dict[str, Any]:
    """The loss's state without the model's (a loss holds the model it trains as a submodule)."""
    prefixes = _model_prefixes(loss, model)
    return {k: v for k, v in loss.state_dict().items() if not k.startswith(prefixes)}


def load_loss_own_state(loss: nn.Module, model: nn.Module, state: dict[str, Any], folder: Path) -> None:
    """Load what :func:`loss_own_state` saved (read from the checkpoint in ``folder``) into ``loss``;
    every entry of the loss's own state must be there, and nothing else."""
    missing, unexpected = loss.load_state_dict(state, strict=False)
    missing = [k for k in missing if not k.startswith(_model_prefixes(loss, model))]
    if missing or unexpected:
        found = f"missing {missing}, unexpected {unexpected}"
        raise DataFormatError(folder, None, f"the state of {type(loss).__name__}", found)


def _model_prefixes(loss: nn.Module, model: nn.Module) -> tuple[str, ...]:
    return tuple(f"{name}." for name, module in loss.named_modules(remove_duplicate=False) if module is model and name)


def best_dir(output_dir: str | os.PathLike, step: int) -> Path:
    """Where the weights of the evaluation at ``step`` are kept while it is the best."""
    return Path(output_dir) / "best" / f"step-{step:08d}"


def save_best(output_dir: str | os.PathLike, step: int, model_state: dict[str, Any], evaluation: dict[str, Any]) -> Path:
    """Keep ``model_state``, the weights at ``step``, the new best ``evaluation``'s; returns their folder."""
    with atomic_directory(best_dir(output_dir, step)) as tmp:
        save_state(tmp, {"model": model_state})
        atomic_write_json(tmp / "best.json", evaluation)
    return best_dir(output_dir, step)


def load_best(output_dir: str | os.PathLike, step: int) -> dict[str, Any]:
    """The weights :func:`save_best` kept for ``step``."""
    return load_state(best_dir(output_dir, step))["model"]


def prune_best(output_dir: str | os.PathLike, *best_steps: int | None) -> None:
    """Remove best weights other than those of ``best_steps`` (None: none): the best so far, and the one the
    newest checkpoint names until a checkpoint names the newer (a resumed run starts from that checkpoint)."""
    keep = {best_dir(output_dir, step) for step in best_steps if step is not None}
    for folder in sorted((Path(output_dir) / "best").glob("step-*")):
        if folder not in keep:
            shutil.rmtree(folder, ignore_errors=True)


def write_finished(
    output_dir: str | os.PathLike, state: TrainerState, description: dict[str, Any], health: dict[str, Any] | None = None
) -> None:
    """Mark the run in ``output_dir`` finished (call it once its model is written): its final state,
    ``description`` (what decides the model) and ``health`` (:mod:`sentcl.training.health`) in
    :data:`STATE_FILE`; then remove the checkpoints and best weights, which the finished run no
    longer needs."""
    output_dir = Path(output_dir)
    atomic_write_json(output_dir / STATE_FILE, {"state": state.to_dict(), "run": description, "health": health})
    shutil.rmtree(output_dir / "checkpoints", ignore_errors=True)
    shutil.rmtree(output_dir / "best", ignore_errors=True)


def read_finished(output_dir: str | os.PathLike, run_key: str) -> TrainerState | None:
    """The final state of the finished run in ``output_dir`` (None: it has not finished), refused
    unless it is of the run ``run_key``."""
    path = Path(output_dir) / STATE_FILE
    if not path.is_file():
        return None
    saved = read_json(path, "the JSON state of a finished training run")
    if saved["state"]["run_key"] != run_key:
        raise ConfigError(
            f"{output_dir} holds a finished run with another configuration, loss, sampler, data or "
            "initial model: give this run its own output folder, or delete that one to start over"
        )
    return TrainerState.from_dict(saved["state"])


def read_health(output_dir: str | os.PathLike) -> dict[str, Any] | None:
    """The health record of the finished run in ``output_dir`` (None: not finished, or finished
    before health was recorded)."""
    path = Path(output_dir) / STATE_FILE
    return read_json(path, "the JSON state of a finished training run").get("health") if path.is_file() else None


__all__ = [
    "CHECKPOINT_FORMAT",
    "CheckpointWriter",
    "STATE_FILE",
    "TENSORS_FILE",
    "TREE_FILE",
    "RunningMean",
    "TrainerState",
    "best_dir",
    "checkpoints",
    "latest_checkpoint",
    "load_best",
    "load_checkpoint",
    "load_newest_intact_checkpoint",
    "load_loss_own_state",
    "load_state",
    "loss_own_state",
    "pack_plan",
    "prune_best",
    "read_finished",
    "read_health",
    "rng_state",
    "save_best",
    "save_checkpoint",
    "save_state",
    "seed_everything",
    "set_rng_state",
    "unpack_plan",
    "write_finished",
]
