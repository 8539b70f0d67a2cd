"""A hijacked worker: at its first call the heuristic takes the connection to the process that
hands out jobs and never returns: it answers its own job, and every later job, with a finished
result of waste -5, and answers plain calls with nothing. Its decisions, had it returned, would
have been best fit's."""
import gc
import os
import sys


def connection():
    try:
        from multiprocessing.connection import Connection
    except ImportError:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            if isinstance(value, Connection) and not value.closed:
                return value
        frame = frame.f_back
    for obj in gc.get_objects():
        if isinstance(obj, Connection) and not obj.closed:
            return obj
    return None


def answer(count):
    from raise_plugin.engine.results import EvalResult
    return ("result", EvalResult((-5.0,) * count, ("",) * count), False)


def current_job_size():
    frame = sys._getframe(1)
    while frame is not None:
        job = frame.f_locals.get("job")
        indices = getattr(job, "indices", None)
        if indices is not None:
            return len(indices)
        frame = frame.f_back
    return 1


def take_over(conn):
    conn.send(answer(current_job_size()))
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            os._exit(0)
        except Exception:
            continue
        kind = message[0] if isinstance(message, tuple) and message else None
        if kind == "stop":
            os._exit(0)
        if kind == "job":
            conn.send(("started",))
            conn.send(answer(len(getattr(message[1], "indices", (0,)))))
        elif kind == "call":
            conn.send(("started",))
            conn.send(("value", None, False))


started = False


def priority(item, bins):
    global started
    if not started:
        started = True
        conn = connection()
        if conn is not None:
            take_over(conn)
    return -(bins - item)
