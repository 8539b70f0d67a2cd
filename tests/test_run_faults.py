"""A run directory under faults: kill -9 at any write, a full disk, SIGTERM and SIGINT, workers'
folders left by killed engines. Each case runs the command line in a child process, as a user
would, and resumes it to the run an uninterrupted process records."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# what OBP's defaults run (the regret objective, early rejection under min) on OVRP, whose evaluations take
# milliseconds where OBP's take a second, with a small inner search: the run refreshes twice, rejects
# samples early, and the matrix below runs it a dozen times
RUN = ["run", "--task", "ovrp", "--adversary-objective", "regret:SP-Insert", "--aggregation", "regret:SP-Insert:min",
       "--budget", "8", "--pop-size", "4", "--tau", "1", "--nominal", "1", "--seed", "0",
       "--inner-population", "4", "--inner-generations", "1", "--no-progress"]


def at_durable_write(action: str) -> str:
    """A child's code that does ``action`` right after the process's N-th durable write (fsync; N is its first
    argument; ``me`` is its pid, ``count[0]`` the writes so far)."""
    return textwrap.dedent("""
        import os, signal, sys
        n, me, real, count = int(sys.argv[1]), os.getpid(), os.fsync, [0]

        def fsync(fd):
            real(fd)
            if os.getpid() == me:
                count[0] += 1
                if count[0] == n:
                    ACTION

        os.fsync = fsync
    """).replace("ACTION", action)


def patched_cli(patch: str, *args: str, out, cwd: Path = ROOT, env: dict | None = None):
    """``RUN --out OUT`` in a child process (a ``CompletedProcess``) after ``patch`` ran there, which reads its
    own ``args`` from ``sys.argv[1:]``."""
    tail = f"from raise_plugin.cli import main\nsys.exit(main(sys.argv[{1 + len(args)}:]))\n"
    script = textwrap.dedent(patch) + "\n" + tail
    return subprocess.run([sys.executable, "-c", script, *args, *RUN, "--out", str(out)], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=300)


# the command line, killed by SIGKILL right after the engine's N-th durable write when N > 0; with N == 0 it runs
# to the end and prints how many durable writes it made
KILLER = at_durable_write("os.kill(me, signal.SIGKILL)") + textwrap.dedent("""
    from raise_plugin.cli import main
    status = main(sys.argv[2:])
    print("durable writes", count[0], file=sys.stderr)
    sys.exit(status)
""")


def cli(*args: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "raise_plugin.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=300, **kwargs)


def killed_at(n: int, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", KILLER, str(n), *RUN, "--out", str(out)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)


def samples(run_dir: Path) -> list[tuple]:
    return [(r["sample"], r["program_id"], r["score"], r["metrics"])
            for r in map(json.loads, (run_dir / "samples.jsonl").read_text().splitlines())]


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_record(run_dir: Path) -> dict:
    """What a resumed run must share with the uninterrupted one: its samples, the prompts it sent,
    its populations, the instances it found and its re-scores."""
    return {"samples": samples(run_dir), "prompts": [e["hash"] for e in lines(run_dir / "llm_calls.jsonl")],
            "populations": lines(run_dir / "population.jsonl"), "scores": lines(run_dir / "scores.jsonl"),
            "instances": [r["instance_id"] for r in lines(run_dir / "instances" / "index.jsonl")
                          if r.get("kind") == "instance"]}


def work(run_dir: Path) -> dict:
    summary = json.loads((run_dir / "summary.json").read_text())
    return {"evaluations": summary["evaluations"], **{k: summary["compute"][k] for k in (
        "outer_evaluations", "inner_evaluations", "rescore_evaluations")}}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    out = tmp_path_factory.mktemp("uninterrupted") / "run"
    done = killed_at(0, out)
    assert done.returncode == 0, done.stderr[-2000:]
    writes = int(done.stderr.strip().splitlines()[-1].split()[-1])
    summary = json.loads((out / "summary.json").read_text())  # what the faults below cut into
    assert summary["refreshes"] == 2 and summary["compute"]["rejected_early"] > 0, summary
    return out, writes


def _moments(writes: int, full_size: bool) -> list[int]:
    # the lock (before the config), the config (before any instance), the first samples, inside the
    # first refresh (its set recorded, its generation's record and first checkpoint not), inside a later
    # one, the last writes; in the small size the lock, the first refresh and the last writes
    middle = {1, writes // 2, writes - 1}
    return sorted(middle | {2, writes // 3, (2 * writes) // 3} if full_size else middle)


def killed_and_resumed(n: int, out: Path, reference: Path) -> None:
    """Kill the run after its ``n``-th durable write into ``out`` and resume it: it must become
    ``reference``, the uninterrupted run (an AssertionError says how it did not)."""
    killed = killed_at(n, out)
    assert killed.returncode == -signal.SIGKILL, (n, killed.stderr[-2000:])
    resumed = cli("resume", str(out), "--no-progress")
    if resumed.returncode == 2 and "holds no run yet" in resumed.stderr:  # killed before its config
        assert n <= 2 and len(resumed.stderr.strip().splitlines()) == 1, resumed.stderr
        resumed = cli(*RUN, "--out", str(out))  # and the command it names starts it in that folder
    assert resumed.returncode == 0, (n, resumed.stderr[-2000:])
    assert "Traceback" not in resumed.stderr
    now, then = run_record(out), run_record(reference)
    assert now == then, (n, [k for k in then if now[k] != then[k]])
    # the work counters never lose work done before the kill (a refresh cut short is done again)
    now, then = work(out), work(reference)
    assert now["outer_evaluations"] == then["outer_evaluations"], (n, now, then)
    assert all(now[k] >= then[k] for k in then), (n, now, then)


@pytest.mark.slow
def test_a_run_killed_after_any_write_resumes_to_the_uninterrupted_run(uninterrupted, tmp_path, full_size):
    reference, writes = uninterrupted
    assert writes >= 20  # lock, config, instances, samples, populations, checkpoints, journals
    for n in _moments(writes, full_size):
        killed_and_resumed(n, tmp_path / f"killed-{n}", reference)


def _mount_small_disk(where: Path, size: str) -> bool:
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True)
    return done.returncode == 0


@pytest.mark.slow
def test_a_run_on_a_full_disk_stops_in_one_line_and_resumes_once_space_is_freed(uninterrupted, tmp_path):
    reference, _ = uninterrupted
    disk = tmp_path / "disk"
    if not _mount_small_disk(disk, "100k"):
        pytest.skip("mounting a small tmpfs needs root")
    try:
        out = disk / "run"
        started = time.monotonic()
        full = cli(*RUN, "--out", str(out))
        took = time.monotonic() - started
        errors = [line for line in full.stderr.splitlines() if line.startswith("raise-ahd: error:")]
        assert full.returncode == 3 and len(errors) == 1, full.stderr[-2000:]
        assert "No space left on device" in errors[0] and str(out) in errors[0], errors
        assert "Traceback" not in full.stderr and took < 60
        recorded = samples(out)
        assert 0 < len(recorded) < 8
        subprocess.run(["mount", "-o", "remount,size=8m", str(disk)], check=True)
        resumed = cli("resume", str(out), "--no-progress")
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert samples(out)[:len(recorded)] == recorded  # nothing written before the disk filled was lost
        assert samples(out) == samples(reference)
        # the request journal: every request once, each sent one answered
        events = [json.loads(line) for line in (out / "llm_requests.jsonl").read_text().splitlines()]
        sent = [e["id"] for e in events if e["e"] == "sent"]
        assert len(sent) == len(set(sent)) == sum(e["e"] == "done" for e in events)
        usage = json.loads((out / "llm_usage.json").read_text())["total"]
        assert usage["requests"] == len(sent) <= 8 + 2  # at most the answers the full disk could not keep
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


# the command line killed as it is about to call RunDirectory.WHAT the first time
KILLED_BEFORE = textwrap.dedent("""
    import os, signal, sys
    from raise_plugin.rundir.writer import RunDirectory
    what = sys.argv[1]

    def kill(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(RunDirectory, what, kill)
""")


@pytest.mark.slow
@pytest.mark.parametrize("what", ["log_population", "write_checkpoint"])
def test_a_run_killed_before_its_first_checkpoint_resumes_with_no_warning(what, uninterrupted, tmp_path):
    # the first generation's refresh recorded, its population (or checkpoint) not yet: "warning: checkpoint.json is
    # missing; rebuilt ... (the random states of selection and search start afresh)", as for a damaged directory
    reference, _ = uninterrupted
    out = tmp_path / "run"
    killed = patched_cli(KILLED_BEFORE, what, out=out)
    assert killed.returncode == -signal.SIGKILL and not (out / "checkpoint.json").exists()
    assert len(lines(out / "population.jsonl")) == (what == "write_checkpoint")
    resumed = cli("resume", str(out), "--no-progress")
    assert resumed.returncode == 0 and "warning" not in resumed.stderr, resumed.stderr[-2000:]
    assert run_record(out) == run_record(reference)


# the command line on a disk that refuses samples.jsonl's line of sample N (as a full disk does) and takes
# what is written after it (a shorter line, once the refused one is cut off)
REFUSER = textwrap.dedent("""
    import errno, sys
    from raise_plugin.durable import WriteFailed
    from raise_plugin.rundir.writer import RunDirectory
    n, log_sample = int(sys.argv[1]), RunDirectory.log_sample

    def refusing(self, view):
        if view.sample == n:
            raise WriteFailed(self.path / "samples.jsonl", OSError(errno.ENOSPC, "No space left on device"))
        log_sample(self, view)

    RunDirectory.log_sample = refusing
""")


@pytest.mark.slow
def test_a_sample_the_disk_refused_is_named_by_no_later_record_and_resumes_without_repair(uninterrupted, tmp_path):
    # the run wrote its generation's population after the refused sample, naming it: the resume
    # warned of damage ("population.jsonl: 1 generation record(s) name samples missing ...") and kept a .damaged copy
    reference, _ = uninterrupted
    out = tmp_path / "run"
    full = patched_cli(REFUSER, "4", out=out)
    assert full.returncode == 3 and "samples.jsonl: cannot write (No space left on device)" in full.stderr
    recorded = {r["program_id"] for r in lines(out / "samples.jsonl")}
    assert len(recorded) == 3
    for population in lines(out / "population.jsonl"):
        assert {m["program_id"] for m in population["members"]} <= recorded, population
    resumed = cli("resume", str(out), "--no-progress")
    assert resumed.returncode == 0 and "warning" not in resumed.stderr, resumed.stderr[-2000:]
    assert not list(out.glob("*.damaged"))
    assert run_record(out) == run_record(reference)


# the command line on a disk that turns read-only as the host's log of sample N is written
READ_ONLY_HOST_LOG = textwrap.dedent("""
    import errno, sys
    from llm4ad.method.eoh import EoHProfiler
    n, write_json = int(sys.argv[1]), EoHProfiler._write_json

    def refusing(self, function, **kwargs):
        if type(self)._num_samples >= n:
            raise OSError(errno.EROFS, "Read-only file system", self._samples_json_dir + "/samples_1~200.json")
        write_json(self, function, **kwargs)

    EoHProfiler._write_json = refusing
""")


@pytest.mark.slow
def test_a_host_log_the_disk_refuses_stops_the_run_naming_it_and_resume_continues_it(uninterrupted, tmp_path):
    # the host's loop swallowed the error with the sample: ten samples later the run stopped with "10 LLM requests
    # in a row gave no usable program", and the disk went unnamed
    reference, _ = uninterrupted
    out = tmp_path / "run"
    refused = patched_cli(READ_ONLY_HOST_LOG, "3", out=out)
    errors = [line for line in refused.stderr.splitlines() if line.startswith("raise-ahd: error:")]
    assert refused.returncode == 3 and len(errors) == 1, refused.stderr[-2000:]
    assert "samples_1~200.json: cannot write (Read-only file system)" in errors[0] and "usable" not in errors[0]
    resumed = cli("resume", str(out), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert run_record(out) == run_record(reference)


# the command line whose run directory (its last argument) is renamed to NEW right after its N-th durable write
RENAMER = at_durable_write("os.rename(sys.argv[-1], sys.argv[2])")


@pytest.mark.slow
@pytest.mark.parametrize("n", [12, 20])
def test_a_run_directory_renamed_under_the_run_stops_it_in_one_line_and_resumes_under_its_new_name(
        n, uninterrupted, tmp_path):
    # its host's logs, opened by name, were not found: the host's loop swallowed that with each sample and the run
    # stopped "10 LLM requests in a row gave no usable program"; then its page's reading of the folder ended the
    # command with exit 2, `raise-ahd: error: RUN is not a run directory (no config.json)`, the stop unsaid
    reference, _ = uninterrupted
    out, new = tmp_path / "run", tmp_path / "renamed"
    done = patched_cli(RENAMER, str(n), str(new), out=out)
    errors = [line for line in done.stderr.splitlines() if line.startswith("raise-ahd: error:")]
    assert done.returncode == 3 and len(errors) == 1, done.stderr[-2000:]
    assert errors[0].startswith(f"raise-ahd: error: the run stopped: {out}/") and "No such file or directory" in \
        errors[0] and "usable" not in errors[0], errors
    assert "report          not written" in done.stdout
    resumed = cli("resume", str(new), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert run_record(new) == run_record(reference)


# the command line whose working directory is removed (rmdir) right after its N-th durable write
CWD_REMOVER = at_durable_write("os.rmdir(here)") + "here = os.getcwd()\n"


@pytest.mark.slow
def test_a_run_whose_working_directory_is_removed_finishes_into_its_run_directory_elsewhere(uninterrupted, tmp_path):
    # the host's log was closed by a path resolved against the removed directory: `raise-ahd: error: No such
    # file or directory`, exit 1, after the run had finished, and no summary printed
    reference, _ = uninterrupted
    here = tmp_path / "here"
    here.mkdir()
    done = patched_cli(CWD_REMOVER, "10", out="../run", cwd=here, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert not here.exists()
    assert done.returncode == 0 and "error" not in done.stderr, done.stderr[-2000:]
    assert "report          ../run/report.html" in done.stdout
    assert run_record(tmp_path / "run") == run_record(reference)


def test_a_write_the_disk_refuses_leaves_the_file_as_it_was_and_says_so_in_one_line(tmp_path):
    """RLIMIT_FSIZE makes the kernel refuse a write past a size (EFBIG), as a full disk refuses one
    (ENOSPC): the journal keeps its whole lines, nothing torn, and the error names the file."""
    code = textwrap.dedent("""
        import resource, sys
        from raise_plugin.durable import AppendLog, WriteFailed, replace_file
        log = AppendLog(sys.argv[1])
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
        written = 0
        try:
            while True:
                log.append('{"line": %d, "pad": "%s"}' % (written, "x" * 60))
                written += 1
        except WriteFailed as exc:
            print(written, exc)
        try:
            replace_file(sys.argv[1] + ".json", lambda fh: fh.write(b"y" * 5000))
        except WriteFailed as exc:
            print(exc)
    """)
    path = tmp_path / "journal.jsonl"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT)
    first, second = done.stdout.strip().splitlines()
    written = int(first.split()[0])
    refused = ('{"line": %d, "pad": "%s"}\n' % (written, "x" * 60)).encode()
    assert written > 0 and path.stat().st_size <= 1000 < path.stat().st_size + len(refused)
    lines = path.read_text().splitlines()
    assert len(lines) == written and all(json.loads(line)["line"] == i for i, line in enumerate(lines))
    assert path.read_bytes().endswith(b"\n")  # the refused line left nothing behind
    assert str(path) in first and "File too large" in first and "resume" in first
    assert str(path) + ".json" in second and not Path(str(path) + ".json").exists()
    assert not list(tmp_path.glob("*.tmp"))  # the refused replacement's temporary file is gone


def _stop_with(sig: int, out: Path, after_samples: int, group) -> tuple[subprocess.CompletedProcess, float]:
    """The run stopped by ``sig`` once ``after_samples`` samples are recorded: sent to its process
    alone, or to its whole process group (``group``), as a shell's Ctrl-C, ``timeout``, systemd and
    batch schedulers send it, which reaches the engine's fork server and resource tracker too
    (``"twice"``: to the process, then to the group, as ``timeout`` and systemd do)."""
    before = set(Path(tempfile.gettempdir()).glob("raise-sandbox-*"))
    proc = subprocess.Popen([sys.executable, "-m", "raise_plugin.cli", *RUN, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL), start_new_session=bool(group))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        path = out / "samples.jsonl"
        if path.exists() and path.read_text().count("\n") >= after_samples:
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before the signal"
    sent = time.monotonic()
    if group == "twice":  # as GNU timeout and systemd send it: to the process, then to its group
        proc.send_signal(sig)
        time.sleep(0.05)  # the first heard (the same signal delivered twice before is merged into one)
    os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    left = [p for p in set(Path(tempfile.gettempdir()).glob(f"raise-sandbox-{proc.pid}-*")) - before]
    assert not left, left
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), took


@pytest.mark.slow
# SIGTERM to the whole group (the fork server, once killed so, took the workers with it: a refresh under way
# was recorded as skipped and never redone; tests/engine/workers/test_stop_signals.py holds the moment),
# SIGINT to the run's process alone
# and SIGTERM as `timeout` sends it, to the process and then its group: one stop, not a second signal
@pytest.mark.parametrize("sig, group", [(signal.SIGTERM, True), (signal.SIGINT, False), (signal.SIGTERM, "twice")],
                         ids=["SIGTERM-to-the-group", "SIGINT-to-the-process", "SIGTERM-as-timeout-sends-it"])
def test_sigterm_and_sigint_stop_a_run_cleanly_and_resume_continues_it_exactly(sig, group, uninterrupted, tmp_path):
    out = tmp_path / "run"
    stopped, took = _stop_with(sig, out, after_samples=3, group=group)
    assert stopped.returncode == 128 + sig and took < 30, stopped.stderr[-2000:]
    said = [line for line in stopped.stderr.splitlines()  # what the run says of itself (not the machine's warnings)
            if line.startswith("raise-ahd:") and not line.startswith(("raise-ahd: warning:", "raise-ahd: note:"))]
    assert len(said) == 1 and signal.Signals(sig).name in said[0] and "resume" in said[0], said
    assert "Traceback" not in stopped.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert not summary["finished"] and signal.Signals(sig).name in summary["stopped"]
    assert not _skipped(out)  # a stop skips no refresh: a refresh it cuts short is redone by resume
    resumed = cli("resume", str(out), "--no-progress")
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    reference, _ = uninterrupted
    assert samples(out) == samples(reference)
    now, then = work(out), work(reference)
    assert now["outer_evaluations"] == then["outer_evaluations"] and all(now[k] >= then[k] for k in then)


def _skipped(run_dir: Path) -> list:
    """The refreshes the run's checkpoint records as skipped (the adversary's state); none before its
    first checkpoint (a stop that comes in the first generation, as it may on a loaded machine)."""
    found = []
    if not (run_dir / "checkpoint.json").exists():
        return found

    def walk(value):
        if isinstance(value, dict):
            found.extend(value.get("skipped") or [])
            for inner in value.values():
                walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(json.loads((run_dir / "checkpoint.json").read_text()))
    return found


def test_the_folders_of_workers_whose_engine_was_killed_are_swept_at_the_next_start(tmp_path, monkeypatch):
    from raise_plugin.engine.workers import handle as worker_handle

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f"{worker_handle.WORKDIR_PREFIX}{dead.pid}-abc"
    alive = tmp_path / f"{worker_handle.WORKDIR_PREFIX}{os.getppid()}-def"
    foreign = tmp_path / f"{worker_handle.WORKDIR_PREFIX}notapid"
    for folder in (stale, alive, foreign):
        (folder / "inside").mkdir(parents=True)
    monkeypatch.setattr(worker_handle, "_swept", [])
    worker_handle.sweep_stale_workdirs()
    assert not stale.exists() and alive.exists() and foreign.exists()


if __name__ == "__main__" and sys.argv[1:2] == ["--every-write"]:
    # the matrix at every durable write of the run, not only the test's moments (about 20 s a write);
    # flags after it are added to the run's (a later flag wins), e.g. another method:
    #     .venv/bin/python tests/test_run_faults.py --every-write --method reevo
    RUN = RUN + sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        reference = Path(tmp) / "uninterrupted"
        done = killed_at(0, reference)
        count = int(done.stderr.strip().splitlines()[-1].split()[-1])
        failed = []
        for n in range(1, count):
            try:
                killed_and_resumed(n, Path(tmp) / f"killed-{n}", reference)
                print(f"killed after write {n} of {count}: resumed to the uninterrupted run", flush=True)
            except AssertionError as exc:
                failed.append(n)
                print(f"killed after write {n} of {count}: {exc}", flush=True)
    sys.exit(f"{len(failed)} of {count - 1} kill points differ: {failed}" if failed else 0)


def test_a_second_interrupt_stops_a_run_at_once_while_its_inner_search_runs(tmp_path):
    """The second Ctrl-C, which says it stops at once, waited for the whole inner search (here one of
    100000 generations): the run's exit waited on the hook the search held. The search is given up
    instead, and its refresh is left undone as a kill leaves it: no checkpoint of that generation's
    end, nothing skipped, for resume to make."""
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "raise_plugin.cli", "run", "--task", "ovrp", "--budget", "8",
                             "--pop-size", "2", "--tau", "1", "--nominal", "1", "--inner-population", "4",
                             "--inner-generations", "100000", "--no-progress", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    seen, since, deadline = -1, time.monotonic(), time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:  # the first generation's refresh under way
        path = out / "samples.jsonl"
        count = path.read_text().count("\n") if path.exists() else 0
        if count != seen:
            seen, since = count, time.monotonic()
        elif count >= 2 and time.monotonic() - since > 1.5:
            break
        time.sleep(0.05)
    assert proc.poll() is None and seen == 2, "the run did not reach its first refresh"
    proc.send_signal(signal.SIGINT)
    time.sleep(1.0)  # apart from the first by more than a signal delivered twice
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the second SIGINT did not stop the run while its inner search ran")
    assert proc.returncode == 130 and "Traceback" not in stderr, stderr[-2000:]
    summary = json.loads((out / "summary.json").read_text())
    assert not summary["finished"] and "SIGINT" in summary["stopped"] and summary["refreshes"] == 0
    assert not (out / "checkpoint.json").exists() and not _skipped(out)


# a run that a signal stops at once (nothing under way), then the same signal to its group, as `timeout` sends it
AFTER_THE_RUN = textwrap.dedent("""
    import os, signal, sys, time
    from raise_plugin.commands.run import stop_on_signals

    class Run:
        def request_stop(self, reason):
            print("stop:", reason)

    with stop_on_signals(Run(), "RUN") as received:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGTERM)  # the run has ended: the command is printing its summary
    time.sleep(0.05)
    print("ended", received == [signal.SIGTERM])
""")


def test_the_same_signal_to_the_group_after_a_run_that_stopped_at_once_is_passed_over():
    """Under `timeout`, a run that stopped before the signal sent to its group came was killed by it
    (exit -15, its summary never printed): the handler had been given back to Python's."""
    done = subprocess.run([sys.executable, "-c", AFTER_THE_RUN], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "ended True", (done.returncode, done.stderr)
    assert done.stdout.count("stop:") == 1


def test_a_run_without_the_host_s_log_says_its_stop_once(tmp_path):
    """With --no-host-profiler no log took the run's own "stopping: ..." line, so Python printed it bare
    on stderr beside the run's own account of the stop, with RUN_DIR for the folder."""
    out = tmp_path / "run"
    done = cli("run", "--task", "ovrp", "--budget", "8", "--pop-size", "2", "--no-robust", "--max-llm-calls", "3",
               "--no-progress", "--no-host-profiler", "--out", str(out))
    assert done.returncode == 0, done.stderr[-2000:]
    assert not [line for line in done.stderr.splitlines() if line.startswith("stopping")], done.stderr
    assert "stopped early   the cap of 3 LLM requests is reached" in done.stdout
