"""Whether a path can be written, said before any work (``durable.unwritable``): what `--out` and
`--record` are checked by; and a file replaced whole or not at all (``durable.replace_file``)."""
from __future__ import annotations

import json
import os

import pytest

from raise_plugin.durable import journal_lines, replace_file, unwritable


def test_a_writable_place_says_nothing_and_trying_it_leaves_nothing(tmp_path):
    assert unwritable(tmp_path / "new" / "deeper" / "r.csv") is None  # the writer makes the folders on the way
    assert unwritable(tmp_path / "out", folder=True) is None
    assert os.listdir(tmp_path) == []


def test_each_place_that_cannot_be_written_is_named_with_why(tmp_path):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "afolder").mkdir()
    assert unwritable(tmp_path / "afolder") == "is a directory"
    assert unwritable(tmp_path / "afile", folder=True) == "not a directory"
    assert unwritable(tmp_path / "afile" / "r.csv") == f"{tmp_path / 'afile'} is not a directory"
    # permissions allow it, yet the folder holds no file: found before the work, not when the table is written
    assert unwritable("/proc/r.csv") == "/proc cannot hold a file (No such file or directory)"
    assert unwritable(tmp_path / ("x" * 300), folder=True) == "file name too long"  # was an OSError, exit 1


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary_one(tmp_path):
    """The mechanism under every replaced file (a repaired JSONL file refuses NaN as it is written)."""
    path = tmp_path / "records.jsonl"
    path.write_text("old\n")

    def write(fh):
        fh.write(b"half of it")
        json.dumps(float("nan"), allow_nan=False)

    with pytest.raises(ValueError):
        replace_file(path, write)
    assert path.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["records.jsonl"]


def test_a_journal_is_read_back_a_line_at_a_time_a_damaged_line_never_the_whole_file(tmp_path):
    path = tmp_path / "journal.jsonl"
    path.write_bytes(b'{"a": 1}\n\xff\xfe not UTF-8\n{"cut": \n' + json.dumps({"p": "x\u2028y"}, ensure_ascii=False)
                     .encode() + b'\n{"torn": tr')
    lines = journal_lines(path)
    assert [(line.number, line.record, line.damaged, line.torn) for line in lines] == [
        (1, {"a": 1}, False, False), (2, None, True, False), (3, None, True, False),
        (4, {"p": "x\u2028y"}, False, False), (5, None, True, True)]  # a raw U+2028 does not end a line
    assert journal_lines(tmp_path / "none.jsonl") == []
    path.write_bytes(b'{"a": 1}\n\n  \n{"b": 2}\n\n')  # blank lines (a recording edited by hand) hold nothing
    assert [(line.number, line.record) for line in journal_lines(path)] == [(1, {"a": 1}), (4, {"b": 2})]
