"""What a sandboxed evaluation may use: time, memory, processes, file size, environment."""
from __future__ import annotations

import fnmatch
import math
import multiprocessing as mp
import sys
from dataclasses import dataclass

from raise_plugin.config import EngineSettings
from raise_plugin.settings import default

__all__ = ["SandboxLimits", "SECRET_PATTERNS", "ALLOWED_ENVIRONMENT", "START_METHODS", "scrub_environment",
           "keep_environment", "allowed_environment", "default_start_method", "is_secret", "LONGEST_WAIT"]

# the longest one poll or select on a worker's pipes waits before it looks at its deadline again: poll
# takes at most 2**31 - 1 ms (24.8 days), and a job's time limit is its instances' limits together
LONGEST_WAIT = 86400.0

# Environment variables never passed to generated programs (matched case-insensitively).
SECRET_PATTERNS = ("*_API_KEY", "*API_KEY*", "*KEY*", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*",
                   "*CREDENTIAL*", "*_KEY", "AWS_*", "AZURE_*", "GOOGLE_APPLICATION_CREDENTIALS",
                   "OPENAI_*", "ANTHROPIC_*", "HF_*", "HUGGING*", "WANDB_*", "GITHUB_*", "SSH_AUTH_SOCK")

# The only environment variables a worker and its programs get (matched case-sensitively), less
# any that looks secret: where things are, the locale and the time zone, Python's own settings,
# the thread counts of numerical libraries, and the plugin's own (where task files are).
ALLOWED_ENVIRONMENT = ("PATH", "HOME", "LANG", "LANGUAGE", "LC_*", "TZ", "TMPDIR", "TERM", "PYTHONPATH",
                       "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "PYTHONIOENCODING", "PYTHONUTF8",
                       "PYTHONWARNINGS", "VIRTUAL_ENV", "OPENBLAS_*", "OMP_*", "MKL_*", "NUMEXPR_*", "NUMBA_*",
                       "RAISE_PLUGIN_*", "LD_LIBRARY_PATH", "SYSTEMROOT", "COVERAGE_*")


def default_start_method() -> str:
    """``server`` on Linux (workers forked in milliseconds by a clean fork server, see
    ``cleanstart``), else ``spawn`` (macOS and Windows, where forking is unsafe or impossible)."""
    return "server" if sys.platform.startswith("linux") else "spawn"


def start_methods() -> tuple[str, ...]:
    """``server`` where processes can fork, and multiprocessing's own start methods."""
    own = tuple(mp.get_all_start_methods())
    return (("server",) if "forkserver" in own else ()) + own


START_METHODS = start_methods()


@dataclass(frozen=True)
class SandboxLimits:
    """Limits applied to every sandboxed evaluation.

    ``timeout``: wall-clock seconds per job (one program on its share of instances);
    on expiry the worker's whole process group is killed and the worker replaced.
    ``memory_mb``: address space a program process may add to its size at start
    (RLIMIT_DATA = its private writable memory + this budget, ``oslimits.cap_memory``: what
    libraries reserve without writing is not counted); the worker, which runs the engine's own calls
    such as inner searches, has the same budget of its own. ``max_processes``: RLIMIT_NPROC for the
    worker; 0 forbids new processes and threads (ignored by the kernel for root, where
    the audit hook and the stray-process check still apply). ``file_mb``: largest file
    a program may write (RLIMIT_FSIZE). ``output_mb``: what a program may print per job
    (output is discarded; past the cap ``print`` raises, which makes the result invalid).
    ``audit``: refuse, through a Python audit hook,
    writes outside the worker's private directory, process creation, sockets and
    ctypes. ``confine``: what the kernel offers on Linux (``confine.confine``): run as
    ``nobody`` when the engine is root, not dumpable, no new privileges, and a Landlock domain
    (writes only in the worker's directory, no other process's /proc, no TCP, no signals
    outside). ``retries``: how often a job whose worker died is run again on a fresh worker.
    ``start_method``: ``server`` (default on Linux: workers forked by a fork server started
    from a fresh interpreter with the secrets removed from its environment, so they hold
    none of the engine's memory or secrets), ``fork`` (a copy of the engine's memory, API
    keys included: for scripts that registered a task in their own process),
    ``forkserver`` or ``spawn``. ``jit``: the compiled evaluation path (``engine.compiled``):
    the worker loads numba before its limits and hook, compiles each heuristic and runs it
    compiled where its decisions on the task's probe instances equal the Python function's;
    the audit hook then lets numba's and llvmlite's own code make their ctypes calls.
    ``jit_after``: seconds a program's evaluations in a worker take in Python before it is
    compiled there (about what a compile and its probes cost, so a program met briefly, as
    most candidates are once early rejection stops them, is never compiled); ``0`` compiles
    every program at its first evaluation. ``foresight``: the probability that a job has one of
    its instances checked for look-ahead (``foresight``: the program runs again, in a fresh
    process, on a copy whose part still to come is replaced and revealed in stages, or after one
    random point for a task without stages, and must decide as before up to it).
    ``threads``: whether a program's process may start threads (off: its first thread fails, for
    every user; RLIMIT_NPROC does not hold root, and numeric libraries run pools of one thread in
    the sandbox, the parallelism being across processes).
    """

    timeout: float | None = 60.0
    memory_mb: int | None = 2048
    max_processes: int | None = 0
    file_mb: int | None = 16
    output_mb: float | None = 10
    audit: bool = True
    confine: bool = True
    retries: int = 1
    start_method: str | None = None
    cache_sets: int = 4
    jit: bool = default("jit")
    jit_after: float = default("jit_after")
    foresight: float = 0.25
    threads: bool = False

    def __post_init__(self):
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"timeout must be > 0 seconds or None, got {self.timeout!r}")
        if self.memory_mb is not None and self.memory_mb < 16:
            raise ValueError(f"memory_mb must be >= 16 or None, got {self.memory_mb!r}")
        if self.max_processes is not None and self.max_processes < 0:
            raise ValueError(f"max_processes must be >= 0 or None, got {self.max_processes!r}")
        if self.file_mb is not None and self.file_mb < 0:
            raise ValueError(f"file_mb must be >= 0 or None, got {self.file_mb!r}")
        if self.output_mb is not None and self.output_mb < 0:
            raise ValueError(f"output_mb must be >= 0 or None, got {self.output_mb!r}")
        if self.retries < 0:
            raise ValueError(f"retries must be >= 0, got {self.retries!r}")
        if self.cache_sets < 1:
            raise ValueError(f"cache_sets must be >= 1, got {self.cache_sets!r}")
        if not 0.0 <= self.foresight <= 1.0:
            raise ValueError(f"foresight must be a probability in [0, 1], got {self.foresight!r}")
        if not (self.jit_after >= 0 and math.isfinite(self.jit_after)):
            raise ValueError(f"jit_after must be a number of seconds >= 0, got {self.jit_after!r}")
        if self.start_method is not None and self.start_method not in START_METHODS:
            raise ValueError(f"start_method must be one of {', '.join(START_METHODS)}, got {self.start_method!r}")

    @property
    def method(self) -> str:
        return self.start_method or default_start_method()

    @classmethod
    def of(cls, engine: EngineSettings) -> "SandboxLimits":
        """The limits a run's ``engine`` section sets (its sandbox's memory, files and output, and
        the compiled path), the engine's own for the rest."""
        return cls(**engine.sandbox_limits())


def is_secret(name: str) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRET_PATTERNS)


def scrub_environment(environ) -> list[str]:
    """Delete every secret-looking variable from ``environ`` (in place); the names removed."""
    removed = [k for k in list(environ) if is_secret(k)]
    for k in removed:
        del environ[k]
    return removed


def allowed_environment(environ) -> dict[str, str]:
    """The variables of ``environ`` that ``ALLOWED_ENVIRONMENT`` names and that look no secret."""
    return {k: v for k, v in environ.items()
            if any(fnmatch.fnmatchcase(k, pattern) for pattern in ALLOWED_ENVIRONMENT) and not is_secret(k)}


def keep_environment(environ) -> list[str]:
    """Delete from ``environ`` (in place) every variable ``allowed_environment`` leaves out; the names removed."""
    kept = allowed_environment(environ)
    removed = [k for k in list(environ) if k not in kept]
    for k in removed:
        del environ[k]
    return removed
