"""The run directory: everything recorded as the run goes, damaged records repaired on resume, and a
run killed inside a refresh resuming with its provenance (kills at every write: test_run_faults.py)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from robust_helpers import SMALL_OBP, ScriptedLLM
from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.errors import UserError
from raise_plugin.rundir.files import load_instance, read_jsonl
from raise_plugin.rundir.reader import RunLog
from raise_plugin.runner import resume_run, start_run
from tasks.common.aggregation import Aggregation

HELPERS = Path(__file__).parents[1] / "_robust_helpers.py"


def config(out, budget=24, **kw) -> RunConfig:
    base = dict(task=SMALL_OBP, budget=budget, pop_size=4, tau=2, inner_population=4, inner_generations=2,
                nominal=1, out=str(out), seed=0, epsilon=0.002, aggregation="mean", adversary_objective="metric",
                projection="paper")  # the paper's settings: these tests are about the run directory
    base.update(kw)
    return RunConfig(**base)


def check_complete(run_dir: Path, budget: int):
    """Every sample once, every instance and program on disk, summary and checkpoint up to date."""
    lines = (run_dir / "samples.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line parses: no torn line was left behind
    assert [r["sample"] for r in records] == list(range(1, budget + 1))
    log = RunLog.load(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["finished"] and summary["samples"] == budget
    known = {r["program_id"] for r in records}
    for member in log.populations[-1]["members"]:
        assert member["program_id"] in known
    for entry in summary["instance_set"]:
        meta = log.instances[entry["instance_id"]]
        inst = load_instance(run_dir / "instances" / meta["file"])
        assert inst["items"].size == inst["num_items"]
    assert [p["generation"] for p in log.populations] == list(range(1, summary["generations"] + 1))
    assert log.checkpoint["generation"] == summary["generations"]
    adversarial = [i for i, m in log.instances.items() if m["origin"] == "adversarial"]
    refreshes = {i.rsplit("-", 1)[0] for i in adversarial}
    assert len(refreshes) == len(adversarial) == summary["refreshes"]  # a redone refresh found the same instance
    assert summary["best"]["program"].startswith("import numpy") or "def priority" in summary["best"]["program"]
    return log, summary


def test_a_run_records_samples_populations_instances_and_a_summary(tmp_path):
    method = start_run(config(tmp_path / "run"), llm=ScriptedLLM(0))
    method.run()
    log, summary = check_complete(tmp_path / "run", 24)
    assert summary["refreshes"] >= 2
    adversarial = [e for e in summary["instance_set"] if e["origin"] == "adversarial"]
    assert len(adversarial) == summary["refreshes"]
    assert all(0 < e["distance"] <= 0.002 + 1e-9 for e in adversarial)
    meta = log.instances[adversarial[0]["instance_id"]]
    assert meta["provenance"]["refresh"] == 1 and len(meta["genes"]) == 18 and len(meta["distribution"]) == 100
    # each refresh re-scored the population, and the new instance's metric is on record
    for version in range(1, summary["refreshes"] + 1):
        rescored = [s for s in log.scores if s["instance_set"] == version]
        assert len(rescored) >= 4
    # the instance on disk is the one in the evaluation
    on_disk = log.instance(adversarial[-1]["instance_id"])
    with pytest.raises(UserError, match=r"^instance_id: the run records no instance 'nope'; it records \w") as caught:
        log.instance("nope")  # a bare KeyError: 'nope'
    assert isinstance(caught.value, KeyError)
    in_memory = method.instance_entries()[-1].instance
    assert np.array_equal(on_disk["items"], in_memory["items"])
    assert (tmp_path / "run" / "host" / "samples").is_dir()  # the host's own profiler logs
    assert json.loads((tmp_path / "run" / "config.json").read_text())["budget"] == 24
    with pytest.raises(UserError, match="already holds a run"):
        start_run(config(tmp_path / "run"), llm=ScriptedLLM(0))


def test_a_refused_command_leaves_the_lock_naming_the_runs_last_writer(tmp_path):
    """The lock file names the process that wrote the run. A command refused on a finished run (a new
    run into its folder, a resume to a budget below the samples taken) took the lock, wrote itself
    into it and let it go: the file named the refused command, not the run's writer."""
    path = tmp_path / "run"
    start_run(config(path, budget=4, allow_no_refresh=True), llm=ScriptedLLM(0)).run()
    written = (path / "lock").read_bytes()
    assert json.loads(written)["pid"] == os.getpid()
    (path / "lock").write_bytes(written.replace(b'"pid": %d' % os.getpid(), b'"pid": 1'))  # as another process wrote it
    recorded = (path / "lock").read_bytes()
    with pytest.raises(UserError, match="already holds a run"):
        start_run(config(path, budget=4, allow_no_refresh=True), llm=ScriptedLLM(0))
    assert (path / "lock").read_bytes() == recorded
    with pytest.raises(ConfigError, match="at least the 4 samples"):
        resume_run(path, budget=2)
    assert (path / "lock").read_bytes() == recorded
    resume_run(path, budget=6, llm=ScriptedLLM(0)).run()  # a resume that runs is the run's writer now
    assert json.loads((path / "lock").read_text())["pid"] == os.getpid()


# the run in a child process that kills itself (SIGKILL) inside its first refresh: the instance set
# changed and the population re-scored, no checkpoint written yet
KILLED_IN_A_REFRESH = textwrap.dedent("""
    import importlib.util, os, signal, sys
    spec = importlib.util.spec_from_file_location("robust_helpers", {helpers!r})
    helpers = sys.modules["robust_helpers"] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helpers)
    from raise_plugin.robust.hooks import Callback
    from raise_plugin.config import RunConfig
    from raise_plugin.runner import start_run

    class KillInside(Callback):
        def on_instances_updated(self, method, snapshot, update):
            if update.version == 1:
                os.kill(os.getpid(), signal.SIGKILL)

    start_run(RunConfig(**{config!r}), llm=helpers.ScriptedLLM(0), callbacks=[KillInside()]).run()
""")


def run_killed_in_a_refresh(cfg: RunConfig) -> None:
    code = KILLED_IN_A_REFRESH.format(helpers=str(HELPERS), config=cfg.to_dict())
    done = subprocess.run([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          cwd=Path(__file__).parents[2], timeout=120)
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()[-2000:]


def test_resuming_a_finished_run_adds_nothing(tmp_path):
    method = start_run(config(tmp_path / "run", budget=10), llm=ScriptedLLM(0))
    method.run()
    took = json.loads((tmp_path / "run" / "summary.json").read_text())["seconds"]
    again = resume_run(tmp_path / "run", llm=ScriptedLLM(0))
    assert again.samples == 10
    again.run()
    assert len(read_jsonl(tmp_path / "run" / "samples.jsonl")) == 10
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    # the run's time is over all its processes (the resume's own fraction of a second replaced it)
    assert took <= summary["seconds"] == summary["compute"]["wall_seconds"]


def test_resume_can_raise_the_budget(tmp_path):
    start_run(config(tmp_path / "run", budget=8), llm=ScriptedLLM(0)).run()
    method = resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=14)
    method.run()
    check_complete(tmp_path / "run", 14)


def test_a_run_stopped_before_its_first_generation_ended_resumes_with_nothing_to_repair(tmp_path):
    # no generation had ended, so no checkpoint was written: resume called that damage and rebuilt one
    start_run(config(tmp_path / "whole", task="ovrp", budget=8)).run()
    start_run(config(tmp_path / "run", task="ovrp", budget=8, max_llm_calls=2)).run()
    assert not (tmp_path / "run" / "checkpoint.json").exists()
    said = []
    resume_run(tmp_path / "run", max_llm_calls=100, on_repair=said.append).run()
    assert said == []
    assert _comparable(tmp_path / "run") == _comparable(tmp_path / "whole")


def _open_under(folder: Path) -> list[str]:
    """The files under ``folder`` this process holds open."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(folder)):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the open files from /proc")
def test_a_run_that_ended_holds_none_of_its_files_nor_its_lock(tmp_path):
    """A run, stopped or finished, closes its logs and journals and releases its lock as run() returns:
    each run held six descriptors until its process ended (the lock too, so a shell could not resume
    it while a notebook lived), and a compare's jobs in one process ran out of them."""
    for k in range(3):
        start_run(config(tmp_path / f"run{k}", budget=8), llm=ScriptedLLM(0)).run()
        assert _open_under(tmp_path) == []
    resume_run(tmp_path / "run0", llm=ScriptedLLM(0), budget=12).run()
    assert _open_under(tmp_path) == []
    check_complete(tmp_path / "run0", 12)
    # a back-end the run made from its settings: its recording too (it stayed open)
    start_run(config(tmp_path / "made", budget=8, record=str(tmp_path / "calls.jsonl"))).run()
    assert _open_under(tmp_path) == [] and (tmp_path / "calls.jsonl").read_text().count("\n") == 8


def test_resume_refuses_a_budget_below_the_samples_taken_and_changes_nothing(tmp_path):
    start_run(config(tmp_path / "run", budget=8), llm=ScriptedLLM(0)).run()
    recorded = {name: (tmp_path / "run" / name).read_bytes() for name in ("config.json", "summary.json")}
    with pytest.raises(ConfigError, match=r"'budget': must be at least the 8 samples the run has taken .*got 4$"):
        resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=4)  # it wrote budget 4 and said "8 of 4"
    assert {name: (tmp_path / "run" / name).read_bytes() for name in recorded} == recorded
    method = resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=8)  # its own budget: nothing to do, no lock left
    assert method.samples == 8 and method.budget == 8


def test_resume_changes_only_what_leaves_the_records_true(tmp_path):
    """resume_run took any setting, wrote it into config.json and went on: a knapsack run continued as an OJSP
    hill climb, its private instance seed recorded as public; a typo was blamed on config.json."""
    from raise_plugin.replay import replaying

    start_run(config(tmp_path / "run", budget=4, tau=1), llm=ScriptedLLM(0)).run()
    recorded = (tmp_path / "run" / "config.json").read_bytes()
    for changes, says in ((dict(task="ojsp"), r"resume_run: 'task' stays as the run recorded it"),
                          (dict(seed=7, max_llm_calls=9), r"resume_run: 'seed' stays"),
                          (dict(budgett=9), r"resume_run: unknown field 'budgett'"),
                          (dict(budget="20"), r"config field 'budget': must be an integer")):
        with pytest.raises(ConfigError, match=says):
            resume_run(tmp_path / "run", llm=ScriptedLLM(0), **changes)
        assert (tmp_path / "run" / "config.json").read_bytes() == recorded
    with pytest.raises(ConfigError, match=r"replaying .*run, the settings given: unknown field 'budgett'"):
        replaying(tmp_path / "run", budgett=3)
    resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=6, seed=None, max_llm_calls=40).run()  # None: as recorded
    assert json.loads((tmp_path / "run" / "config.json").read_text())["max_llm_calls"] == 40
    check_complete(tmp_path / "run", 6)


def test_a_second_run_object_on_a_directory_in_one_process_waits_for_the_first_to_end_or_close(tmp_path):
    """Two run objects of one process on one directory (a notebook's cell run again) both ran: the
    samples were numbered 1-6 and then 5-8 in one journal."""
    from raise_plugin.rundir.lock import RunDirectoryBusy

    unrun = start_run(config(tmp_path / "run", budget=4, tau=1), llm=ScriptedLLM(0))
    with pytest.raises(RunDirectoryBusy, match=r"in use by a run of this process.*close\(\)$"):
        resume_run(tmp_path / "run", llm=ScriptedLLM(0))
    unrun.close()  # let go without running: the other may then resume it
    resume_run(tmp_path / "run", llm=ScriptedLLM(0)).run()
    first = resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=6)
    with pytest.raises(RunDirectoryBusy):
        resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=8)
    first.run()
    resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=8).run()  # the first ended: its lock went with it
    check_complete(tmp_path / "run", 8)
    assert _open_under(tmp_path) == []


@pytest.mark.parametrize("hook", ["on_sample_evaluated", "on_generation_end"])
def test_an_interrupt_raised_in_a_callback_stops_the_run_to_be_resumed(tmp_path, hook):
    """A KeyboardInterrupt from a hook ended only the host's thread it ran in: the run said it had
    finished, with 3 to 5 of its 8 samples."""
    from raise_plugin.robust import Callback

    class Interrupt(Callback):
        def __init__(self):
            self.raised = False

        def _maybe(self, method, snapshot, *rest):
            if not self.raised and snapshot.samples >= 3:
                self.raised = True
                raise KeyboardInterrupt

    setattr(Interrupt, hook, Interrupt._maybe)
    summary = start_run(config(tmp_path / "run", task="ovrp", budget=8, tau=1), callbacks=[Interrupt()]).run()
    assert not summary["finished"] and summary["stopped"] == f"KeyboardInterrupt raised in Interrupt.{hook}"
    assert summary["samples"] < 8 and summary["hook_errors"] == 0
    assert resume_run(tmp_path / "run").run()["finished"]
    assert [r["sample"] for r in read_jsonl(tmp_path / "run" / "samples.jsonl")] == list(range(1, 9))


def test_resume_refuses_a_directory_that_is_not_a_run(tmp_path):
    with pytest.raises(UserError, match="not a run directory"):
        resume_run(tmp_path)


def _comparable(run_dir: Path) -> list[dict]:
    drop = ("sample_time", "evaluate_time")
    return [{k: v for k, v in r.items() if k not in drop} for r in read_jsonl(run_dir / "samples.jsonl")]


@pytest.mark.parametrize("task", ["obp", "ojsp", "ovrp"])
def test_each_task_runs_robustly_with_the_offline_sampler_and_reproduces_under_a_seed(tmp_path, task):
    from raise_plugin.programs import compile_priority
    from tasks import get_task

    runs = []
    for name in ("a", "b"):
        cfg = config(tmp_path / name, budget=10, task=task, host_profiler=False)
        method = start_run(cfg)  # the real offline sampler: no LLM is used
        method.run()
        runs.append(method)
    method = runs[0]
    summary = method.summary()
    assert summary["samples"] == 10 and summary["refreshes"] >= 1 and summary["hook_errors"] == 0
    assert len(summary["instance_set"]) == 1 + summary["refreshes"]
    fresh = get_task(task).evaluation(instances=[e.instance for e in method.instance_entries()])
    population = method.snapshot().population
    for p in population:
        if sum(q.program_id == p.program_id for q in population) > 1:
            continue  # a duplicate keeps -inf by design
        code = method.program_text(p.program_id)
        s = fresh.evaluate_program(code, compile_priority(code))
        assert (float("-inf") if s is None else s) == p.score
    assert _comparable(tmp_path / "a") == _comparable(tmp_path / "b")


# -- one writer per run directory ---------------------------------------------------------------

HOLDER = textwrap.dedent("""
    import sys, time
    from raise_plugin.rundir.lock import RunLock
    RunLock(sys.argv[1]).acquire()
    print("locked", flush=True)
    time.sleep(120)
""")


def _hold_in_another_process(path: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True,
                            cwd=Path(__file__).parents[2])
    assert proc.stdout.readline().strip() == "locked"
    return proc


@pytest.fixture(scope="module")
def _finished_template(tmp_path_factory):
    path = tmp_path_factory.mktemp("finished") / "run"
    method = start_run(config(path, budget=8, host_profiler=False), llm=ScriptedLLM(0))
    method.run()
    method.recorder.close()  # this process lets go of the directory
    return path


@pytest.fixture()
def finished_run(_finished_template, tmp_path):
    """A finished 8-sample run of its own (a copy of one run made once for the module)."""
    shutil.copytree(_finished_template, tmp_path / "run")
    return tmp_path / "run"


def test_a_run_directory_in_use_by_another_process_is_refused_naming_it(finished_run, monkeypatch, capsys):
    from raise_plugin import build
    from raise_plugin.cli import main
    from raise_plugin.rundir.lock import RunDirectoryBusy

    holder = _hold_in_another_process(finished_run)
    try:
        with pytest.raises(RunDirectoryBusy, match=f"in use by process {holder.pid}"):
            resume_run(finished_run, llm=ScriptedLLM(0))
        with pytest.raises(RunDirectoryBusy, match=f"in use by process {holder.pid}"):
            start_run(config(finished_run, budget=8), llm=ScriptedLLM(0))
        monkeypatch.setattr(build, "make_llm", lambda llm, seed, task: ScriptedLLM(seed))
        assert main(["resume", str(finished_run), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and f"in use by process {holder.pid}" in err[0]
    finally:
        holder.kill()
        holder.wait()
    # the holder was killed: its lock went with it and the directory is taken over
    method = resume_run(finished_run, llm=ScriptedLLM(0), budget=10)
    method.run()
    check_complete(finished_run, 10)
    lock = json.loads((finished_run / "lock").read_text())
    assert lock["pid"] == os.getpid()


def test_a_run_another_process_writes_is_not_replayed_and_its_lock_is_only_looked_at(finished_run, tmp_path,
                                                                                       capsys):
    # the replay read a journal and records being written: "its 12 recorded answers", then "all 10 ... replayed"
    from raise_plugin.cli import main
    from raise_plugin.llm.recording import CALLS_FILE
    from raise_plugin.rundir.lock import RunDirectoryBusy, lock_holder

    assert lock_holder(finished_run) is None and lock_holder(tmp_path / "nowhere") is None
    holder = _hold_in_another_process(finished_run)
    try:
        lock = (finished_run / "lock").read_bytes()
        assert lock_holder(finished_run).startswith(f"process {holder.pid} (")
        capsys.readouterr()
        assert main(["run", "--llm", f"replay:{finished_run}", "--out", str(tmp_path / "again"), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{finished_run.resolve()} is in use by process {holder.pid} (" in err
        assert err.rstrip().endswith("; replay it when it has ended")
        with pytest.raises(RunDirectoryBusy, match=f"in use by process {holder.pid}.*replay it when it has ended"):
            start_run(config(tmp_path / "again", budget=8, llm=f"replay:{finished_run / CALLS_FILE}"))
        assert not (tmp_path / "again").exists() and (finished_run / "lock").read_bytes() == lock
        assert lock_holder(finished_run).startswith(f"process {holder.pid} (")  # still held: looking took nothing
    finally:
        holder.kill()
        holder.wait()
    assert lock_holder(finished_run) is None and (finished_run / "lock").read_bytes() == lock


def test_a_process_holding_a_run_blocks_another_one_until_it_ends(tmp_path):
    path = tmp_path / "run"
    holder = _hold_in_another_process(path)
    try:
        probe = subprocess.run([sys.executable, "-m", "raise_plugin.cli", "run", "--task", "obp", "--budget", "4",
                                "--allow-no-refresh", "--out", str(path), "--no-progress"], capture_output=True, text=True,
                               cwd=Path(__file__).parents[2], timeout=300)
        assert probe.returncode == 2 and "Traceback" not in probe.stderr
        assert len(probe.stderr.strip().splitlines()) == 1 and f"process {holder.pid}" in probe.stderr
        assert not (path / "config.json").exists()
    finally:
        holder.kill()
        holder.wait()


# -- damaged run directories ----------------------------------------------------------------------

def _cut(path: Path, size: int) -> None:
    path.write_bytes(path.read_bytes()[:size])


def _garble_line(path: Path, number: int) -> None:
    lines = path.read_text().splitlines(keepends=True)
    lines[number - 1] = '{"sample": 3, "program_id": \x00 garbage\n'
    path.write_text("".join(lines))


DAMAGE = {
    "samples cut at 300 bytes": lambda d: _cut(d / "samples.jsonl", 300),
    "samples last line cut short": lambda d: _cut(d / "samples.jsonl", (d / "samples.jsonl").stat().st_size - 40),
    "samples line garbled": lambda d: _garble_line(d / "samples.jsonl", 3),
    "samples missing": lambda d: (d / "samples.jsonl").unlink(),
    "scores cut short": lambda d: _cut(d / "scores.jsonl", (d / "scores.jsonl").stat().st_size - 30),
    "scores garbled": lambda d: (d / "scores.jsonl").write_text("not json\n{\"program_id\": 1}\n"),
    "scores missing": lambda d: (d / "scores.jsonl").unlink(),
    "checkpoint garbled": lambda d: (d / "checkpoint.json").write_text("{\"generation\": 2, \"instance_se"),
    "checkpoint wrong shape": lambda d: (d / "checkpoint.json").write_text('{"instance_set": ["nope"]}'),
    "checkpoint missing": lambda d: (d / "checkpoint.json").unlink(),
    "sample line repeated": lambda d: (d / "samples.jsonl").write_text(
        (d / "samples.jsonl").read_text() + (d / "samples.jsonl").read_text().splitlines(keepends=True)[2]),
    "nominal instance file garbage": lambda d: next((d / "instances").glob("nom-*.npz")).write_bytes(b"garbage"),
    "nominal instance file a pickle": lambda d: _plant_pickle(next((d / "instances").glob("nom-*.npz"))),
}


def _plant_pickle(path: Path) -> None:
    import pickle

    path.write_bytes(pickle.dumps({"items": [1, 2, 3]}))


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_resume_repairs_damaged_records_says_what_it_did_and_finishes(finished_run, damage, monkeypatch, capsys):
    from raise_plugin import build
    from raise_plugin.cli import main

    before = RunLog.load(finished_run)
    adversarial = [i for i in before.checkpoint["instance_set"] if before.instances[i]["origin"] != "nominal"]
    DAMAGE[damage](finished_run)
    monkeypatch.setattr(build, "make_llm", lambda llm, seed, task: ScriptedLLM(seed))
    assert main(["resume", str(finished_run), "--budget", "12", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    warnings = [line for line in err.splitlines() if line.startswith("raise-ahd: warning: ")]
    assert warnings, err
    records = [json.loads(line) for line in (finished_run / "samples.jsonl").read_text().splitlines()]
    assert [r["sample"] for r in records] == list(range(1, 13))  # numbered on, no clash, no torn line
    summary = json.loads((finished_run / "summary.json").read_text())
    assert summary["finished"] and summary["samples"] == 12
    if damage.startswith(("checkpoint", "scores")):
        kept = {e["instance_id"] for e in summary["instance_set"]}
        assert set(adversarial) <= kept  # the adversarial instances found before were not lost


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "config.json").write_text('{"task": "obp", "budg'), "config.json is damaged"),
    (lambda d: (d / "config.json").write_bytes(b"\xff\xfe\x00garbage"), "config.json is damaged"),
    (lambda d: (d / "config.json").write_text("[1, 2]"), "config.json is damaged"),
    (lambda d: (d / "config.json").unlink(), "not a run directory"),
    (lambda d: _recorded(d, budget="many"), "config field 'budget'"),
    (lambda d: _recorded(d, colour=1), "unknown field"),
    (lambda d: _recorded(d, task=None), "config.json lacks 'task', which every run records"),
    (lambda d: _recorded(d, budget=None, seed=None), "config.json lacks 'budget', 'seed', which every run records"),
    (lambda d: (d / "instances" / "index.jsonl").write_text(""), "has lost the record of adversarial instance"),
    (lambda d: next((d / "instances").glob("adv-*.npz")).write_bytes(b"\x00garbage"), "not an instance file"),
    (lambda d: _plant_pickle(next((d / "instances").glob("adv-*.npz"))), "not an instance file"),
    # the selection RNG: a Python traceback (TypeError: state must be a dict), as GP's damaged random state
    (lambda d: _checkpointed(d, rng="x"), "checkpoint.json is damaged (the method's state cannot be read: TypeError"),
])
def test_resume_of_an_unrepairable_directory_says_why_in_one_line(finished_run, damage, message, capsys):
    from raise_plugin.cli import main

    damage(finished_run)
    assert main(["resume", str(finished_run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


def _checkpointed(run_dir: Path, **changes) -> None:
    """The run's ``checkpoint.json`` with ``changes``."""
    checkpoint = json.loads((run_dir / "checkpoint.json").read_text())
    checkpoint.update(changes)
    (run_dir / "checkpoint.json").write_text(json.dumps(checkpoint))


def _recorded(run_dir: Path, **changes) -> None:
    """The run's ``config.json`` with ``changes`` (``None``: the field taken out)."""
    recorded = {**json.loads((run_dir / "config.json").read_text()), **changes}
    (run_dir / "config.json").write_text(json.dumps({k: v for k, v in recorded.items()
                                                     if not (k in changes and v is None)}))


def test_a_config_lacking_a_setting_is_refused_before_anything_is_written(finished_run, capsys):
    """A setting every run records, filled by its default, made another run of it (an OVRP run resumed
    as OBP): refused in one line, and nothing is repaired or written."""
    from raise_plugin.cli import main

    _recorded(finished_run, task=None)
    _garble_line(finished_run / "samples.jsonl", 3)  # a repair a resume would have made
    before = {p: p.read_bytes() for p in finished_run.rglob("*") if p.is_file() and p.name != "lock"}
    assert main(["resume", str(finished_run), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"raise-ahd: error: {finished_run / 'config.json'} lacks 'task', which every run records; the "
                   "run's configuration cannot be rebuilt from the other files: restore it from a copy"]
    after = {p: p.read_bytes() for p in finished_run.rglob("*") if p.is_file() and p.name != "lock"}
    assert after == before


def test_a_config_written_before_later_settings_existed_still_resumes(finished_run):
    """Settings added after the first run directories (the instance seed, allow_no_refresh, the base URL,
    the caps, ...) may be missing from an older run's config.json: their values of that time are taken."""
    from raise_plugin.rundir.reader import ALWAYS_RECORDED

    recorded = json.loads((finished_run / "config.json").read_text())
    (finished_run / "config.json").write_text(json.dumps({k: recorded[k] for k in ALWAYS_RECORDED}))
    method = resume_run(finished_run, llm=ScriptedLLM(1), budget=10)
    method.run()
    assert json.loads((finished_run / "summary.json").read_text())["samples"] == 10


def test_a_checkpoint_rebuilt_after_a_kill_inside_a_refresh_holds_the_set_its_generation_was_recorded_on(tmp_path):
    """Killed at the first generation's end after its refresh recorded an instance and set 1, before
    the generation's record and the first checkpoint: the rebuilt checkpoint holds set 0, so the
    generation's end, made again, records its population on set 0 and its refresh makes set 1 again,
    as the uninterrupted run did (resuming on set 1 had made the refresh's set 2 and every later
    population record one version ahead)."""
    from raise_plugin.rundir.repair import checked_checkpoint

    instances = {"nom-0": {"generation": None, "file": "nom-0.npz"}, "adv-1": {"generation": 1, "file": "adv-1.npz"},
                 "adv-2": {"generation": 2, "file": "adv-2.npz"}}
    sets = [{"version": 0, "refreshes": 0, "members": ["nom-0"]},
            {"version": 1, "refreshes": 1, "members": ["nom-0", "adv-1"]},
            {"version": 2, "refreshes": 2, "members": ["nom-0", "adv-1", "adv-2"]}]
    first = {"generation": 1, "samples": 4, "instance_set": 0, "members": []}
    said = []
    for populations, version in (([], 0), ([first], 1), ([first, {**first, "generation": 2, "samples": 8}], 2)):
        rebuilt = checked_checkpoint(tmp_path, instances, sets, populations, said.append)
        assert rebuilt["instance_set_version"] == version and rebuilt["refreshes"] == version
        assert rebuilt["instance_set"] == sets[version]["members"]
        assert rebuilt["generation"] == (populations[-1]["generation"] if populations else 0)
    assert len(said) == 3 and all("checkpoint.json is missing" in s for s in said)


def test_the_adversary_takes_its_state_from_the_instances_its_refreshes_recorded(finished_run):
    """A checkpoint rebuilt from the records holds no callback's state: the refresh callback takes
    its own from the instances its refreshes recorded, as its checkpoint had it, so its next refresh
    draws the seed and instance id the uninterrupted run's did (it had started again from refresh 1)."""
    from raise_plugin.robust import AdversarialInstanceCallback

    log = RunLog.load(finished_run)
    saved = log.checkpoint["callbacks"]["AdversarialInstanceCallback"]
    timing = ("refreshes", "last_refresh_generation", "last_refresh_samples")
    assert saved["refreshes"] >= 1
    rebuilt = AdversarialInstanceCallback(epsilon=0.002, tau=1)
    rebuilt.state_from_records(log, log.checkpoint["generation"])
    state = rebuilt.state_dict()
    assert {k: state[k] for k in timing} == {k: saved[k] for k in timing}
    assert state["history"] == [{k: h[k] for k in state["history"][0]} for h in saved["history"]]
    first = saved["history"][0]["generation"]  # by the end of the first refresh's generation: that one only
    rebuilt.state_from_records(log, first)
    assert rebuilt.refreshes == 1 and rebuilt.last_refresh_generation == first and len(rebuilt.history) == 1
    before = AdversarialInstanceCallback(epsilon=0.002, tau=1)
    before.state_from_records(log, first - 1)
    assert before.state_dict() == AdversarialInstanceCallback(epsilon=0.002, tau=1).state_dict()


def test_lines_out_of_order_are_read_in_sample_order_and_resume_continues_after_the_last(finished_run):
    path = finished_run / "samples.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[::-1]))  # samplers in threads may write their lines out of order
    log = RunLog.load(finished_run)
    assert [s["sample"] for s in log.samples] == list(range(1, 9)) and not log.repairs
    method = resume_run(finished_run, llm=ScriptedLLM(1), budget=10)
    assert method.samples == 8
    method.run()
    assert sorted(r["sample"] for r in read_jsonl(path)) == list(range(1, 11))


def test_an_emptied_index_of_a_run_with_only_nominal_instances_is_rebuilt(tmp_path):
    method = start_run(config(tmp_path / "run", budget=4, tau=50, host_profiler=False, allow_no_refresh=True),
                       llm=ScriptedLLM(0))
    method.run()
    method.recorder.close()
    (tmp_path / "run" / "instances" / "index.jsonl").write_text("")
    resumed = resume_run(tmp_path / "run", llm=ScriptedLLM(0), budget=6)
    resumed.run()
    index = read_jsonl(tmp_path / "run" / "instances" / "index.jsonl")
    assert [r["kind"] for r in index] == ["instance", "set"]  # the nominal instance and set 0, written again
    check_complete(tmp_path / "run", 6)


def test_a_line_cut_by_a_kill_is_dropped_with_a_repair_note(finished_run):
    _cut(finished_run / "samples.jsonl", (finished_run / "samples.jsonl").stat().st_size - 10)
    log = RunLog.load(finished_run)
    assert len(log.samples) == 7 and any("cut short" in r for r in log.repairs)
    assert not (finished_run / "samples.jsonl.damaged").exists()  # a torn tail is routine, not damage


@pytest.mark.parametrize("aggregation", ["balanced", "regret:min"])
def test_a_regret_run_killed_inside_a_refresh_resumes_with_every_provenance_field(tmp_path, aggregation):
    cfg = config(tmp_path / "run", budget=20, adversary_objective="regret:baselines", aggregation=aggregation)
    run_killed_in_a_refresh(cfg)
    method = resume_run(tmp_path / "run", llm=ScriptedLLM(1))
    assert str(method.evaluation.aggregation) == str(Aggregation.parse(aggregation))
    assert method.evaluation.nominal_count == 1
    method.run()
    log, summary = check_complete(tmp_path / "run", 20)
    adversarial = [m for m in log.instances.values() if m["origin"] == "adversarial"]
    assert adversarial and len(adversarial) == summary["refreshes"]
    for meta in adversarial:
        prov = meta["provenance"]
        assert prov["objective"] == "regret:baselines"
        assert prov["regret"] == pytest.approx(prov["metric"] - prov["reference_metric"])
        assert prov["reference"] in ("BestFit", "FirstFit")
    # the resumed run's best scores what a fresh evaluation on its final set gives
    from raise_plugin.programs import compile_priority
    from tasks import get_task
    fresh = get_task("obp").evaluation(aggregation=aggregation, instances=[
        load_instance(tmp_path / "run" / "instances" / log.instances[e["instance_id"]]["file"])
        for e in summary["instance_set"]])
    fresh.nominal_count = 1
    code = summary["best"]["program"]
    assert summary["best"]["robust_score"] == pytest.approx(fresh.evaluate_program(code, compile_priority(code)))


def test_an_instance_file_is_never_unpickled_and_a_damaged_one_is_one_line(tmp_path):
    """A pickle planted in a run directory (an ``.npz`` of Python objects whose unpickling would run
    code) and a garbage file are refused with one line naming the file; nothing runs."""
    import os

    import numpy as np

    from raise_plugin.rundir.files import RunDirectoryDamaged, load_instance, save_instance

    marker = tmp_path / "ran"

    class Planted:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    save_instance(tmp_path / "good.npz", {"capacity": 200, "items": np.arange(5), "num_items": 5})
    assert load_instance(tmp_path / "good.npz")["capacity"] == 200
    np.savez(tmp_path / "planted.npz", items=np.array([Planted()], dtype=object))
    (tmp_path / "garbage.npz").write_bytes(b"\x00garbage" * 10)
    for name, says in (("planted", "never unpickled"), ("garbage", "not an instance file")):
        with pytest.raises(RunDirectoryDamaged) as caught:
            load_instance(tmp_path / f"{name}.npz")
        assert str(tmp_path / f"{name}.npz") in str(caught.value) and says in str(caught.value)
        assert "\n" not in str(caught.value)
    assert not marker.exists()


def test_re_scores_recorded_before_a_kill_are_not_written_again_by_the_refresh_made_again(tmp_path):
    """A refresh whose re-scores were written before a kill, made again on resume, wrote them twice."""
    from raise_plugin.robust.hooks import ProgramView
    from raise_plugin.rundir.writer import RunDirectory

    p, q = ProgramView("p", "code", -1.0), ProgramView("q", "code", -2.0)
    rescored = [(p, {"a": 1.0}), (p, {"a": 1.0}), (q, {"a": None})]  # p twice: a duplicate member
    before = RunDirectory(tmp_path)
    before.log_scores(1, rescored[:2], ["a"])  # the kill came before q's line
    before.close()
    after = RunDirectory(tmp_path)
    after.log_scores(1, rescored, ["a"])  # the refresh made again: only what was left unwritten
    after.log_scores(2, rescored, ["a"])  # the next refresh: all of it
    after.close()
    written = [(r["program_id"], r["instance_set"]) for r in read_jsonl(tmp_path / "scores.jsonl")]
    assert written == [("p", 1), ("p", 1), ("q", 1), ("p", 2), ("p", 2), ("q", 2)]


def test_a_resumed_run_starts_no_worker_before_it_runs(tmp_path):
    """``resume_run`` started the engine's workers before ``run()``: one neither run nor closed printed
    tracebacks as the interpreter exited (a new run's object, unused, starts none either)."""
    import threading

    start_run(RunConfig(task="ovrp", budget=4, pop_size=2, tau=1, nominal=2, seed=0, out=str(tmp_path / "run"))).run()
    before = set(threading.enumerate())
    method = resume_run(tmp_path / "run", budget=6)
    try:  # the engine's pool serves its workers from threads of its own
        assert not [t.name for t in set(threading.enumerate()) - before if t.name.startswith("raise-sandbox")]
    finally:
        method.close()
    summary = resume_run(tmp_path / "run", budget=6).run()  # and it runs as before
    assert summary["finished"] and summary["samples"] == 6
