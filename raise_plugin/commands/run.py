"""``raise-ahd run``: one (robust) method run on a task, recorded in a run directory."""
from __future__ import annotations

import collections
import contextlib
import signal
import sys
import threading
import time
from pathlib import Path

from raise_plugin.config import ConfigError, RunConfig
from raise_plugin.errors import UserError
from raise_plugin.harness.run_metric import best_line
from raise_plugin.harness.run_report import write_run_page
from raise_plugin.llm.recording import run_directory_of
from raise_plugin.llm.usage import REPLAY
from raise_plugin.robust.owned import CompiledPathReport
from raise_plugin.robust.progress import ProgressBar
from raise_plugin.rundir.files import RunDirectoryDamaged, read_jsonl
from raise_plugin.rundir.reader import load_config
from raise_plugin.replay import RecordedRun
from raise_plugin.resolve import final_selection
from raise_plugin.runner import start_run
from raise_plugin.commands.flags import add_flags
from raise_plugin.settings import SETTINGS, TREE
from raise_plugin.validation import select_final
from tasks import is_task_reference, task_reference

# the run's settings, in the tree's order (raise_plugin.settings): each a flag of the same name
FLAGS = tuple(s.name for _, s in TREE.walk())

RUN_FAILED = 3  # the exit status of a run that could not go on: its LLM endpoint or its engine failed, its disk refused a write


def register(sub) -> None:
    p = sub.add_parser("run", help="run a method (robust by default) on a task, recorded in a run directory",
                       description="Run a method on a task with RAISE's adversarial inner loop (or without it: "
                                   "--no-robust). Flags override the --config file (a TOML file of the same "
                                   "settings, flat or in tables named after the sections below); every run "
                                   "writes a run directory that `raise-ahd resume` continues.")
    p.add_argument("--config", metavar="FILE", help="TOML file of settings (flags override it) (default none: the "
                                                     "settings' defaults)")
    groups: dict = {}
    add_flags(p, [name for name in FLAGS if name != "prices"], unset=True, groups=groups)  # a table: --price
    add_price_flag(groups)
    add_flags(p, ("progress",))
    p.set_defaults(func=run)


def add_price_flag(groups: dict) -> None:
    """``--price MODEL=IN,OUT`` (repeatable), in the LLM group: the ``prices`` setting is a table."""
    groups["llm"].add_argument(SETTINGS["prices"].flag, action="append", metavar="MODEL=IN,OUT", dest="price_items",
                               help="add a model to the price table: dollars per million input and output tokens "
                                    "(repeatable; the [prices] table of a TOML config likewise) (default none: "
                                    "the built-in table)")


def parse_prices(items) -> dict | None:
    """``["model=0.25,2.0", ...]`` -> ``{"model": [0.25, 2.0]}``; a malformed item is a one-line error."""
    if not items:
        return None
    prices = {}
    for item in items:
        model, _, pair = item.partition("=")
        try:
            low, high = (float(x) for x in pair.split(","))
        except ValueError:
            raise ConfigError(f"--price {item!r}: use MODEL=IN,OUT (dollars per million input and output tokens)") from None
        prices[model.strip()] = [low, high]
    return prices


def config_from_args(args) -> tuple[RunConfig, RecordedRun | None]:
    """The run's config from the flags over the ``--config`` file; with ``--llm replay:RUN_DIR``
    the recorded run too, whose settings are the defaults of those not given."""
    args.prices = parse_prices(getattr(args, "price_items", None))
    flags = {name: getattr(args, name) for name in FLAGS if getattr(args, name, None) is not None}
    if flags.get("task") and is_task_reference(flags["task"]):
        flags["task"] = task_reference(flags["task"])  # recorded with its absolute path: resumable anywhere
    data, source = flags, "flags"
    if args.config:
        try:
            data, source = {**RunConfig.settings_in_toml(args.config), **flags}, args.config
        except UnicodeDecodeError:
            raise UserError(f"config file {args.config}: not UTF-8 text") from None
    kind, _, recording = str(data.get("llm", "")).partition(":")
    if kind == "replay" and recording and run_directory_of(recording) is not None:
        recorded = RecordedRun.read(recording)  # a run again: its settings the defaults of those not given here
        return recorded.config(**{k: v for k, v in data.items() if k != "llm"}), recorded
    return RunConfig.from_dict(data, source=source), None


def print_summary(summary: dict, run_dir, out=None, selection: dict | None = None,
                  recorded: dict | None = None) -> None:
    """The run's summary; ``selection`` (``select_final``'s record) names the final program
    when the task hands on the choice made on its validation suite. A RAISE run's best is its
    robust best; a plain run's (``robust = false`` in its config) its best on the nominal set."""
    out = out or sys.stdout
    recorded = _recorded(run_dir) if recorded is None else recorded  # the run's config.json, read once by a caller
    robust = bool(recorded.get("robust", True))
    best = summary.get("best") or {}
    sets = summary.get("instance_set", [])
    adv = [e for e in sets if e["origin"] != "nominal"]
    score = best.get("robust_score")
    print(f"run directory   {run_dir}", file=out)
    repeated = summary.get("repeated_samples") or 0
    print(f"samples         {summary['samples']} of {summary['budget']}"
          + (f" ({repeated} of them unchanged copies of an earlier sample's program)"
             if 2 * repeated > summary["samples"] else ""), file=out)
    print(f"generations     {summary['generations']}", file=out)
    print(f"refreshes       {summary['refreshes']}", file=out)
    skipped = summary.get("refreshes_skipped") or []
    if skipped:  # the run trained without their instances: said, not left in the checkpoint
        print(f"skipped         {len(skipped)} refresh{'es' * (len(skipped) > 1)} whose inner search failed, the "
              f"run trained without their instances: {skipped[0]['reason']}"
              + (" (and other reasons)" if len({s['reason'] for s in skipped}) > 1 else ""), file=out)
    if summary.get("hook_errors"):  # passed over so the run goes on, but never silently
        log_file = Path(run_dir) / "host" / "run_log.txt"  # the host's log, where it keeps one; else stderr
        print(f"callback errors {summary['hook_errors']} calls of a callback's hook raised and were passed over "
              f"(their tracebacks: {log_file if log_file.exists() else 'on stderr'})", file=out)
    distances = ", ".join(f"{e['distance']:.4g}" for e in adv if e.get("distance") is not None)
    print(f"instance set    {len(sets) - len(adv)} nominal + {len(adv)} adversarial"
          + (f" (distance to nominal: {distances})" if distances else ""), file=out)
    label = "best robust    " if robust else "best           "
    print(f"{label} {best_line(score, best.get('program_id'), recorded)}", file=out)
    c = summary.get("compute") or {}
    if c:
        print(f"evaluations     {c['total_evaluations']} instance evaluations: outer {c['outer_evaluations']}, "
              f"inner searches {c['inner_evaluations']}, re-scoring {c['rescore_evaluations']}", file=out)
        print(f"inner loop      {100 * c['inner_loop_share_evaluations']:.1f} % of evaluations, "
              f"{100 * c['inner_loop_share_seconds']:.1f} % of evaluation time "
              f"({c['inner_seconds'] + c['rescore_seconds']:.1f} s of {c['total_seconds']:.1f} s)", file=out)
    else:
        print(f"evaluations     {summary['evaluations']} program-instance evaluations", file=out)
    rejection = summary.get("early_rejection")
    if rejection == "on" and c:
        print(f"early rejection {c.get('rejected_early', 0)} candidates stopped early, "
              f"{c.get('evaluations_saved', 0)} instance evaluations saved", file=out)
    elif rejection and rejection != "off":
        print(f"early rejection none ({rejection})", file=out)
    t = summary.get("time_per_sample")
    if t:
        print(f"per sample      {t['wall']:.3g} s: llm {t['llm']:.3g}, evaluation {t['evaluation']:.3g}, "
              f"inner search {t['inner_search']:.3g}, re-scoring {t['rescore']:.3g}, other {t['other']:.3g}",
              file=out)
    usage = summary.get("llm_usage")
    if usage:
        print(f"llm usage       {_usage_line(usage)}", file=out)
    if summary.get("llm"):
        print(f"llm             {summary['llm']}", file=out)
    print(f"seconds         {summary['seconds']:.1f}", file=out)
    if summary.get("stopped"):
        # the caps' and the signals' `raise-ahd resume RUN_DIR` mean this run's directory; other text is kept
        stopped = summary["stopped"].replace("raise-ahd resume RUN_DIR", f"raise-ahd resume {run_dir}")
        print(f"stopped early   {stopped}", file=out)
    elif summary.get("finished") and selection is not None:
        metric = selection["validation_metric"]
        print(f"final program   {selection['program_id']}: the last population's best on the validation suite "
              f"({'failed there' if metric is None else f'{metric:.6g}'}; the task's default; the robust best is "
              f"{selection['robust_best']}); the candidates: raise-ahd select {run_dir}", file=out)
    elif summary.get("finished"):
        print(f"final program   the {'best robust' if robust else 'best'} above, or the last population's best on "
              f"the validation suite: raise-ahd select {run_dir}", file=out)


def _recorded(run_dir) -> dict:
    """The run's recorded settings (empty when its config cannot be read: robust, the default)."""
    try:
        return load_config(Path(run_dir))
    except RunDirectoryDamaged:
        return {}


def _usage_line(usage: dict) -> str:
    total = usage.get("total", usage)
    if usage.get("backend") == REPLAY:  # nothing was sent: the counts are the recording's
        recorded = [f"{k.replace('_', ' ')} {total[k]}" for k in ("retries", "failures", "unusable", "input_tokens",
                                                                   "output_tokens", "cost_usd") if k in total]
        return (f"replay ({usage.get('model', '?')}): {total.get('calls', 0)} answers replayed, no request sent; "
                f"as recorded: {', '.join(recorded)} (not spent again)")
    parts = [f"{usage.get('backend', '?')} ({usage.get('model', '?')})"]
    parts += [f"{k.replace('_', ' ')} {total[k]}" for k in ("requests", "calls", "retries", "failures", "unusable",
                                                            "input_tokens", "output_tokens", "cost_usd")
              if k in total]
    if not usage.get("priced", True):
        parts.append("cost unknown (no price for this model)")
    kinds = usage.get("failures_by_kind") or {}
    if kinds:
        parts.append("failure events by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    return ", ".join(parts)


# a signal that comes again within this many seconds is the same stop sent twice, to the process and
# to its group, not a second Ctrl-C asking to stop at once
ONE_STOP_SECONDS = 0.5


@contextlib.contextmanager
def stop_on_signals(method, run_dir):
    """SIGINT (Ctrl-C) or SIGTERM stops the run as a cap does: no new sample starts, those under
    way are recorded, the summary is written, and ``resume`` continues; a second one stops it at
    once. The same signal again within ``ONE_STOP_SECONDS`` is the first delivered twice (GNU
    ``timeout`` and systemd signal the process, then its group): it is passed over. Yields the list
    of the signals received."""
    received: list[int] = []
    since = [0.0]

    def stop(signum, frame):
        if received and signum == received[0] and time.monotonic() - since[0] < ONE_STOP_SECONDS:
            return
        if received or threading.current_thread() is not threading.main_thread():
            raise KeyboardInterrupt
        received.append(signum)
        since[0] = time.monotonic()
        name = signal.Signals(signum).name
        print(f"raise-ahd: {name}: stopping after the samples under way ({name} again stops at once); "
              f"`raise-ahd resume {run_dir}` continues", file=sys.stderr)
        method.request_stop(f"stopped by {name}; `raise-ahd resume RUN_DIR` continues")

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        # stopped by a signal, the command ends: it keeps hearing the signal as it did, so the same one sent to its
        # group too after a run that stopped at once is passed over as well, not taken by Python's own handler
        for s, handler in previous.items() if not received else ():
            signal.signal(s, handler)


def execute(method, run_dir, *, progress: bool, out=None) -> int:
    out = out or sys.stdout
    bar = ProgressBar(method.budget, initial=method.samples, enabled=progress)
    method.callbacks.append(bar)
    try:
        with stop_on_signals(method, run_dir) as received:
            method.run()
    finally:
        bar.close()
    summary = method.summary(finished=method.stop_reason is None)
    selection = _final_selection(method, run_dir, summary)
    recorded = _recorded(run_dir)
    print_summary(summary, run_dir, out=out, selection=selection, recorded=recorded)
    # what the run's own records already hold, written again for the reader: a full disk costs these, not the run
    try:
        written = write_final_program(summary, run_dir, selection, recorded)
        if written is not None:
            print(f"best program    {written}", file=out)
    except OSError as exc:
        print(f"best program    not written ({exc.strerror or exc})", file=out)
    try:
        print(f"report          {write_run_page(run_dir, summary)}", file=out)  # one page: figures, costs, failures
    except (OSError, RunDirectoryDamaged) as exc:  # damaged: the folder renamed or removed under the run
        print(f"report          not written ({getattr(exc, 'strerror', None) or exc})", file=out)
    compiled = [cb.line for cb in method.callbacks if isinstance(cb, CompiledPathReport) and cb.line]
    if compiled:
        print(f"compiled path   {compiled[0]}", file=out)
    failure = getattr(method, "failure", None)
    if failure is not None:
        print(f"raise-ahd: error: the run stopped: {failure}", file=sys.stderr)
        return RUN_FAILED
    if received:
        return 128 + received[0]  # the shell's status for a process a signal ended
    nothing = nothing_evaluated(summary, run_dir)
    if nothing is not None:
        print(f"raise-ahd: error: {nothing}", file=sys.stderr)
        return RUN_FAILED
    return 0


def nothing_evaluated(summary: dict, run_dir) -> str | None:
    """Why a run that sampled programs to its end has no valid one (the most common reason its
    samples failed, with how many), or ``None`` when it has one, or was stopped before its end (a
    cap, a signal: it had no chance to evaluate more)."""
    if summary.get("best") or not summary.get("samples") or summary.get("stopped"):
        return None
    try:
        errors = [row.get("error") or "" for row in read_jsonl(Path(run_dir) / "samples.jsonl")]
    except OSError:
        errors = []
    try:
        failed_on = sorted({i for row in read_jsonl(Path(run_dir) / "scores.jsonl")
                            for i in row.get("failed_on") or ()})
    except OSError:
        failed_on = []
    reasons = collections.Counter(e for e in errors if e)
    scored = len(errors) - sum(reasons.values())
    # programs that evaluated and then failed on an instance the adversary added: not "none evaluated"
    later = (f"{scored} evaluated, then failed on the adversarial instance{'s' * (len(failed_on) > 1)} "
             f"{', '.join(failed_on)}" if scored and failed_on else "")
    if not reasons:
        return f"none of its {summary['samples']} programs was valid" + (f": {later}" if later else "")
    reason, count = reasons.most_common(1)[0]
    head = f"is valid on its instance set: {later}; " if later else "evaluated; "
    return f"none of its {summary['samples']} programs {head}{count} failed with: {reason} (its limits: docs/engine.md)"


FINAL_PROGRAM = "best_program.py"


def write_final_program(summary: dict, run_dir, selection: dict | None, recorded: dict) -> Path | None:
    """``RUN_DIR/best_program.py``: the program the summary's "final program" line names (the choice
    on the validation suite where the task hands that on, else the robust best; a plain run's best on
    the nominal set), with a first line saying which it is; ``None`` when the run has no valid program.
    ``recorded``: the run's config.json."""
    best = summary.get("best") or {}
    chosen = selection if selection is not None and selection.get("program") else best
    code = chosen.get("program")
    if not code:
        return None
    why = ("the last population's best on the validation suite" if chosen is selection else
           "its best robust program" if recorded.get("robust", True) else "its best program on the nominal set")
    path = Path(run_dir) / FINAL_PROGRAM
    path.write_text(f"# {chosen.get('program_id')} of {run_dir}: {why} (raise-ahd select {run_dir} shows the "
                    f"candidates)\n{code.rstrip()}\n")
    return path


def _final_selection(method, run_dir, summary: dict) -> dict | None:
    """The choice on the validation suite, made when the run has finished and its task hands on
    that choice (``Task.final_selection``); ``None`` otherwise."""
    task = getattr(method, "task", None)
    if task is None or not summary.get("finished") or final_selection(task.name) != "validation":
        return None
    timeout = getattr(getattr(method, "evaluation", None), "timeout_seconds", None)  # as the validation trace
    return select_final(run_dir, task, timeout=timeout)


def run(args) -> int:
    config, recorded = config_from_args(args)
    method = start_run(config)
    if recorded is not None:
        print(recorded.line(config), flush=True)
    return execute(method, method.recorder.path, progress=args.progress)
