"""sentcl.io: the one lock-file helper and the one JSON reader the library shares."""

from __future__ import annotations

import threading
import time

import pytest

from sentcl.errors import DataFormatError, DataMissingError
from sentcl.io import file_lock, read_json


def test_file_lock_makes_a_second_holder_wait(tmp_path):
    lock = tmp_path / "sub" / ".x.lock"
    events = []

    def second():
        with file_lock(lock):
            events.append("second in")

    with file_lock(lock):
        thread = threading.Thread(target=second)
        thread.start()
        time.sleep(0.3)
        events.append("first out")
    thread.join(5)
    assert events == ["first out", "second in"]


def test_read_json_names_the_file_and_line(tmp_path):
    good = tmp_path / "a.json"
    good.write_text('{"a": [1, 2]}')
    assert read_json(good) == {"a": [1, 2]}
    bad = tmp_path / "b.json"
    bad.write_text('{\n  "a": 1,\n  oops\n}')
    with pytest.raises(DataFormatError, match=r"b\.json:3: expected a run record, found"):
        read_json(bad, "a run record")
    with pytest.raises(DataMissingError, match="no such file"):
        read_json(tmp_path / "missing.json")
