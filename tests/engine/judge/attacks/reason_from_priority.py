"""A reason unsafe to print: the heuristic raises an exception whose type name and message hold
ANSI escapes (clear the screen, colour, set the window title), carriage returns, a NUL, a C1
control and 100 kB of text."""

NOISE = "\x1b[2J\x1b[H\x1b[31mall fine\x1b[0m\r\x00\x9b31m\x1b]0;owned\x07\r" + "x" * 100_000 + "\r\x1b[1A\x1b[K"
Loud = type("Loud\x1b[5m\r", (Exception,), {})


def priority(item, bins):
    raise Loud(NOISE)
