"""Run events queued under one lock and fired outside it, one dispatcher at a time.

Lock order (the only one in the wrapper): a thread holding the gate's lock never waits
for the hook lock. Events (a sample registered, a generation ended) are queued while the
gate's lock is held and fired after it is released, by whichever thread finds the queue
non-empty and nobody dispatching; while events are fired, registration and selection wait
(``wait``), except in the dispatching thread itself. So hooks (hook lock) may take the gate's
lock (re-scoring the population after the instance set changed), never the reverse.
"""
from __future__ import annotations

import threading
from typing import Callable

__all__ = ["EventGate"]


class EventGate:
    def __init__(self):
        self.cond = threading.Condition(threading.RLock())
        self._dispatching: int | None = None
        self._events: list[tuple[Callable, tuple]] = []

    @property
    def busy(self) -> bool:
        """Events are being fired (by any thread)."""
        return self._dispatching is not None

    def wait(self) -> None:
        """Wait (holding ``cond``) until no other thread fires events."""
        while self._dispatching is not None and self._dispatching != threading.get_ident():
            self.cond.wait()

    def push(self, fire: Callable, *args) -> None:
        """Queue ``fire(*args)``; call with ``cond`` held."""
        self._events.append((fire, args))

    def dispatch(self) -> None:
        """Fire the queued events in order (call without ``cond`` held); returns at once when
        another thread is firing them (it fires these too)."""
        while True:
            with self.cond:
                if self._dispatching is not None or not self._events:
                    return
                self._dispatching = threading.get_ident()
                events, self._events = self._events, []
            try:
                for fire, args in events:
                    fire(*args)
            finally:
                with self.cond:
                    self._dispatching = None
                    self.cond.notify_all()
