"""The LLM guard's journals on resume: a lost or damaged journal of answers or of requests is said in one
warning line with what it means, a damaged line dropped with the original kept, never a traceback; and its
failure bound on a back-end without a ledger."""
from __future__ import annotations

import json
import shutil

import pytest
from llm4ad.base import LLM

import raise_plugin as rp
from raise_plugin.cli import main
from raise_plugin.llm import OfflineSampler
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


class _Failing(LLM):
    """A back-end a script passes in, without a ledger: it fails (``how``) for its first 30 calls, then
    answers as the offline sampler does."""

    def __init__(self, how: str):
        super().__init__()
        self.how, self.calls, self.offline = how, 0, OfflineSampler(seed=0, task="ovrp")

    def draw_sample(self, prompt, *args, **kwargs):
        self.calls += 1
        if self.calls > 30:
            return self.offline.draw_sample(prompt)
        if self.how == "raise":
            raise RuntimeError("the model server is down")
        return {"none": None, "empty": "", "prose": "Prefer the cheapest insertion."}[self.how]


@pytest.mark.parametrize("method", ["eoh", "hillclimb", "reevo"])
@pytest.mark.parametrize("how", ["raise", "none", "empty", "prose"])
def test_a_back_end_without_a_ledger_that_gives_no_program_ends_the_run_at_the_failure_bound(tmp_path, method, how):
    # the host's loops asked again for ever (EoH, HillClimb: hundreds of thousands of calls a minute); ReEvo
    # stopped after 25 failed steps and said the run had finished, with none of its samples
    llm = _Failing(how)
    config = rp.RunConfig(task="ovrp", method=method, robust=False, budget=4, pop_size=2, nominal=1,
                          validation_trace=False, out=str(tmp_path / "run"))
    summary = rp.start_run(config, llm=llm).run()
    assert llm.calls == 10 and not summary["finished"]
    last = "RuntimeError: the model server is down" if how == "raise" else "an answer without a usable program"
    assert summary["failure"] == f"10 calls in a row to the LLM back-end (_Failing) gave no usable program; the " \
                                 f"last: {last}"
