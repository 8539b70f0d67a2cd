"""Compare's ``report.md``: the settings, what is significant, the tables, the figures and the runs."""
from __future__ import annotations

import json

from raise_plugin.harness.paper_tables import significance_summary
from raise_plugin.harness.provenance import code_version, recorded_code_version

__all__ = ["compare_report"]


def compare_report(config, task, variants, tables, figures, run_dirs, comparisons=(), *, failures=(),
                   plan=None) -> str:
    """``report.md``: the settings, failed jobs, what is significant, the tables, the figures and one line
    per finished run with the settings and code version it was trained with."""
    lines = [f"# RAISE compare on {task.name}: {', '.join(config.methods)}, budget {config.budget}", "",
             f"Methods {', '.join(config.methods)}; eps {', '.join(f'{e:g}' for e in config.epsilons)}; "
             f"budget {config.budget} samples, population {config.pop_size}, tau {config.tau}, "
             f"P_in {config.inner_population}, G_in {config.inner_generations}; seeds {list(config.seeds)}; "
             f"LLM `{config.llm}`.", "",
             f"Metric: {task.metric_label}.", "",
             "Each run's final program: " + ("its best program on the set it trained on (a plain run's nominal "
                                             "set; a RAISE run's nominal set grown by adversarial instances, so "
                                             "its robust best)."
                                             if config.select_on == "robust" else
                                             "the member of its last population with the best metric on the "
                                             "validation suite (one instance per validation dataset; plain and "
                                             "robust runs alike; `selection.json` in each run directory)."), ""]
    if config.llm == "offline":
        lines += ["> No LLM was used: programs came from the offline program sampler, an LLM-free search "
                  "that rewrites parent programs. Results show the harness, not what an LLM would reach.", ""]
    if failures:
        lines += failure_section(failures)
    if comparisons:
        lines += ["## What is significant", "",
                  f"Differences are method − reference in {task.metric_label}, so negative means the method "
                  "is better.", ""]
        per_slice = tables.get("table_all_distributions")
        lines += [f"- {s}" for s in significance_summary(comparisons, len(config.seeds),
                                                            slices=per_slice.marked() if per_slice else None)]
        lines += ["", "([table_significance.md](table_significance.md): mean differences, 95 % bootstrap "
                  "intervals, Wilcoxon p and pairs; how they are computed: docs/harness.md)", ""]
    lines += ["## Tables", ""]
    for name, table in tables.items():
        lines += [table.markdown(), "", f"([{name}.md]({name}.md))", ""]
    if figures:
        lines += ["## Figures", ""]
        for f in figures:
            lines += [f"![{f.stem}]({f.name})", ""]
    lines += ["## Runs", "", f"This compare's code version: `{code_version()}` (the package's version and a hash "
              "of the plugin's and the tasks' sources). Each run's settings below are read from its own "
              "`config.json`, its code version from its `code_version.json`.", "",
              "| variant | seed | budget | population | tau | eps | LLM | code version | samples | generations | "
              "refreshes | trained on | best score | run |",
              "|---|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|---:|---|"]
    for (key, seed), path in run_dirs.items():
        summary = json.loads((path / "summary.json").read_text())
        recorded = json.loads((path / "config.json").read_text())
        variant = next(v for v in variants if v.key == key)
        trained_on = "nominal + adversarial" if variant.robust else "nominal set"
        best = (summary.get("best") or {}).get("robust_score")
        eps = recorded.get("epsilon")
        llm = recorded.get("llm", "") + (f" at {recorded['base_url']}" if recorded.get("base_url") else "")
        version = recorded_code_version(path) or "not recorded"
        if version != code_version():
            version = f"**{version}**"
        lines.append(f"| {variant.label} | {seed} | {recorded.get('budget')} | {recorded.get('pop_size')} | "
                     f"{recorded.get('tau')} | {'' if eps is None else f'{eps:g}'} | {llm} | {version} | "
                     f"{summary.get('samples')} | {summary.get('generations')} | "
                     f"{summary.get('refreshes')} | {trained_on} | {'' if best is None else f'{best:.4f}'} | "
                     f"[{path.name}](runs/{path.name}) |")
    if plan is not None and plan.other_code:
        lines += ["", f"**Reused from another code version** (`--reuse any`; a code version in bold above differs "
                      f"from this compare's): {', '.join(plan.other_code)}."]
    if plan is not None and plan.moved:
        lines += ["", f"Earlier runs and results in this folder that did not match were done again (the earlier "
                      f"ones are in `{plan.superseded.name}` under `superseded/`): "
                      + "; ".join(plan.moved) + "."]
    lines += ["", "A run's best score is the host's score of its best program on the set it trained on: the "
              "nominal set for a plain run, the nominal set grown by adversarial instances for a RAISE run (its "
              "robust score). It is minus the metric aggregated over that set (minus the regret with a regret "
              "aggregation), so higher is better: with the mean, a score of −1.2 is a mean metric of 1.2. The "
              f"tables above show the metric itself on the test suite: {task.metric_label}.", "",
              "Every (method, seed, dataset, instance) result: [results.csv](results.csv)."]
    return "\n".join(lines) + "\n"


def failure_section(failures) -> list[str]:
    """The failed jobs, each with its reason and whether a retry can help; the tables leave their cells out."""
    lines = ["## Failed jobs", "", f"{len(failures)} job{'s' if len(failures) > 1 else ''} failed; the tables, figures "
             "and tests below hold what finished and leave these cells out.", "",
             "| job | reason | a retry |", "|---|---|---|"]
    for r in failures:
        retry = ("may help: run the same command again" if r.retry_helps else
                 "cannot help (the settings or the task cause it)")
        reason = r.error.replace("|", "\\|")
        lines.append(f"| {r.kind} {r.label} | {reason} | {retry} |")
    return lines + [""]
