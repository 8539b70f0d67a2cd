"""The run directory's files are replaced whole: a value that cannot be written leaves the old
file as it was and nothing beside it."""
from __future__ import annotations

import json

import numpy as np
import pytest

from raise_plugin.rundir.files import read_jsonl, write_json_atomic


def test_a_json_file_holds_its_values_made_json_safe(tmp_path):
    path = tmp_path / "a.json"
    write_json_atomic(path, {"n": np.int64(3), "x": np.float32(0.5), "bad": float("nan"), "a": np.arange(2), 1: ()})
    assert json.loads(path.read_text()) == {"n": 3, "x": 0.5, "bad": None, "a": [0, 1], "1": []}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_a_value_that_cannot_be_written_leaves_the_old_file_and_no_temporary_one(tmp_path):
    path = tmp_path / "a.json"
    write_json_atomic(path, {"kept": 1})
    circular: list = []
    circular.append(circular)
    with pytest.raises(RecursionError):
        write_json_atomic(path, {"values": circular})
    assert json.loads(path.read_text()) == {"kept": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]



def test_a_jsonl_line_that_is_not_utf8_is_passed_over_as_a_line_that_does_not_parse(tmp_path):
    path = tmp_path / "validation.jsonl"
    path.write_bytes(b'{"generation": 1}\n\xff\xfe garbage\nnot json\n{"generation": 2}\n')
    assert read_jsonl(path) == [{"generation": 1}, {"generation": 2}]
