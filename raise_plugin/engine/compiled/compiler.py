"""The compiled evaluation path: a heuristic compiled with numba, inside the sandboxed worker,
runs compiled only once its answers on the task's probe instances equal the Python function's.

``SandboxLimits(jit=True)`` turns it on: the worker loads numba before its limits and audit
hook, and ``execute_job`` asks a ``Compiler`` for each job's heuristic. The ``Compiler``
executes a copy of the program, compiles its function with ``numba.njit`` (no cache, no
fastmath, no parallel threads), and runs the task's evaluation of the Python function on the
probe instances with every call also made to the compiled function on copies of the same
arguments: the two answers must give the same decision at every call (the same first argmax,
and the same verdict of the simulator's check: NaN, +inf, every score -inf). The decision is
all a simulator takes from an answer, so a metric computed from the same decisions is the
same; scores may differ in their last bits (numba's ``exp`` is not numpy's SIMD ``exp``).
Two spellings numba rejects are read as numpy reads them (``numba_spelling``): Python's
``float``, ``int`` and ``bool`` as dtypes (``np.asarray(x, dtype=float)``, the first line of
every offline sampler program) and ``np.max``/``np.min``/``np.amax``/``np.amin`` with
``initial=`` over a whole array. Anything else (numba absent, a compile error, a different
answer, an exception of either, a draw from the global random state) leaves the heuristic on
its Python function, with a one-line reason. The verdict is kept per program text in the
worker, so a program met again (another instance set, another chunk) is neither compiled nor
probed again.

A compile and its probes cost about half a second, what a program's evaluation on a few
large instances costs in Python. So a worker compiles a program only once its evaluations
there have taken ``after`` seconds in Python (``SandboxLimits.jit_after``; ``0``: at once),
as one rents skis until their price is spent: a candidate met briefly (most are, once early
rejection stops them after an instance or two) is never compiled, one evaluated at length
(a population member re-scored on every new instance, a program on a whole test suite)
runs compiled from that point of its evaluation on. Which path ran never changes a metric.

Results say which path ran (``EvalResult.compiled``, ``EvalResult.fallback``); executors keep a
``compiled_tally.CompiledTally`` of programs compiled and programs left on Python.
"""
from __future__ import annotations

import collections
import os
import random
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..failures import root_cause

__all__ = ["Compiler", "Verdict", "program_key", "probe_instances", "numba_available", "numba_spelling",
           "load_compiler", "warm_compiler", "PROBE_SEED", "WAITING"]

PROBE_SEED = 20240532  # the probe instances are the same in every worker and every run
_CACHED_PROGRAMS = 256


def numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except Exception:  # noqa: BLE001 - absent or broken alike
        return False
    return True


def probe_instances(task) -> list:
    """A small fixed set of instances of ``task`` on which a compiled heuristic must decide as the
    Python one does: the nominal distribution at a fifth of the nominal length (at least 50, at
    most the nominal length), the uniform distribution at that length, and the nominal
    distribution at half of it; drawn with a fixed seed through the task's own sampler."""
    nominal = task.nominal_instances()[0]
    histogram = np.asarray(task.histogram(nominal), dtype=float)
    uniform = np.full(histogram.shape, 1.0 / histogram.size)
    full = int(task.nominal_length)
    length = min(full, max(50, full // 5))
    rng = np.random.default_rng(PROBE_SEED)
    return [task.sample_instance(histogram, rng, length=length),
            task.sample_instance(uniform, rng, length=length),
            task.sample_instance(histogram, rng, length=max(5, length // 2))]


# Python's types as numba must be told them where a program uses them as dtypes: np.float64 and
# friends convert as float(), int() and bool() do and are dtypes as well, which the builtins
# are not to numba (``np.asarray(x, dtype=float)`` fails to type).
_NUMPY_SPELLINGS = {"float": np.float64, "int": np.int64, "bool": np.bool_}


def numba_spelling(function: Callable, own_module: bool) -> Callable:
    """``function`` as numba is to compile it: in its own module (a program's copy, never a task's
    or a shared one) the builtins ``float``, ``int`` and ``bool`` are numpy's scalar types,
    unless the program defines those names itself; numba also learns ``initial=`` of numpy's
    max and min (``_numpy_reductions``). The Python path never sees either: it runs another copy."""
    _numpy_reductions()
    namespace = getattr(function, "__globals__", None)
    if own_module and isinstance(namespace, dict):
        for name, numpy_type in _NUMPY_SPELLINGS.items():
            namespace.setdefault(name, numpy_type)
    return function


_REDUCTIONS_TAUGHT = False


def _numpy_reductions() -> None:
    """Teach numba ``np.max(a, initial=x)`` (and ``amax``, ``min``, ``amin``) over a whole array, as
    numpy computes it: ``initial`` cast to the array's dtype, a NaN anywhere gives NaN. Other
    arguments (``axis``, ``out``, ``keepdims``, ``where``) are left to numba, which refuses them."""
    global _REDUCTIONS_TAUGHT
    if _REDUCTIONS_TAUGHT:
        return
    from numba import types
    from numba.extending import overload

    def given(t) -> bool:
        return not (t is None or isinstance(t, (types.NoneType, types.Omitted)))

    def default(t, value) -> bool:
        return t is value or (isinstance(t, types.Omitted) and t.value is value)

    def teach(fn, larger: bool) -> None:
        @overload(fn)
        def with_initial(a, axis=None, out=None, keepdims=False, initial=None, where=True):
            if (not isinstance(a, types.Array) or not given(initial) or given(axis) or given(out)
                    or not default(keepdims, False) or not default(where, True)):
                return None
            kind = a.dtype

            def reduce(a, axis=None, out=None, keepdims=False, initial=None, where=True):
                best = kind(initial)
                for v in a.flat:  # ``larger`` is a constant of the compiled code
                    if (v > best if larger else v < best) or v != v:
                        best = v
                return best
            return reduce

    for fn in (np.max, np.amax):
        teach(fn, True)
    for fn in (np.min, np.amin):
        teach(fn, False)
    _REDUCTIONS_TAUGHT = True


@dataclass(frozen=True)
class Verdict:
    """``function``: the compiled heuristic, or ``None`` with ``reason`` (why it stays in Python)."""

    function: Callable | None
    reason: str = ""
    signatures: int = 0

    @property
    def compiled(self) -> bool:
        return self.function is not None

    def still_checked(self) -> bool:
        """Whether every argument type the compiled function has met was met on the probes (a
        new one is compiled on the spot, unchecked; numba's conversions to a known one are
        refused by this too, as a conversion can change a value: a float item to an int)."""
        return len(self.function.signatures) == self.signatures


class _Different(Exception):
    """The compiled function's answer differs from the Python function's."""


class _Comparing:
    """Calls the Python function (whose answer the simulator gets) and the compiled one on
    copies of the same arguments; the first difference is kept in ``difference``."""

    def __init__(self, python: Callable, compiled: Callable, compile_error: type, put_back: Callable[[], str] = str):
        self.python = python
        self.compiled = compiled
        self.compile_error = compile_error
        self.put_back = put_back  # the names the program replaced, put back (``Compiler``)
        self.difference: str | None = None
        self.calls = 0

    def __call__(self, *args):
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        expected = self.python(*args)
        if not self.calls and (changed := self.put_back()):  # numba compiles at the first call: not on what it replaced
            self.difference = changed
            raise _Different(changed)
        self.calls += 1
        try:
            answer = self.compiled(*copies)
        except Exception as exc:  # noqa: BLE001 - any failure of the compiled function
            if isinstance(exc, self.compile_error) or not self.compiled.signatures:  # compiled at the first call
                self.difference = f"does not compile: {_one_line(exc)}"
            else:
                self.difference = (f"differs on the probe instances: the compiled function raised "
                                   f"{type(exc).__name__} at decision {self.calls}")
            raise _Different(self.difference) from None
        if _decision(expected) != _decision(answer):
            self.difference = f"differs on the probe instances: another decision at call {self.calls}"
            raise _Different(self.difference)
        return expected


def _decision(answer) -> tuple:
    """What a simulator makes of an answer (``tasks.common.decision``): the first argmax, and
    whether it refuses the answer (NaN anywhere, +inf anywhere, every score -inf, not numbers)."""
    try:
        a = np.asarray(answer)
    except Exception:  # noqa: BLE001 - the simulator refuses it too
        return ("refused",)
    if a.ndim != 1 or a.size == 0 or a.dtype.kind not in "biuf":
        return ("other", a.shape, a.dtype.kind)
    index = int(a.argmax())
    if a.dtype.kind != "f":
        return (a.shape, index)
    return (a.shape, index, bool(np.isnan(a).any()), bool(np.isposinf(a).any()), bool(np.isneginf(a[index])))


def _one_line(exc: BaseException, limit: int = 160) -> str:
    first = " ".join(str(exc).split())
    text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _random_state() -> tuple:
    state = np.random.get_state()
    return random.getstate(), state[0], state[1].copy(), state[2:]


def _same_random_state(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1] == b[1] and np.array_equal(a[2], b[2]) and a[3] == b[3]


def _restore_random_state(saved: tuple) -> None:
    random.setstate(saved[0])
    np.random.set_state((saved[1], saved[2], *saved[3]))


WAITING = "not compiled yet"  # the fallback of a job whose program has not taken ``after`` seconds yet


class Compiler:
    """A worker's compiled path: compiles, probes and remembers the verdict for each program,
    once the program's evaluations here have taken ``after`` seconds in Python (``ready``)."""

    def __init__(self, cached: int = _CACHED_PROGRAMS, after: float = 0.0, held=None):
        if numba_available():  # numba learns numpy's spellings now, before a job's state is taken
            _numpy_reductions()
        self._put_back = str if held is None else held.put_back  # ``sandbox.HeldModules``, before any program ran
        self._verdicts: collections.OrderedDict[tuple, Verdict] = collections.OrderedDict()
        self._spent: collections.OrderedDict[tuple, float] = collections.OrderedDict()
        self._probes: dict[str, list] = {}
        self._cached = cached
        self.after = float(after)

    def ready(self, task, spec, seconds: float = 0.0) -> Verdict | None:
        """``spec``'s verdict once its evaluations here, ``seconds`` more included, have taken
        ``after`` seconds in Python (judged then, if not before); ``None`` until then."""
        key = program_key(task.name, spec)
        if key in self._verdicts:
            return self.verdict(task, spec)
        spent = self._spent.pop(key, 0.0) + seconds
        if spent >= self.after:
            return self.verdict(task, spec)
        self._spent[key] = spent
        while len(self._spent) > 16 * self._cached:
            self._spent.popitem(last=False)
        return None

    def waiting(self, task, spec) -> str:
        """The fallback of a job whose program is not compiled yet."""
        spent = self._spent.get(program_key(task.name, spec), 0.0)
        return f"{WAITING}: {spent:.2f} s of Python in this worker, compiled after {self.after:g} s"

    def verdict(self, task, spec) -> Verdict:
        """The compiled heuristic for ``spec`` (a ``ProgramSpec``) on ``task``, or why there is none."""
        key = program_key(task.name, spec)
        self._spent.pop(key, None)
        held = self._verdicts.get(key)
        if held is not None:
            self._verdicts.move_to_end(key)
            return held
        verdict = self._judge(task, spec)
        self._verdicts[key] = verdict
        while len(self._verdicts) > self._cached:
            self._verdicts.popitem(last=False)
        return verdict

    def _judge(self, task, spec) -> Verdict:
        saved = _random_state()
        try:
            verdict = self._compile_and_probe(task, spec, saved)
        except BaseException as exc:  # noqa: BLE001 - the Python path meets (and reports) it again
            verdict = Verdict(None, f"the compile step failed: {type(exc).__name__}")
        changed = self._put_back()  # a name the program replaced in a probe: put back before anything else runs
        _restore_random_state(saved)  # the Python path then sees what it would without this step
        return Verdict(None, changed) if changed else verdict

    def _compile_and_probe(self, task, spec, saved: tuple) -> Verdict:
        try:
            import numba
            from numba.core.errors import NumbaError
        except Exception as exc:  # noqa: BLE001 - absent or broken alike
            return Verdict(None, f"numba is not available ({type(exc).__name__})")
        python, copy = spec.resolve(task), spec.resolve(task)  # modules of their own: the real run gets a fresh one
        if changed := self._put_back():  # numba compiles on the modules as they were
            return Verdict(None, changed)
        try:
            compiled = numba.njit(numba_spelling(copy, spec.baseline is None),
                                  cache=False, fastmath=False, parallel=False, nogil=False)
        except Exception as exc:  # noqa: BLE001 - e.g. not a Python function
            return Verdict(None, f"does not compile: {type(exc).__name__}")
        comparing = _Comparing(python, compiled, NumbaError, self._put_back)
        for instance in self._probe_set(task):
            try:
                task.evaluate(comparing, instance)
            except Exception as exc:  # noqa: BLE001 - sorted out below
                if comparing.difference is not None:
                    return Verdict(None, comparing.difference)
                cause = root_cause(exc)
                if isinstance(cause, NumbaError):
                    return Verdict(None, f"does not compile: {_one_line(cause)}")
                return Verdict(None, f"fails on a probe instance in Python: {type(cause).__name__}")
        if not _same_random_state(saved, _random_state()) or _draws(compiled):
            return Verdict(None, "draws from the global random state")
        escape = _escape_hatch(compiled)
        if escape is not None:
            return Verdict(None, f"uses {escape}, which runs code the look-ahead check cannot see compiled")
        return Verdict(compiled, signatures=len(compiled.signatures))

    def _probe_set(self, task) -> list:
        if task.name not in self._probes:
            self._probes[task.name] = probe_instances(task)
        return self._probes[task.name]


# what compiled code may use to reach past its arguments: Python run in object mode (``numba.objmode``),
# C functions (ctypes, cffi), raw memory, numba's intrinsics and other compiled functions, which may
# hold any of these. A program using one stays on Python, where the look-ahead check sees what it runs
_ESCAPES = {"ExternalFunctionPointer": "a C function pointer (ctypes, cffi)", "ExternalFunction": "a C function",
            "RawPointer": "a raw pointer", "CPointer": "a raw pointer", "Opaque": "a raw pointer",
            "ContextManager": "numba's object mode (objmode)", "ObjModeDispatcher": "numba's object mode (objmode)",
            "Dispatcher": "another compiled function", "Intrinsic": "a numba intrinsic"}
_MODULES = ("numpy", "math", "cmath")  # the modules a compiled program may use


def _inferred(compiled):
    """Every type numba inferred for the compiled function, in every signature it was compiled for,
    each with the module it names (``None`` where it names none)."""
    for result in compiled.overloads.values():
        for value in result.type_annotation.typemap.values():
            yield value, getattr(value, "pymod", None) if type(value).__name__ == "Module" else None


def _escape_hatch(compiled) -> str | None:
    """What of ``_ESCAPES`` the compiled function uses, in any signature it was compiled for; None
    when it uses none."""
    if any(result.lifted for result in compiled.overloads.values()):  # lifted out of nopython mode: objmode
        return "numba's object mode (objmode)"
    for value, module in _inferred(compiled):
        names = {type(value).__name__, type(getattr(value, "typing_key", None)).__name__.lstrip("_")}
        found = next((_ESCAPES[name] for name in names if name in _ESCAPES), None)
        if found is None and module is not None and module.__name__.split(".")[0] not in _MODULES:
            found = f"the module {module.__name__}"
        if found is not None:
            return found
    return None


def _draws(compiled) -> bool:
    """Whether the compiled function can draw random numbers (``np.random``, ``random``), in any signature
    it was compiled for, whether or not the probes reached the draw: compiled, it draws from numba's own
    generators, which are not the global ones seeded before every instance, so its decisions would
    differ from run to run (and from its look-ahead check's copy)."""
    for value, module in _inferred(compiled):
        key = getattr(value, "typing_key", None)
        if module is not None and module.__name__.split(".")[:2] in (["numpy", "random"], ["random"]):
            return True
        if key is not None and (str(getattr(key, "__module__", "") or "").startswith("numpy.random")
                                or isinstance(getattr(key, "__self__", None), (np.random.RandomState, random.Random))):
            return True
    return False


def program_key(task_name: str, spec) -> tuple:
    """What a program is known by, in a worker's ``Compiler`` and in a ``CompiledTally``."""
    return task_name, spec.code, spec.function, spec.baseline


def load_compiler() -> tuple[str, ...]:
    """Import numba (it loads LLVM's library, which the audit hook would refuse later); the
    directories of numba and llvmlite, or none when numba is not installed."""
    try:
        import llvmlite
        import numba
    except Exception:  # noqa: BLE001 - not installed or broken: every program runs in Python
        return ()
    return tuple(os.path.dirname(m.__file__) + os.sep for m in (numba, llvmlite))


def warm_compiler() -> None:
    """Load numba and compile one small function, so that LLVM's start-up is paid once in the
    worker, not again in every program process it forks."""
    if not load_compiler():
        return
    try:
        from numba import njit
        njit(cache=False)(lambda a, x: np.exp(a - x).argmax())(np.arange(3.0), 1.0)
    except Exception:  # noqa: BLE001 - the program processes compile as they can
        pass
