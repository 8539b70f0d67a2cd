"""The sandbox's self-check: before a command spends its budget, the task's first baseline is
evaluated on one nominal instance under the limits its programs will have. Limits that fail it
would fail every honest program (on one machine a memory cap failed every program, and the run
exited 0 with nothing evaluated), so the command stops in one line naming the limit and the
setting that changes it. Done once per process for each task and set of limits."""
from __future__ import annotations

import dataclasses

from raise_plugin.errors import UserError

from .executors import ProcessExecutor
from .fanout import Engine
from .jobs import ProgramSpec
from .limits import SandboxLimits
from .results import FailureKind

__all__ = ["check_limits", "LimitsTooTight"]

# what each failure says of the limits, and the flag that changes the limit
_LIMITS = {FailureKind.MEMORY: ("memory limit", "memory_mb", "MiB", "--memory-mb"),
           FailureKind.TIMEOUT: ("time limit", "timeout", "s", "--timeout")}
_checked: set = set()


class LimitsTooTight(UserError):
    """The sandbox's limits fail the task's own first baseline."""


def check_limits(task, limits: SandboxLimits, executor=None, timeout: float | None = None) -> None:
    """Evaluate ``task``'s first baseline on its first nominal instance under ``limits`` (in
    ``executor`` where one is given and already made, else in one worker of its own, started and
    stopped here) with the instance's time limit ``timeout`` (default: the task's); raise
    ``LimitsTooTight`` in one line where it fails. No look-ahead check: a baseline decides online."""
    baselines = list(getattr(task, "baselines", {}) or {})
    key = (getattr(task, "name", repr(task)), limits, timeout)
    if not baselines or key in _checked:
        return
    instance = task.nominal_instances()[0]
    limit = timeout if timeout is not None else task.instance_timeout(instance)
    quiet = dataclasses.replace(limits, foresight=0.0, jit=False)
    made = executor is None or isinstance(executor, (str, int))
    try:
        pool = ProcessExecutor(1, quiet) if made else executor
        try:
            result = Engine(task, pool, limits=quiet).evaluate(ProgramSpec(baseline=baselines[0]), [instance],
                                                                timeout=limit)
        finally:
            if made:
                pool.shutdown()
    except OSError:  # no worker to check in (a full disk, the machine's limits): the command says why itself
        return
    if result.valid:
        _checked.add(key)
        return
    name, field, unit, flag = _LIMITS.get(result.kind, ("sandbox", None, "", None))
    if field is None:
        raise LimitsTooTight(f"the sandbox fails {task.name}'s own baseline {baselines[0]} on a nominal instance "
                             f"({result.kind}: {result.reason}): no program could be evaluated; see docs/engine.md")
    value = limit if field == "timeout" else getattr(limits, field)
    raise LimitsTooTight(f"the sandbox's {name} ({value:g} {unit}) fails {task.name}'s own baseline {baselines[0]} "
                         f"on a nominal instance ({result.reason}): no program could be evaluated; raise it with "
                         f"{flag}")
