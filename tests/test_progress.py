"""Progress suits where it is shown: a bar where a person watches, plain throttled lines in a log,
nothing when switched off; RAISE_PROGRESS chooses for the callers that leave it open."""
from __future__ import annotations

import io
import sys
from types import SimpleNamespace

import pytest
from tqdm.auto import tqdm

from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.errors import PluginWarning, UserError
from raise_plugin.harness import api
from raise_plugin.progress import ENVIRONMENT, LineProgress, NoProgress, open_progress, progress_mode
from raise_plugin.robust.progress import ProgressBar, show_progress_by_default
from tasks import get_task


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    """A clock the test moves by hand."""

    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def _nobody_chose(monkeypatch):
    """No notebook kernel and no RAISE_PROGRESS, unless a test sets one."""
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    monkeypatch.delenv(ENVIRONMENT, raising=False)


def lines(stream: io.StringIO) -> list[str]:
    return stream.getvalue().splitlines()


def test_lines_mode_writes_a_first_and_a_last_line_and_no_carriage_return():
    log, clock = io.StringIO(), Clock()
    with open_progress(400, progress="lines", desc="evaluating on obp", unit="inst", stream=log, clock=clock) as bar:
        clock.now += 10
        bar.update(120)
        clock.now += 50
        bar.update(280)
    written = lines(log)
    assert "\r" not in log.getvalue()
    assert written[0] == "evaluating on obp: 0/400 inst (0%)"
    assert written[-1].startswith("evaluating on obp: 400/400 inst (100%), 6.7 inst/s, after 1m00s")


def test_a_line_says_rate_eta_and_postfix():
    log, clock = io.StringIO(), Clock()
    bar = LineProgress(400, desc="evaluating on obp", unit="inst", stream=log, every=30, clock=clock)
    bar.set_postfix_str("gen 3 best 1.55", refresh=False)
    clock.now += 60
    bar.update(120)
    assert lines(log)[-1] == "evaluating on obp: 120/400 inst (30%), 2.0 inst/s, eta 2m20s | gen 3 best 1.55"


def test_lines_are_throttled_by_the_clock():
    log, clock = io.StringIO(), Clock()
    bar = open_progress(100, progress="lines", unit="it", stream=log, every=30, clock=clock)
    for _ in range(10):  # ten updates within 29 s: no line between the first and the last
        clock.now += 2.9
        bar.update()
        bar.refresh()
    assert len(lines(log)) == 1
    clock.now += 1.0
    bar.update()
    assert len(lines(log)) == 2 and lines(log)[-1].startswith("11/100 it (11%)")
    clock.now += 5
    bar.update()
    assert len(lines(log)) == 2
    bar.close()
    bar.close()  # the last line once, however often it is closed
    assert len(lines(log)) == 3 and lines(log)[-1].startswith("12/100 it (12%)")


def test_off_writes_nothing_and_still_counts():
    for progress in (False, "off"):
        log = io.StringIO()
        with open_progress(10, progress=progress, stream=log) as bar:
            bar.update(3)
            bar.set_postfix_str("gen 1")
            bar.refresh()
        assert isinstance(bar, NoProgress) and bar.n == 3 and log.getvalue() == ""


def test_auto_picks_lines_in_a_log_and_a_bar_on_a_terminal():
    assert progress_mode(True, io.StringIO(), environ={}) == "lines"
    assert progress_mode("auto", Terminal(), environ={}) == "bar"
    assert isinstance(open_progress(5, progress=True, stream=io.StringIO()), LineProgress)
    bar = open_progress(5, progress=True, stream=Terminal())
    assert isinstance(bar, tqdm)
    bar.close()


def test_a_notebook_gets_the_bar_whatever_the_stream(monkeypatch):
    monkeypatch.setitem(sys.modules, "ipykernel", SimpleNamespace())
    assert progress_mode(True, io.StringIO(), environ={}) == "bar"


def test_unsaid_progress_shows_only_where_a_person_watches():
    assert progress_mode(None, io.StringIO(), environ={}) == "off"
    assert progress_mode(None, Terminal(), environ={}) == "bar"
    assert not show_progress_by_default()  # pytest captures stderr


def test_the_environment_chooses_for_true_and_none_but_not_over_an_explicit_mode():
    assert progress_mode(True, Terminal(), environ={ENVIRONMENT: "lines"}) == "lines"
    assert progress_mode(None, io.StringIO(), environ={ENVIRONMENT: "Bar"}) == "bar"
    assert progress_mode(True, io.StringIO(), environ={ENVIRONMENT: "off"}) == "off"
    assert progress_mode(None, io.StringIO(), environ={ENVIRONMENT: "auto"}) == "lines"
    assert progress_mode(False, Terminal(), environ={ENVIRONMENT: "bar"}) == "off"
    assert progress_mode("lines", Terminal(), environ={ENVIRONMENT: "bar"}) == "lines"


def test_a_run_from_python_shows_lines_when_the_environment_says_so(monkeypatch):
    monkeypatch.setenv(ENVIRONMENT, "lines")
    assert show_progress_by_default()


def test_a_bad_environment_value_is_said_and_ignored():
    with pytest.warns(PluginWarning, match=ENVIRONMENT):  # the command line's one "raise-ahd: warning:" line
        assert progress_mode(True, io.StringIO(), environ={ENVIRONMENT: "loud"}) == "lines"


def test_a_bad_progress_value_is_refused():
    with pytest.raises(UserError, match="progress: must be"):
        progress_mode("loud")
    with pytest.raises(UserError, match="progress: must be"):
        api.profile("ovrp", ["SP-Insert"], progress="loud")
    with pytest.raises(UserError, match="progress: must be"):  # before any heuristic is evaluated
        evaluate_suite("ovrp", [Heuristic("SP-Insert", baseline="SP-Insert")], get_task("ovrp").validation_suite()[:1],
                       progress="bogus")


def test_a_runs_callback_in_lines_mode_prints_its_generation_and_best():
    log, clock = io.StringIO(), Clock()
    bar = ProgressBar(6, enabled="lines", stream=log, clock=clock)
    method = SimpleNamespace(llm=None)
    best = SimpleNamespace(score=-1.55)
    for samples in range(7):
        snapshot = SimpleNamespace(generation=samples // 2, samples=samples, best=best if samples else None,
                                   instance_set_size=5)
        if samples == 0:
            bar.on_run_start(method, snapshot)
        else:
            clock.now += 40
            bar.on_sample_evaluated(method, snapshot, None)
    bar.on_run_end(method, snapshot)
    written = lines(log)
    assert "\r" not in log.getvalue()
    assert written[0] == "run: 0/6 sample (0%)"
    assert written[1].startswith("run: 1/6 sample (16%)") and written[1].endswith("| gen 0 best 1.55 set 5")
    assert written[-1].startswith("run: 6/6 sample (100%)") and written[-1].endswith("| gen 3 best 1.55 set 5")
    assert len(written) == 8  # the first line, one per sample 40 s apart, the last


def test_a_bar_given_to_a_second_run_shows_that_run_from_its_start():
    """The second run updated the first run's closed bar: no line of it was written."""
    log, clock = io.StringIO(), Clock()
    bar = ProgressBar(2, enabled="lines", stream=log, clock=clock)
    method = SimpleNamespace(llm=None)
    for _ in range(2):
        bar.reset()
        bar.on_run_start(method, SimpleNamespace(generation=0, samples=0, best=None, instance_set_size=1))
        bar.on_sample_evaluated(method, SimpleNamespace(generation=1, samples=2, best=None, instance_set_size=1), None)
        bar.on_run_end(method, SimpleNamespace(generation=1, samples=2, best=None, instance_set_size=1))
    written = lines(log)
    assert [w.split(" sample")[0] for w in written] == ["run: 0/2", "run: 2/2"] * 2
