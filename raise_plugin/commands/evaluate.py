"""``raise-ahd evaluate``: score heuristic files (and baselines) on a task's nominal set, validation or test suite."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from raise_plugin.engine import SandboxLimits
from raise_plugin.engine.executors import check_engine
from raise_plugin.engine.selfcheck import check_limits
from raise_plugin.engine.suite import Heuristic, evaluate_suite
from raise_plugin.durable import unwritable
from raise_plugin.errors import UserError
from raise_plugin.harness.tables import dataset_means, render_table, write_rows_csv
from raise_plugin.programs import ProgramError, check_program
from raise_plugin.commands.flags import add_flags, check_flags
from raise_plugin.commands.run import RUN_FAILED
from raise_plugin.config import SANDBOX_LIMITS, EngineSettings
from raise_plugin.settings import SettingError
from tasks import get_task, list_tasks
from tasks.common.classical import classical_rules
from tasks.common.errors import printable


def register(sub) -> None:
    p = sub.add_parser("evaluate", help="evaluate heuristic files on a task's nominal set, validation or test suite")
    p.add_argument("heuristics", nargs="*", metavar="HEURISTIC.py", help="Python files defining the priority function")
    add_flags(p, ("task", "suite", "baselines", "out", "workers", "executor", "timeout", *SANDBOX_LIMITS, "jit",
                  "jit_after", "progress"), required=("task",),
              shown={"out": "none: the table is printed, nothing written"}, metavars={"out": "FILE"},
              helps={"out": "write every (heuristic, instance) result to this CSV file",
                     "suite": "instances to use: the nominal set, the validation suite (for choices) or the test "
                              "suite (for the final report)",
                     "executor": "where evaluations run: serial, process[:N], dask://HOST:PORT or dask://local"})
    p.set_defaults(func=run)


def resolve_task(name: str):
    try:
        return get_task(name)
    except KeyError:
        raise UserError(f"unknown task {name!r}; choose from {', '.join(list_tasks())}") from None


def collect_heuristics(task, files, baselines: str) -> list[Heuristic]:
    chosen = []
    rules = classical_rules(task)  # the paper's baselines first, then the task's other classical rules
    names = {"all": list(task.baselines), "classical": list(rules), "none": []}.get(
        baselines, [b.strip() for b in baselines.split(",") if b.strip()])
    lookup = {b.lower(): b for b in rules}
    for b in names:
        if b.lower() not in lookup:
            raise UserError(f"unknown baseline {b!r} for {task.name}; choose from {', '.join(rules)}")
        if any(h.baseline == lookup[b.lower()] for h in chosen):
            raise UserError(f"--baselines: {lookup[b.lower()]} named twice; name it once")
        chosen.append(Heuristic(lookup[b.lower()], baseline=lookup[b.lower()]))
    paths = [Path(f) for f in files]
    seen = set()
    for path in paths:
        if path.resolve() in seen:
            raise UserError(f"{path}: given twice")
        seen.add(path.resolve())
    stems = [p.stem for p in paths]
    clash = {n for n in stems if stems.count(n) > 1} | {h.name for h in chosen}
    for path in paths:
        try:
            code = path.read_text()
            # fail early with a one-line reason; parsed, never run here: its code runs in the sandbox only
            check_program(code, source=str(path), template=getattr(task, "template_program", None))
        except OSError as exc:
            raise UserError(f"cannot read heuristic file {path}: {exc.strerror or exc}") from None
        except ProgramError as exc:
            raise UserError(str(exc)) from None
        except UnicodeDecodeError:
            raise UserError(f"{path}: not UTF-8 text (a heuristic file must be UTF-8 text)") from None
        # named by the file's stem, or by its path where another file or a baseline has that name
        chosen.append(Heuristic(str(path) if path.stem in clash else path.stem, code=code))
    if not chosen:
        raise UserError("nothing to evaluate: give heuristic files or --baselines")
    return chosen


def check_output(path, *, folder: bool = False) -> None:
    """Refuse, before any work, an output path that cannot be written: a directory where a
    file is wanted (or the reverse), or a place under a file or without write permission."""
    why = None if path is None else unwritable(path, folder=folder)
    if why is not None:
        raise UserError(f"--out {Path(path)}: {why}")


def check_executor(spec, workers: int | None = None) -> None:
    """A one-line ``UserError`` for an executor spec that names none, a Dask scheduler that does not answer, or
    ``workers`` beside an executor that says where programs run (``serial``, ``process:N``, ``dask://...``),
    which evaluated without them, as a run's settings are refused."""
    if spec is None:
        return
    try:
        check_engine(EngineSettings(executor=spec, workers=workers))
    except SettingError as exc:  # the spec's own message names it already
        raise UserError(exc.reason if exc.name == "executor" else str(exc)) from None


def report_invalid(rows, names, out=None, where: str = "") -> None:
    """One line per heuristic that failed somewhere: on how many instances (``where``: of which
    set, when a command shows more than one), the first reason, and how many of them were
    skipped after a failure that repeats."""
    for h in names:
        bad = [r for r in rows if r.heuristic == h and not r.valid]
        if not bad:
            continue
        skipped = sum(1 for r in bad if r.skipped)
        first = next((r.reason for r in bad if not r.skipped), bad[0].reason)
        tail = f" ({skipped} skipped after it)" if skipped else ""
        print(f"{h}: invalid on {len(bad)} instances{where}: {first}{tail}", file=out)


def run(args) -> int:
    task = resolve_task(args.task)
    heuristics = collect_heuristics(task, args.heuristics, args.baselines)
    datasets = task.suite(args.suite)
    check_flags(args, ("workers", "timeout", *SANDBOX_LIMITS))
    check_executor(args.executor, args.workers)
    check_output(args.out)
    if args.out and Path(args.out).resolve() in {Path(f).resolve() for f in args.heuristics}:
        raise UserError(f"--out {args.out}: is one of the heuristic files evaluated; the table would replace it")
    compiled = []
    try:  # a file evaluated on its own has every job checked for look-ahead
        limits = SandboxLimits(foresight=1.0, jit=bool(args.jit), jit_after=args.jit_after,
                               **{name: getattr(args, name) for name in SANDBOX_LIMITS})
    except ValueError as exc:
        raise UserError(f"--jit-after: {exc}") from None
    check_limits(task, limits, timeout=args.timeout)  # limits that fail the task's own baseline: one line
    try:
        rows = evaluate_suite(task.name, heuristics, datasets, workers=args.workers, timeout=args.timeout,
                              progress=args.progress, executor=args.executor, limits=limits,
                              compiled_report=compiled.append)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a program does comes back as its result: the place failed
        print(f"raise-ahd: error: the engine running programs failed ({args.executor or 'its workers'}): "
              f"{type(exc).__name__}: {printable(str(exc))}; nothing was written: once it is back, the same "
              f"command evaluates again", file=sys.stderr)
        return RUN_FAILED
    names, ds, means = dataset_means(rows)
    body = []
    for d, family, params in ds:
        cells = []
        for h in names:
            mean, bad = means[(d, h)]
            cell = "invalid" if math.isnan(mean) else f"{mean:.3f}"
            cells.append(cell + (f" ({bad} invalid)" if bad and not math.isnan(mean) else ""))
        body.append([family, params.replace(";", " ")] + cells)
    overall = []
    for h in names:
        vals = [r.metric for r in rows if r.heuristic == h and r.valid]
        overall.append(f"{sum(vals) / len(vals):.3f}" if vals else "invalid")
    body.append(["mean", ""] + overall)
    print(f"{task.name}: mean metric per dataset over its instances, one heuristic a column; "
          f"metric: {task.metric_label}")
    print(render_table(["family", "sizes"] + names, body))
    report_invalid(rows, names)
    unchecked = sum(r.unchecked for r in rows)
    if unchecked:
        print(f"look-ahead check: {unchecked} jobs unchecked (no process could be started for their check; "
              f"their scores stand unverified)")
    for line in compiled:
        print(f"compiled path: {line}")
    if args.out:
        write_rows_csv(rows, args.out)
        print(f"wrote {len(rows)} rows to {args.out}")
    given = [h.name for h in heuristics if h.code is not None] or [h.name for h in heuristics]
    return all_invalid_status("evaluate", given, {r.heuristic for r in rows if r.valid})


def all_invalid_status(command: str, given: list[str], valid: set[str]) -> int:
    """1, with one line on stderr, when every heuristic given (the files, or the baselines
    when there are none) was invalid everywhere; else 0."""
    if any(name in valid for name in given):
        return 0
    which = "the heuristic" if len(given) == 1 else f"all {len(given)} heuristics"
    print(f"raise-ahd {command}: {which} given ({', '.join(given)}) invalid on every instance", file=sys.stderr)
    return 1
