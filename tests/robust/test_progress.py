"""A run started from Python shows a progress bar (tqdm.auto) when asked or when a person watches."""
from __future__ import annotations

from llm4ad.method.eoh import EoH

from raise_plugin.llm import make_llm
from raise_plugin.robust import robust
from raise_plugin.robust.progress import ProgressBar
from tasks import get_task


def method(progress):
    task = get_task("ovrp")
    evaluation = task.evaluation(instances=task.nominal_instances()[:1])
    return robust(EoH)(llm=make_llm("offline"), evaluation=evaluation, max_sample_nums=6, pop_size=4,
                       max_generations=None, progress=progress)


def test_a_python_run_shows_its_bar_when_asked(capsys):
    run = method(True)
    run.run()
    err = capsys.readouterr().err
    assert "6/6" in err and "sample" in err
    assert sum(isinstance(cb, ProgressBar) for cb in run.callbacks) == 1


def test_no_bar_when_told_or_when_nobody_watches(capsys):
    for progress in (False, None):  # None: only in a terminal or a notebook (pytest captures stderr)
        run = method(progress)
        run.run()
        assert not any(isinstance(cb, ProgressBar) for cb in run.callbacks)
    assert "6/6" not in capsys.readouterr().err
