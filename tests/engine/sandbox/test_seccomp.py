"""The seccomp filter: each case runs in a forked child that installs it, tries something and
reports through a pipe; the program itself is also checked by a small BPF interpreter."""
from __future__ import annotations

import ctypes
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from raise_plugin.engine.sandbox import seccomp

needs_seccomp = pytest.mark.skipif(not seccomp.supported(), reason="no seccomp filter here")
MACHINE = os.uname().machine if hasattr(os, "uname") else ""
X86_64 = pytest.mark.skipif(MACHINE != "x86_64", reason="x86_64 only")
SIGCHLD = 17
CLONE_VM, CLONE_FS, CLONE_FILES, CLONE_SIGHAND = 0x100, 0x200, 0x400, 0x800
CLONE_THREAD, CLONE_NEWNS, CLONE_NEWNET = 0x10000, 0x20000, 0x40000000
# what glibc's pthread_create passes: also SYSVSEM, SETTLS, PARENT_SETTID, CHILD_CLEARTID
PTHREAD_FLAGS = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | 0x3C0000


def run_child(probe, *, install: bool = True, threads: bool = True, timeout: float = 10.0):
    """Fork; the child installs the filter (unless ``install`` is false), calls ``probe`` and writes
    ``{"applied", "result"}`` (or ``{"error"}``) as JSON. Returns (that dict or None, wait status)."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns to pytest
        try:
            os.close(read_end)
            try:
                applied = seccomp.install(threads=threads) if install else None
                verdict = {"applied": applied, "result": probe()}
            except BaseException as exc:  # noqa: BLE001 - reported to the parent
                verdict = {"error": repr(exc)}
            os.write(write_end, json.dumps(verdict).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    reaped = False
    try:
        chunks, deadline = [], time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                pytest.fail("the child did not answer in time")
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                reaped = True
                break
            if time.monotonic() > deadline:
                pytest.fail("the child did not exit in time")
            time.sleep(0.002)
        data = b"".join(chunks)
        return (json.loads(data) if data else None), status
    finally:
        os.close(read_end)
        if not reaped:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except (ProcessLookupError, ChildProcessError):
                pass


def filtered(probe, **kwargs):
    """The probe's result in a child under the filter (which must report itself applied)."""
    verdict, status = run_child(probe, **kwargs)
    assert verdict is not None and "error" not in verdict, (verdict, status)
    assert verdict["applied"] == ["seccomp"]
    return verdict["result"]


def outcome(call) -> str:
    """"ok", or the errno name of the OSError ``call`` raised."""
    try:
        call()
    except OSError as exc:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return "ok"


def libc_call(name: str, *args) -> tuple[int, str]:
    """Call a libc function (ctypes, no Python wrapper): its result and errno name."""
    libc = ctypes.CDLL(None, use_errno=True)
    ctypes.set_errno(0)
    result = getattr(libc, name)(*args)
    return result, errno.errorcode.get(ctypes.get_errno(), "0")


def raw_syscall(number: int, *args: int) -> tuple[int, str]:
    return libc_call("syscall", ctypes.c_long(number), *(ctypes.c_long(a) for a in args))


def numbers() -> dict[str, int]:
    return seccomp._ARCHES[MACHINE][1]


# ---- the program itself, on every architecture the filter knows ----------------------------

def run_bpf(program, nr: int, arch: int, args=(0, 0, 0, 0, 0, 0)) -> int:
    """What the filter answers for one system call (classic BPF, the few opcodes it uses)."""
    data = nr.to_bytes(4, "little") + arch.to_bytes(4, "little") + bytes(8)
    data += b"".join((a & 0xFFFFFFFFFFFFFFFF).to_bytes(8, "little") for a in args)
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = program[pc]
        if code == 0x20:
            acc = int.from_bytes(data[k:k + 4], "little")
            pc += 1
        elif code in (0x15, 0x35, 0x45):
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += 1 + (jt if taken else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


ALLOW, KILL = 0x7FFF0000, 0x80000000
EPERM, ENOSYS = 0x50000 | errno.EPERM, 0x50000 | errno.ENOSYS


@pytest.mark.parametrize("machine", sorted(seccomp._ARCHES))
@pytest.mark.parametrize("threads", [True, False])
def test_program_decisions(machine, threads):
    audit, table = seccomp._ARCHES[machine]
    own = 4242
    program = seccomp._program(machine, own, threads)
    assert program[-1][0] == 0x06 and all(0 <= jt <= 255 and 0 <= jf <= 255 for _, jt, jf, _ in program)

    def answer(name_or_nr, *args, arch=audit):
        nr = table[name_or_nr] if isinstance(name_or_nr, str) else name_or_nr
        return run_bpf(program, nr, arch, args)

    getpid = {"x86_64": 39, "aarch64": 172}[machine]
    assert answer(getpid) == ALLOW
    assert answer(getpid, arch=0x40000003) == KILL  # i386
    assert answer(getpid, arch=0x40000028) == KILL  # arm
    for name in seccomp._REFUSED:
        if name in table:
            assert answer(name) == EPERM, name
    assert answer("clone3") == ENOSYS
    assert answer("clone", SIGCHLD) == EPERM
    assert answer("clone", CLONE_VM | 0x4000 | SIGCHLD) == EPERM  # vfork-style
    assert answer("clone", PTHREAD_FLAGS) == (ALLOW if threads else EPERM)
    assert answer("clone", PTHREAD_FLAGS | CLONE_NEWNET) == EPERM
    assert answer("clone", PTHREAD_FLAGS | CLONE_NEWNS) == EPERM
    for name in seccomp._SIGNALS:
        assert answer(name, own, 0) == ALLOW, name
        assert answer(name, own + 1, 0) == EPERM, name
        assert answer(name, 0, 0) == EPERM, name
        assert answer(name, -1, 0) == EPERM, name
        assert answer(name, -own, 0) == EPERM, name
        assert answer(name, own | 1 << 32, 0) == EPERM, name
    if machine == "x86_64":
        assert answer(0x40000000 | getpid) == KILL  # x32
        assert answer("fork") == EPERM and answer("vfork") == EPERM


def test_unsupported_places_apply_nothing(monkeypatch):
    monkeypatch.setattr(seccomp, "_machine", lambda: None)
    assert seccomp.install() == []
    assert seccomp.supported() is False


# ---- in a child under the filter ----------------------------------------------------------

@needs_seccomp
def test_install_reports_and_the_kernel_agrees():
    def probe():
        status = open("/proc/self/status").read()
        return [line.split()[1] for line in status.splitlines()
                if line.startswith(("Seccomp:", "NoNewPrivs:"))]
    assert filtered(probe) == ["1", "2"]  # no new privileges, filter mode


@needs_seccomp
def test_controls_without_the_filter():
    """What the other cases refuse works here without it: they do test the filter."""
    def probe():
        def fork():
            child = os.fork()
            if child == 0:
                os._exit(0)
            os.waitpid(child, 0)
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM):
            pass
        return {"fork": outcome(fork), "kill parent": outcome(lambda: os.kill(os.getppid(), 0)),
                "setsid": outcome(os.setsid), "clone3": raw_syscall(numbers()["clone3"], 0, 0)[1]}
    verdict, _ = run_child(probe, install=False)
    assert verdict == {"applied": None, "result": {"fork": "ok", "kill parent": "ok", "setsid": "ok",
                                                   "clone3": "EINVAL"}}


@needs_seccomp
def test_no_new_processes():
    def probe():
        def fork():
            if os.fork() == 0:
                os._exit(0)

        def popen():
            subprocess.Popen(["true"]).wait()

        def spawn():
            os.waitpid(os.posix_spawn("/bin/true", ["true"], dict(os.environ)), 0)

        result, err = libc_call("fork")
        if result == 0:
            os._exit(0)
        if MACHINE == "x86_64":
            raw = raw_syscall(57)
        else:  # no fork call: clone as fork does it
            raw = raw_syscall(numbers()["clone"], SIGCHLD, 0, 0, 0, 0)
        if raw[0] == 0:
            os._exit(0)
        return {"os.fork": outcome(fork), "Popen": outcome(popen), "posix_spawn": outcome(spawn),
                "libc fork": [result, err], "raw fork": list(raw),
                "clone3": list(raw_syscall(numbers()["clone3"], 0, 0)),
                "execv": outcome(lambda: os.execv("/bin/true", ["true"]))}
    assert filtered(probe) == {"os.fork": "EPERM", "Popen": "EPERM", "posix_spawn": "EPERM",
                               "libc fork": [-1, "EPERM"], "raw fork": [-1, "EPERM"],
                               "clone3": [-1, "ENOSYS"], "execv": "EPERM"}


@needs_seccomp
def test_posixsubprocess_fork_exec_fails():
    def probe():
        import _posixsubprocess
        real, seen = _posixsubprocess.fork_exec, []

        def spy(*args, **kwargs):
            try:
                return real(*args, **kwargs)
            except OSError as exc:
                seen.append(errno.errorcode.get(exc.errno))
                raise
        _posixsubprocess.fork_exec = spy
        if hasattr(subprocess, "_fork_exec"):
            subprocess._fork_exec = spy
        for vfork in (True, False):
            subprocess._USE_VFORK = vfork
            try:
                subprocess.run(["true"])
            except OSError:
                pass
        return seen
    assert filtered(probe) == ["EPERM", "EPERM"]


@needs_seccomp
def test_no_sockets():
    def probe():
        return [outcome(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
                outcome(lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM)),
                outcome(lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
                outcome(socket.socketpair)]
    assert filtered(probe) == ["EPERM"] * 4


@needs_seccomp
def test_signals_only_to_itself():
    def probe():
        got = []
        signal.signal(signal.SIGUSR1, lambda *_: got.append("usr1"))
        os.kill(os.getpid(), signal.SIGUSR1)
        signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
        return {"parent": outcome(lambda: os.kill(os.getppid(), 0)),
                "group": outcome(lambda: os.kill(0, 0)),
                "everyone": outcome(lambda: os.kill(-1, 0)),
                "own group": outcome(lambda: os.killpg(os.getpgid(0), 0)),
                "self": outcome(lambda: os.kill(os.getpid(), 0)),
                "tgkill parent": raw_syscall(numbers()["tgkill"], os.getppid(), os.getppid(), 0)[1],
                "tkill parent": raw_syscall(numbers()["tkill"], os.getppid(), 0)[1],
                "tkill self": raw_syscall(numbers()["tkill"], os.getpid(), 0)[1],
                "delivered": got}
    assert filtered(probe) == {"parent": "EPERM", "group": "EPERM", "everyone": "EPERM", "own group": "EPERM",
                               "self": "ok", "tgkill parent": "EPERM", "tkill parent": "EPERM",
                               "tkill self": "0", "delivered": ["usr1", "usr1"]}


@needs_seccomp
def test_no_sessions_tracing_or_namespaces():
    def probe():
        return {"setsid": outcome(os.setsid), "setpgid": outcome(lambda: os.setpgid(0, 0)),
                "ptrace": list(raw_syscall(numbers()["ptrace"], 0, 0, 0, 0)),  # PTRACE_TRACEME
                "unshare": list(libc_call("unshare", CLONE_NEWNS)),
                "thread in a new namespace": raw_syscall(numbers()["clone"], PTHREAD_FLAGS | CLONE_NEWNET,
                                                         0, 0, 0, 0)[1]}
    assert filtered(probe) == {"setsid": "EPERM", "setpgid": "EPERM", "ptrace": [-1, "EPERM"],
                               "unshare": [-1, "EPERM"], "thread in a new namespace": "EPERM"}


# refused calls that are harmless with zero arguments even if they reached the kernel
HARMLESS_WITH_ZEROS = [name for name in seccomp._REFUSED if name not in {
    "fork", "vfork", "ptrace", "acct", "reboot", "kexec_load", "kexec_file_load", "finit_module",
    "quotactl", "quotactl_fd"}]


@needs_seccomp
def test_every_refused_call_gets_eperm():
    def probe():
        return {name: raw_syscall(numbers()[name], 0, 0, 0, 0, 0, 0)[1]
                for name in HARMLESS_WITH_ZEROS if name in numbers()}
    result = filtered(probe)
    assert result and set(result.values()) == {"EPERM"}, result


@needs_seccomp
@pytest.mark.parametrize("threads", [True, False])
def test_threads(threads):
    def probe():
        done = []
        worker = threading.Thread(target=done.append, args=(1,))
        try:
            worker.start()
        except RuntimeError:
            return "refused"
        worker.join(5)
        return done
    assert filtered(probe, threads=threads) == ([1] if threads else "refused")


@needs_seccomp
def test_numpy_works():
    def probe():
        import numpy as np
        rng = np.random.default_rng(3)
        a = rng.standard_normal((200, 200))
        singular = np.linalg.svd(a, compute_uv=False)
        legacy = np.random.rand(3)
        return [bool(np.allclose((a @ np.eye(200)), a)), bool(singular[0] > 0), len(legacy)]
    assert filtered(probe) == [True, True, 3]


@needs_seccomp
@X86_64
def test_a_foreign_abi_ends_the_process():
    def probe():
        raw_syscall(0x40000000 | 39)  # x32 getpid
        return "survived"
    verdict, status = run_child(probe)
    assert verdict is None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSYS


@needs_seccomp
def test_a_fresh_interpreter_runs_numpy_under_the_filter():
    """Installed before numpy is imported: BLAS starts its threads under the filter."""
    code = textwrap.dedent("""
        import os, sys
        from raise_plugin.engine.sandbox import seccomp
        assert seccomp.install() == ["seccomp"]
        import numpy as np
        a = np.random.default_rng(0).standard_normal((300, 300))
        u, s, vt = np.linalg.svd(a)
        assert np.allclose((u * s) @ vt, a)
        try:
            os.fork()
        except PermissionError:
            print("ok")
    """)
    env = dict(os.environ, OPENBLAS_NUM_THREADS="4")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ok"


@needs_seccomp
def test_threads_running_before_install_are_filtered_too():
    def probe():
        go, seen = threading.Event(), []

        def later():
            go.wait(5)
            seen.append(outcome(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()))
        worker = threading.Thread(target=later)
        worker.start()
        applied = seccomp.install()
        go.set()
        worker.join(5)
        return [applied, seen]
    verdict, _ = run_child(probe, install=False)
    assert verdict == {"applied": None, "result": [["seccomp"], ["EPERM"]]}
