"""Compare's ``report.md``: the settings, what is significant, the tables, the figures and the runs."""
from __future__ import annotations

import json

from raise_plugin.harness.paper_tables import significance_summary

__all__ = ["compare_report"]


def compare_report(config, task, variants, tables, figures, run_dirs, comparisons=()) -> str:
    """``report.md``: the settings, what is significant, the tables, the figures and one line per run."""
    lines = [f"# RAISE compare on {task.name}", "",
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
    lines += ["## Runs", "", "| variant | seed | samples | generations | refreshes | trained on | best score | run |",
              "|---|---|---:|---:|---:|---|---:|---|"]
    for (key, seed), path in run_dirs.items():
        summary = json.loads((path / "summary.json").read_text())
        variant = next(v for v in variants if v.key == key)
        trained_on = "nominal + adversarial" if variant.robust else "nominal set"
        best = (summary.get("best") or {}).get("robust_score")
        lines.append(f"| {variant.label} | {seed} | {summary.get('samples')} | {summary.get('generations')} | "
                     f"{summary.get('refreshes')} | {trained_on} | {'' if best is None else f'{best:.4f}'} | "
                     f"[{path.name}](runs/{path.name}) |")
    lines += ["", "A run's best score is the host's score of its best program on the set it trained on: the "
              "nominal set for a plain run, the nominal set grown by adversarial instances for a RAISE run (its "
              "robust score). It is minus the metric aggregated over that set (minus the regret with a regret "
              "aggregation), so higher is better: with the mean, a score of −1.2 is a mean metric of 1.2. The "
              f"tables above show the metric itself on the test suite: {task.metric_label}.", "",
              "Every (method, seed, dataset, instance) result: [results.csv](results.csv)."]
    return "\n".join(lines) + "\n"
