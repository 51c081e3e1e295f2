"""Data parallelism over several processes (torchrun / accelerate launch), in-batch negatives gathered.

Launch the same script once per GPU, e.g. ``torchrun --nproc_per_node 4 train.py`` or
``accelerate launch --num_processes 4 train.py``; both set ``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK`` and ``MASTER_ADDR``/``MASTER_PORT``, from which :func:`setup` joins the process
group (NCCL on GPUs, gloo on CPUs).

How a step is shared
    Every process knows the whole batch (all plan the same epoch; the first process's plan is
    broadcast). Each embeds only its shard (:func:`shard`), the embeddings are gathered
    (:func:`gather_rows`: the other processes' rows as constants, its own with their graph), and
    every process computes the loss on the *whole* batch, so contrastive losses see every
    in-batch negative, exactly as in one process. Back-propagating that loss gives each process
    the exact partial gradient through its own rows; summing the model's gradients over the
    processes (:func:`all_reduce_gradients`) gives the full-batch gradient. The loss's own
    parameters (a classifier, a temperature) see the whole batch in every process, so their
    gradients are already complete: they are averaged, not summed.

    Computing the (cheap) loss on the whole batch in every process, rather than only for local
    anchors, works for any loss with ``compute_loss_from_embeddings`` — per-row ones, symmetric
    ones, losses that look up ids or keep a queue (which then evolves identically everywhere) —
    with no loss-specific offsets.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from sentcl.errors import ConfigError


@dataclass(frozen=True)
class Processes:
    """Where this process stands: its rank among ``world_size`` processes and its device."""

    rank: int = 0
    world_size: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def setup(model_device: torch.device) -> Processes:
    """Join the process group that torchrun/accelerate described in the environment, if any.

    One process (no ``WORLD_SIZE`` > 1): nothing to join, the model's device is kept. Several:
    the process group is initialised unless it already is (NCCL when CUDA is available, else
    gloo), and each process uses ``cuda:LOCAL_RANK`` (or the CPU).
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1 and not (dist.is_available() and dist.is_initialized()):
        return Processes(device=torch.device(model_device))
    if not dist.is_available():
        raise ConfigError("WORLD_SIZE > 1 but this torch build has no torch.distributed")
    if not dist.is_initialized():
        dist.init_process_group(backend="nccl" if torch.cuda.is_available() else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank % torch.cuda.device_count())))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    return Processes(rank=rank, world_size=world, device=device)


def shard(rows: np.ndarray, procs: Processes) -> np.ndarray:
    """This process's share of a batch: consecutive rows, sizes differing by at most one."""
    return np.array_split(rows, procs.world_size)[procs.rank]


def gather_rows(local: torch.Tensor, procs: Processes) -> torch.Tensor:
    """All processes' ``local`` tensors concatenated in rank order (row counts may differ).

    Differentiable with respect to this process's rows only: the other rows are constants here
    (their gradients are computed by their own processes).
    """
    if not procs.distributed:
        return local
    sizes = torch.tensor([local.shape[0]], device=local.device)
    all_sizes = [torch.zeros_like(sizes) for _ in range(procs.world_size)]
    dist.all_gather(all_sizes, sizes)
    counts = [int(s.item()) for s in all_sizes]
    longest = max(counts)
    padded = local.detach()
    if local.shape[0] < longest:
        padded = torch.cat([padded, padded.new_zeros((longest - local.shape[0], *local.shape[1:]))])
    parts = [torch.empty_like(padded) for _ in range(procs.world_size)]
    dist.all_gather(parts, padded.contiguous())
    pieces = [local if r == procs.rank else parts[r][: counts[r]] for r in range(procs.world_size)]
    return torch.cat(pieces, dim=0)


def all_reduce_gradients(parameters: list[torch.nn.Parameter], procs: Processes, average: bool) -> None:
    """Sum (or average) the gradients of ``parameters`` over the processes, one flat buffer per dtype.

    A parameter with a gradient in some process but not in this one (e.g. this one embedded no
    rows) takes part with zeros here; one with a gradient in no process keeps none, as it would in
    one process (so the optimizer leaves it alone: no moment update, no weight decay).
    """
    if not procs.distributed or not parameters:
        return
    has_grad = torch.tensor([p.grad is not None for p in parameters], dtype=torch.int32, device=procs.device)
    dist.all_reduce(has_grad, op=dist.ReduceOp.MAX)
    active = [p for p, flag in zip(parameters, has_grad.tolist(), strict=True) if flag]
    by_dtype: dict[torch.dtype, list[torch.Tensor]] = {}  # the gradients, by dtype
    for p in active:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        by_dtype.setdefault(p.grad.dtype, []).append(p.grad)
    for grads in by_dtype.values():
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        if average:
            flat /= procs.world_size
        offset = 0
        for g in grads:
            n = g.numel()
            g.copy_(flat[offset : offset + n].view_as(g))
            offset += n


def broadcast(obj: Any, procs: Processes) -> Any:
    """The first process's ``obj`` (any picklable object), in every process."""
    if not procs.distributed:
        return obj
    box = [obj if procs.is_main else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_gather_objects(obj: Any, procs: Processes) -> list[Any]:
    """Every process's ``obj``, in rank order."""
    if not procs.distributed:
        return [obj]
    out: list[Any] = [None] * procs.world_size
    dist.all_gather_object(out, obj)
    return out


def barrier(procs: Processes) -> None:
    if procs.distributed:
        dist.barrier()


__all__ = [
    "Processes",
    "all_gather_objects",
    "all_reduce_gradients",
    "barrier",
    "broadcast",
    "gather_rows",
    "setup",
    "shard",
]
