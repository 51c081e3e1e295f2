r"""Mutual information between paired embeddings: the InfoNCE lower bound (van den Oord et al. 2018).

IFCL's Table 4 (Xiao, Li & Chen 2023) reports :math:`MI(h, h^+)`, :math:`MI(h, h^-)` and
:math:`MI_{task}` without naming an estimator. Its values (4.15 … 4.58) lie near ln 64 ≈ 4.159, but 7
of the 8 are above it, so they cannot come from the InfoNCE bound with 64 candidates (the batch its
training used): the slides' estimator is unknown. The estimator here is the InfoNCE bound, the one
contrastive objectives themselves optimise, with its ceiling always stated beside its value. For
pairs :math:`(a_i, b_i)` split into groups of K, with the critic :math:`f(a, b) = \cos(a, b)/\tau`,

.. math::

    \hat I_{NCE} = \ln K - \frac{1}{K}\sum_{i=1}^{K}
        -\log \frac{e^{f(a_i, b_i)}}{\sum_{j=1}^{K} e^{f(a_i, b_j)}} \;\le\; I(a; b),

averaged over the groups. Since the cross-entropy is ≥ 0, :math:`\hat I_{NCE} \le \ln K` whatever
the true information: the bound saturates at :func:`infonce_ceiling` (K), so numbers computed with
different K are not comparable, and a value near ln K says "at least ln K", no more. A value within
:data:`CEILING_MARGIN` of its ceiling (:attr:`MutualInformation.at_ceiling`) measures K, not the
encoder: comparisons resting on it are not tested. The pairs are shuffled (seeded) before they are
grouped, so that a group is not a run of neighbouring, similar rows of the file.

The estimate is the mean of one term per pair, :math:`\ln K + \log \frac{e^{f(a_i, b_i)}}{\sum_j e^{f(a_i, b_j)}}`
(:attr:`MutualInformation.terms`): a claim between two models resamples the
pairs (:class:`sentcl.evaluation.per_item.ItemTerms`). A pair's term also depends on the other candidates of
its group; the resampling treats the terms as independent (an approximation, stated where it is used).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from ..embeddings import _read, cache_file
from ..errors import ConfigError, check_number
from ..io import atomic_path

CEILING_MARGIN = 0.05
"""Nats below ln K within which an InfoNCE estimate is at its ceiling (it says "at least ln K")."""


@dataclass(frozen=True)
class MutualInformation:
    """An InfoNCE estimate (nats), its ceiling ln K, and the rows it used."""

    value: float
    ceiling: float
    candidates: int
    groups: int
    rows_used: int
    rows_given: int
    terms: np.ndarray = field(repr=False, compare=False)
    """The term of each pair used, in the order they were grouped (the same for every model given the same pairs
    and seed: two models' terms pair up); their mean is :attr:`value`."""

    @property
    def headroom(self) -> float:
        """ln K − the estimate: how far the estimate is from the most the bound can say."""
        return self.ceiling - self.value

    @property
    def at_ceiling(self) -> bool:
        """Whether the estimate is within :data:`CEILING_MARGIN` of ln K (it then measures K)."""
        return self.headroom < CEILING_MARGIN


def infonce_ceiling(candidates: int) -> float:
    """ln K: the largest value the InfoNCE bound can take with K candidates."""
    return math.log(_check_candidates(candidates))


def infonce_mutual_information(
    a: np.ndarray, b: np.ndarray, *, candidates: int = 64, temperature: float = 0.05, seed: int | None = 0
) -> MutualInformation:
    """The InfoNCE lower bound on I(a; b) from paired rows (row i of ``a`` with row i of ``b``), over
    groups of ``candidates`` rows (K) of the pairs shuffled with ``seed`` (None: in the given order);
    the ``len(a) % K`` rows that fill no group are left out and counted in ``rows_used``."""
    candidates = _check_candidates(candidates)
    temperature = check_number("temperature", temperature, low=0.0, low_open=True)
    a, b = np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32)
    if a.ndim != 2 or a.shape != b.shape:
        raise ConfigError(f"expected two (n, d) arrays of one shape, got {a.shape} and {b.shape}")
    if seed is not None:  # the same permutation for both sides: the pairs stay pairs
        order = np.random.default_rng(seed).permutation(len(a))
        a, b = a[order], b[order]
    groups = len(a) // candidates
    if groups == 0:
        raise ConfigError(f"{len(a)} pairs fill no group of {candidates} candidates")
    used = groups * candidates
    ta = F.normalize(torch.from_numpy(a[:used]).view(groups, candidates, -1), dim=-1)
    tb = F.normalize(torch.from_numpy(b[:used]).view(groups, candidates, -1), dim=-1)
    logits = ta @ tb.transpose(1, 2) / temperature  # (groups, K, K)
    target = torch.arange(candidates).repeat(groups)
    losses = F.cross_entropy(logits.reshape(used, candidates), target, reduction="none").double().numpy()
    terms = math.log(candidates) - losses
    return MutualInformation(
        value=float(terms.mean()), ceiling=math.log(candidates), candidates=candidates,
        groups=groups, rows_used=used, rows_given=len(a), terms=terms,
    )


def dropout_embeddings(
    model, texts: list[str], *, seed: int = 0, batch_size: int = 64, cache: bool = True
) -> np.ndarray:
    """Embeddings of ``texts`` by ``model`` in *training* mode (dropout on, as the twins are encoded in
    training), without gradient, the dropout drawn from ``seed``; the global random state and the
    model's modes are left as they were. Returns ``(len(texts), dim)`` float32.

    With ``cache``, the draw is kept in the embedding cache (:func:`sentcl.embeddings.cache_file`):
    keyed by the model's fingerprint, the texts, the seed, the dropout rates of the model's modules,
    the batch size (it decides the padding, and so the masks) and the device type; a hit runs no
    forward pass and returns the same array.
    """
    texts = list(texts)
    draw = {
        "seed": int(seed),
        "rates": [float(m.p) for m in model.modules() if isinstance(m, torch.nn.modules.dropout._DropoutNd)],
        "batch_size": int(batch_size),
        "device": torch.device(model.device).type,
    }
    path = cache_file(model, texts, "fp32", False, dropout=draw) if cache and texts else None
    if path is not None and path.is_file():
        cached = _read(path, len(texts))
        if cached is not None:
            return cached
    modes = [(m, m.training) for m in model.modules()]
    out = []
    try:
        with torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model.train()
            for start in range(0, len(texts), batch_size):
                features = model.preprocess(list(texts[start:start + batch_size]))
                features = {k: v.to(model.device) if isinstance(v, torch.Tensor) else v for k, v in features.items()}
                out.append(model(features)["sentence_embedding"].float().cpu().numpy())
    finally:
        for module, mode in modes:
            module.training = mode
    if not out:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    array = np.ascontiguousarray(np.concatenate(out), dtype=np.float32)
    if path is not None:
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            np.save(fh, array)
    return array


def _check_candidates(candidates: int) -> int:
    if isinstance(candidates, bool) or not isinstance(candidates, (int, np.integer)) or candidates < 2:
        raise ConfigError(f"candidates (K) must be an integer >= 2, got {candidates!r}")
    return int(candidates)


__all__ = ["CEILING_MARGIN", "MutualInformation", "dropout_embeddings", "infonce_ceiling", "infonce_mutual_information"]
