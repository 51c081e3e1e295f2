"""benchmarks/gpu_check.py, the one command that measures issue 30 on a GPU, runs end to end on the CPU in its
dry mode (a tiny model, a few steps): every part of its record is there, and it says it was a dry run."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_gpu_check_runs_dry_on_the_cpu(tmp_path):
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = module.main(["--dry-run", "--out-dir", str(tmp_path)])
    record = json.loads(path.read_text())
    assert record["dry_run"] and record["device"].startswith("CPU")
    assert set(record["timed"]) == set(module.CONFIGS)
    for measured in record["timed"].values():
        assert measured["steps_timed"] >= 1 and measured["pairs_per_s"] > 0 and measured.get("mfu_of_bf16_peak") is None
    assert "mfu_of_bf16_peak" in record["timed"]["BSC bf16, AdamW fused"]  # None on a CPU: no bf16 peak listed
    for counted in record["syncs"].values():
        # sentcl's own code reads nothing from the device in a step that does not log; transformers' SDPA mask
        # check is the one sync left, one per column's forward pass
        own = {k: v for k, v in counted["syncs_where"].items() if "masking_utils.py" not in k}
        assert own == {} and counted["syncs_per_step"] == 2 and counted["ops_per_step"] > 100
    folder = path.parent / path.stem
    assert (folder / record["trace"]["trace"]).stat().st_size > 1000 and (folder / record["trace"]["table"]).is_file()
    assert len(record["encode_sentences_per_s"]) == 3 and record["checkpoint"]["bytes"] > 0
    assert record["target"]["target_pairs_per_s"] == 780
