"""Hostile heuristic files against the judge, through ``raise-ahd evaluate``.

Each file in ``attacks/`` makes best fit's decisions while it attacks on the side (in its module
code or at its first call): it talks to the process that reads its answers, forges or hijacks
results, patches the scoring code or numpy, replaces Python's builtins or what the task's code calls
in numpy and random, rewrites the instances, seeds the global random generators, leaves a thread
running, calls libc directly, starts processes the audit hook does not see, dumps the environment,
prints control characters, or reads the items still to come. Whatever it tries, the evaluation must
end with the attacker invalid or scored exactly by its decisions (best fit's metric on every
instance, or, for the one that reads the future, the metric of the same program with its search
switched off), and with every other program's score unchanged: a best fit file evaluated after it in
the same worker (``--workers 1``) scores as best fit does alone (the looks at OJSP's next job and
OVRP's next customer run on those tasks, beside shortest processing time and cheapest insertion).
Every command runs in a process of its own, with secrets in its environment and its temporary
directory under the test's, and must leave no process, no file outside that directory and no secret
in what it prints or writes.
"""
from __future__ import annotations

import csv
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

ATTACKS = Path(__file__).with_name("attacks")
RUN_VARIABLE = "RAISE_ATTACK_RUN"  # marks every process a command starts (not a secret's name)
SECONDS_PER_INSTANCE = "10"        # best fit takes well under a second on a nominal instance
COMMAND_SECONDS = 240


def _secrets() -> dict[str, tuple[str, str]]:
    """name -> (value, a part of it no output may contain, even cut short)."""
    tokens = {name: uuid.uuid4().hex[:20] for name in
              ("DATABASE_URL", "DB_PASS", "SENTRY_DSN", "AUTH_HEADER", "SLACK_WEBHOOK_URL", "OPENAI_API_KEY")}
    values = {
        "DATABASE_URL": f"postgres://app:{tokens['DATABASE_URL']}@db.internal:5432/main",
        "DB_PASS": f"pw{tokens['DB_PASS']}",
        "SENTRY_DSN": f"https://{tokens['SENTRY_DSN']}@o1.ingest.sentry.example/42",
        "AUTH_HEADER": f"Bearer {tokens['AUTH_HEADER']}",
        "SLACK_WEBHOOK_URL": f"https://hooks.slack.example/services/T0/B0/{tokens['SLACK_WEBHOOK_URL']}",
        "OPENAI_API_KEY": f"sk-{tokens['OPENAI_API_KEY']}",
    }
    return {name: (values[name], tokens[name][:12]) for name in values}


SECRETS = _secrets()

# best fit, reaching numpy as most programs do (a fake numpy module would change its decisions)
BEST_FIT = "import numpy as np\n\n\ndef priority(item, bins):\n    return -(np.asarray(bins) - item)\n"
AFTER = "best_fit_after"  # its name in every command: evaluated after the attacker
# a victim whose decisions depend on the global random generators: best fit with noise wider than
# one unit of room, and now and then first fit
NOISY = ("import random\n\nimport numpy as np\n\n\ndef priority(item, bins):\n"
         "    if random.random() < 0.05:\n        return np.zeros(len(bins))\n"
         "    return -(bins - item) + 3.0 * np.random.random(len(bins))\n")


# -- running a command ----------------------------------------------------------------------------

@dataclass
class Run:
    code: int
    out: str
    err: str
    rows: list[dict]
    csv_text: str
    strays: list[str] = field(default_factory=list)
    written: list[str] = field(default_factory=list)

    def results(self, name: str) -> list[float | None]:
        """The metric on each nominal instance, in order; None where invalid."""
        mine = sorted((r for r in self.rows if r["heuristic"] == name), key=lambda r: int(r["instance"]))
        assert len(mine) == 5, (name, self.out, self.err)
        return [float(r["metric"]) if r["valid"] == "True" else None for r in mine]


def attack(name: str, **values: str) -> str:
    """The text of ``attacks/NAME.py`` with its placeholders (``__MARKER_PATH__``, ...) filled in."""
    text = (ATTACKS / f"{name}.py").read_text()
    for key, value in values.items():
        placeholder = f"__{key.upper()}__"
        assert placeholder in text, (name, placeholder)
        text = text.replace(placeholder, value)
    return text


def disarmed(*names: str, **values: str) -> str:
    """The attacks ``attacks/NAME.py``, in order, after the fragment that switches the audit hook
    off (so that only the kernel stands in their way); each takes the placeholders it has."""
    parts = [attack("audit_disarmed")]
    for name in names:
        text = (ATTACKS / f"{name}.py").read_text()
        parts.append(attack(name, **{k: v for k, v in values.items() if f"__{k.upper()}__" in text}))
    return "\n\n".join(parts)


def _proc_entries():
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            yield entry


def _marked_processes(run_id: str, marker: str | None) -> list[tuple[int, str]]:
    """Live processes carrying this run's variable in their environment, or ``marker`` in their
    command line."""
    needle = f"{RUN_VARIABLE}={run_id}".encode()
    found = []
    for entry in _proc_entries():
        try:
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError):
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            environ = []
        if needle in environ or (marker is not None and marker.encode() in cmdline):
            found.append((int(entry.name), cmdline.replace(b"\0", b" ").decode(errors="replace").strip()))
    return found


def _strays(run_id: str, marker: str | None, grace: float = 5.0, settled: float = 1.0) -> list[str]:
    """What this run left running once the command's own processes (its workers die with it)
    have had time to exit: none left, the same ones for ``settled`` seconds, or ``grace`` seconds
    gone. Every such process is killed."""
    deadline = time.monotonic() + grace
    last, since = None, time.monotonic()
    while True:
        found = _marked_processes(run_id, marker)
        now = time.monotonic()
        if {pid for pid, _ in found} != last:
            last, since = {pid for pid, _ in found}, now
        if not found or now > deadline or now - since >= settled:
            break
        time.sleep(0.1)
    for pid, _ in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return [f"{pid}: {cmdline}" for pid, cmdline in found]


def _files_under(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def evaluate(root: Path, programs: list[tuple[str, str]], marker: str | None = None, task: str = "obp",
             seconds: str = SECONDS_PER_INSTANCE, flags: tuple = ()) -> Run:
    """``raise-ahd evaluate`` of ``programs`` ((name, text), in order) on the task's (OBP's) nominal
    set with one worker, in a process of its own whose environment holds ``SECRETS``, in ``root/work`` with
    a temporary directory of its own (``tmp/`` in ``written``; made under the system's, whose path
    is short: the fork server's Unix socket lives there, and its path holds at most 107 bytes);
    ``root/outside`` is for markers and must stay empty."""
    for folder in ("programs", "work", "outside"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="raise-judge-"))
    paths = []
    for name, text in programs:
        path = root / "programs" / f"{name}.py"
        path.write_text(text)
        paths.append(str(path))
    out_csv = root / "work" / "results.csv"
    run_id = uuid.uuid4().hex
    env = dict(os.environ)
    env.update({name: value for name, (value, _) in SECRETS.items()})
    env[RUN_VARIABLE] = run_id
    env["TMPDIR"] = str(tmp)
    command = [sys.executable, "-m", "raise_plugin.cli", "evaluate", *paths, "--task", task, "--suite", "nominal",
               "--baselines", "none", "--workers", "1", "--timeout", seconds, "--no-progress",
               "--out", str(out_csv), *flags]
    process = subprocess.Popen(command, cwd=root / "work", env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        out, err = process.communicate(timeout=COMMAND_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        raise AssertionError(f"the command ran past {COMMAND_SECONDS} s")
    finally:
        strays = _strays(run_id, marker)
    csv_text = out_csv.read_text(errors="replace") if out_csv.exists() else ""
    rows = list(csv.DictReader(csv_text.splitlines())) if csv_text else []
    written = [f"outside/{p}" for p in _files_under(root / "outside")]
    written += [f"tmp/{p}" for p in _files_under(tmp)]
    shutil.rmtree(tmp, ignore_errors=True)
    written += [f"work/{p}" for p in _files_under(root / "work") if p != "results.csv"]
    written += [f"programs/{p}" for p in _files_under(root / "programs") if p not in {f"{n}.py" for n, _ in programs}]
    return Run(process.returncode, out.decode(errors="replace"), err.decode(errors="replace"), rows, csv_text,
               strays, written)


# -- what every command must show ----------------------------------------------------------------

def assert_no_secret(run: Run) -> None:
    leaks = [f"{name} in {where}" for name, (value, part) in SECRETS.items()
             for where, text in (("stdout", run.out), ("stderr", run.err), ("the CSV", run.csv_text))
             if value in text or part in text]
    assert not leaks, f"secrets printed or written: {leaks}"


def assert_clean(run: Run) -> None:
    """No secret printed or written, no process left, no file outside the run's own, exit 0 (the
    best fit file after the attacker is valid)."""
    assert_clean_but_invalid_allowed(run)
    assert run.code == 0, (run.code, run.out, run.err[-3000:])


def assert_clean_but_invalid_allowed(run: Run) -> None:
    """As ``assert_clean``, for a command whose programs may all be invalid (exit 1)."""
    assert_no_secret(run)
    assert not run.strays, f"processes left running: {run.strays}"
    assert not run.written, f"files written: {run.written}"
    assert "Traceback" not in run.err, run.err[-3000:]
    assert run.code in (0, 1), (run.code, run.out, run.err[-3000:])


def assert_honest(run: Run, name: str, expected: list[float]) -> None:
    """``name`` is invalid, or scored exactly as its decisions (``expected``), on every instance."""
    got = run.results(name)
    wrong = [(i, g, e) for i, (g, e) in enumerate(zip(got, expected)) if g is not None and g != e]
    assert not wrong, f"{name} scored other than its decisions (instance, score, its decisions' score): {wrong}"


def assert_unchanged(run: Run, expected: list[float], name: str = AFTER) -> None:
    got = run.results(name)
    assert got == expected, f"{name}, evaluated after the attacker, scored {got}; alone it scores {expected}"


@pytest.fixture(scope="module")
def best_fit_metrics() -> list[float]:
    """Best fit's metric on each nominal instance, computed here."""
    from tasks import get_task
    task = get_task("obp")
    instances = [inst for dataset in task.suite("nominal") for inst in dataset.instances]
    assert len(instances) == 5
    return [task.evaluate(task.baselines["BestFit"], inst) for inst in instances]


# -- the attacks ---------------------------------------------------------------------------------

def test_a_pickle_sent_down_every_channel_runs_nothing_outside(tmp_path, best_fit_metrics):
    marker = tmp_path / "outside" / "unpickled"
    run = evaluate(tmp_path, [("pickle_every_channel", attack("pickle_every_channel", marker_path=str(marker))),
                              (AFTER, BEST_FIT)])
    if marker.exists():
        key = SECRETS["OPENAI_API_KEY"][0] in marker.read_text()
        pytest.fail(f"the message was unpickled outside the program's process (the marker holds the API key: {key})")
    assert_no_secret(run)
    assert_honest(run, "pickle_every_channel", best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_a_forged_result_is_not_believed(tmp_path, best_fit_metrics):
    run = evaluate(tmp_path, [("forged_result", attack("forged_result")), (AFTER, BEST_FIT)])
    assert_honest(run, "forged_result", best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


@pytest.mark.parametrize("name", ["waste_ratio_code", "umr_sum"])
def test_patching_what_scores_changes_no_score(name, tmp_path, best_fit_metrics):
    run = evaluate(tmp_path, [(name, attack(name)), (AFTER, BEST_FIT)])
    assert_honest(run, name, best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


@pytest.mark.parametrize("name", ["code_plus_ten", "ndarray_sum_type_dict", "fake_numpy_module",
                                  "instance_capacity", "thread_left_running"])
def test_no_program_changes_the_score_of_the_next(name, tmp_path, best_fit_metrics):
    run = evaluate(tmp_path, [(name, attack(name)), (AFTER, BEST_FIT)])
    assert_unchanged(run, best_fit_metrics)
    assert_honest(run, name, best_fit_metrics)
    assert_clean(run)


@pytest.mark.parametrize("path", [(), ("--jit", "--jit-after", "0")], ids=["python", "compiled"])
@pytest.mark.parametrize("name, replaced", [
    ("builtins_at_import", "builtins.len"), ("builtins_at_call", "builtins.min"),
    ("modules_at_import", "random.seed, numpy.asarray, numpy.random.seed"),
    ("fake_numpy_module", "sys.modules['numpy']")])
def test_replacing_a_builtin_or_a_shared_module_function_is_refused_naming_it(name, replaced, path, tmp_path,
                                                                              best_fit_metrics):
    """A program that replaces one of Python's builtins, or a function of numpy, math or random,
    or numpy in ``sys.modules``, which the task's code and its process's answers run on too, was
    said to run out of time (``len`` in its module code), to behave otherwise when checked for
    look-ahead, or its process to exit (``min`` at a call), or the task to fail (``numpy.asarray``),
    or it drew otherwise from one command to the next (``random.seed``), or, in Python, to look
    ahead or run out of time in its check (a fake numpy, which numpy's masked arrays, imported
    there by the check's first look at an answer, were built on): now it is invalid on every
    instance on both paths, the reason naming what it replaced, and best fit after it in the same
    worker scores as alone."""
    if path:
        pytest.importorskip("numba")
    run = evaluate(tmp_path, [(name, attack(name)), (AFTER, BEST_FIT)], flags=path)
    assert run.results(name) == [None] * 5, run.out[-3000:]
    lines = [line for line in run.out.splitlines() if line.startswith(f"{name}: invalid")]
    assert len(lines) == 1 and f"the program replaces {replaced}, which" in lines[0], run.out[-3000:]
    assert not any(word in lines[0] for word in ("timed out", "look-ahead", "exited", "evaluation raised"))
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def _seeded_noisy(seed: int) -> list[float]:
    """The noisy program's metrics when its draws continue, instance after instance, one stream
    seeded with ``seed`` (what the seeding attacker arranges when programs share a process)."""
    from tasks import get_task
    task = get_task("obp")
    namespace: dict = {"__name__": "noisy"}
    exec(compile(NOISY, "noisy", "exec"), namespace)
    np.random.seed(seed)
    random.seed(seed)
    try:
        return [task.evaluate(namespace["priority"], inst)
                for dataset in task.suite("nominal") for inst in dataset.instances]
    finally:
        np.random.seed(None)
        random.seed()


def test_seeding_the_global_generators_does_not_steer_the_next_program(tmp_path, best_fit_metrics):
    with ThreadPoolExecutor(2) as pool:  # two commands of their own, side by side
        alone_run = pool.submit(evaluate, tmp_path / "alone", [("noisy", NOISY)])
        after_run = pool.submit(evaluate, tmp_path / "after", [("random_seeding", attack("random_seeding")),
                                                               ("noisy", NOISY)])
        alone, after = alone_run.result(), after_run.result()
    if after.results("noisy") != alone.results("noisy"):
        steered = after.results("noisy") == _seeded_noisy(123)
        pytest.fail(f"a program drawing from the global generators scored {after.results('noisy')} after the seeding "
                    f"program and {alone.results('noisy')} alone (after it, it drew the stream the seeding program "
                    f"chose: {steered})")
    assert None not in alone.results("noisy")
    assert_honest(after, "random_seeding", best_fit_metrics)
    assert_clean(alone)
    assert_clean(after)


def test_a_hijacked_worker_does_not_answer_for_the_next_program(tmp_path, best_fit_metrics):
    run = evaluate(tmp_path, [("hijack_worker", attack("hijack_worker")), (AFTER, BEST_FIT)])
    assert_unchanged(run, best_fit_metrics)
    assert_honest(run, "hijack_worker", best_fit_metrics)
    assert_clean(run)


@pytest.fixture()
def udp_listener():
    server = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    server.bind(("127.0.0.1", 0))
    yield server
    server.close()


def _datagrams(server: socket.socket, seconds: float) -> list[bytes]:
    """What reached ``server`` until now and in the next ``seconds``."""
    got = []
    deadline = time.monotonic() + seconds
    while (remaining := deadline - time.monotonic()) > 0:
        server.settimeout(remaining)
        try:
            got.append(server.recv(4096))
        except (socket.timeout, OSError):
            break
    return got


def test_raw_libc_calls_reach_no_listener_and_run_no_shell(tmp_path, udp_listener, best_fit_metrics):
    marker = tmp_path / "outside" / "shell-ran"
    port = udp_listener.getsockname()[1]
    run = evaluate(tmp_path, [("libc_udp", disarmed("libc_udp", udp_port=str(port), marker_path=str(marker))),
                              (AFTER, BEST_FIT)])
    received = _datagrams(udp_listener, 1.0)
    assert not received, f"the listener on 127.0.0.1:{port} received {received[:3]}"
    assert not marker.exists(), "libc's system() ran a shell command"
    assert_honest(run, "libc_udp", best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_processes_started_past_the_audit_hook_do_not_outlive_the_command(tmp_path, best_fit_metrics):
    marker = f"spawn{uuid.uuid4().hex[:16]}"
    run = evaluate(tmp_path, [("unaudited_spawn", disarmed("unaudited_spawn", process_marker=marker)),
                              (AFTER, BEST_FIT)], marker=marker)
    assert not run.strays, f"processes outlived the command (killed now): {run.strays}"
    assert_honest(run, "unaudited_spawn", best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_an_environment_dumped_into_a_reason_holds_no_secret(tmp_path, best_fit_metrics):
    run = evaluate(tmp_path, [("env_dump", attack("env_dump")), (AFTER, BEST_FIT)])
    assert_no_secret(run)
    assert run.results("env_dump") == [None] * 5  # it raises on every instance
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_reasons_are_safe_to_print(tmp_path, best_fit_metrics):
    run = evaluate(tmp_path, [("reason_from_priority", attack("reason_from_priority")),
                              ("reason_from_module", attack("reason_from_module")), (AFTER, BEST_FIT)])
    for name in ("reason_from_priority", "reason_from_module"):
        assert run.results(name) == [None] * 5
        lines = [line for line in run.out.splitlines() if line.startswith(f"{name}: invalid")]
        assert len(lines) == 1 and "all fine" in lines[0], run.out[:3000]  # the message's own reason
    printed = run.out + run.err
    raw = [char for char in ("\x1b", "\r", "\x00", "\x9b", "\x07") if char in printed]
    where = min((printed.index(char) for char in raw), default=0)
    assert not raw, f"control characters printed: {raw}, first here: {printed[max(0, where - 100):where + 200]!r}"
    longest = max(printed.splitlines(), key=len)
    assert len(longest) < 1000, f"a line of {len(longest)} characters: {longest[:200]!r}..."
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_looking_one_item_ahead_is_caught_on_nearly_every_instance_checked(best_fit_metrics):
    """A one-item look-ahead changes a decision only now and then. OBP's check reveals the
    instance in stages up to a random horizon (horizon / 4 stage ends, each revealing the items up
    to the next only once the decisions before it are answered), so every decision just before a
    stage's end is made with the next item unknown. The check's draws come from the operating
    system's entropy, in the worker, so which instances catch it varies: over 8 rounds of the five
    nominal instances, each checked alone (40 checks), it was caught on 36 and 39 in two sittings
    (with horizon / 16 ends, 21 and 22). At least 27 must catch it (fewer has a probability under
    0.001 even at a rate of 0.85); the same program with its search switched off (best fit) is
    never flagged."""
    from raise_plugin.engine import Engine, FailureKind, ProcessExecutor, SandboxLimits
    from tasks import get_task

    instances = [inst for dataset in get_task("obp").suite("nominal") for inst in dataset.instances]
    limits = SandboxLimits(timeout=120.0, foresight=1.0)
    with ProcessExecutor(2, limits) as pool:
        engine = Engine("obp", pool, limits=limits)
        looking = [f.result() for _ in range(8) for f in engine.submit_each(attack("future_lookahead"), instances)]
        switched_off = [f.result() for f in engine.submit_each(attack("future_lookahead_disabled"), instances)]
    caught = [r for r in looking if r.kind == FailureKind.FORESIGHT]
    assert len(caught) >= 27, [r.kind for r in looking]
    assert all("looks ahead" in r.reason for r in caught)
    assert all(r.valid for r in looking if r not in caught)  # an unchecked look-ahead is scored by its decisions
    assert [r.metrics[0] for r in switched_off] == best_fit_metrics


def test_planning_with_the_far_future_is_caught(tmp_path, best_fit_metrics):
    """Decisions that depend on the items still to come (here their total) change before the
    point after which the check replaces them: the program is invalid (each instance is a job of
    its own here, each checked once; a check whose point falls too early to see a changed
    decision lets that instance's score stand, which is what its decisions earn), and best fit
    after it scores as alone."""
    run = evaluate(tmp_path, [("future_planner", attack("future_planner")), (AFTER, BEST_FIT)])
    caught = [r is None for r in run.results("future_planner")]
    assert sum(caught) >= 3, run.results("future_planner")
    assert "looks ahead" in run.out + run.err
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_leaving_when_checked_for_look_ahead_is_caught(tmp_path, best_fit_metrics):
    """A program that ends its process in the look-ahead check's copy (it finds the decision
    limit only the copy carries) leaves the check unanswered; an unanswered check is the
    program's failure, not a pass: it is invalid on every instance, and best fit after it scores
    as alone."""
    evasive = attack("future_lookahead") + "\n" + attack("leave_when_checked")
    run = evaluate(tmp_path, [("future_lookahead_evasive", evasive), (AFTER, BEST_FIT)])
    assert run.results("future_lookahead_evasive") == [None] * 5, run.out[-3000:]
    assert "checked for look-ahead" in run.out + run.err
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def looking_ahead(name: str) -> str:
    """The look-ahead attack ``attacks/NAME.py`` appended to the fragment that finds its instance."""
    return attack("instance_on_the_stack") + "\n\n" + attack(name)


# the honest programs evaluated after the look-ahead attacks on OJSP and OVRP: shortest processing
# time and cheapest insertion, each as the attack with its search switched off decides
SPT = "def priority(current_time, candidate_operations):\n    return -candidate_operations[:, 1].astype(float)\n"
CHEAPEST = "def priority(customer_features, candidate_insertions):\n    return -candidate_insertions[:, 2]\n"


def test_a_builtin_replaced_between_the_programs_calls_is_no_time_out(tmp_path, best_fit_metrics):
    """A program whose collector callback replaces ``len`` (best fit's decisions): its look-ahead
    check's process ran out of time importing numpy's masked arrays on the replaced ``len`` (the
    check's first look at an answer imported them). It is scored by its decisions, or invalid
    naming what it replaced; best fit after it scores as alone."""
    run = evaluate(tmp_path, [("builtins_at_collection", attack("builtins_at_collection")), (AFTER, BEST_FIT)])
    assert_honest(run, "builtins_at_collection", best_fit_metrics)
    told = [r["reason"] for r in run.rows if r["heuristic"] == "builtins_at_collection" and r["valid"] != "True"]
    assert all("the program replaces builtins.len" in reason for reason in told), told
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


# a program whose module code lowers the recursion limit to its own depth there and __LEVELS__ more
LOW_LIMIT = ("import sys\n\n\ndef _depth():\n    frame, depth = sys._getframe(), 0\n    while frame is not None:\n"
             "        frame, depth = frame.f_back, depth + 1\n    return depth\n\n\n"
             "sys.setrecursionlimit(_depth() + __LEVELS__)\n\n\n")


@pytest.mark.parametrize("task, honest", [("obp", BEST_FIT), ("ovrp", CHEAPEST)], ids=["obp", "ovrp"])
def test_a_recursion_limit_that_holds_in_the_run_holds_in_its_check(task, honest, tmp_path):
    """Programs that lower the recursion limit in their module code, each a level more than the
    last: where the limit holds in the run, it holds in the look-ahead check, whose own steps add
    a few levels under the program's calls (OBP's check runs the copy on, OVRP's starts it again
    at each reveal). Before, limits a level or four above what the run needed failed in the check
    ("behaved otherwise when checked for look-ahead": a RecursionError, or setting the limit back
    failed), so a program valid in its run was invalid when checked."""
    programs = [(f"low_{levels}", LOW_LIMIT.replace("__LEVELS__", str(levels)) + honest) for levels in range(4, 14)]
    run = evaluate(tmp_path, programs, task=task)
    told = [(r["heuristic"], r["reason"]) for r in run.rows if "checked for look-ahead" in r["reason"]]
    assert not told, told[:3]
    assert any(None not in run.results(name) for name, _ in programs), run.out[-3000:]
    assert_clean_but_invalid_allowed(run)


@pytest.mark.parametrize("task, name, honest", [("ojsp", "ojsp_next_job", SPT),
                                                ("ovrp", "ovrp_next_customer", CHEAPEST)], ids=["ojsp", "ovrp"])
def test_looking_one_unit_ahead_is_caught_where_each_reveal_starts_the_run_again(task, name, honest, tmp_path):
    """OJSP's and OVRP's simulators derive their state from the whole instance at its start, so
    their check's copy is revealed by starting its run again at every stage's end, the decisions
    so far replayed without asking the program. A stage ends before every decision that knows
    one more job (OJSP, in release order) or customer (OVRP, in arrival order), up to the last
    decision: every decision is made with the next job or customer unknown. A program that
    looks at the next one (here, to keep a machine, or a route's room, for it) is caught where
    that changes a decision on the copy: through the command, each nominal instance a job of its
    own and checked once, on at least 2 of the 5 (the rate is held below); the same program with
    its search switched off, and the honest program after it in the same worker, are never
    flagged and score as they do alone."""
    from tasks import get_task
    looking = looking_ahead(name)
    off = looking.replace("FORESIGHT = True", "FORESIGHT = False")
    assert off != looking
    instances = [inst for dataset in get_task(task).suite("nominal") for inst in dataset.instances]
    namespace: dict = {}
    exec(honest, namespace)
    alone = [get_task(task).evaluate(namespace["priority"], inst) for inst in instances]
    run = evaluate(tmp_path, [(name, looking), ("switched_off", off), (AFTER, honest)], task=task)
    caught = [r is None for r in run.results(name)]
    assert sum(caught) >= 2, run.out[-3000:]
    assert "looks ahead" in run.out + run.err
    assert run.results("switched_off") == alone
    assert_unchanged(run, alone)
    assert_clean(run)


def test_saying_it_ran_compiled_to_escape_the_look_ahead_check_is_tampering(tmp_path):
    """The judge took from the program's own process whether an instance ran compiled, and checks
    only instances run in Python: a look-ahead behind a rewritten answer scored 1.598 on OVRP, valid
    and never checked. Without the compiled path asked for, an answer saying it ran compiled is
    tampering, every instance of it; the honest program after it scores as it does alone."""
    from tasks import get_task
    instances = [inst for dataset in get_task("ovrp").suite("nominal") for inst in dataset.instances]
    namespace: dict = {}
    exec(CHEAPEST, namespace)
    alone = [get_task("ovrp").evaluate(namespace["priority"], inst) for inst in instances]
    forged = attack("forged_compiled_flag") + "\n\n" + looking_ahead("ovrp_next_customer")
    run = evaluate(tmp_path, [("forged", forged), (AFTER, CHEAPEST)], task="ovrp")
    assert run.results("forged") == [None] * len(instances), run.out[-3000:]
    assert "said an instance ran on the compiled path, which was not asked for" in run.out + run.err
    assert_unchanged(run, alone)
    assert_clean(run)


# look-aheads on the compiled path (``--jit --jit-after 0``), each with how it escaped the check before
COMPILED_ESCAPES = {
    # its process said every instance ran compiled, and the check ran only on instances said to run in
    # Python: valid on every instance. An instance said to have run compiled is now checked on a copy
    # run compiled where the program compiles (this one does not), else in Python
    "forged_compiled_flag": lambda: attack("forged_compiled_flag") + "\n\n" + looking_ahead("ovrp_next_customer"),
    # numba's object mode ran the Python look-ahead from compiled code, which compiled, passed the
    # probes and was never checked: such a program now stays on Python, with the reason
    # (tests/engine/compiled/test_compiled.py), checked there
    "objmode_escape": lambda: looking_ahead("ovrp_next_customer") + "\n\n" + attack("objmode_escape"),
}


@pytest.mark.parametrize("name", sorted(COMPILED_ESCAPES))
def test_a_look_ahead_on_the_compiled_path_is_caught_whatever_its_process_says(name, tmp_path):
    """Each escape (``COMPILED_ESCAPES``) was valid on every instance; now it is caught on at least
    2 of the 5 (each a job of its own, checked once), and the honest program after it runs
    compiled, checked so, and scores as it does alone."""
    from tasks import get_task
    pytest.importorskip("numba")
    instances = [inst for dataset in get_task("ovrp").suite("nominal") for inst in dataset.instances]
    namespace: dict = {}
    exec(CHEAPEST, namespace)
    alone = [get_task("ovrp").evaluate(namespace["priority"], inst) for inst in instances]
    run = evaluate(tmp_path, [(name, COMPILED_ESCAPES[name]()), (AFTER, CHEAPEST)], task="ovrp",
                   flags=("--jit", "--jit-after", "0"))
    assert sum(r is None for r in run.results(name)) >= 2, run.out[-3000:]
    assert "looks ahead" in run.out + run.err
    assert_unchanged(run, alone)
    assert_clean(run)


@pytest.mark.parametrize("task, name", [("ojsp", "ojsp_next_job"), ("ovrp", "ovrp_next_customer")],
                         ids=["ojsp", "ovrp"])
def test_looking_one_unit_ahead_is_caught_on_nearly_every_instance_checked(task, name):
    """The rate: over 8 rounds of the five nominal instances, each checked alone (40 checks), the
    look at the next job was caught on 38 and the look at the next customer on 40. At least 28
    must catch it (fewer has a probability under 0.001 even at a rate of 0.88); the check it
    replaced, one random cut, caught them on 50 and 43 of 200 (about a quarter). An unchecked
    look-ahead is scored by its decisions."""
    from raise_plugin.engine import Engine, FailureKind, ProcessExecutor, SandboxLimits
    from tasks import get_task

    instances = [inst for dataset in get_task(task).suite("nominal") for inst in dataset.instances]
    limits = SandboxLimits(timeout=120.0, foresight=1.0)
    with ProcessExecutor(2, limits) as pool:
        engine = Engine(task, pool, limits=limits)
        looking = [f.result() for _ in range(8) for f in engine.submit_each(looking_ahead(name), instances)]
    caught = [r for r in looking if r.kind == FailureKind.FORESIGHT]
    assert len(caught) >= 28, [r.kind for r in looking]
    assert all("looks ahead" in r.reason for r in caught)
    assert all(r.valid for r in looking if r not in caught)


def test_the_two_lookahead_files_differ_only_in_the_switch_and_the_switch_matters():
    on = (ATTACKS / "future_lookahead.py").read_text().splitlines()
    off = (ATTACKS / "future_lookahead_disabled.py").read_text().splitlines()
    changed = [(a, b) for a, b in zip(on, off) if a != b]
    assert len(on) == len(off) and changed == [("FORESIGHT = True", "FORESIGHT = False")]
    # given the items to come (here, in this process, nothing stops it), the lookahead decides
    # otherwise than best fit: so a score equal to the disabled file's means it found nothing
    from tasks import get_task
    task = get_task("obp")
    instances = [inst for dataset in task.suite("nominal") for inst in dataset.instances]
    metrics = []
    for inst in instances:
        namespace: dict = {"__name__": "future_lookahead"}
        exec(compile("\n".join(on), "future_lookahead", "exec"), namespace)
        metrics.append(task.evaluate(namespace["priority"], inst))
    best = [task.evaluate(task.baselines["BestFit"], inst) for inst in instances]
    assert metrics != best


# -- round two: channels to the check, sabotage, reach outside, leftovers ---------------------------

def _key_prefix() -> int:
    """A 16-bit prefix for the System V keys one attack uses (none of the machine's own)."""
    return random.SystemRandom().randrange(0x1000, 0xFFFF)


def _ipc_objects(prefix: int) -> list[tuple[str, int]]:
    """System V objects whose key carries ``prefix``: (kind, id), from /proc/sysvipc."""
    found = []
    for kind in ("shm", "msg", "sem"):
        try:
            lines = Path(f"/proc/sysvipc/{kind}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            key, ident = (int(v) for v in line.split()[:2])
            if (key & 0xFFFFFFFF) >> 16 == prefix:
                found.append((kind, ident))
    return found


def _remove_ipc(objects: list[tuple[str, int]]) -> None:
    """Remove what an attack left (so that a failing test frees the memory it pinned)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for kind, ident in objects:
        {"shm": lambda i: libc.shmctl(i, 0, None), "msg": lambda i: libc.msgctl(i, 0, None),
         "sem": lambda i: libc.semctl(i, 0, 0)}[kind](ident)


def test_a_channel_from_the_run_to_its_check_is_refused(tmp_path, best_fit_metrics):
    """A planner that keeps its decisions in a System V segment and answers them again in its
    look-ahead check (a later process of the same program on the same instance) passed every
    check; the kernel now refuses it the segment, so it plans in the check too and is caught as
    the planner alone is; nothing of it is left in the kernel."""
    prefix = _key_prefix()
    planner = disarmed("future_planner", "channel_to_the_check", key_prefix=f"{prefix:04x}")
    try:
        run = evaluate(tmp_path, [("channel_to_the_check", planner), (AFTER, BEST_FIT)])
    finally:
        left = _ipc_objects(prefix)
        _remove_ipc(left)
    assert not left, f"System V objects left after the command: {left}"
    assert sum(r is None for r in run.results("channel_to_the_check")) >= 3, run.out[-3000:]
    assert "looks ahead" in run.out + run.err
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_telling_the_check_from_a_run_pays_nothing(tmp_path, best_fit_metrics):
    """A planner that finds, on its stack, what only its look-ahead check's process holds, and
    answers best fit's decisions there: the check holds them against the run's, which planned with
    the future, and it is caught as the planner alone is. Its twin raises where it finds itself
    checked: every one of its failures is a check's, so it does tell, and never in a run."""
    honest = attack("future_planner") + "\n\n" + attack("honest_when_checked", say="False")
    says = attack("future_planner") + "\n\n" + attack("honest_when_checked", say="True")
    run = evaluate(tmp_path, [("honest_when_checked", honest), ("says_when_checked", says), (AFTER, BEST_FIT)])
    assert sum(r is None for r in run.results("honest_when_checked")) >= 3, run.out[-3000:]
    assert "honest_when_checked: invalid on" in run.out and "looks ahead" in run.out, run.out[-3000:]
    told = [r["reason"] for r in run.rows if r["heuristic"] == "says_when_checked" and r["valid"] != "True"]
    assert len(told) >= 3, run.out[-3000:]
    assert all("checked for look-ahead" in reason and "told the check from a run" in reason for reason in told), told
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_stopping_the_check_from_starting_is_refused(tmp_path, best_fit_metrics):
    """A planner that lowers its worker's descriptor and file-size limits and its spawner's
    address space (``prlimit`` on another process) to keep its check from starting: the kernel
    refuses every such call, the check runs and catches it, and the program after it in the same
    worker scores as alone."""
    planner = disarmed("future_planner", "sabotage_the_check")
    run = evaluate(tmp_path, [("sabotage_the_check", planner), (AFTER, BEST_FIT)])
    assert sum(r is None for r in run.results("sabotage_the_check")) >= 3, run.out[-3000:]
    assert "unchecked" not in run.out
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


@pytest.fixture()
def victims():
    """Folders outside every sandbox, each with a 0600 file, owned by this user and by ``nobody``
    (the workers run as one of them: so that only the sandbox, not the file's owner, stands
    between a program and one of them)."""
    from raise_plugin.engine.sandbox.confine import unprivileged_ids
    base = "/dev/shm" if os.path.isdir("/dev/shm") else None
    made = []
    for uid, gid in {(os.getuid(), os.getgid()), unprivileged_ids() or (os.getuid(), os.getgid())}:
        folder = Path(tempfile.mkdtemp(prefix="raise-victim-", dir=base))
        path = folder / "held.txt"
        path.write_text("kept as it is\n")
        os.chmod(path, 0o600)
        os.utime(path, (1_700_000_000, 1_700_000_000))
        os.chmod(folder, 0o755)
        for p in (folder, path):
            os.chown(p, uid, gid)
        made.append((folder, path))
    yield made
    for folder, _ in made:
        shutil.rmtree(folder, ignore_errors=True)


def _metadata(path: Path) -> tuple:
    info = os.stat(path)
    try:
        attributes = sorted(os.listxattr(path))
    except OSError:
        attributes = []
    return info.st_mode, int(info.st_mtime), int(info.st_atime), info.st_uid, info.st_gid, attributes


def test_no_call_reaches_a_file_outside_its_folder(tmp_path, victims, best_fit_metrics):
    """chmod, utime, chown and extended attributes, through a path, an ``O_PATH`` descriptor's
    ``dir_fd`` or an open descriptor, on a file and a folder outside the program's own (one of
    them owned by the user it runs as): each is refused, and the programs, whose decisions are
    best fit's, score as best fit."""
    before = [(_metadata(folder), _metadata(path)) for folder, path in victims]
    programs = []
    for k, (folder, path) in enumerate(victims):
        programs += [(f"reach_outside_{k}", disarmed("reach_outside", outside_dir=str(folder), victim=path.name)),
                     (f"{AFTER}_{k}", BEST_FIT)]
    run = evaluate(tmp_path, programs)
    assert [(_metadata(folder), _metadata(path)) for folder, path in victims] == before
    for k in range(len(victims)):
        assert_honest(run, f"reach_outside_{k}", best_fit_metrics)
        assert_unchanged(run, best_fit_metrics, f"{AFTER}_{k}")
    assert_clean(run)


def test_nothing_a_program_makes_outlives_its_job(tmp_path, best_fit_metrics):
    """System V segments (touched: memory pinned past the command), a message queue, a semaphore
    set and a POSIX queue: all refused, none left; best fit after it scores as alone."""
    prefix = _key_prefix()
    try:
        run = evaluate(tmp_path, [("objects_left_behind", disarmed("objects_left_behind", key_prefix=f"{prefix:04x}")),
                                  (AFTER, BEST_FIT)])
    finally:
        left = _ipc_objects(prefix)
        _remove_ipc(left)
    assert not left, f"System V objects left after the command: {left}"
    assert not Path(f"/dev/mqueue/raise-{prefix:04x}").exists()
    assert_honest(run, "objects_left_behind", best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_a_folder_too_deep_to_remove_by_recursion_costs_nobody_a_result(tmp_path, best_fit_metrics):
    """1200 nested directories (past Python's recursion limit, where ``shutil.rmtree`` raised
    ``RecursionError`` in the worker and then in the engine) and a read-only one in the program's
    own folder: its folder is still removed (without recursion), the command writes every result,
    and nothing is left in the temporary directory."""
    run = evaluate(tmp_path, [("deep_tree", disarmed("deep_tree")), (AFTER, BEST_FIT)])
    assert_honest(run, "deep_tree", best_fit_metrics)
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_threads_are_bounded_for_every_user(tmp_path, best_fit_metrics):
    """1500 threads started by a program's module code (root is not held by RLIMIT_NPROC): a
    program's process starts no thread, so the module fails at its first, and best fit after it
    scores as alone."""
    run = evaluate(tmp_path, [("many_threads", disarmed("many_threads")), (AFTER, BEST_FIT)])
    assert run.results("many_threads") == [None] * 5, run.out[-3000:]
    assert "thread" in run.out, run.out[-3000:]
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


# shortest processing time that spends most of its time limit waiting, once per run of an instance
# (a fresh module each time): an honest program near its limit
SLOW_SPT = ("import time\n\nWAIT = __WAIT__\n_started = []\n\n\n"
            "def priority(current_time, candidate_operations):\n"
            "    if not _started:\n"
            "        _started.append(time.perf_counter())\n"
            "        while time.perf_counter() - _started[0] < WAIT:\n"
            "            pass\n"
            "    return -candidate_operations[:, 1].astype(float)\n")


def test_an_honest_program_near_its_limit_on_a_busy_machine_is_not_called_a_look_ahead(tmp_path):
    """Shortest processing time that waits 90 % of a 1-second limit on every instance, with two
    busy processes beside the command: its look-ahead checks have a time budget of their own (a
    check that ran out of the job's was called a look-ahead: "did not answer within 1 s"), so it
    is never called one; an instance whose run exceeds the limit under the load is a timeout."""
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        runs = [evaluate(tmp_path, [("slow_spt", SLOW_SPT.replace("__WAIT__", "0.9"))], task="ojsp", seconds="1")]
    finally:
        for process in busy:
            process.kill()
            process.wait()
    for run in runs:
        assert "look" not in run.out + run.err, run.out[-3000:]
        assert "foresight" not in run.csv_text
        assert_clean_but_invalid_allowed(run)


def test_no_program_reads_where_runs_and_data_are_kept(tmp_path, best_fit_metrics):
    """A run directory's file inside the checkout (where ``--out runs/a`` puts it: its instances,
    its seeds, its results), a data folder outside every home, and ``/etc/shadow``, all readable by
    the user the workers run as: each read is refused (the program, whose decisions are best fit's,
    scores as best fit), while the checkout's own packages stay importable."""
    import raise_plugin
    checkout = Path(raise_plugin.__file__).resolve().parents[1]
    record = checkout / f".reading-probe-{uuid.uuid4().hex[:8]}" / "config.json"
    elsewhere = Path(tempfile.mkdtemp(prefix="raise-data-", dir="/var/tmp")) / "instances.json"
    try:
        for path in (record, elsewhere):
            path.parent.mkdir(exist_ok=True)
            path.write_text('{"instance_seed": 12345}\n')
            os.chmod(path.parent, 0o755)
            os.chmod(path, 0o644)
        run = evaluate(tmp_path, [("read_outside", attack("read_outside", in_checkout=str(record),
                                                          elsewhere=str(elsewhere))), (AFTER, BEST_FIT)])
    finally:
        for path in (record, elsewhere):
            shutil.rmtree(path.parent, ignore_errors=True)
    assert "instance_seed" not in run.out + run.err + run.csv_text, run.out[-2000:]
    assert_honest(run, "read_outside", best_fit_metrics)
    assert run.results("read_outside") == best_fit_metrics, run.out[-2000:]
    assert_unchanged(run, best_fit_metrics)
    assert_clean(run)


def test_a_program_that_rebuilds_the_public_instances_learns_nothing_of_a_runs_own():
    """A program that regenerates the task's public nominal set and matches the items it is handed
    against it knows each instance's future there (it decides otherwise than best fit, and its
    look-ahead checks cannot see it: it reads nothing); on the nominal set a run trains on, drawn
    from a seed no program can read (``instance_seed``: private by default), it matches nothing and
    is best fit, instance for instance."""
    from raise_plugin.engine import Engine, SandboxLimits
    from raise_plugin.instance_seeds import resolve_instance_seed
    from tasks import get_task

    task = get_task("obp")
    public = task.nominal_instances()
    private = task.nominal_instances(seed=int(resolve_instance_seed("private", "obp", 0)))
    limits = SandboxLimits(timeout=120.0, foresight=1.0)
    with Engine("obp", "process:2", limits=limits) as engine:
        on_public = [f.result() for f in engine.submit_each(attack("rebuilt_instance"), public)]
        on_private = [f.result() for f in engine.submit_each(attack("rebuilt_instance"), private)]
    best_fit = task.baselines["BestFit"]
    assert all(r.valid for r in on_public)  # the check cannot see a rebuilt future
    assert [r.metrics[0] for r in on_public] != [task.evaluate(best_fit, s) for s in public]
    assert [r.metrics[0] for r in on_private] == [task.evaluate(best_fit, s) for s in private]


@pytest.mark.parametrize("name", ["state_in_numpy", "folder_number"])
def test_nothing_an_instance_leaves_or_meets_tells_a_program_what_shares_its_job(name, small_instances):
    """Each instance met a fresh module of the program, but the modules it imports stayed for the
    job's next instance: a program that kept a count in numpy's module decided otherwise from the
    second instance of a job on (waste 100 % and 93.5 % against 13.3 % and 6.5 % alone). Every
    instance now runs in a process of its own. That process's folder was named by a count of the
    processes its worker had started (``program-N``), which told the same, and let one program
    signal the next: it is drawn at random now. Each instance scores as it does alone, whatever
    the job holds; the honest program after it scores as it does alone too."""
    from raise_plugin.engine import Engine, ProcessExecutor, SandboxLimits
    from tasks import get_task

    code = attack(name)
    limits = SandboxLimits(timeout=120.0, foresight=0.0)
    with ProcessExecutor(1, limits) as pool:
        engine = Engine("obp", pool, limits=limits)
        together = engine.evaluate(code, small_instances)
        alone = [engine.evaluate(code, [instance]).metrics[0] for instance in small_instances]
        after = engine.evaluate(BEST_FIT, small_instances)
    task = get_task("obp")
    namespace: dict = {}
    exec(BEST_FIT, namespace)
    assert together.valid and list(together.metrics) == alone, (together.metrics, alone)
    assert list(after.metrics) == [task.evaluate(namespace["priority"], instance) for instance in small_instances]


@pytest.mark.parametrize("name", ["robust_when_searched", None])
def test_the_inner_search_meets_a_program_as_a_run_meets_it(name):
    """The inner search ran a program in one process for all its instances, and kept that process
    for the next refresh's search (a fresh module of the program for each instance, but the same
    numpy): a program that counted there the instances its process had met played best fit from the
    second on, so from the second refresh the adversary searched a heuristic no run ever faces (worst
    fit, every instance of a run in a process of its own) and chose an instance that hurt it little.
    The program now runs once more, alone, on the instance the search chose; where it scores
    otherwise the search is made again with each evaluation alone, and sees what a run sees. An
    honest program (best fit, ``None``) is searched once, as before."""
    from raise_plugin.adversary.sandboxed import search_program
    from raise_plugin.adversary.search import search
    from raise_plugin.engine import Engine, ProcessExecutor, SandboxLimits, SourcePriority
    from tasks import get_task

    code, task = attack(name) if name else BEST_FIT, get_task("obp")
    options = dict(seed=0, inner_population=4, inner_generations=2)
    limits = SandboxLimits(timeout=120.0, foresight=0.0)
    with ProcessExecutor(1, limits) as pool:  # one worker: every search meets one judge, which keeps the process
        search_program(search, task, code, [], 0.01, {**options, "executor": pool})  # the first refresh
        kept = search(task, SourcePriority(code), 0.01, executor=pool, **options)  # as the second searched
        found = search_program(search, task, code, [], 0.01, {**options, "executor": pool})  # the second
        alone = search(task, SourcePriority(code, alone=True), 0.01, executor=pool, **options)
        run = Engine("obp", pool, limits=limits).evaluate(code, [found.instance]).metrics[0]
    assert found.metric == run  # on the instance it chose, the search saw what a run sees
    assert found.distribution.tolist() == alone.distribution.tolist() and found.metric == alone.metric
    if name:
        assert kept.metric < alone.metric / 10  # searched in its kept process, it looked like best fit
        assert found.evaluations == kept.evaluations + alone.evaluations  # both searches are counted
    else:
        assert (kept.metric, kept.evaluations) == (alone.metric, found.evaluations)
