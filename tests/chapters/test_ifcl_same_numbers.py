"""IFCL's Table 4 depends on a model's weights alone (issue 45): the same numbers from a model trained in this process,
from the same run loaded back from the artifact cache (what a notebook finds after a Ray task built it), and from
embeddings read back from the embedding cache. The smoke profile's IFCL row trains padding-free (``unpadded``), as the
demo does: a model must not leave its training carrying the packed forward pass, whose dropout masks fall otherwise."""

from __future__ import annotations

import warnings

from sentcl.book.notebook import ChapterRun
from sentcl.book.parameters import shipped_parameters
from sentcl.chapters import ifcl
from sentcl.embeddings import embedder


def test_table4_is_the_same_from_the_model_trained_here_and_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SENTCL_CACHE", str(tmp_path / "cache"))
    p = shipped_parameters("ifcl", "smoke") | {"seeds": [0]}
    assert p["unpadded"]  # the path of the issue: the smoke profile trains as the demo does, packed
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sample data's warning
        run = ChapterRun("ifcl", profile="smoke", data_dir=None, out_dir=tmp_path / "out", parameters=p)
    english = ifcl.TrainingTexts(run)
    twins = english.twins(0).take(range(p["mi_sentences"]))
    stsb = run.load("stsbenchmark", "test")
    task = (stsb.sentences1[:2 * p["mi_candidates"]], stsb.sentences2[:2 * p["mi_candidates"]])

    def table4(model, cache):
        found, _ = ifcl.mutual_information(model, twins, task, fraternal=True, candidates=p["mi_candidates"],
                                           temperature=p["temperature"], cache=cache,
                                           embed=embedder(model, cache=cache, show_progress=False))
        return {column: estimate.value for column, estimate in found.items()}

    in_memory, result = ifcl.train(run, english, "IFCL-BERT-base", 0)
    assert result.trained  # this call trained it
    fresh = table4(in_memory, cache=False)
    assert set(fresh) == {"MI(h, h+)", "MI(h, h-)", "MI_task"}
    loaded, again = ifcl.train(run, english, "IFCL-BERT-base", 0)
    assert not again.trained  # the same run, loaded from the artifact cache
    assert table4(loaded, cache=False) == fresh
    assert table4(in_memory, cache=True) == fresh  # computed, then kept in the embedding cache ...
    assert table4(loaded, cache=True) == fresh  # ... and read back from it
