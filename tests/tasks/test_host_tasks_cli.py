"""knapsack and cvrp through the command line: listed, evaluated by baseline name and from a file."""
from __future__ import annotations

import csv

import pytest

from raise_plugin.cli import main
from tasks import get_task


def test_tasks_lists_the_host_tasks(capsys):
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    assert "KnapsackTask: shift item weight, K = 50" in out
    assert "CVRPTask: shift customer demand, K = 9" in out
    assert "baselines: GreedyRatio, GreedyValue, LightestFirst" in out
    # every classical rule, and the one a compare's tables and figures test against, chosen on validation data
    assert ("classical rules: BestFit, FirstFit, SumOfSquares, Harmonic-10; best on the validation suite: "
            "SumOfSquares (what a compare's tables and figures test against)") in out


@pytest.mark.parametrize("name, baseline", [("knapsack", "GreedyRatio"), ("cvrp", "nearestneighbour")])
def test_evaluate_a_baseline_by_name_gives_the_tasks_metrics(name, baseline, tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["evaluate", "--task", name, "--suite", "nominal", "--baselines", baseline, "--out", str(out),
                 "--workers", "1", "--no-progress"]) == 0
    task = get_task(name)
    chosen = next(b for b in task.baselines if b.lower() == baseline.lower())
    rows = list(csv.DictReader(out.open()))
    expected = [task.evaluate(task.baselines[chosen], s) for s in task.nominal_instances()]
    assert [float(r["metric"]) for r in rows] == pytest.approx(expected, rel=1e-12)
    assert chosen in capsys.readouterr().out


def test_evaluate_the_hosts_template_from_a_file(tmp_path, capsys):
    task = get_task("cvrp")
    f = tmp_path / "host_template.py"
    f.write_text(task.template_program)
    out = tmp_path / "r.csv"
    assert main(["evaluate", str(f), "--task", "cvrp", "--suite", "nominal", "--baselines", "DemandPerDistance",
                 "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    rows = list(csv.DictReader(out.open()))
    mine = [float(r["metric"]) for r in rows if r["heuristic"] == "host_template"]
    theirs = [float(r["metric"]) for r in rows if r["heuristic"] == "DemandPerDistance"]
    assert len(mine) == 5 and mine == theirs  # the baseline is the host's template, vectorised


@pytest.mark.parametrize("task, score", [("knapsack", -1.38428), ("cvrp", -12.785)])
def test_the_end_to_end_numbers_in_the_docs_are_quoted_as_the_summary_prints_them(task, score):
    """docs/tasks.md gave "best robust score -1.384 (the mean gap over the six)" where the run prints
    `best robust 1.38428: mean optimality gap (%) ... (host score -1.38428)`: a gap below zero."""
    from pathlib import Path

    from raise_plugin.harness.run_metric import best_line

    doc = (Path(__file__).resolve().parents[2] / "docs" / "tasks.md").read_text().split("### End to end", 1)[1]
    printed = best_line(score, "p", {"task": task, "robust": True})
    assert printed.startswith(f"{-score:g}: ") and printed.endswith(f"(p; host score {score:g})"), printed
    assert f"`best robust {-score:g}` (" in doc and f"host score {score:g})" in doc
