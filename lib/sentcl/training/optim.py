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
"""

from __future__ import annotations

import torch


class UncorrectedAdam(torch.optim.Optimizer):
    """Adam / AdamW (``adamw=True``: decoupled weight decay) without bias correction."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, adamw: bool = True) -> None:
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "adamw": adamw})

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            lr, eps, decay = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                state = self.state[p]
                if not state:
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] += 1
                if decay and group["adamw"]:
                    p.mul_(1.0 - lr * decay)
                elif decay:
                    grad = grad.add(p, alpha=decay)
                m, v = state["exp_avg"], state["exp_avg_sq"]
                m.lerp_(grad, 1.0 - beta1)
                v.mul_(beta2).addcmul_(grad, grad, value=1.0 - beta2)
                p.addcdiv_(m, v.sqrt().add_(eps), value=-lr)
        return loss
