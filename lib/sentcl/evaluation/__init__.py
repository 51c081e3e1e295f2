"""Evaluators working from cached embeddings: STS, retrieval, pair classification, geometry.

Every evaluator takes either embeddings (``np.ndarray``) or an ``embed`` callable
``Sequence[str] -> np.ndarray`` (e.g. :func:`sentcl.embeddings.embedder`), which it calls
once on the distinct texts it needs.

- :mod:`.sts`: Spearman ×100 of cosine similarity; STS12-16 pooled ("all"), per subset,
  mean and wmean; STS-B and SICK-R test; :func:`evaluate_sts_tasks` for the standard seven.
- :mod:`.retrieval`: Acc@k (HasPositive@k), P@k, R@k, MAP, MAP@k, MRR, MRR@k, nDCG@k with
  trec_eval semantics; full-corpus ranking (faiss) or per-query candidate re-ranking; the
  SemEval CQA official scorer's MAP/MRR as ``protocol="semeval"``.
- :mod:`.classification`: best-threshold accuracy and F1 of cosine similarity (MRPC, QQP).
- :mod:`.geometry`: alignment and uniformity (Wang & Isola 2020), anisotropy.
- :mod:`.cli`: ``sentcl evaluate sts|retrieval``.

Import from the submodules (``from sentcl.evaluation.sts import evaluate_sts_tasks``); this
package imports none of them, so that the command line starts without scipy and faiss.
"""
