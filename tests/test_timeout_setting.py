"""``timeout`` means one thing everywhere: seconds for one evaluation of one instance. A run's
evaluation holds the host's limit on its whole nominal set, so a run given ``timeout`` T holds T
for each nominal instance (the task's own default is likewise a set's limit shared among its
instances), and its check before the first sample gives the task's baseline T on one instance. A
run had divided T among the instances: ``--timeout 0.12`` on OVRP's five was checked as 0.024 s."""
from __future__ import annotations

import pytest

from raise_plugin.config import RunConfig
from raise_plugin.errors import UserError
from raise_plugin.runner import start_run


def _config(tmp_path, name: str = "run", **kw) -> RunConfig:
    return RunConfig(task="ovrp", budget=4, pop_size=2, tau=1, inner_population=4, inner_generations=1,
                     out=str(tmp_path / name), host_profiler=False, **kw)


def test_a_run_s_timeout_is_seconds_for_each_nominal_instance(tmp_path):
    method = start_run(_config(tmp_path, timeout=7.0))
    assert method.evaluation.timeout_seconds == pytest.approx(7.0 * len(method.nominal_instances()))
    default = start_run(_config(tmp_path, "default"))  # unset: the task's own, as before
    assert default.evaluation.timeout_seconds == default.task.timeout_seconds


def test_a_timeout_too_short_for_the_task_s_baseline_names_the_value_given(tmp_path):
    with pytest.raises(UserError, match=r"^the sandbox's time limit \(0\.001 s\) fails ovrp's own baseline"):
        start_run(_config(tmp_path, timeout=0.001))  # it said 0.0002 s, a fifth of what was given


def test_a_timeout_past_a_week_is_refused_and_a_week_holds_for_the_instances_evaluated_together(tmp_path):
    with pytest.raises(UserError, match=r"^config field 'timeout': must be at most 604800 seconds, got 3000000\.0$"):
        RunConfig(task="ovrp", timeout=3e6)
    # a week on each of OVRP's five nominal instances, waited for as one job: past what poll takes at once
    summary = start_run(_config(tmp_path, timeout=604800.0)).run()
    assert summary["samples"] == 4
