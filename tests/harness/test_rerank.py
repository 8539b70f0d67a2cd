"""Re-ranking a finished run by robust score, from a plugin run directory or an llm4ad log."""
from __future__ import annotations

import math
import subprocess
import sys

import pytest

from raise_plugin.config import RunConfig
from raise_plugin.harness.rerank import load_run_programs, rerank, run_nominal_seed
from raise_plugin.programs import ProgramError
from raise_plugin.runner import start_run


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "r"
    start_run(RunConfig(task="ojsp", method="eoh", robust=False, budget=12, pop_size=4, seed=0, out=str(out))).run()
    return out


def test_programs_from_both_kinds_of_folder(run_dir):
    ours = load_run_programs(run_dir)
    host = load_run_programs(run_dir / "host")
    assert len(ours) >= 4 and len(host) >= 4
    assert all(math.isfinite(p.original_score) for p in ours + host)
    with pytest.raises(ProgramError, match="neither"):
        load_run_programs(run_dir / "instances")


def test_robust_scores_include_the_adversarial_instances(run_dir):
    programs = load_run_programs(run_dir)
    out = rerank("ojsp", programs, epsilon=0.005, refreshes=2, top=5, inner_population=4, inner_generations=1,
                 workers=1, progress=False, nominal_seed=run_nominal_seed(run_dir))  # the run's own nominal set
    assert len(out["instances"]) == 5 + 2 and len(out["adversarial"]) == 2
    for p in out["programs"]:
        # on the nominal set alone the robust score would be -nominal_metric: the new instances move it
        assert math.isfinite(p.robust_score) and p.nominal_metric == pytest.approx(-p.original_score)


def test_a_regret_aggregation_scores_against_the_best_baseline_on_each_instance(run_dir):
    from raise_plugin.programs import compile_priority
    from tasks import get_task

    out = rerank("ojsp", load_run_programs(run_dir), epsilon=0.005, refreshes=1, top=3, inner_population=4,
                 inner_generations=1, workers=1, progress=False, aggregation="regret:min")
    fresh = get_task("ojsp").evaluation(instances=out["instances"], aggregation="regret:min")
    fresh.nominal_count = 5
    for p in out["programs"]:
        assert p.robust_score == pytest.approx(fresh.evaluate_program(p.code, compile_priority(p.code)))


def test_cli(run_dir, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "raise_plugin.cli", "rerank", str(run_dir), "--task", "ojsp",
                           "--refreshes", "1", "--top", "4", "--suite-instances", "1", "--workers", "1",
                           "--out", str(tmp_path), "--no-progress"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "robust rank" in proc.stdout and (tmp_path / "rerank.md").exists()
    assert "evaluating on" not in proc.stderr  # --no-progress holds for the test-suite evaluation too
    assert (tmp_path / "robust_best_1.py").exists()
