"""Evaluators working from cached embeddings: STS, retrieval, pair classification, geometry."""
