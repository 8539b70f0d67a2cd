"""A run's ``RUN_DIR/report.html``: its settings, what it reached, its figures, its best program, what
its LLM calls cost and what failed, as one self-contained page (``html_page``), written at the end of
``raise-ahd run`` and ``resume``."""
from __future__ import annotations

import collections
import json
from pathlib import Path

from raise_plugin.harness.figure_style import metric_axis_label
from raise_plugin.harness.compare_report import no_llm_note
from raise_plugin.harness.figures import adversarial_centres, convergence_series
from raise_plugin.harness.html_page import escape, inline, page, preformatted, section, table, number
from raise_plugin.harness.html_svg import line_chart
from raise_plugin.harness.run_metric import best_line, trained_metric
from raise_plugin.harness.variants import METHOD_LABELS
from raise_plugin.rundir.files import RunDirectoryDamaged, read_jsonl
from raise_plugin.rundir.reader import RunLog, load_config
from raise_plugin.validation import reference_words
from tasks import get_task

__all__ = ["run_page", "write_run_page", "REPORT_FILE"]

REPORT_FILE = "report.html"
REASONS_SHOWN = 10  # the most common reasons a sample failed; the rest are counted together
USAGE_FIELDS = ("requests", "calls", "retries", "failures", "unusable", "input_tokens", "output_tokens", "cost_usd",
                "seconds")


def write_run_page(run_dir, summary: dict | None = None) -> Path:
    """``RUN_DIR/report.html`` (see ``run_page``); returns its path."""
    path = Path(run_dir) / REPORT_FILE
    path.write_text(run_page(run_dir, summary))
    return path


def run_page(run_dir, summary: dict | None = None) -> str:
    """The page of the run in ``run_dir``: its ``config.json`` and its summary (``summary``, else its
    ``summary.json``) read back, its figures drawn from its records."""
    run_dir = Path(run_dir)
    config = load_config(run_dir)
    summary = summary if summary is not None else json.loads((run_dir / "summary.json").read_text())
    robust = bool(config.get("robust", True))
    title = f"RAISE run: {_label(config, robust)} on {config.get('task')}, seed {config.get('seed')}"
    samples = read_jsonl(run_dir / "samples.jsonl") if (run_dir / "samples.jsonl").exists() else []
    body = [f"<p>{inline(_state(summary))}</p>"]
    note = no_llm_note([config.get("method")], config.get("llm"))
    if note:
        body.append(f'<p class="note">{escape(note)}</p>')
    failures = _failures(summary, samples)
    if failures:
        body.append(section("Failures", failures, css_class="failures"))
    body.append(section("What it reached", [_summary_table(summary, config, robust)]))
    body.append(section("Figures", _figures(run_dir, config, robust)))
    body.append(section("Best program", _best(summary, robust)))
    body.append(section("LLM usage and cost", _usage(summary.get("llm_usage"), summary.get("llm"))))
    body.append(section("Settings", [table(["setting", "value"], [[k, _value(v)] for k, v in config.items()])]))
    return page(title, body)


def _state(summary: dict) -> str:
    if summary.get("failure"):
        return "**The run stopped on a failure** (under Failures below)."
    if summary.get("stopped"):
        return f"**Stopped early**: {summary['stopped']} (`raise-ahd resume` continues it)"
    if summary.get("finished"):
        return f"Finished: {summary.get('samples')} of {summary.get('budget')} samples."
    return f"Not finished: {summary.get('samples')} of {summary.get('budget')} samples (`raise-ahd resume` continues it)."


def _value(v) -> str:
    return json.dumps(v) if isinstance(v, (dict, list)) else "" if v is None else str(v)


def _summary_table(summary: dict, config: dict, robust: bool) -> str:
    best = summary.get("best") or {}
    score = best.get("robust_score")
    sets = summary.get("instance_set") or []
    adversarial = [e for e in sets if e.get("origin") != "nominal"]
    distances = ", ".join(f"{e['distance']:.4g}" for e in adversarial if e.get("distance") is not None)
    compute = summary.get("compute") or {}
    rows = [["samples", f"{summary.get('samples')} of {summary.get('budget')}"],
            ["generations", summary.get("generations")], ["refreshes", summary.get("refreshes")],
            ["instance set", f"{len(sets) - len(adversarial)} nominal + {len(adversarial)} adversarial"
             + (f" (distance to nominal: {distances})" if distances else "")],
            ["best robust" if robust else "best", best_line(score, best.get("program_id"), config)],
            ["instance evaluations", compute.get("total_evaluations", summary.get("evaluations"))],
            ["seconds", number(summary.get("seconds"))]]
    return table(["quantity", "value"], rows)


def _label(config: dict, robust: bool) -> str:
    """``"RAISE-EoH (eps=0.002)"`` or ``"EoH"``, as compare labels its variants."""
    method = METHOD_LABELS.get(config.get("method"), str(config.get("method")))
    eps = config.get("epsilon")
    return f"RAISE-{method}" + ("" if eps is None else f" (eps={eps:g})") if robust else method


def _figures(run_dir: Path, config: dict, robust: bool) -> list[str]:
    """Convergence (inline SVG, no matplotlib: the page is written at the end of every run) and, for a RAISE
    run, the distributions its adversary found, each with its distance to its nearest nominal histogram."""
    try:
        log = RunLog.load(run_dir, on_repair=lambda message: None)
        task = get_task(config.get("task"))
    except (RunDirectoryDamaged, OSError, ValueError, KeyError) as exc:
        return [f"<p>No figure: the run directory could not be read ({escape(exc)}).</p>"]
    s = convergence_series(log)
    trained_on = "nominal + adversarial" if robust else "nominal set"
    series = [{"label": f"best program on the set it trained on ({trained_on})", "x": s["generation"], "y": s["best"]},
              {"label": "mean of the population there", "x": s["generation"], "y": s["mean"], "dashed": True}]
    marks = {"marks": s["refreshes"], "mark_label": "a refresh of the instance set" if s["refreshes"] else ""}
    # the set it trained on in its aggregation's terms (a regret, a worst case), the validation suite in the metric's
    out = [line_chart(series, title=f"Convergence of {_label(config, robust)} on {task.name}", x_label="generation",
                      y_label=f"{trained_metric(config)}, lower is better", **marks)]
    if s["validation"]:
        traced = [{"label": "best program on the validation suite", "x": s["trace_generation"], "y": s["validation"]}]
        if s["baseline"]:  # the rule a compare's tables test against, on the same instances
            name = s["baseline"]["name"]
            traced.append({"label": f"{name} ({reference_words(task, name)})", "x": s["trace_generation"],
                           "y": [s["baseline"]["metric"]] * len(s["trace_generation"]), "dashed": True})
        out.append(line_chart(traced, title="Its best program on the validation suite (the instances traced)",
                              x_label="generation", y_label=metric_axis_label(task), **marks))
    if robust:
        nominal, found = adversarial_centres(task, log)
        rows = [[gen, number(d), f"no. {index + 1} of {len(nominal)}"] for gen, _, index, d in found]
        out.append(table(["adversarial distribution found at generation", f"distance d to it (eps {config.get('epsilon')})",
                          "nearest nominal histogram (the ball's centre)"], rows, numeric={0, 1}) if rows else
                   "<p>The adversary found no distribution yet.</p>")
    return out


def _best(summary: dict, robust: bool) -> list[str]:
    best = summary.get("best") or {}
    if not best.get("program"):
        return ["<p>No valid program.</p>"]
    return [f"<p>{escape(best.get('algorithm') or '')}</p>", preformatted(best["program"])]


def _usage(usage: dict | None, llm: str | None) -> list[str]:
    out = [f"<p>{escape(llm)}</p>"] if llm else []
    if not usage:
        return out + ["<p>The run recorded no LLM usage.</p>"]
    total = usage.get("total", {})
    fields = [f for f in USAGE_FIELDS if f in total]
    out.append(f"<p>{escape(usage.get('backend', '?'))} ({escape(usage.get('model', '?'))})"
               + ("" if usage.get("priced", True) else "; cost unknown (no price for this model)") + "</p>")
    rows = [["all", *(number(total[f]) for f in fields)]]
    rows += [[op, *(number(counts.get(f)) for f in fields)] for op, counts in (usage.get("per_operator") or {}).items()]
    out.append(table(["operator", *(f.replace("_", " ").replace("usd", "(USD)") for f in fields)], rows,
                     numeric=set(range(1, len(fields) + 1))))
    kinds = usage.get("failures_by_kind") or {}
    if kinds:
        out.append(table(["failure events, by kind", "events"], [[k, n] for k, n in kinds.items()], numeric={1}))
    return out


def _failures(summary: dict, samples: list[dict]) -> list[str]:
    """What failed: the run's own failure, failed LLM requests, and the samples whose program failed, by reason."""
    out = []
    if summary.get("failure"):
        out.append(f"<p>{inline('**The run stopped**: ' + str(summary['failure']))}</p>")
    if summary.get("hook_errors"):
        out.append(f"<p>{escape(summary['hook_errors'])} callback errors (logged in the run directory).</p>")
    reasons = collections.Counter(" ".join(str(s["error"]).split()) for s in samples if s.get("error"))
    if reasons:
        failed = sum(reasons.values())
        out.append(f"<p>{failed} of {len(samples)} samples failed; the program text of each is in samples.jsonl.</p>")
        rows = [[reason, n] for reason, n in reasons.most_common(REASONS_SHOWN)]
        if len(reasons) > REASONS_SHOWN:
            rows.append([f"{len(reasons) - REASONS_SHOWN} other reasons", failed - sum(n for _, n in rows)])
        out.append(table(["reason", "samples"], rows, numeric={1}))
    return out
