"""Compare's tables: the task's own layouts, the per-distribution and ablation tables, and the paired
tests of every method against the best baseline and its plain twin, each written as Markdown."""
from __future__ import annotations

from pathlib import Path

from raise_plugin.harness.paper_tables import (Table, build_table, family_columns, layout_table, significance,
                                               significance_markdown)
from raise_plugin.harness.variants import METHOD_LABELS, Variant
from tasks import get_task

__all__ = ["paper_tables", "ablation_rows", "write_tables"]


def paper_tables(task_name: str, rows: list[dict], order: list[str], ablation_rows: list[str],
                 ablation_names: dict[str, str] | None = None, *, baselines=(), twins=None) -> dict[str, Table]:
    """The task's own tables (``Task.table_layouts``) that apply to the datasets present, then
    the per-distribution and ablation tables every task gets; with ``baselines`` and ``twins``
    (method -> plain twin) every cell is tested against both. Every table names the task's metric,
    its unit and direction (``Task.metric_label``) in the line under its title."""
    tested = {"baselines": baselines, "twins": twins}
    task = get_task(task_name)
    metric = task.metric_name + (f" ({task.metric_unit})" if task.metric_unit else "")
    tables: dict[str, Table] = {}
    for layout in task.table_layouts():
        table = layout_table(layout, rows, **tested, methods=order)
        if table is not None:
            tables[layout.key] = table
    tables["table_all_distributions"] = build_table(
        rows, family_columns(), **tested, methods=order,
        title=f"{task_name}: {metric} per distribution, averaged over all sizes")
    if ablation_rows:
        tables["table4_ablation"] = build_table(
            rows, family_columns(), **tested, methods=ablation_rows, rename=ablation_names,
            title=f"Table 4: ablations, {metric} per distribution averaged over all sizes")
    for table in tables.values():
        table.metric = task.metric_label
    return tables


def ablation_rows(methods, first_epsilon: float, variants: list[Variant]) -> tuple[list[str], dict[str, str]]:
    """The rows of the ablation table, per method: the plain run (RAISE without robust search), the
    ablations, then RAISE at the first eps; and the plain runs' names in that table."""
    rows, names = [], {}
    for m in methods:
        rows.append(METHOD_LABELS.get(m, m))
        names[METHOD_LABELS.get(m, m)] = f"{METHOD_LABELS.get(m, m)} (= RAISE w/o Robust Search)"
        rows += [v.label for v in variants if v.method == m and v.kind == "ablation"]
        rows.append(f"RAISE-{METHOD_LABELS.get(m, m)} (eps={first_epsilon:g})")
    return rows, names


def write_tables(config, task, variants: list[Variant], rows: list[dict],
                 out: Path) -> tuple[dict[str, Table], list, list[Path]]:
    """The tables and paired tests of ``rows``, written to ``OUT/<table>.md`` and
    ``OUT/table_significance.md``: ``(tables, comparisons, files written)``."""
    order = list(task.baselines) + [v.label for v in variants if v.kind != "ablation"]
    ablations, ablation_names = (ablation_rows(config.methods, config.epsilons[0], variants) if config.ablations
                                 else ([], {}))
    baselines = list(task.baselines)
    twins = {v.label: METHOD_LABELS.get(v.method, v.method) for v in variants if v.kind != "plain"}
    tables = paper_tables(task.name, rows, order, ablations, ablation_names, baselines=baselines, twins=twins)
    files = []
    for name, table in tables.items():
        path = out / f"{name}.md"
        path.write_text(table.markdown() + "\n")
        files.append(path)
    comparisons = significance(rows, [v.label for v in variants], baselines, twins)
    (out / "table_significance.md").write_text(significance_markdown(
        comparisons, f"{task.name}: each method against the best baseline and its plain twin, whole test suite; "
                     f"differences in {task.metric_label}")
        + "\n")
    files.append(out / "table_significance.md")
    return tables, comparisons, files
