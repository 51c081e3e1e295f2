"""Adam and AdamW without bias correction: BERT's original optimizer.

Devlin et al. (2019) trained BERT with an Adam that skips the bias correction of Kingma & Ba's
Algorithm 1 (Google's ``AdamWeightDecayOptimizer``, Hugging Face's ``AdamW(correct_bias=False)``,
which transformers has since removed); Chernyavskiy et al. (2022, §5.2) fine-tune with it for every
task but CQA. Per parameter, at every step (decoupled decay as ``torch.optim.AdamW``; ``adamw=False``
adds ``weight_decay · θ`` to the gradient instead, as ``torch.optim.Adam``)::

    m ← β₁ m + (1 − β₁) g          v ← β₂ v + (1 − β₂) g²
    θ ← θ − lr · m / (√v + ε)      (no division by 1 − β₁ᵗ and √(1 − β₂ᵗ))

so each step is Adam's times (1 − β₁ᵗ)/√(1 − β₂ᵗ): with β = (0.9, 0.999) that is 3.2 at t = 1,
6.5 at t = 10, 3.2 at t = 100, 1.3 at t = 1,000 and → 1 later. Under a warm-up the larger early
steps are damped by the small learning rate.

The update runs multi-tensor (``foreach=True``, the default): one ``torch._foreach_*`` call per
line above for all parameters of a device and dtype, instead of a handful of operations per
parameter (about 1,450 dispatches a step for bert-base). The per-parameter loop (``foreach=False``)
computes the same operations element by element; ``tests/training/test_optim.py`` holds the two
equal bit for bit.
"""

from __future__ import annotations

from collections import defaultdict

import torch


class UncorrectedAdam(torch.optim.Optimizer):
    """Adam / AdamW (``adamw=True``: decoupled weight decay) without bias correction; ``foreach``:
    multi-tensor (module doc)."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, adamw: bool = True, foreach: bool = True) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                                  "adamw": adamw, "foreach": foreach})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            if group.get("foreach", True):
                by_kind: dict[tuple[torch.device, torch.dtype], list[torch.Tensor]] = defaultdict(list)
                for p in params:
                    by_kind[p.device, p.dtype].append(p)
                for same in by_kind.values():
                    _update_foreach(same, [self.state[p] for p in same], group)
            else:
                for p in params:
                    _update_one(p, self.state[p], group)
        return loss


def _update_one(p: torch.Tensor, state: dict, group: dict) -> None:
    """The update of one parameter (module doc)."""
    beta1, beta2 = group["betas"]
    lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
    grad = p.grad
    assert grad is not None  # step() passes only parameters with a gradient
    state["step"] += 1
    if decay and group["adamw"]:
        p.mul_(1.0 - lr * decay)
    elif decay:
        grad = grad.add(p, alpha=decay)
    m, v = state["exp_avg"], state["exp_avg_sq"]
    m.lerp_(grad, 1.0 - beta1)
    v.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
    p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)


def _update_foreach(params: list[torch.Tensor], states: list[dict], group: dict) -> None:
    """The update of parameters of one device and dtype, each line of the module doc one multi-tensor call."""
    beta1, beta2 = group["betas"]
    lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
    grads = [p.grad for p in params if p.grad is not None]  # step() passes only parameters with a gradient
    torch._foreach_add_([s["step"] for s in states], 1)
    if decay and group["adamw"]:
        torch._foreach_mul_(params, 1.0 - lr * decay)
    elif decay:
        grads = list(torch._foreach_add(grads, params, alpha=decay))
    m, v = [s["exp_avg"] for s in states], [s["exp_avg_sq"] for s in states]
    torch._foreach_lerp_(m, grads, 1.0 - beta1)
    torch._foreach_mul_(v, beta2)
    torch._foreach_addcmul_(v, grads, grads, value=1.0 - beta2)
    denominators = torch._foreach_sqrt(v)
    torch._foreach_add_(denominators, eps)
    torch._foreach_addcdiv_(params, m, denominators, value=-lr)
