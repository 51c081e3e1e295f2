"""Evaluators working from cached embeddings: STS, retrieval, pair classification, geometry.

Every evaluator takes either embeddings (``np.ndarray``) or an ``embed`` callable
``Sequence[str] -> np.ndarray`` (e.g. :func:`sentcl.embeddings.embedder`), which it calls
once on the distinct texts it needs.

- :mod:`.tasks`: the papers' evaluation tasks by their tables' names (STS12 … SICK-R,
  CQA-A/B, Antique, PFCC-S, MRPC, QQP, FAQIR, COUGH, Chinese STS-B, SimCLUE), each with its
  dataset, split, evaluator, protocol and metrics (the table only).
- :mod:`.scoring`: the one scoring path: :func:`~.scoring.score` scores a list of tasks
  encoding every distinct text once, with each test item's scores for resampling;
  :func:`~.scoring.evaluate_tasks` (the values), :func:`~.scoring.average` (the tables'
  Average), :func:`~.scoring.dev_evaluator` (model selection on a dev set during training).
- :mod:`.sts`: Spearman ×100 of cosine similarity; STS12-16 pooled ("all"), per subset,
  mean and wmean; STS-B and SICK-R test.
- :mod:`.retrieval`: Acc@k (HasPositive@k), P@k, R@k, MAP, MAP@k, MRR, MRR@k, nDCG@k with
  trec_eval semantics; full-corpus ranking (faiss) or per-query candidate re-ranking; the
  SemEval CQA official scorer's MAP/MRR as ``protocol="semeval"``.
- :mod:`.classification`: best-threshold accuracy and F1 of cosine similarity (MRPC, QQP).
- :mod:`.geometry`: alignment and uniformity (Wang & Isola 2020), anisotropy.
- :mod:`.cli`: ``sentcl evaluate tasks|sts|retrieval``.

Every error they raise on purpose is a :class:`~sentcl.errors.SentclError` (mostly
:class:`~sentcl.errors.ConfigError`, a ``ValueError``). Import from the submodules
(``from sentcl.evaluation.scoring import evaluate_tasks``); this package imports none of them,
so that the command line starts without scipy and faiss.
"""
