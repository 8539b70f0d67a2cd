"""``decide`` takes the heuristic's arguments, as many as it has, then the number of candidates:
one-, two- and three-argument heuristics decide (and are recorded and replayed) alike, an own
task with a three-argument heuristic is evaluated and judged, and a call without the count
last is one line saying so."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from raise_plugin.cli import main
from tasks.common.decision import Recorder, Replay, decide
from tasks.common.errors import HeuristicError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "load_balance.py"
SCORES = np.array([0.5, 3.0, -1.0, 2.0])


@pytest.mark.parametrize("priority, arguments", [
    (lambda scores: scores, (SCORES,)),
    (lambda job, scores: scores * job, (2, SCORES)),
    (lambda job, scores, weights: scores * weights, (1, SCORES, np.array([1.0, 0.1, 1.0, 1.0]))),
])
def test_heuristics_of_any_arity_decide_record_and_replay_alike(priority, arguments):
    chosen = decide(priority, *arguments, len(SCORES))
    assert chosen == int(np.argmax(priority(*arguments)))
    recorder = Recorder(priority)
    assert decide(recorder, *arguments, len(SCORES)) == chosen and recorder.decisions.tolist() == [chosen]
    replay = Replay(recorder.decisions)
    assert decide(replay, *arguments, np.int64(len(SCORES))) == chosen and replay.used == 1


def test_a_wrong_answer_is_still_the_heuristics_fault():
    with pytest.raises(HeuristicError, match=r"priority returned shape \(3,\), expected \(4,\)"):
        decide(lambda a, b, c: np.ones(3), 1, 2, SCORES, 4)
    with pytest.raises(HeuristicError, match="priority raised TypeError"):
        decide(lambda a, b: a, 1, 2, SCORES, 4)  # the task passes three, the heuristic takes two


@pytest.mark.parametrize("arguments, says", [
    ((1, SCORES), "the last argument is the number of candidates, an int; got ndarray (was the count left out?)"),
    ((SCORES, True), "the last argument is the number of candidates, an int; got bool"),
    ((4,), "give the heuristic's arguments, then the number of candidates; got 1 argument after priority"),
    ((), "got 0 arguments after priority"),
])
def test_a_call_without_the_count_last_says_so_in_one_line(arguments, says):
    for priority in (lambda *a: SCORES, Recorder(lambda *a: SCORES), Replay([0])):
        with pytest.raises(TypeError) as caught:
            decide(priority, *arguments)
        message = str(caught.value)
        assert message.startswith("decide(priority, *heuristic_arguments, count): ") and says in message
        assert "\n" not in message


def test_an_own_task_with_a_three_argument_heuristic_is_evaluated_judged(tmp_path, fresh_registry, capsys):
    text = EXAMPLE.read_text().replace('name = "load_balance"', 'name = "lb_three"')
    text = text.replace("decide(priority, job, loads.copy(), len(loads))",
                        "decide(priority, job, loads.copy(), float(loads.max()), len(loads))")
    text = text.replace("def least_loaded(job, loads):", "def least_loaded(job, loads, makespan):")
    text = text.replace("def fullest_that_fits(job, loads):", "def fullest_that_fits(job, loads, makespan):")
    text = text.replace("def priority(job: int, loads: np.ndarray) -> np.ndarray:",
                        "def priority(job: int, loads: np.ndarray, makespan: float) -> np.ndarray:")
    task = tmp_path / "lb_three.py"
    task.write_text(text)
    mine = tmp_path / "mine.py"  # LeastLoaded written with the makespan: the same choices
    mine.write_text("import numpy as np\n\ndef priority(job, loads, makespan):\n    return makespan - loads\n")
    out = tmp_path / "rows.csv"
    assert main(["evaluate", str(mine), "--task", f"{task}:LoadBalance", "--suite", "validation",
                 "--baselines", "LeastLoaded", "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    rows = list(csv.DictReader(out.open()))
    by = {h: [float(r["metric"]) for r in rows if r["heuristic"] == h] for h in ("mine", "LeastLoaded")}
    assert len(by["mine"]) == 10 and by["mine"] == by["LeastLoaded"]
    assert all(r["valid"] == "True" for r in rows)
