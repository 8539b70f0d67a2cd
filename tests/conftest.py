"""Test-wide set-up: ``tests/_robust_helpers.py`` importable as ``robust_helpers`` (the suite runs
in importlib mode), and, under CI, property tests with a fixed example sequence so a run is
repeatable (``HYPOTHESIS_PROFILE=dev`` locally explores new examples each run)."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

_path = Path(__file__).with_name("_robust_helpers.py")
_spec = importlib.util.spec_from_file_location("robust_helpers", _path)
_module = importlib.util.module_from_spec(_spec)
sys.modules["robust_helpers"] = _module
_spec.loader.exec_module(_module)

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def fresh_registry(monkeypatch):
    """Tasks loaded from files in a test are forgotten after it: the registry (a process-wide
    map of task names) and the variable that hands it to child processes are restored."""
    import tasks

    for name in ("_cache", "_registered", "_references"):
        monkeypatch.setattr(tasks, name, dict(getattr(tasks, name)))
    monkeypatch.setenv(tasks.SOURCES_VARIABLE, "{}")


def pytest_collection_modifyitems(config, items):
    """The end-to-end cases (marked ``slow``) that share no module's fixture are run first. With
    ``-n 2 --dist worksteal`` each test process takes half the list in order and an idle one takes
    half of what the other has left from its end: a case of half a minute collected late would
    leave one process waiting for it at the end of the suite. Nothing but the order changes (a
    case that shares a module's fixture keeps its place, so the fixture is made once)."""
    def first(item) -> bool:
        defs = item._fixtureinfo.name2fixturedefs.values()
        return item.get_closest_marker("slow") is not None and all(
            d[-1].scope in ("function", "session") for d in defs)

    items[:] = [i for i in items if first(i)] + [i for i in items if not first(i)]
