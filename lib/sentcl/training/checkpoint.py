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
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.torch
import torch

from sentcl.errors import ConfigError, DataFormatError

TENSORS_FILE = "state.safetensors"
TREE_FILE = "state.json"

_TAGS = ("__tensor__", "__ndarray__", "__dict__", "__tuple__")


def save_state(folder: str | Path, tree: Any) -> None:
    """Write ``tree`` into ``folder`` as :data:`TENSORS_FILE` + :data:`TREE_FILE` (see module doc).

    The files are written in place: write into a temporary folder and rename it (the trainer
    uses :func:`sentcl.io.atomic_directory`) for an atomic checkpoint.
    """
    folder = Path(folder)
    tensors: dict[str, torch.Tensor] = {}
    encoded = _encode(tree, "", tensors)
    safetensors.torch.save_file(tensors, str(folder / TENSORS_FILE))
    (folder / TREE_FILE).write_text(json.dumps(encoded, indent=1), encoding="utf-8")


def load_state(folder: str | Path, device: str | torch.device = "cpu") -> Any:
    """The tree :func:`save_state` wrote into ``folder`` (tensors on ``device``)."""
    folder = Path(folder)
    for name in (TENSORS_FILE, TREE_FILE):
        if not (folder / name).is_file():
            raise DataFormatError(folder / name, None, "a checkpoint file written by sentcl's trainer", "no such file")
    tensors = safetensors.torch.load_file(str(folder / TENSORS_FILE), device=str(device))
    try:
        tree = json.loads((folder / TREE_FILE).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(folder / TREE_FILE, exc.lineno, "JSON training state", exc.msg) from None
    return _decode(tree, tensors, folder)


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


__all__ = ["TENSORS_FILE", "TREE_FILE", "load_state", "rng_state", "save_state", "seed_everything", "set_rng_state"]
