"""Whether a path can be written, said before any work (``durable.unwritable``): what `--out` and
`--record` are checked by."""
from __future__ import annotations

import os

from raise_plugin.durable import unwritable


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

