"""Test-wide set-up: ``tests/_robust_helpers.py`` importable as ``robust_helpers`` (the suite runs
in importlib mode), one installation key for every machine, and, under CI, property tests with a
fixed example sequence so a run is repeatable (``HYPOTHESIS_PROFILE=dev`` locally explores new
examples each run)."""
import atexit
import importlib.util
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

_path = Path(__file__).with_name("_robust_helpers.py")
_spec = importlib.util.spec_from_file_location("robust_helpers", _path)
_module = importlib.util.module_from_spec(_spec)
sys.modules["robust_helpers"] = _module
_spec.loader.exec_module(_module)

# A run trains on a nominal set drawn from its seed and this installation's private key
# (raise_plugin.instance_seeds), which a machine makes at random at its first run: the tests, and the
# runs they start in processes of their own, read a fixed key instead, so every machine runs them on
# the same instances (under a machine's own key a case could pass on one machine and fail on the next).
TEST_INSTANCE_KEY = "5eed" * 16
_config_home = tempfile.mkdtemp(prefix="raise-tests-config-")
atexit.register(shutil.rmtree, _config_home, ignore_errors=True)
os.makedirs(os.path.join(_config_home, "raise-plugin"))
with open(os.open(os.path.join(_config_home, "raise-plugin", "instance-key"), os.O_WRONLY | os.O_CREAT, 0o600),
          "w") as _key:
    _key.write(TEST_INSTANCE_KEY + "\n")
os.environ["XDG_CONFIG_HOME"] = _config_home

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


@pytest.fixture
def bare_scheduler(monkeypatch):
    """A Dask scheduler in this process that no worker has joined, reached over TCP as any other; one
    second is how long a scheduler may take to answer, and to be joined (``CONNECT_SECONDS``)."""
    distributed = pytest.importorskip("distributed")
    from raise_plugin.engine.executors import foreign

    monkeypatch.setattr(foreign, "CONNECT_SECONDS", 1.0)
    with distributed.LocalCluster(n_workers=0, processes=False, protocol="tcp", host="127.0.0.1",
                                  dashboard_address="127.0.0.1:0") as cluster:
        yield cluster


def pytest_addoption(parser):
    parser.addoption("--full-size", action="store_true",
                     help="run the slow end-to-end cases at their full sizes (make test-full): the characterisation's "
                          "60 samples, the kill matrix's six moments, OBP's three improvement cases; without it "
                          "each runs once in a small size (docs/testing.md)")


@pytest.fixture(scope="session")
def full_size(request) -> bool:
    """Whether the slow cases run at their full sizes (``--full-size``) or, as ``make test`` and CI
    run them, once in a small size that still checks what the case is about."""
    return request.config.getoption("--full-size")


def pytest_collection_modifyitems(config, items):
    """The end-to-end cases (marked ``slow``) are run first, with every case that shares a module's
    fixture with one of them (in their order, so such a fixture is still made once). With ``-n 2
    --dist worksteal`` each test process takes half the list in order and an idle one takes half
    of what the other has left from its end: a case of a minute collected late would leave one
    process waiting for it at the end of the suite. Nothing but the order changes."""
    def shared(item) -> set:
        info = getattr(item, "_fixtureinfo", None)  # a test function's fixtures (none for other items)
        return {(d[-1].baseid, name) for name, d in (info.name2fixturedefs.items() if info else ())
                if d[-1].scope in ("module", "class", "package")}

    slow = set().union(*(shared(i) for i in items if i.get_closest_marker("slow") is not None))
    first = [i.get_closest_marker("slow") is not None or bool(shared(i) & slow) for i in items]
    items[:] = [i for i, f in zip(items, first) if f] + [i for i, f in zip(items, first) if not f]
