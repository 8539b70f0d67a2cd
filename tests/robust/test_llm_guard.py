"""The LLM guard's journals on resume: a lost or damaged journal of answers or of requests is said in one
warning line with what it means, a damaged line dropped with the original kept, never a traceback."""
from __future__ import annotations

import json
import shutil

import pytest

from raise_plugin.cli import main
from raise_plugin.robust.llm_guard import CALLS_FILE, REQUESTS_FILE

SMALL = ["--task", "ovrp", "--budget", "8", "--pop-size", "2", "--tau", "1", "--no-progress",
         "--no-validation-trace", "--no-host-profiler"]


@pytest.fixture(scope="module")
def _half_template(tmp_path_factory):
    """A run stopped by its LLM cap at 4 of its 8 samples (offline LLM): both journals written."""
    path = tmp_path_factory.mktemp("half") / "run"
    assert main(["run", *SMALL, "--max-llm-calls", "4", "--out", str(path)]) == 0
    return path


@pytest.fixture()
def half(_half_template, tmp_path):
    shutil.copytree(_half_template, tmp_path / "run")
    return tmp_path / "run"


def _resume(run, capsys) -> list[str]:
    """Resume ``run`` to its budget; its warning lines (the resume must finish, without a traceback)."""
    assert main(["resume", str(run), "--max-llm-calls", "8", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert json.loads((run / "summary.json").read_text())["samples"] == 8
    return [line for line in err.splitlines() if line.startswith("raise-ahd: warning: ")]


def _damage_line(path, number: int, garbage: bytes) -> None:
    lines = path.read_bytes().split(b"\n")
    lines[number - 1] = garbage
    path.write_bytes(b"\n".join(lines))


def test_a_missing_journal_of_answers_is_said_with_what_it_means(half, capsys):
    (half / CALLS_FILE).unlink()
    warned = [w for w in _resume(half, capsys) if CALLS_FILE in w]
    assert len(warned) == 1 and "missing" in warned[0], warned
    assert "can no longer be replayed from its directory" in warned[0] and "asked again" in warned[0]


@pytest.mark.parametrize("garbage", [b'{"hash": "ab', b"\xff\xfe not UTF-8"])
def test_a_damaged_answer_in_the_middle_of_the_journal_is_dropped_said_and_kept_aside(half, garbage, capsys):
    original = (half / CALLS_FILE).read_bytes()
    _damage_line(half / CALLS_FILE, 2, garbage)
    warned = [w for w in _resume(half, capsys) if CALLS_FILE in w]
    assert len(warned) == 1 and "1 damaged line(s) dropped (line 2)" in warned[0], warned
    assert "can no longer be replayed from its directory" in warned[0]
    assert (half / f"{CALLS_FILE}.damaged").read_bytes() == _damaged(original, garbage)
    assert all("hash" in json.loads(line) for line in (half / CALLS_FILE).read_text().splitlines())


@pytest.mark.parametrize("garbage", [b"not json", b"\xff\xfe not UTF-8"])
def test_a_damaged_request_line_is_said_with_the_count_it_leaves_low(half, garbage, capsys):
    _damage_line(half / REQUESTS_FILE, 2, garbage)
    warned = [w for w in _resume(half, capsys) if REQUESTS_FILE in w]
    assert len(warned) == 1 and "1 damaged line(s) dropped (line 2)" in warned[0], warned
    assert "may be low by as many" in warned[0]
    assert (half / f"{REQUESTS_FILE}.damaged").exists()


def test_an_intact_run_resumes_without_a_word_of_its_journals(half, capsys):
    assert _resume(half, capsys) == []


def _damaged(original: bytes, garbage: bytes) -> bytes:
    lines = original.split(b"\n")
    lines[1] = garbage
    return b"\n".join(lines)
