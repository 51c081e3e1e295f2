"""What a paper run fills on a data root (sentcl.book.coverage)."""

from __future__ import annotations

import pytest

from sentcl.book.coverage import missing_files, paper_coverage
from sentcl.data.registry import info
from sentcl.errors import ConfigError


def test_rows_run_need_absent_data_or_are_cited(tmp_path):
    dev = info("snli").splits["dev"].files
    for f in dev:
        path = tmp_path / info("snli").folder / f
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    needs = {"MNRLSBERT": ["snli/train", "multinli/train"], "BERT-whitening": ["snli/dev"]}
    table = paper_coverage("mnrl_sbert", needs, tmp_path).set_index(["table", "row"])
    assert table.loc[("Table 1", "BERT-whitening"), "coverage"] == "runs"
    absent = table.loc[("Table 1", "MNRLSBERT")]
    assert absent["coverage"] == "needs absent data"
    for name in ("snli/train", "multinli/train"):
        assert name in absent["detail"] and info(name.split("/")[0]).source in absent["detail"]
    assert all(f"{info('snli').folder}/{f}" in absent["detail"] for f in info("snli").splits["train"].files)
    assert (table.loc[("Table 2", "MNRLSBERT"), "coverage"]) == "needs absent data"  # every table the row is in
    cited = table.loc[("Table 1", "Avg. GloVe embeddings")]
    assert cited["coverage"] == "cited" and cited["detail"].startswith("cited from [")
    assert set(table["coverage"]) == {"runs", "needs absent data", "cited"}
    assert missing_files("snli/dev", tmp_path) == [] and missing_files("snli/train", tmp_path)


def test_unknown_rows_and_splits_are_errors(tmp_path):
    with pytest.raises(ConfigError, match=r"no rows \['MNRL-SBERT'\]"):
        paper_coverage("mnrl_sbert", {"MNRL-SBERT": ["snli/train"]}, tmp_path)
    with pytest.raises(ConfigError, match="snli has no split 'validation'"):
        missing_files("snli/validation", tmp_path)
