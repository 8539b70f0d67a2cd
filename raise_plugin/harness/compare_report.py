"""Compare's ``report.md``: the settings, what is significant, the tables, the figures, the runs (those a
cap or a failure stopped short of their budget too, marked) and what their LLM calls cost; ``report.html``
is the same text as one page (``html_report``)."""
from __future__ import annotations


from raise_plugin.harness.significance import NO_RESULTS, significance_summary
from raise_plugin.harness.variants import METHOD_LABELS
from raise_plugin.llm import asks_llm, is_offline
from raise_plugin.methods import METHODS
from raise_plugin.harness.provenance import code_version, recorded_code_version
from raise_plugin.llm.run_usage import run_spent
from raise_plugin.rundir.files import RunDirectoryDamaged
from raise_plugin.rundir.reader import load_config, read_summary

__all__ = ["compare_report", "failure_section", "no_llm_note"]


RUNS_HEADER = ["variant", "seed", "budget", "population", "tau", "eps", "LLM", "code version", "samples",
               "generations", "refreshes", "trained on", "best on its set", "ended", "run"]
COST_HEADER = ["variant", "seed", "LLM (model)", "requests", "failed requests", "input tokens", "output tokens",
               "cost (USD)"]
FAILURE_HEADER = ["job", "reason", "a retry"]


def no_llm_note(methods, backend) -> str | None:
    """Who wrote the programs where no LLM did (``None`` where one did): the offline program sampler,
    for the ``methods`` that ask their back-end when ``backend`` is the sampler, and the methods that
    ask none (GP) themselves."""
    asking = [m for m in methods if asks_llm(METHODS.get(m))]  # a method no longer registered: as one that asks
    if asking and not is_offline(backend):
        return None
    own = [METHOD_LABELS.get(m, m) for m in methods if m not in asking]
    said = []
    if asking:
        whose = f"the programs of {', '.join(METHOD_LABELS.get(m, m) for m in asking)}" if own else "programs"
        said.append(f"{whose} came from the offline program sampler, an LLM-free search that rewrites parent programs")
    if own:
        said.append(f"{' and '.join(own)} {'writes its' if len(own) == 1 else 'write their'} own")
    return "No LLM was used: " + "; ".join(said) + "."


def report_title(config, task) -> str:
    """The report's title: a RAISE compare, or a plain one where no radius was given (plain runs only)."""
    kind = "RAISE compare" if config.study.epsilons else "Plain compare (no RAISE run)"
    return f"{kind} on {task.name}: {', '.join(config.study.methods)}, budget {config.runs.budget.samples}"


def compare_report(config, task, variants, tables, figures, run_dirs, comparisons=(), *, failures=(),
                   plan=None, in_tables=None) -> str:
    """``report.md``: the settings, the runs in the tables that stopped short of their budget, failed
    jobs, what is significant, the tables, the figures, one line per run that started (``run_dirs``:
    (variant key, seed) -> run directory; finished or not, each marked with how it ended) with the
    settings and code version it was trained with, and its LLM usage with the sum over runs.
    ``in_tables`` holds the (variant key, seed) of the runs whose results the tables hold (``None``:
    every run's)."""
    lines = [f"# {report_title(config, task)}", ""]
    for paragraph in settings_paragraphs(config, task):
        lines += [paragraph, ""]
    note = no_llm_note(config.study.methods, config.runs.llm.backend)
    if note:
        lines += [f"> {note} Results show the harness, not what an LLM would reach.", ""]
    lines += short_runs_section(config, variants, run_dirs, in_tables, drawn=bool(figures))
    if failures:
        lines += failure_section(failures)
    if comparisons:
        intro, sentences, outro = significance_parts(len(config.study.seeds), task, tables, comparisons)
        lines += ["## What is significant", "", intro, ""] + [f"- {s}" for s in sentences] + ["", outro, ""]
    else:  # every training job failed: the section says why it is empty rather than missing
        lines += ["## What is significant", "", NO_RESULTS + (" (Failed jobs, above, says why)." if failures else "."),
                  ""]
    lines += ["## Tables", ""]
    for name, table in tables.items():
        lines += [table.markdown(), "", f"([{name}.md]({name}.md))", ""]
    if figures:
        lines += ["## Figures", ""] + figure_lines(figures)
    runs = run_rows(variants, run_dirs)
    lines += ["## Runs", "", runs_intro(), ""]
    if runs:
        lines += [_markdown_row(RUNS_HEADER), "|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|---:|---|---|"]
        lines += [_markdown_row(row) for row in runs]
    else:  # a table of no rows would say nothing of why
        lines.append("No run started" + (": every training job failed before its run began (Failed jobs, above, "
                                         "says why)." if failures else "."))
    for note in runs_notes(plan, task):
        lines += ["", note]
    costs = cost_rows(variants, run_dirs)
    if costs:
        lines += ["", "## LLM usage", "", "What each run's LLM calls cost, from the ledger its summary records (a "
                  "run that wrote no summary: from its request journal, its failed requests unknown, shown as ?).", "",
                  _markdown_row(COST_HEADER), "|---|---|---|---:|---:|---:|---:|---:|"]
        lines += [_markdown_row(row) for row in costs]
    return "\n".join(lines) + "\n"


def _markdown_row(cells) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def settings_paragraphs(config, task) -> list[str]:
    """The study's settings, its metric and how each run's final program was chosen."""
    study, budget, adversary = config.study, config.runs.budget, config.runs.adversary
    radii = (f"eps {', '.join(f'{e:g}' for e in study.epsilons)}" if study.epsilons
             else "no eps (no radius given: plain runs only)")
    return [f"Methods {', '.join(study.methods)}; {radii}; "
            f"budget {budget.samples} samples, population {budget.pop_size}, tau {adversary.tau}, "
            f"P_in {adversary.inner_search.inner_population}, G_in {adversary.inner_search.inner_generations}; "
            f"seeds {list(study.seeds)}; LLM `{config.runs.llm.backend}`.",
            f"Metric: {task.metric_label}.",
            "Each run's final program: " + ("its best program on the set it trained on (a plain run's nominal "
                                            "set; a RAISE run's nominal set grown by adversarial instances, so "
                                            "its robust best)."
                                            if study.select_on == "robust" else
                                            "the member of its last population with the best metric on the "
                                            "validation suite (one instance per validation dataset; plain and "
                                            "robust runs alike; `selection.json` in each run directory).")]


def significance_parts(seeds: int, task, tables, comparisons) -> tuple[str, list[str], str]:
    """What is significant over ``seeds`` seeds: the line before the sentences, the sentences, and the
    line after them."""
    sentences = significance_summary(comparisons, seeds, table=tables.get("table_all_distributions"))
    return (f"Differences are method − reference in {task.metric_label}, so negative means the method is better.",
            sentences,
            "([table_significance.md](table_significance.md): mean differences, 95 % bootstrap intervals, Wilcoxon "
            "p and pairs; how they are computed: docs/harness.md)")


# what each of a compare's figures shows, in words: its image's text (alt) in report.md and report.html, and
# report.html's caption, for a reader who cannot see the picture
FIGURE_WORDS = {
    "convergence": "Convergence: each variant's best program, generation by generation, on the validation suite "
                   "and on the set it trained on, over its seeds",
    "adversarial_distributions": "Adversarial distributions: the distributions each RAISE run's adversary found "
                                 "(the first seed's runs), each against its nearest nominal histogram",
}


def figure_lines(figures) -> list[str]:
    """Each figure once: its PNG shown, else its SVG (a Markdown viewer shows no PDF as an image, and
    report.html embeds what is shown), under the words of ``FIGURE_WORDS`` (its name, for another), its
    other formats linked beside it; a figure written as a PDF alone is linked."""
    lines = []
    for stem in dict.fromkeys(f.stem for f in figures):
        files = [f for f in figures if f.stem == stem]
        shown = next((f for suffix in (".png", ".svg") for f in files if f.suffix == suffix), None)
        others = ", ".join(f"[{f.suffix[1:].upper()}]({f.name})" for f in files if f is not shown)
        if shown is not None:
            words = FIGURE_WORDS.get(stem, stem)
            lines += [f"![{words}]({shown.name})"] + ([f"({stem} also as {others})"] if others else []) + [""]
        else:
            lines += [f"{stem}: {others}", ""]
    return lines


def runs_intro() -> str:
    return (f"This compare's code version: `{code_version()}` (the package's version and a hash of the plugin's "
            "and the tasks' sources). Each run's settings below are read from its own `config.json`, its code "
            "version from its `code_version.json`.")


def _read(path) -> tuple[dict, dict]:
    """A run's ``summary.json`` (empty when it wrote none: it did not end) and its ``config.json``."""
    summary = read_summary(path) or {}
    try:
        recorded = load_config(path)
    except RunDirectoryDamaged:
        recorded = {}
    return summary, recorded


def how_it_ended(summary: dict, budget) -> str:
    """How a run ended, from its ``summary.json``: ``finished``, or where and why it stopped short."""
    if summary.get("finished"):
        return "finished"
    if not summary:
        return "did not end: it wrote no summary (its job failed or was interrupted)"
    at = f"at {summary.get('samples')} of {budget} samples"
    if summary.get("failure"):
        return f"failed {at}: {summary['failure']}"
    return f"stopped {at}" + (f": {summary['stopped']}" if summary.get("stopped") else "")


def _cell(text) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def run_rows(variants, run_dirs) -> list[list[str]]:
    """One row per run that started (``RUNS_HEADER``), finished or not, its cells in the harness's Markdown."""
    rows = []
    for (key, seed), path in run_dirs.items():
        summary, recorded = _read(path)
        variant = next(v for v in variants if v.key == key)
        trained_on = "nominal + adversarial" if variant.robust else "nominal set"
        best = (summary.get("best") or {}).get("robust_score")
        eps = recorded.get("epsilon") if variant.robust else None  # a plain run records its task's, unused
        tau = recorded.get("tau") if variant.robust else ""
        llm = recorded.get("llm", "") + (f" at {recorded['base_url']}" if recorded.get("base_url") else "")
        version = recorded_code_version(path) or "not recorded"
        if version != code_version():
            version = f"**{version}**"
        rows.append([variant.label, seed, recorded.get("budget"), recorded.get("pop_size"), tau,
                     "" if eps is None else f"{eps:g}", llm, version, summary.get("samples", ""),
                     summary.get("generations", ""), summary.get("refreshes", ""), trained_on,
                     "" if best is None else f"{0.0 - best:.4f}",  # a score of 0 is a metric of 0, not -0
                     _cell(how_it_ended(summary, recorded.get("budget"))),
                     f"[{path.name}](runs/{path.name})"])
    return rows


def cost_rows(variants, run_dirs) -> list[list[str]]:
    """One row per run that recorded its LLM usage or sent requests (``COST_HEADER``), a run that did not
    finish marked beside its name, then the sum over them."""
    rows, totals = [], [0, 0, 0, 0, 0.0]
    for (key, seed), path in run_dirs.items():
        summary, recorded = _read(path)
        usage = summary.get("llm_usage")
        if usage:
            total = usage.get("total", {})
            # a retry follows each failed request of a call, and a failed call's last request failed too
            failed = total.get("retries", 0) + total.get("failures", 0)
            counts = [total.get("requests", total.get("calls", 0)), failed,
                      total.get("input_tokens", 0), total.get("output_tokens", 0), total.get("cost_usd", 0.0)]
            model, priced = f"{usage.get('backend', '?')} ({usage.get('model', '?')})", usage.get("priced", True)
        else:  # no summary: what its request journal says it sent
            spent = run_spent(path)
            if not spent["requests"]:
                continue
            counts = [spent["requests"], "?", spent["input_tokens"], spent["output_tokens"], spent["cost_usd"]]
            model, priced = recorded.get("llm", "?"), True
        totals = [a + (b if isinstance(b, (int, float)) else 0) for a, b in zip(totals, counts)]
        label = next(v.label for v in variants if v.key == key)
        if not summary.get("finished"):  # "stopped at 4 of 8 samples", "failed at ...", "did not end"
            label += f" ({how_it_ended(summary, recorded.get('budget')).split(':')[0]})"
        cost = f"{counts[4]:.4f}" if priced else "unknown (no price for this model)"
        rows.append([label, seed, model, *counts[:4], cost])
    if rows:
        rows.append(["**all runs**", "", "", *(f"**{n}**" for n in totals[:4]), f"**{totals[4]:.4f}**"])
    return rows


def short_runs_section(config, variants, run_dirs, in_tables=None, drawn=True) -> list[str]:
    """The runs in the tables that stopped short of their budget (a cap, a failure) as Markdown lines: a
    paragraph saying so (and that the figures, which show finished runs only, leave them out; ``drawn``:
    the compare drew figures), then one item per run with where it stopped and why; none when every run
    in the tables finished."""
    tabled = [(k, s) for k, s in run_dirs if in_tables is None or (k, s) in in_tables]
    items = []
    for key, seed in tabled:
        summary, recorded = _read(run_dirs[(key, seed)])
        if summary and not summary.get("finished"):
            label = next(v.label for v in variants if v.key == key)
            items.append(f"- {label}, seed {seed}: {' '.join(how_it_ended(summary, recorded.get('budget')).split())}")
    if not items:
        return []
    caps = [f"`--{k.replace('_', '-')}`" for k in ("max_llm_calls", "max_cost_usd")
            if getattr(config.study, k, None) is not None]
    more = (f" The same compare run again with a higher {' or '.join(caps)} resumes such a run and evaluates its "
            "final program again." if caps else "")
    if len(items) == 1:
        said = (f"1 of the {len(tabled)} run{'' if len(tabled) == 1 else 's'} in the tables stopped short of its "
                "budget of {} samples; its cells show the final program it had when it stopped")
    else:
        said = (f"{len(items)} of the {len(tabled)} runs in the tables stopped short of their budget of {{}} "
                "samples; their cells show the final program each had when it stopped")
    figures = (" The figures show finished runs only, so they leave these out." if drawn else
               " No figure is drawn: the figures show finished runs only.")
    return [f"**Not every run reached its budget.** {said.format(config.runs.budget.samples)}, from a shorter "
            f"search than a finished run's.{figures}{more}", ""] + items + [""]


def runs_notes(plan, task) -> list[str]:
    """The paragraphs under the runs table: runs reused from another code version, runs done again, and
    what a run's best on its set is."""
    notes = []
    if plan is not None and plan.other_code:
        notes.append(f"**Reused from another code version** (`--reuse any`; a code version in bold above differs "
                     f"from this compare's): {', '.join(plan.other_code)}.")
    if plan is not None and plan.moved:
        notes.append(f"Earlier runs and results in this folder that did not match were done again (the earlier "
                     f"ones are in `{plan.superseded.name}` under `superseded/`"
                     + (", with the report, tables and figures that described them" if plan.report_aside else "")
                     + "): " + "; ".join(plan.moved) + ".")
    if plan is not None and plan.tables_aside:
        notes.append(f"Tables of an earlier compare in this folder that this one does not write were moved to "
                     f"`{plan.superseded.name}` under `superseded/`: {', '.join(plan.tables_aside)}.")
    notes += ["A run's \"best on its set\" is its best program's metric aggregated (by the run's aggregation, the mean "
              "by default) over the set it trained on: the nominal set for a plain run, the nominal set grown by "
              "adversarial instances for a RAISE run (minus the host's score of that program; with a regret "
              "aggregation, the regret against the baselines). Lower is better, as in the tables above, which show "
              f"the metric itself on the test suite: {task.metric_label}.",
              "Every (method, seed, dataset, instance) result: [results.csv](results.csv)."]
    return notes


def failure_intro(failures) -> str:
    return (f"{len(failures)} job{'s' if len(failures) > 1 else ''} failed; the tables, figures and tests below hold "
            "what finished and leave these cells out.")


def failure_rows(failures) -> list[list[str]]:
    """The failed jobs (``FAILURE_HEADER``), each with its reason and whether a retry can help."""
    return [[f"{r.kind} {r.label}", " ".join(str(r.error).split()),
             "may help: run the same command again" if r.retry_helps else
             "cannot help (the settings or the task cause it)"] for r in failures]


def failure_section(failures) -> list[str]:
    """The failed jobs as Markdown; the tables leave their cells out."""
    lines = ["## Failed jobs", "", failure_intro(failures), "", _markdown_row(FAILURE_HEADER), "|---|---|---|"]
    lines += [_markdown_row([job, reason.replace("|", "\\|"), retry]) for job, reason, retry in failure_rows(failures)]
    return lines + [""]
