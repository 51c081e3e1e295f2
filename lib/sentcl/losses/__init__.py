"""Contrastive and classification losses: a functional core on embeddings plus a sentence-transformers-compatible module."""
