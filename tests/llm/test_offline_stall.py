"""The offline sampler says so before a run when it can write nothing but copies of the task's
template (no library for the task, nothing in its template to vary), and the run's summary
says how many samples were copies."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from raise_plugin.cli import main
from raise_plugin.harness import compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.llm import OfflineSampler, RecordingLLM, SamplerStallWarning, make_llm, offline_stall
from tasks import get_task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "load_balance.py"
# the example's template, with its constant and its differences taken out: a rule with nothing to tune
FIXED = '''def priority(job: int, loads: np.ndarray) -> np.ndarray:
    """Scores of the machines for the arriving job (the job goes to the highest)."""
    return -loads
'''


@pytest.fixture
def fixed_task(tmp_path, fresh_registry):
    """An own task (the load-balancing example under another name) whose template has nothing to vary."""
    text = EXAMPLE.read_text().replace('name = "load_balance"', 'name = "fixed_rule"')
    start = text.index("def priority(job: int, loads: np.ndarray)")
    end = text.index("'''", start)
    path = tmp_path / "fixed_rule.py"
    path.write_text(text[:start] + FIXED + text[end:])
    return f"{path}:LoadBalance"


def test_a_template_with_nothing_to_vary_and_no_library_is_named_with_the_fix(fixed_task):
    task = get_task(fixed_task)
    why = offline_stall(task, "offline", 40)
    assert why == ("the offline sampler finds no constant or ratio to vary in fixed_rule's template and has no "
                   "program library for it: all 40 samples of the run will be copies of the template; add "
                   "numeric constants to the template, give the task an offline library (docs/tasks.md) or use "
                   "an LLM (--llm openai)")
    assert "all 200 samples of each of the 6 runs will be copies" in offline_stall(task, "offline:3", 200, 6)
    # the back-end as an object, bare or recording, and the default when no endpoint is configured
    assert offline_stall(task, OfflineSampler(seed=1), 40) == why
    assert offline_stall(task, "auto", 40) == why


def test_an_llm_is_not_warned_about(fixed_task, tmp_path):
    task = get_task(fixed_task)
    assert offline_stall(task, "openai:some-model", 40) is None
    assert offline_stall(task, "replay:recording.jsonl", 40) is None
    assert offline_stall(task, RecordingLLM(make_llm("offline"), tmp_path / "r.jsonl"), 40) is not None


@pytest.mark.parametrize("task", ["obp", "ojsp", "ovrp", "knapsack", "cvrp", f"{EXAMPLE}:LoadBalance"])
def test_the_shipped_tasks_and_the_example_have_something_to_vary(task, fresh_registry):
    assert offline_stall(get_task(task), "offline", 40) is None


def test_a_run_warns_once_and_its_summary_counts_the_copies(fixed_task, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "--task", fixed_task, "--no-robust", "--budget", "8", "--pop-size", "4",
                 "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    warned = [line for line in captured.err.splitlines() if line.startswith("raise-ahd: warning: ")]
    assert len(warned) == 1 and "all 8 samples of the run will be copies of the template" in warned[0]
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    distinct = {s["program_id"] for s in samples}
    assert len(distinct) == 1  # the warning was true: one program, eight times
    summary = json.loads((out / "summary.json").read_text())
    assert summary["samples"] == 8 and summary["repeated_samples"] == 7
    assert "samples         8 of 8 (7 of them unchanged copies of an earlier sample's program)" in captured.out


def test_a_run_with_varied_samples_says_nothing_of_copies(tmp_path, capsys, fresh_registry):
    out = tmp_path / "run"
    assert main(["run", "--task", f"{EXAMPLE}:LoadBalance", "--no-robust", "--budget", "8", "--pop-size", "4",
                 "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "copies" not in captured.err and "samples         8 of 8\n" in captured.out
    summary = json.loads((out / "summary.json").read_text())
    assert 2 * summary["repeated_samples"] <= summary["samples"]


def test_python_hears_it_from_start_run(fixed_task, tmp_path, monkeypatch):
    from raise_plugin.config import RunConfig
    from raise_plugin.runner import start_run

    with pytest.warns(SamplerStallWarning, match="all 12 samples of the run will be copies"):
        run = start_run(RunConfig(task=fixed_task, robust=False, budget=12, pop_size=4, out=str(tmp_path / "r")))
    run.recorder.close()
    monkeypatch.setenv("OPENAI_API_KEY", "a-key")  # an LLM back-end is built (it calls nothing here)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplerStallWarning)
        run = start_run(RunConfig(task=fixed_task, robust=False, budget=12, pop_size=4, llm="openai:m",
                                  out=str(tmp_path / "llm")))
    run.recorder.close()


def test_a_compare_warns_before_it_trains(fixed_task, tmp_path, monkeypatch):
    class Planned(Exception):
        pass

    def stop(*args, **kwargs):
        raise Planned

    monkeypatch.setattr(compare, "_train_and_evaluate", stop)  # the warning comes before any training
    config = CompareConfig(task=fixed_task, methods=("eoh",), budget=20, pop_size=4, seeds=(0, 1), out=str(tmp_path))
    with pytest.warns(SamplerStallWarning, match="all 20 samples of each of the 4 runs will be copies"), \
            pytest.raises(Planned):
        compare.run_compare(config, quiet=True)


def test_a_gp_run_asks_no_llm_and_is_not_warned_of_copies(fixed_task, tmp_path, capsys):
    """GP writes its programs itself: the sampler's stall is no stall of its run (nor its notice)."""
    out = tmp_path / "gp"
    assert main(["run", "--task", fixed_task, "--method", "gp", "--no-robust", "--budget", "8", "--pop-size", "4",
                 "--out", str(out), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "copies of the template" not in captured.err and "NO LLM IS USED" not in captured.err
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len({s["program_id"] for s in samples}) > 1  # so no warning was owed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["repeated_samples"] == 0 and summary["llm"] == "none asked: the method writes its programs itself"


def test_a_compare_counts_only_the_runs_that_ask_the_sampler(fixed_task, tmp_path, monkeypatch):
    class Planned(Exception):
        pass

    def stop(*args, **kwargs):
        raise Planned

    monkeypatch.setattr(compare, "_train_and_evaluate", stop)
    config = CompareConfig(task=fixed_task, methods=("eoh", "gp"), budget=20, pop_size=4, seeds=(0, 1),
                           out=str(tmp_path / "both"))
    with pytest.warns(SamplerStallWarning, match="all 20 samples of each of the 4 runs of eoh will be copies"), \
            pytest.raises(Planned):
        compare.run_compare(config, quiet=True)
    config = CompareConfig(task=fixed_task, methods=("gp",), budget=20, pop_size=4, seeds=(0, 1),
                           out=str(tmp_path / "gp"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplerStallWarning)
        with pytest.raises(Planned):
            compare.run_compare(config, quiet=True)
