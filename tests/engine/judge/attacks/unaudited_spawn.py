"""Unaudited processes: at its first call the heuristic starts ``sleep 60`` in a session of its
own, first through ``_posixsubprocess.fork_exec`` (which raises no audit event), then, after
emptying the sets of event names the audit hook refuses, through ``os.fork``, ``os.setsid`` and
``os.execv``. Each process's first argument carries the marker below, so it can be found.
Its decisions are best fit's. Appended to ``audit_disarmed.py``, whose ``disarm`` it calls."""
import os
import time

MARKER = "__PROCESS_MARKER__"
SLEEP = [path for path in ("/usr/bin/sleep", "/bin/sleep") if os.path.exists(path)]


def fork_exec():
    import _posixsubprocess
    argv = [("raise-attack-%s-fork-exec" % MARKER).encode(), b"60"]
    executables = [path.encode() for path in SLEEP]
    read_end, write_end = os.pipe()
    head = (argv, executables, True, (write_end,), None, None, -1, -1, -1, -1, -1, -1, read_end, write_end, True, True)
    # the rest by Python version: process group, gid, groups, uid, umask, preexec_fn and vfork
    # (3.11, 3.12); without vfork (3.13 on); without a process group (3.10)
    tails = ((-1, None, None, None, -1, None, False),
             (-1, None, None, None, -1, None),
             (None, None, None, -1, None))
    try:
        for tail in tails:
            try:
                _posixsubprocess.fork_exec(*(head + tail))
                break
            except TypeError:
                continue
    finally:
        os.close(write_end)
        os.close(read_end)


def fork():
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            for path in SLEEP:
                try:
                    os.execv(path, ["raise-attack-%s-fork" % MARKER, "60"])
                except OSError:
                    pass
            time.sleep(60)
        finally:
            os._exit(0)


done = False


def priority(item, bins):
    global done
    if not done:
        done = True
        for step in (fork_exec, disarm, fork):  # noqa: F821 - disarm: the fragment this is appended to
            try:
                step()
            except Exception:
                pass
    return -(bins - item)
