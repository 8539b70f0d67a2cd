"""``raise-ahd run``: one (robust) method run on a task, recorded in a run directory."""
from __future__ import annotations

import argparse
import contextlib
import math
import signal
import sys
import threading

from raise_plugin.config import ConfigError, RunConfig, final_selection
from raise_plugin.errors import UserError
from raise_plugin.robust.progress import ProgressBar
from raise_plugin.runner import CompiledPathReport, start_run
from raise_plugin.validation import select_final
from tasks import is_task_reference, task_reference

FLAGS = ("task", "method", "robust", "epsilon", "tau", "inner_population", "inner_generations", "aggregation",
         "max_adversarial", "budget", "pop_size", "llm", "seed", "out", "num_samplers", "num_evaluators",
         "nominal", "timeout", "projection", "encoding", "constraint", "length", "host_profiler", "record", "executor",
         "adversary_objective", "inner_draws", "validation_trace", "tau_unit", "max_cost_usd", "max_llm_calls",
         "prices", "instances_per_refresh", "max_tokens", "llm_timeout", "max_failed_requests", "jit",
         "jit_after", "early_reject")


RUN_FAILED = 3  # the exit status of a run that could not go on: its LLM endpoint failed, its disk refused a write


def register(sub) -> None:
    p = sub.add_parser("run", help="run a method (robust by default) on a task, recorded in a run directory",
                       description="Run a method on a task with RAISE's adversarial inner loop (or without it: "
                                   "--no-robust). Flags override the --config file; every run writes a run "
                                   "directory that `raise-ahd resume` continues.")
    d = RunConfig()
    p.add_argument("--config", metavar="FILE", help="TOML file with RunConfig fields (flags override it)")
    p.add_argument("--task", help=f"task name (default {d.task})")
    p.add_argument("--method", help=f"outer method (default {d.method})")
    p.add_argument("--robust", action=argparse.BooleanOptionalAction, default=None,
                   help="with the adversarial inner loop (default) or without (--no-robust)")
    p.add_argument("--epsilon", type=float, help="radius eps of the ball (default: the task's, "
                                                 "see `raise-ahd tasks`; else the paper's 0.002)")
    p.add_argument("--tau", type=int, help=f"refresh interval (default {d.tau} generations)")
    p.add_argument("--tau-unit", help="what tau counts: generations (default; pop-size samples each) or samples "
                                      "(the paper's 40 refreshes per 1000 samples: --tau 25 --tau-unit samples)")
    p.add_argument("--inner-population", type=int, help=f"P_in (default {d.inner_population})")
    p.add_argument("--inner-generations", type=int, help=f"G_in (default {d.inner_generations})")
    p.add_argument("--aggregation", help="A over the instance set: mean, min, cvar:ALPHA or balanced[:W] "
                                         "(nominal and adversarial means weighed 1-W and W), each optionally after regret: "
                                         "(relative to the best baseline on each instance; regret:min is "
                                         "minimax regret) or regret:NAME: (relative to the baseline NAME alone, "
                                         "e.g. regret:bestfit:min; default: the task's, else mean)")
    p.add_argument("--adversary-objective", help="what the inner search maximises: metric (the paper's), "
                                                 "regret:baselines, regret:NAME (one baseline, e.g. regret:bestfit) "
                                                 "or regret:population[:K] (default: the task's, else metric)")
    p.add_argument("--inner-draws", type=int, help="instances R each candidate distribution is scored on "
                                                   "(default: the task's)")
    p.add_argument("--max-adversarial", type=int, help=f"adversarial instances kept (default {d.max_adversarial})")
    p.add_argument("--budget", type=int, help=f"samples N_max (default {d.budget})")
    p.add_argument("--pop-size", type=int, help=f"population size (default {d.pop_size})")
    p.add_argument("--llm", help="offline (default; no LLM is used), openai[:MODEL] or replay:FILE")
    p.add_argument("--executor", help="where programs are evaluated: process[:N] (default: sandboxed workers, "
                                      "one per core), dask://HOST:PORT or dask://local")
    add_cap_arguments(p)
    p.add_argument("--price", action="append", metavar="MODEL=IN,OUT", dest="price_items",
                   help="add a model to the price table: dollars per million input and output tokens "
                        "(repeatable; the [prices] table of a TOML config likewise)")
    p.add_argument("--record", metavar="FILE",
                   help="record every prompt and response to this JSONL file (replay it with --llm replay:FILE)")
    p.add_argument("--seed", type=int, help="seed of selection, inner search and offline sampler (default 0)")
    p.add_argument("--out", help="run directory (default runs/TASK-METHOD-KIND-seedS-TIME)")
    p.add_argument("--num-samplers", type=int, help="sampler threads (default 1; with more, the order of samples depends on "
                                                   "thread timing: --record then --llm replay:FILE gives back the programs)")
    p.add_argument("--num-evaluators", type=int, help="evaluation threads of the host (default 1); the sandboxed engine uses "
                                                    "every core whatever this says (--executor process:N to limit it)")
    p.add_argument("--jit", action=argparse.BooleanOptionalAction, default=None,
                   help="run each program compiled (numba: pip install 'raise-plugin[jit]') where its decisions "
                        "on the task's probe instances equal its Python function's, else in Python (default off)")
    p.add_argument("--jit-after", type=float, metavar="SECONDS",
                   help="with --jit: compile a program once its evaluations in a worker have taken this long in "
                        "Python, about what a compile costs (default 0.5; 0 compiles every program at once)")
    p.add_argument("--early-reject", type=_on_off, metavar="{on,off}",
                   help="stop a candidate's evaluation once it provably cannot enter the population (min, cvar "
                        "and their regret forms; the same samples, populations and best either way; default on)")
    p.add_argument("--nominal", type=int, help="use only the first N nominal instances")
    p.add_argument("--timeout", type=float, help="seconds allowed per evaluation (default: the task's)")
    p.add_argument("--projection", help="adversary projection: paper, sphere or none (default: the task's, else paper)")
    p.add_argument("--encoding", help="adversary encoding: basis or flat")
    p.add_argument("--constraint", help="adversary constraint: ball or none")
    p.add_argument("--instances-per-refresh", help="one (the paper's: the representative draw of the distribution a "
                                                   "refresh finds) or draws (all --inner-draws of it; widen "
                                                   "--max-adversarial to match)")
    p.add_argument("--length", help="adversarial instance length: gene (the paper's: the length gene scales it by "
                                    "0.9-1.1) or nominal (fixed)")
    p.add_argument("--host-profiler", action=argparse.BooleanOptionalAction, default=None,
                   help="also write the host's EoHProfiler logs to RUN_DIR/host (default on)")
    p.add_argument("--validation-trace", action=argparse.BooleanOptionalAction, default=None,
                   help="trace the best program's validation-suite metric in RUN_DIR/validation.jsonl "
                        "every tau generations (default on)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=run)


def _on_off(value: str) -> bool:
    if value not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"use on or off, not {value!r}")
    return value == "on"


ENDPOINT_FLAGS = ("max_cost_usd", "max_llm_calls", "max_tokens", "llm_timeout", "max_failed_requests")


def add_cap_arguments(p) -> None:
    """The LLM endpoint's caps and bounds (``run``, and ``resume`` to change them)."""
    p.add_argument("--max-cost-usd", type=float, metavar="DOLLARS",
                   help="stop cleanly once the LLM cost reaches this: no request starts past it (the model "
                        "needs a price: the built-in table or --price); resume with a higher cap continues")
    p.add_argument("--max-llm-calls", type=int, metavar="N",
                   help="the endpoint receives at most N requests, retries included; the run then stops "
                        "cleanly (resume with a higher cap continues)")
    p.add_argument("--max-tokens", type=int, metavar="N",
                   help="completion tokens per LLM request, sent to the endpoint (default: the endpoint's own "
                        "limit; set it for local models that may not stop generating)")
    p.add_argument("--llm-timeout", type=float, metavar="SECONDS",
                   help="seconds one LLM request may take, its whole answer included (default 120); a request "
                        "past it is a failed request (retried)")
    p.add_argument("--max-failed-requests", type=int, metavar="N",
                   help="stop the run as failed (exit 3) after N LLM requests in a row that gave no usable "
                        "program: errors, time-outs, retries and answers without the function (default 10)")


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


def config_from_args(args) -> RunConfig:
    args.prices = parse_prices(getattr(args, "price_items", None))
    flags = {name: getattr(args, name) for name in FLAGS if getattr(args, name, None) is not None}
    if flags.get("task") and is_task_reference(flags["task"]):
        flags["task"] = task_reference(flags["task"])  # recorded with its absolute path: resumable anywhere
    if args.config:
        try:
            return RunConfig.from_toml(args.config, **flags)
        except UnicodeDecodeError:
            raise UserError(f"config file {args.config}: not UTF-8 text") from None
    return RunConfig.from_dict(flags, source="flags")


def print_summary(summary: dict, run_dir, out=None, selection: dict | None = None) -> None:
    """The run's summary; ``selection`` (``select_final``'s record) names the final program
    when the task hands on the choice made on its validation suite."""
    out = out or sys.stdout
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
    distances = ", ".join(f"{e['distance']:.4g}" for e in adv if e.get("distance") is not None)
    print(f"instance set    {len(sets) - len(adv)} nominal + {len(adv)} adversarial"
          + (f" (distance to nominal: {distances})" if distances else ""), file=out)
    print(f"best robust     {score:.6g} ({best.get('program_id')})" if isinstance(score, (int, float))
          and math.isfinite(score) else "best robust     none", file=out)
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
        print(f"stopped early   {summary['stopped']}".replace("RUN_DIR", str(run_dir)), file=out)
    elif summary.get("finished") and selection is not None:
        metric = selection["validation_metric"]
        print(f"final program   {selection['program_id']}: the last population's best on the validation suite "
              f"({'failed there' if metric is None else f'{metric:.6g}'}; the task's default; the robust best is "
              f"{selection['robust_best']}); the candidates: raise-ahd select {run_dir}", file=out)
    elif summary.get("finished"):
        print(f"final program   the best robust above, or the last population's best on the validation suite: "
              f"raise-ahd select {run_dir}", file=out)


def _usage_line(usage: dict) -> str:
    total = usage.get("total", usage)
    parts = [f"{usage.get('backend', '?')} ({usage.get('model', '?')})"]
    parts += [f"{k.replace('_', ' ')} {total[k]}" for k in ("requests", "calls", "retries", "failures", "unusable",
                                                            "input_tokens", "output_tokens", "cost_usd")
              if k in total]
    if not usage.get("priced", True):
        parts.append("cost unknown (no price for this model)")
    kinds = usage.get("failures_by_kind") or {}
    if kinds:
        parts.append("failed requests by kind: " + ", ".join(f"{k} {n}" for k, n in kinds.items()))
    return ", ".join(parts)


@contextlib.contextmanager
def stop_on_signals(method, run_dir):
    """SIGINT (Ctrl-C) or SIGTERM stops the run as a cap does: no new sample starts, those under
    way are recorded, the summary is written, and ``resume`` continues; a second one stops it at
    once. Yields the list of the signals received."""
    received: list[int] = []

    def stop(signum, frame):
        if received or threading.current_thread() is not threading.main_thread():
            raise KeyboardInterrupt
        received.append(signum)
        name = signal.Signals(signum).name
        print(f"raise-ahd: {name}: stopping after the samples under way ({name} again stops at once); "
              f"`raise-ahd resume {run_dir}` continues", file=sys.stderr)
        method.request_stop(f"stopped by {name}; `raise-ahd resume RUN_DIR` continues")

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield received
    finally:
        for s, handler in previous.items():
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
    print_summary(summary, run_dir, out=out, selection=_final_selection(method, run_dir, summary))
    compiled = [cb.line for cb in method.callbacks if isinstance(cb, CompiledPathReport) and cb.line]
    if compiled:
        print(f"compiled path   {compiled[0]}", file=out)
    failure = getattr(method, "failure", None)
    if failure is not None:
        print(f"raise-ahd: error: the run stopped: {failure}", file=sys.stderr)
        return RUN_FAILED
    return 128 + received[0] if received else 0  # the shell's status for a process a signal ended


def _final_selection(method, run_dir, summary: dict) -> dict | None:
    """The choice on the validation suite, made when the run has finished and its task hands on
    that choice (``Task.final_selection``); ``None`` otherwise."""
    task = getattr(method, "task", None)
    if task is None or not summary.get("finished") or final_selection(task.name) != "validation":
        return None
    timeout = getattr(getattr(method, "evaluation", None), "timeout_seconds", None)  # as the validation trace
    return select_final(run_dir, task, timeout=timeout)


def run(args) -> int:
    config = config_from_args(args)
    method = start_run(config)
    return execute(method, method._recorder.path, progress=not args.no_progress)
