"""Compare as independent jobs: the same tables in this process, in local job processes and on a
Dask cluster; run directories shipped back when a worker does not share the disk; an interrupted
compare re-runs only its unfinished jobs; a failed job stops nobody else.

A job in another process writing into a shared ``out`` is the local job processes' case; a worker
that sees ``out`` writing there and one that does not shipping its run back is the unit case of
``TrainJob``; so the Dask cluster runs one compare, the one that ships its runs back."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import threading

import pytest

from raise_plugin.robust.hooks import Callback
from raise_plugin.cli import main
from raise_plugin.config import RunConfig
from raise_plugin.errors import UserError
from raise_plugin.llm import NO_LLM_NOTICE, offline
from raise_plugin.harness.compare import run_compare
from raise_plugin.harness.compare_config import CompareConfig
from raise_plugin.harness.provenance import record_code_version
from raise_plugin.harness.job_place import default_jobs
from raise_plugin.harness.compare_jobs import TrainJob, run_finished
from raise_plugin.harness.run_shipping import client_token, pack_run, unpack_run

OUTPUTS = ("results.csv", "table3_ovrp.md", "table_all_distributions.md", "table_significance.md", "report.md")


def small(out, **where) -> CompareConfig:
    return CompareConfig(task="ovrp", methods=("eoh",), epsilons=(0.002,), budget=4, pop_size=2, seeds=(0, 1),
                         out=str(out), tau=1, inner_population=4, inner_generations=1, suite_instances=1,
                         nominal=1, **where)


@pytest.fixture(scope="module")
def here(tmp_path_factory):
    out = tmp_path_factory.mktemp("here")
    return run_compare(small(out, jobs=1), quiet=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    distributed = pytest.importorskip("distributed")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(tmp_path_factory.mktemp("worker-tmp")))  # scratch of shipped runs
        with distributed.LocalCluster(processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1",
                                      dashboard_address="127.0.0.1:0") as c:
            yield c.scheduler_address.replace("tcp://", "")


def same_outputs(a, b) -> None:
    for name in OUTPUTS:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


@pytest.mark.slow
def test_local_job_processes_write_the_same_tables(here, tmp_path, capfd, caplog, monkeypatch):
    monkeypatch.setattr(offline, "_warned", threading.Event())  # as in a fresh process: the notice not yet said
    again = run_compare(small(tmp_path, jobs=2), quiet=True)
    same_outputs(here.out, again.out)
    assert sorted(r.kind for r in again.jobs) == ["evaluate"] * 7 + ["train"] * 4
    # the compare says the offline sampler's notice once, before its jobs; its job processes say
    # nothing it said (the notice, the sandbox's note)
    assert [r.getMessage() for r in caplog.records].count(NO_LLM_NOTICE) == 1
    assert capfd.readouterr().err == ""


@pytest.mark.slow
def test_a_dask_cluster_writes_the_same_tables_shipping_runs_back(here, cluster, tmp_path):
    shipped = run_compare(small(tmp_path / "shipped", executor=f"dask://{cluster}", ship_runs=True), quiet=True)
    same_outputs(here.out, shipped.out)
    for run in (here.out / "runs").iterdir():
        copy = shipped.out / "runs" / run.name
        assert run_finished(copy) and not (copy / "lock").exists()
        programs = [[json.loads(line)["program"] for line in (d / "samples.jsonl").read_text().splitlines()]
                    for d in (run, copy)]
        assert programs[0] == programs[1]


class StopAfter(Callback):
    def __init__(self, samples: int):
        self.samples = samples

    def on_sample_evaluated(self, method, snapshot, sample) -> None:
        if snapshot.samples >= self.samples:
            method.request_stop("stopped by the test")


def test_an_interrupted_compare_reruns_only_its_unfinished_job(here, tmp_path):
    from raise_plugin.runner import start_run

    out = tmp_path / "cmp"
    shutil.copytree(here.out, out)
    name = "eoh-raise-eps0.002-seed1"
    recorded = json.loads((out / "runs" / name / "config.json").read_text())
    shutil.rmtree(out / "runs" / name)
    (out / "results" / f"{name}.csv").unlink()
    stopped = start_run(RunConfig.from_dict({**recorded, "out": str(out / "runs" / name)}), callbacks=[StopAfter(3)])
    record_code_version(out / "runs" / name)  # as compare's training job records it
    stopped.run()
    assert not run_finished(out / "runs" / name)
    before = {p.name: p.read_bytes() for p in (out / "results").iterdir()}

    again = run_compare(small(out, jobs=1), quiet=True)
    assert [(r.kind, r.name, r.status) for r in again.jobs] == [("train", name, "done"), ("evaluate", name, "done")]
    assert again.jobs[0].outcome.status == "resumed" and again.jobs[0].outcome.samples == 4
    assert run_finished(out / "runs" / name)
    assert {p.name: p.read_bytes() for p in (out / "results").iterdir() if p.name in before} == before
    assert (out / "results" / f"{name}.csv").exists()


def test_a_compare_stopped_while_a_run_was_built_resumes_that_run_and_sets_nothing_aside(tmp_path, monkeypatch,
                                                                                          capsys):
    """A compare killed while a training run was built (its config.json written, its engine starting) left a
    run of no code version: the next compare said it "did not match (trained by code that recorded no
    version ...)" and moved it to superseded/."""
    import raise_plugin.runner as runner

    class Killed(BaseException):
        pass

    start = runner.start_run

    def killed_once_built(run_config, **kw):
        start(run_config, **kw).close()  # what a kill leaves: the run's config.json, no sample
        raise Killed

    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(), budget=4, pop_size=2, seeds=(0,),
                           out=str(tmp_path), suite_instances=1, nominal=1, jobs=1)
    monkeypatch.setattr(runner, "start_run", killed_once_built)
    with pytest.raises(Killed):
        run_compare(config, quiet=True, progress=False)
    monkeypatch.setattr(runner, "start_run", start)
    capsys.readouterr()
    again = run_compare(config, progress=False)
    printed = capsys.readouterr().out
    assert printed.splitlines()[0].startswith(
        f"{tmp_path} holds an earlier compare; reusing 0 of 1 training runs finished, 0 of 4 suite evaluations, "
        "1 interrupted run to resume (")
    assert "compare on ovrp: 1 variant x 1 seed, budget 4" in printed  # was '1 variants x 1 seeds'
    assert not (tmp_path / "superseded").exists() and not again.failures
    assert again.jobs[0].outcome.status == "resumed" and run_finished(tmp_path / "runs" / "eoh-plain-seed0")


@pytest.mark.parametrize("hook", ["on_run_start", "on_run_end"])
def test_ctrl_c_as_a_run_records_its_start_or_end_stops_the_compare_and_the_next_call_resumes_it(tmp_path,
                                                                                                 monkeypatch, hook):
    """Ctrl-C as a training run in the compare's own process fired a hook of its start or end stopped that run
    alone: the compare went on past it (a run of 0 samples, left out of the tables), or ended with `cannot write
    (No such file or directory)` of the run's summary.json."""
    from raise_plugin.robust.recording import RunRecorder

    recorded = getattr(RunRecorder, hook)

    def interrupted(self, method, snapshot):  # as SIGINT arrives in the main thread while the hook runs
        monkeypatch.setattr(RunRecorder, hook, recorded)
        raise KeyboardInterrupt

    monkeypatch.setattr(RunRecorder, hook, interrupted)
    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(), budget=4, pop_size=2, seeds=(0,),
                           out=str(tmp_path), suite_instances=1, nominal=1, jobs=1)
    with pytest.raises(KeyboardInterrupt):
        run_compare(config, quiet=True, progress=False)
    assert not (tmp_path / "results.csv").exists()
    again = run_compare(config, quiet=True, progress=False)
    assert again.jobs[0].outcome.status == "resumed" and again.jobs[0].outcome.samples == 4 and not again.failures
    assert run_finished(tmp_path / "runs" / "eoh-plain-seed0") and {r["method"] for r in again.rows} >= {"EoH"}


def test_a_run_repaired_as_a_compare_resumes_it_is_named_in_one_warning_line_each(tmp_path, capfd):
    """A run's repairs said as bare lines (`samples.jsonl: the last line was cut short (line 6); dropped`),
    no `raise-ahd: warning:` and no word of which of the compare's runs it was."""
    flags = ["compare", "--task", "ovrp", "--methods", "eoh", "--budget", "8", "--pop-size", "2", "--seeds", "1",
             "--epsilons", "", "--suite-instances", "1", "--nominal", "1", "--no-progress", "--out", str(tmp_path)]
    assert main([*flags, "--jobs", "1"]) == 0
    run = tmp_path / "runs" / "eoh-plain-seed0"
    summary = json.loads((run / "summary.json").read_text())
    (run / "summary.json").write_text(json.dumps({**summary, "finished": False}))  # as a kill leaves it
    samples = (run / "samples.jsonl").read_text().splitlines()
    (run / "samples.jsonl").write_text("\n".join(samples[:-1]) + "\n" + samples[-1][:30])
    capfd.readouterr()
    assert main([*flags, "--jobs", "1"]) == 0  # (job processes, reused from compare to compare, say it so too)
    said = [line for line in capfd.readouterr().err.splitlines() if "samples.jsonl" in line]
    assert said[0] == f"raise-ahd: warning: eoh-plain-seed0: samples.jsonl: the last line was cut short (line " \
                      f"{len(samples)}); dropped", said
    assert all(line.startswith("raise-ahd: warning: eoh-plain-seed0: ") for line in said), said


def test_a_training_run_its_disk_stopped_fails_its_job_though_its_summary_could_not_be_written(tmp_path,
                                                                                             monkeypatch):
    """A full disk refused a sample's line and then the run's summary.json: its job was said to have trained,
    and the evaluation it queued ended the whole compare with `raise-ahd: error: No such file or directory:
    .../summary.json`."""
    import errno

    from raise_plugin.durable import WriteFailed
    from raise_plugin.rundir.writer import RunDirectory

    def full(self, *args):
        raise WriteFailed(self.path / "summary.json", OSError(errno.ENOSPC, "No space left on device"))

    log_sample = RunDirectory.log_sample

    def refusing(self, view):
        if view.sample == 3:
            raise WriteFailed(self.path / "samples.jsonl", OSError(errno.ENOSPC, "No space left on device"))
        log_sample(self, view)

    monkeypatch.setattr(RunDirectory, "write_summary", full)
    monkeypatch.setattr(RunDirectory, "log_sample", refusing)
    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(), budget=4, pop_size=2, seeds=(0,),
                           out=str(tmp_path), suite_instances=1, nominal=1, jobs=1)
    result = run_compare(config, quiet=True, progress=False)
    assert [(r.kind, r.label) for r in result.failures] == [("train", "EoH, seed 0")]
    error = result.failures[0].error
    assert error.startswith("the run stopped: ") and "samples.jsonl: cannot write (No space left on device)" in error
    assert result.failures[0].retry_helps


def test_a_failed_job_costs_only_its_own_cells_and_says_whether_a_retry_can_help(tmp_path, monkeypatch):
    import raise_plugin.runner as runner
    from raise_plugin.harness.compare import failure_line

    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(), budget=4, pop_size=2, seeds=(0, 1),
                           out=str(tmp_path), suite_instances=1, nominal=1, jobs=1)
    start = runner.start_run

    def fail_seed_1(run_config, **kw):
        if run_config.seed == 1:
            raise UserError("no argument of priority has one value per candidate")
        return start(run_config, **kw)

    monkeypatch.setattr(runner, "start_run", fail_seed_1)
    said = io.StringIO()
    with contextlib.redirect_stdout(said):
        result = run_compare(config, progress=False)  # no exception: what finished is a result
    assert [(r.kind, r.label) for r in result.failures] == [("train", "EoH, seed 1")]
    # the count of jobs loses the evaluation a failed training run never queues: it ended at [6/7]
    counted = [line for line in said.getvalue().splitlines() if line.startswith("[")]
    assert counted[-1].startswith("[6/6] finished") and "/7]" not in counted[-1], counted
    assert run_finished(tmp_path / "runs" / "eoh-plain-seed0")
    table = result.tables["table_all_distributions"]
    assert "EoH" in table.methods and (table.seeds[table.methods.index("EoH")] == 1).all()
    # the title named the seeds planned as if every row had them
    assert table.title.endswith("(eoh, budget 4, 2 seeds planned, fewer in rows whose jobs failed)"), table.title
    report = (tmp_path / "report.md").read_text()
    assert "## Failed jobs" in report and "| train EoH, seed 1 | no argument of priority has one value per " \
                                          "candidate | cannot help (the settings or the task cause it) |" in report
    line = failure_line(result.failures, len(result.jobs))
    assert "\n" not in line and line.startswith("1 of 6 compare jobs failed (train EoH, seed 1: no argument")
    assert line.endswith("running the same command again cannot help these") and "retry them" not in line
    assert (tmp_path / "convergence.png").exists() and (tmp_path / "table_all_distributions.md").exists()


def test_a_compare_whose_every_training_job_fails_says_why_where_its_tables_would_be_empty(tmp_path):
    # a time limit that fails the task's own baseline fails every training job and leaves every test instance
    # invalid: the significance table and the runs table were a header with no row and no word of why, and a
    # cell with no valid instance showed a bare — under a footnote about § cells
    config = CompareConfig(task="ovrp", methods=("eoh",), epsilons=(), budget=4, pop_size=2, seeds=(0,),
                           out=str(tmp_path), suite_instances=1, nominal=1, jobs=1, timeout=0.0001)
    result = run_compare(config, quiet=True)
    assert [(r.kind, r.label) for r in result.failures] == [("train", "EoH, seed 0")]
    significance = (tmp_path / "table_significance.md").read_text()
    assert "No comparison: no method has results on the test suite" in significance and "| Method |" not in significance
    latex = (tmp_path / "table_significance.tex").read_text()
    assert "No comparison" in latex and "tabular" not in latex
    report = (tmp_path / "report.md").read_text()
    runs = report.split("## Runs", 1)[1]
    assert "No run started: every training job failed before its run began (Failed jobs, above, says why)." in runs
    assert "| variant |" not in runs
    table = (tmp_path / "table_all_distributions.md").read_text()
    assert "| SP-Insert | — § | — § |" in table and "(— where none is)" in table


def test_a_run_that_could_not_go_on_fails_its_job_and_a_retry_may_help(tmp_path, capsys, monkeypatch):
    """A training run whose LLM endpoint did not answer (a closed port here) stopped, and its job
    was said to have "trained, 0 samples, best none": the compare exited 0, with the LLM's failure
    nowhere. The job now fails with the run's reason, a retry may help (the run resumes), and the
    compare exits 1. Its compare.json held the base URL's ``key`` in clear: it is hidden there too."""
    import socket

    with socket.socket() as probe:  # a port just freed: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-files")
    code = main(["compare", "--task", "ovrp", "--llm", "openai:gpt-test", "--base-url",
                 f"http://127.0.0.1:{port}/v1?key=tok-not-for-files", "--budget", "8", "--pop-size", "4",
                 "--seeds", "1", "--epsilons", "", "--suite-instances", "1", "--no-progress",
                 "--out", str(tmp_path / "c")])
    out, err = capsys.readouterr()
    assert code == 1, err
    failed = [line for line in out.splitlines() if "FAILED" in line]
    assert len(failed) == 1 and f"the run stopped: cannot reach the LLM at http://127.0.0.1:{port}/v1?key=***" \
        in failed[0], out
    assert err.strip().splitlines()[-1].endswith("run the same command again to retry them"), err
    report = (tmp_path / "c" / "report.md").read_text()
    assert "may help: run the same command again" in report
    for path in (tmp_path / "c").rglob("*"):
        if path.is_file():
            text = path.read_bytes()
            assert b"tok-not-for-files" not in text and b"sk-not-for-files" not in text, path
    assert json.loads((tmp_path / "c" / "compare.json").read_text())["base_url"] == \
        f"http://127.0.0.1:{port}/v1?key=***"


def test_a_training_run_another_process_writes_fails_its_job_and_a_retry_may_help(tmp_path, capsys):
    """A run directory of the compare that a `raise-ahd resume` of its own held: the job failed, and the
    compare said running it again could not help, as if its settings were the cause."""
    import subprocess
    import sys
    from pathlib import Path

    held = tmp_path / "c" / "runs" / "eoh-plain-seed0"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom raise_plugin.rundir.lock import RunLock\n"
                               "RunLock(sys.argv[1]).acquire()\nprint('locked', flush=True)\ntime.sleep(120)",
                               str(held)], stdout=subprocess.PIPE, text=True, cwd=Path(__file__).parents[2])
    try:
        assert holder.stdout.readline().strip() == "locked"
        code = main(["compare", "--task", "ovrp", "--budget", "4", "--pop-size", "2", "--seeds", "1", "--epsilons", "",
                     "--suite-instances", "1", "--nominal", "1", "--jobs", "1", "--no-progress",
                     "--out", str(tmp_path / "c")])
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and f"is in use by process {holder.pid}" in err[-1], err
    assert err[-1].endswith("run the same command again to retry them"), err
    assert "may help: run the same command again" in (tmp_path / "c" / "report.md").read_text()


def test_a_job_process_says_whether_a_retry_helps():
    """In a job process every failure came back as a ``UserError``, which a retry cannot help: a
    run that stopped (its endpoint down) was advised not to be run again."""
    import pickle

    from raise_plugin.harness.compare_jobs import RunStopped
    from raise_plugin.harness.job_place import JobFailed, _execute
    from raise_plugin.rundir.lock import RunDirectoryBusy

    class Job:
        def __init__(self, error):
            self.error = error

        def execute(self):
            raise self.error

    for error, helps, said in ((RunStopped("the run stopped: the endpoint went away"), True,
                                "the run stopped: the endpoint went away"),
                               (RunStopped("the run stopped: replay x: a prompt it lacks", retry_helps=False), False,
                                "the run stopped: replay x: a prompt it lacks"),
                               (OSError("disk"), True, "OSError: disk"),
                               (RunDirectoryBusy("runs/a is in use by process 1"), True,
                                "runs/a is in use by process 1"),
                               (UserError("methods: unknown 'x'"), False, "methods: unknown 'x'")):
        with pytest.raises(JobFailed) as caught:
            _execute(Job(error))
        again = pickle.loads(pickle.dumps(caught.value))  # as it comes back from a job process
        assert (str(again), again.retry_helps) == (said, helps)


def test_a_job_placed_once_the_dask_scheduler_is_gone_fails_saying_so(monkeypatch):
    """A compare whose scheduler went away stopped at the job it placed as Dask's client closed (it waited
    for ever), or ended at one placed after, in 'Client is closed. Can't send update-graph message.'"""
    import socket
    import subprocess
    import sys
    import time

    pytest.importorskip("distributed")
    from raise_plugin.engine.executors import foreign
    from raise_plugin.harness.job_place import JobFailed, JobPlace

    monkeypatch.setattr(foreign, "CONNECT_SECONDS", 1.0)  # how long Dask's client tries to reconnect
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scheduler = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                  "--port", str(port), "--no-dashboard"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and scheduler.poll() is None
                time.sleep(0.2)
        place = JobPlace("dask", address=f"127.0.0.1:{port}")
    finally:
        scheduler.kill()
        scheduler.wait()
    try:
        deadline = time.monotonic() + 30
        while place._pool.client.status != "closed":
            assert time.monotonic() < deadline
            time.sleep(0.1)
        future = place.submit(object())
        with pytest.raises(JobFailed, match=rf"^the connection to the Dask scheduler at tcp://127.0.0.1:{port} "
                                            rf"was lost$") as caught:
            future.result(timeout=5)
        assert caught.value.retry_helps
    finally:
        place.close()


def test_a_worker_that_does_not_see_out_ships_the_run_directory_back(tmp_path, monkeypatch):
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "worker"))
    (tmp_path / "worker").mkdir()
    client = tmp_path / "client"
    client.mkdir()
    token = client_token(client)
    assert client_token(client) == token  # kept for the next attempt
    run = tuple(sorted(dict(task="ovrp", robust=False, budget=4, pop_size=2, nominal=1, seed=0,
                            validation_trace=False).items()))
    seen = TrainJob("r", "r", run, str(client), token, workers=1).execute()
    assert seen.archive is None and run_finished(client / "runs" / "r")
    elsewhere = TrainJob("r", "r", run, str(tmp_path / "not-the-client"), token, workers=1).execute()
    assert elsewhere.archive is not None and not (tmp_path / "not-the-client").exists()
    (tmp_path / "copy").mkdir()
    (tmp_path / "copy" / "r").mkdir()
    (tmp_path / "copy" / "r" / "partial").write_text("left by an earlier attempt")
    unpack_run(elsewhere.archive, tmp_path / "copy" / "r")
    assert run_finished(tmp_path / "copy" / "r") and not (tmp_path / "copy" / "r" / "partial").exists()
    assert "lock" not in {p.name for p in (tmp_path / "copy" / "r").iterdir()}
    assert pack_run(tmp_path / "copy" / "r")  # a shipped run ships again


def test_default_jobs_is_half_the_cores():
    assert [default_jobs(c) for c in (1, 2, 3, 4, 16)] == [1, 1, 1, 2, 8]


@pytest.mark.parametrize("flags, field", [
    (["--jobs", "0"], "jobs"), (["--executor", "ray://x"], "executor"), (["--llm", "nope"], "nope"),
    # job settings the executor would ignore: refused, not run otherwise than asked
    (["--executor", "serial", "--jobs", "2"], "jobs: 2 jobs at once with --executor serial"),
    (["--executor", "dask://local", "--jobs", "2"], "jobs: 2 jobs at once with --executor dask://local"),
    (["--executor", "serial", "--workers", "2"], "workers: 2 with --executor serial"),
    (["--executor", "process:2", "--workers", "3"], "workers: 3 with --executor process:2"),
    # a scheduler that does not answer (a closed port here): refused before compare.json is written
    (["--executor", "dask://127.0.0.1:1"], "no Dask scheduler answers at 127.0.0.1:1")])
def test_bad_job_settings_are_one_line_before_any_job(flags, field, tmp_path, capsys):
    code = main(["compare", "--out", str(tmp_path / "c"), *flags])
    err = capsys.readouterr().err
    assert code == 2 and field in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("where", [{"executor": "serial", "jobs": 1, "workers": 1},
                                   {"executor": "process:2", "workers": 2, "jobs": 2},
                                   {"executor": "dask://local", "workers": 2}])
def test_job_settings_that_agree_with_the_executor_are_taken(where, tmp_path):
    config = small(tmp_path / "c", **where)
    assert {name: getattr(config.study, name) for name in where} == where


def test_a_replay_its_recording_cannot_answer_fails_its_job_and_no_retry_is_advised(tmp_path, capsys):
    """A compare replaying a run with settings of its own asked prompts the recording lacks: its
    training jobs failed "(run again, it resumes)", and the compare advised running it again, which
    failed the same way."""
    recorded = tmp_path / "recorded"
    tiny = ["--task", "ovrp", "--budget", "8", "--pop-size", "2", "--nominal", "1", "--no-progress"]
    assert main(["run", *tiny, "--no-robust", "--no-validation-trace", "--out", str(recorded)]) == 0
    capsys.readouterr()
    args = ["compare", *tiny, "--seeds", "2", "--epsilons", "", "--suite-instances", "1", "--llm",
            f"replay:{recorded}", "--out", str(tmp_path / "c")]
    for _ in range(2):  # the same again: resumed, they stop where they stopped
        assert main(args) == 1
        out, err = capsys.readouterr()
        failed = [line for line in out.splitlines() if "FAILED" in line]
        assert len(failed) == 1 and "is not in the recording" in failed[0] and "a retry cannot help" in failed[0], out
        assert err.strip().splitlines()[-1].endswith("running the same command again cannot help these"), err
    assert "cannot help" in (tmp_path / "c" / "report.md").read_text()
