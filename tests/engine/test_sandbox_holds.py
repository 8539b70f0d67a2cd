"""The sandbox holds against a program written to attack it: it finds no secret, writes
nothing outside its directory, cannot change what it is scored by, and leaves nothing
behind for the next program in the same worker."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from raise_plugin.engine import Engine, FailureKind, ProcessExecutor, SandboxLimits
from raise_plugin.engine.workers import cleanstart
from raise_plugin.engine.sandbox.confine import landlock_abi

from .conftest import BEST_FIT, ROOMY

KEY = "sk-raise-test-5f3a9c1e7d"
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the clean server and /proc are Linux's")

# Looks everywhere a program could find the key; returns -bins only if it found nothing.
HUNT = """
import gc, os, sys

def priority(item, bins):
    if getattr(priority, "done", False):
        return -bins
    priority.done = True
    key = "-".join(["sk", "raise", "test", "5f3a9c1e7d"])  # built here: this text must not count as a find
    found = []
    gc.unfreeze()  # what the process that forked this one froze is invisible to gc.get_objects() otherwise
    if any(key in v for v in os.environ.values()):
        found.append("os.environ")
    for pid in ("self", str(os.getppid()), "{engine}", "1"):
        for what in ("environ", "cmdline"):
            try:
                with open(f"/proc/{{pid}}/{{what}}", "rb") as f:
                    if key.encode() in f.read():
                        found.append(f"/proc/{{pid}}/{{what}}")
            except OSError:
                pass
    for o in gc.get_objects():
        try:
            text = repr(o) if not isinstance(o, (str, bytes)) else o
        except Exception:
            continue
        if isinstance(text, str) and key in text and o is not key:
            found.append("gc: " + type(o).__name__)
            break
    if found:
        raise RuntimeError("found the key in " + ", ".join(found))
    return -bins
"""


@pytest.fixture()
def fresh_server():
    """A clean server started now, while this process holds the key (the worst case)."""
    saved = list(cleanstart._server)
    cleanstart._server[:] = [None, None]
    yield
    cleanstart._server[:] = saved


@linux
def test_a_worker_finds_no_secret_when_the_engine_holds_a_client_with_the_key(small_instances, monkeypatch,
                                                                           fresh_server):
    openai = pytest.importorskip("openai")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1")  # what a run holds
    with ProcessExecutor(1, ROOMY) as pool:
        result = Engine("obp", pool, limits=ROOMY).evaluate(HUNT.format(engine=os.getpid()), small_instances)
    assert result.valid, result.reason
    assert client.api_key == KEY and os.environ["OPENAI_API_KEY"] == KEY  # the engine's own are intact


@linux
def test_a_task_loaded_by_reference_leaves_the_workers_clean(small_instances, monkeypatch, fresh_server,
                                                            fresh_registry):
    """A task loaded by file (or module) reference was taken for one that only this process knows,
    so every worker started after it, in any later run of the process, was forked from the engine,
    its LLM client and key in memory: a program found the key ("gc: dict", the client's). Such a
    task is loaded by its reference in the workers, which start clean; only a task registered with
    ``register_task`` has its workers forked."""
    openai = pytest.importorskip("openai")
    from robust_helpers import SMALL_OBP
    from tasks import get_task

    name = get_task(SMALL_OBP).name
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    client = openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1")
    with ProcessExecutor(1, ROOMY) as pool:
        for task in ("obp", name):  # named as a registered task, in workers that never loaded it
            result = Engine(task, pool, limits=ROOMY).evaluate(HUNT.format(engine=os.getpid()), small_instances)
            assert result.valid, (task, result.reason)
    assert client.api_key == KEY


@linux
def test_a_forked_worker_would_find_it(small_instances, monkeypatch):
    """The probe works: with the plain fork start the key is in the worker's memory."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    holder = [KEY]  # noqa: F841 - what the hunt finds in a forked copy (a list: always tracked by gc)
    limits = SandboxLimits(timeout=120, memory_mb=512, start_method="fork")
    with ProcessExecutor(1, limits) as pool:
        result = Engine("obp", pool, limits=limits).evaluate(HUNT.format(engine=os.getpid()), small_instances)
    assert not result.valid and "found the key" in result.reason


WRITES = {
    "open": "open(TARGET, 'w').write('x')",
    "os.open": "os.close(os.open(TARGET, os.O_WRONLY | os.O_CREAT))",
    "sqlite3": "import sqlite3; sqlite3.connect(TARGET).execute('create table t (x)')",
    "shutil.copyfile": "import shutil; open('here', 'w').write('x'); shutil.copyfile('here', TARGET)",
    "os.rename": "open('here', 'w').write('x'); os.rename('here', TARGET)",
    "pathlib": "import pathlib; pathlib.Path(TARGET).write_text('x')",
    "numpy.save": "import numpy; numpy.save(TARGET, numpy.zeros(3))",
}


def _writer(route: str, target: Path) -> str:
    body = WRITES[route].replace("TARGET", repr(str(target)))
    return f"import os\n\ndef priority(item, bins):\n    {body}\n    return -bins\n"


@pytest.mark.parametrize("audit", [True, pytest.param(False, marks=pytest.mark.skipif(
    landlock_abi() == 0, reason="without the audit hook only Landlock refuses writes"))])
@pytest.mark.parametrize("route", list(WRITES))
def test_a_write_outside_the_workers_directory_is_refused_whatever_the_route(route, audit, small_instances,
                                                                              tmp_path):
    target = tmp_path / f"outside-{route}.db"
    limits = SandboxLimits(timeout=120, memory_mb=512, audit=audit)
    with ProcessExecutor(1, limits) as pool:
        result = Engine("obp", pool, limits=limits).evaluate(_writer(route, target), small_instances[:1])
    assert not result.valid and result.kind == FailureKind.HEURISTIC, result
    assert not list(tmp_path.iterdir()), list(tmp_path.iterdir())


TAMPERING = {
    "the task's evaluate": "import tasks\ntasks.get_task('obp').evaluate = lambda priority, instance: 0.0\n",
    "its class's evaluate": "import tasks\ntype(tasks.get_task('obp')).evaluate = lambda self, p, i: 0.0\n",
    "the registry": ("import tasks\nclass Fake:\n    name = 'obp'\n    def evaluate(self, p, i):\n        return 0.0\n"
                     "tasks._cache['obp'] = Fake()\n"),
}


@pytest.mark.parametrize("how", list(TAMPERING))
@pytest.mark.parametrize("when", ["at import", "in priority"])
def test_a_program_cannot_change_what_it_is_scored_by_and_the_next_one_scores_alone(how, when, task,
                                                                                   small_instances):
    """Whatever a program replaces in its own process, the judge scores its decisions with the
    task it holds: the program scores what ``-bins`` earns, and best fit after it as alone."""
    patch = TAMPERING[how]
    if when == "at import":
        code = patch + "\ndef priority(item, bins):\n    return -bins\n"
    else:
        inner = "".join("        " + line + "\n" for line in patch.splitlines())
        code = ("def priority(item, bins):\n    if not getattr(priority, 'done', False):\n"
                "        priority.done = True\n" + inner + "    return -bins\n")
    expected = [task.evaluate(task.baselines["BestFit"], s) for s in small_instances]
    earned = [task.evaluate(lambda item, bins: -bins, s) for s in small_instances]
    with ProcessExecutor(1, ROOMY) as pool:
        engine = Engine("obp", pool, limits=ROOMY)
        first = engine.evaluate(code, small_instances)
        second = engine.evaluate(BEST_FIT, small_instances)
    assert (first.valid and list(first.metrics) == earned) or first.kind == FailureKind.HEURISTIC, first
    assert second.valid and list(second.metrics) == expected


def test_files_left_by_a_program_are_gone_for_the_next_one(small_instances):
    leave = "def priority(item, bins):\n    open('note', 'w').write('from the first')\n    return -bins\n"
    read = ("import os\n\ndef priority(item, bins):\n    if os.listdir('.'):\n"
            "        raise RuntimeError('found ' + ','.join(os.listdir('.')))\n    return -bins\n")
    with ProcessExecutor(1, ROOMY) as pool:
        engine = Engine("obp", pool, limits=ROOMY)
        assert engine.evaluate(leave, small_instances).valid
        result = engine.evaluate(read, small_instances)
    assert result.valid, result.reason


@linux
def test_a_program_cannot_signal_or_read_the_engine(small_instances):
    code = ("import os, signal\n\ndef priority(item, bins):\n"
            f"    open('/proc/{os.getpid()}/environ', 'rb').read()\n    return -bins\n")
    limits = SandboxLimits(timeout=120, memory_mb=512, audit=False)  # the kernel's part alone
    with ProcessExecutor(1, limits) as pool:
        result = Engine("obp", pool, limits=limits).evaluate(code, small_instances[:1])
    assert not result.valid and "Permission denied" in result.reason, result


@linux
def test_a_robust_runs_programs_find_no_key_held_by_its_llm_client(tmp_path, monkeypatch, fresh_server):
    """A run's LLM client holds the key in the engine's process; its programs run in workers
    that never held it."""
    openai = pytest.importorskip("openai")
    from robust_helpers import ScriptedLLM
    from raise_plugin.config import RunConfig
    from raise_plugin.runner import start_run

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm = ScriptedLLM(0)
    llm.client = openai.OpenAI(api_key=KEY, base_url="http://127.0.0.1:9/v1")  # made before the engine
    config = RunConfig(task="obp", budget=4, pop_size=2, tau=2, inner_population=2, inner_generations=1, nominal=1,
                       out=str(tmp_path / "run"), host_profiler=False)
    method = start_run(config, llm=llm)
    try:
        hunt = HUNT.format(engine=os.getpid())
        assert method._evaluator.evaluate_program(hunt) is not None, method._book.record(hunt).error
    finally:
        method.recorder.close()
    assert KEY not in "".join(p.read_text(errors="replace") for p in (tmp_path / "run").rglob("*") if p.is_file())


# an honest online program with a memory: best fit for its first 60 decisions (one small
# instance), worst fit after
REMEMBERS = """
calls = 0


def priority(item, bins):
    global calls
    calls += 1
    gap = (bins - item).astype(float)
    return -gap if calls <= 60 else gap
"""


@pytest.mark.parametrize("workers", [1, 2])
def test_a_program_with_a_memory_scores_each_instance_as_alone_and_is_not_taken_for_a_look_ahead(
        workers, task, small_instances):
    """What a program remembers from one instance is gone at the next, in any job on any number
    of workers: each instance meets a fresh module. It decides from the past only, so the
    look-ahead check (on every job here) finds nothing."""
    alone = []
    for instance in small_instances:
        namespace: dict = {}
        exec(REMEMBERS, namespace)
        alone.append(task.evaluate(namespace["priority"], instance))
    carried: dict = {}
    exec(REMEMBERS, carried)
    in_one_module = [task.evaluate(carried["priority"], instance) for instance in small_instances]
    assert in_one_module != alone  # its memory changes its decisions
    limits = SandboxLimits(timeout=120.0, memory_mb=512, file_mb=1, output_mb=1, foresight=1.0)
    with ProcessExecutor(workers, limits) as pool:
        result = Engine("obp", pool, limits=limits).evaluate(REMEMBERS, small_instances)
    assert result.valid, result.reason
    assert list(result.metrics) == alone


@linux
def test_the_note_of_workers_left_as_root_names_the_folder_that_stops_other_users_and_its_fix(monkeypatch):
    """Under /root/.pyenv the note named the code's folder and said `chmod o+rX`, which changes nothing: that
    folder was readable already, and /root, on the way to it, was what others could not pass."""
    import shutil
    import tempfile

    from raise_plugin.engine.sandbox import confine

    top = Path(tempfile.mkdtemp())
    try:
        top.chmod(0o755)
        home, lib, closed = top / "home", top / "home" / "lib", top / "open" / "lib"
        lib.mkdir(parents=True)
        closed.mkdir(parents=True)
        home.chmod(0o700)
        closed.chmod(0o700)
        monkeypatch.setattr(confine, "unprivileged_ids", lambda: (65534, 65534))
        for place, fix in ((lib, f"let them through {home}, a folder on the way they cannot pass: chmod o+x {home}"),
                           (closed, f"make it readable to them: chmod o+rX {closed}")):
            monkeypatch.setattr(confine, "_unreadable_code", lambda: str(place))
            confine.weakened.cache_clear()
            said = confine.weakened()
            assert said.startswith(f"programs run as user 0 without capabilities, not as 'nobody', since {place} "
                                   "is not readable by other users") and f"(or {fix})," in said, said
    finally:
        confine.weakened.cache_clear()
        shutil.rmtree(top)
