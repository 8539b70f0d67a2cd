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
             "Each run's final program: " + ("its robust best (the best score on the set it trained on, "
                                             "grown by adversarial instances with RAISE)."
                                             if config.select_on == "robust" else
                                             "the member of its last population with the best metric on the "
                                             "validation suite (one instance per validation dataset; plain and "
                                             "robust runs alike; `selection.json` in each run directory)."), ""]
    if config.llm == "offline":
        lines += ["> No LLM was used: programs came from the offline program sampler, an LLM-free search "
                  "that rewrites parent programs. Results show the harness, not what an LLM would reach.", ""]
    if comparisons:
        lines += ["## What is significant", ""]
        per_slice = tables.get("table_all_distributions")
        lines += [f"- {s}" for s in significance_summary(comparisons, len(config.seeds),
                                                            slices=per_slice.marked() if per_slice else None)]
        lines += ["", "([table_significance.md](table_significance.md): mean differences, 95 % intervals, "
                  "Wilcoxon p and pairs; how they are computed: docs/harness.md)", ""]
    lines += ["## Tables", ""]
    for name, table in tables.items():
        lines += [table.markdown(), "", f"([{name}.md]({name}.md))", ""]
    if figures:
        lines += ["## Figures", ""]
        for f in figures:
            lines += [f"![{f.stem}]({f.name})", ""]
    lines += ["## Runs", "", "| variant | seed | samples | generations | refreshes | best robust score | run |",
              "|---|---|---:|---:|---:|---:|---|"]
    for (key, seed), path in run_dirs.items():
        summary = json.loads((path / "summary.json").read_text())
        label = next(v.label for v in variants if v.key == key)
        best = (summary.get("best") or {}).get("robust_score")
        lines.append(f"| {label} | {seed} | {summary.get('samples')} | {summary.get('generations')} | "
                     f"{summary.get('refreshes')} | {'' if best is None else f'{best:.4f}'} | "
                     f"[{path.name}](runs/{path.name}) |")
    lines += ["", "A run's score is the host's: minus its metric aggregated over the set it trained on (the "
              "nominal set, grown by adversarial instances with RAISE), so higher is better and a score of "
              "−1.2 is a metric of 1.2. The tables above show the metric itself on the test suite, lower is "
              "better.", "", "Every (method, seed, dataset, instance) result: [results.csv](results.csv)."]
    return "\n".join(lines) + "\n"
