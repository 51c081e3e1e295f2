"""Loaders, one module per family of formats; importing this package registers them all."""

from . import chinese, cqa, faq, nli, pairs, retrieval, sts, text  # noqa: F401
