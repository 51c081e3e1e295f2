"""One place keeps machine paths off published pages (sentcl.book.redaction)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sentcl.book.redaction import DATA_ROOT_LABEL, describe_data, local_paths, public_json, public_output, public_text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("real data from /home/me/shared/data", "real data from …/data"),
        ("FileNotFoundError: '/tmp/out/results/x.csv'", "FileNotFoundError: '…/x.csv'"),
        ("~/data/snli and C:\\Users\\me\\data", "…/snli and …/data"),
        ("file:///srv/book/index.html", "…/index.html"),
        # not paths: relative folders, URLs, units and ratios, HTML closing tags
        ("data/samples, https://example.org/a/b, 3 pairs/s, 1/2, and/or, </td>", None),
    ],
)
def test_public_text_cuts_absolute_paths_to_their_last_part(text, expected):
    assert public_text(text) == (text if expected is None else expected)


def test_public_text_names_known_paths_first():
    known = {"/work/proj": ".", "/work/proj/data/samples": "data/samples", "/mnt/shared/data": "$SENTCL_DATA",
             "/work/proj/runs/demo": "<out>"}
    text = "/mnt/shared/data/snli; /work/proj/data/samples; /work/proj/.venv/lib/x.py:3; /work/proj/runs/demo/a; /work/projx/y"
    assert public_text(text, known) == "$SENTCL_DATA/snli; data/samples; ./.venv/lib/x.py:3; <out>/a; …/y"
    assert public_text('<a href="/work/proj/x">/elsewhere/y</a>', known, generic=False) == '<a href="./x">/elsewhere/y</a>'


def test_local_paths_name_the_checkout_output_samples_and_data_roots(tmp_path):
    from sentcl.data import samples_root

    data = tmp_path / "shared" / "data"
    data.mkdir(parents=True)
    known = local_paths(tmp_path / "proj", tmp_path / "out", [data, Path(samples_root())])
    assert known[str(data)] == DATA_ROOT_LABEL and known[str(tmp_path / "out")] == "<out>"
    assert known[str(tmp_path / "proj")] == "." and known[str(Path(samples_root()).resolve())] == "data/samples"
    assert public_text(f"read {data}/snli/x.txt", known) == "read $SENTCL_DATA/snli/x.txt"


def test_notebook_outputs_and_metadata_lose_their_paths():
    known = {"/work/proj": "."}
    output = {"output_type": "error", "evalue": "no /work/proj/x", "traceback": ["at /srv/a/b.py"],
              "data": {"text/plain": ["/home/me/f"], "text/html": '<a href="/work/proj/y">/srv/z</a>'}}
    public_output(output, known)
    assert output["evalue"] == "no ./x" and output["traceback"] == ["at …/b.py"]
    assert output["data"] == {"text/plain": "…/f", "text/html": '<a href="./y">/srv/z</a>'}
    assert public_json({"input_path": "/work/proj/nb.ipynb", "n": [1, "/srv/q"]}, known) == {"input_path": "./nb.ipynb", "n": [1, "…/q"]}


def test_a_runs_description_of_its_data_names_no_path(tmp_path):
    assert describe_data(tmp_path / "data", sample=False) == "real data from the data root ($SENTCL_DATA, folder 'data')"
    assert describe_data(tmp_path, sample=True) == "sample data (data/samples)"
