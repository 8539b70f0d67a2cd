"""Run a command with busy-loop processes beside it, to check that the tests hold on a busy machine.

    python tests/stress.py [--busy N] [--max-seconds S] -- COMMAND [ARGS...]

Starts N processes that spin on one core each (default 2), runs COMMAND, stops the
spinners and exits with COMMAND's status. A spinner also stops by itself when this
script dies (it watches its parent) or after S seconds (default 3600), so none is left
behind on a shared machine. ``busy(n)`` does the same inside a test.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time

_SPIN = """
import os, sys, time
parent, stop = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while os.getppid() == parent and time.monotonic() < stop:
    for _ in range(200000):
        pass
"""


@contextlib.contextmanager
def busy(count: int = 2, max_seconds: float = 3600.0):
    """``count`` spinning processes for the duration of the block."""
    spinners = [subprocess.Popen([sys.executable, "-c", _SPIN, str(os.getpid()), str(max_seconds)])
                for _ in range(count)]
    try:
        yield [p.pid for p in spinners]
    finally:
        for p in spinners:
            p.kill()
        for p in spinners:
            p.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--busy", type=int, default=2, help="busy-loop processes beside the command (default 2)")
    parser.add_argument("--max-seconds", type=float, default=3600.0, help="a spinner's longest life (default 3600)")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the command to run, after --")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    start = time.monotonic()
    with busy(args.busy, args.max_seconds):
        print(f"stress: {args.busy} busy-loop processes beside: {' '.join(command)}", file=sys.stderr, flush=True)
        code = subprocess.call(command)
    print(f"stress: exit status {code} after {time.monotonic() - start:.0f} s", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
