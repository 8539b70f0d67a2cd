"""Compare's tables: the task's own layouts, the per-distribution and ablation tables, and the paired
tests of every method against the best classical rule (chosen on the validation suite) and its plain twin,
each written as Markdown."""
from __future__ import annotations

import re
from pathlib import Path

from raise_plugin.harness.paper_tables import Table, build_table, family_columns, layout_table
from raise_plugin.harness.significance import significance, significance_markdown
from raise_plugin.harness.stats import holm_adjust
from raise_plugin.harness.table_formats import significance_csv, significance_latex, table_csv, table_latex
from raise_plugin.harness.variants import METHOD_LABELS, Variant
from tasks import get_task
from tasks.common.classical import best_on_validation, classical_rules, suite_metrics
from tasks.common.suite import Dataset

__all__ = ["paper_tables", "ablation_rows", "write_tables", "rule_rows", "with_reference_rule"]


def paper_tables(task_name: str, rows: list[dict], order: list[str], ablation_rows: list[str],
                 ablation_names: dict[str, str] | None = None, *, baselines=(), twins=None,
                 reference: str | None = None) -> dict[str, Table]:
    """The task's own tables (``Task.table_layouts``) that apply to the datasets present, then
    the per-distribution and ablation tables every task gets; with ``baselines`` and ``twins``
    (method -> plain twin) every cell is tested against both (against ``reference``, the best classical
    rule, where given, else the column's best baseline). Every table names the task's metric,
    its unit and direction (``Task.metric_label``) in the line under its title."""
    tested = {"baselines": baselines, "twins": twins, "reference": reference}
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
            title=f"{task_name}: ablations, {metric} per distribution, averaged over all sizes")
    for table in tables.values():
        table.metric = task.metric_label
        table.title = study_title(table.title)
    return tables


def study_title(title: str) -> str:
    """A task layout's title without the paper's table number (``"Table 3 (OJSP): ..."`` ->
    ``"OJSP: ..."``): a study of its own is not the paper's Table 3."""
    found = re.match(r"Table \d+\s*(?:\(([^)]*)\))?\s*:\s*", title)
    if not found:
        return title
    return (f"{found.group(1)}: " if found.group(1) else "") + title[found.end():]


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


def write_tables(study, task, variants: list[Variant], rows: list[dict], out: Path, *,
                 budget: int | None = None) -> tuple[dict[str, Table], list, list[Path]]:
    """The tables and paired tests of ``rows``, written to ``OUT/<table>.md`` and
    ``OUT/table_significance.md``: ``(tables, comparisons, files written)``; ``study`` is the
    compare's own section (``StudySettings``: its methods, radii, ablations and seeds), ``budget``
    its runs' samples, named in the titles."""
    chosen = best_on_validation(task)  # the best classical rule, from every rule of the task
    baselines = list(dict.fromkeys([*task.baselines, *([chosen] if chosen else [])]))
    rows = with_reference_rule(task, rows)
    order = baselines + [v.label for v in variants if v.kind != "ablation"]
    ablations, ablation_names = (ablation_rows(study.methods, study.epsilons[0], variants) if study.ablations
                                 else ([], {}))
    twins = {v.label: METHOD_LABELS.get(v.method, v.method) for v in variants if v.kind != "plain"}
    tables = paper_tables(task.name, rows, order, ablations, ablation_names, baselines=baselines, twins=twins,
                          reference=chosen)
    labels = {v.label for v in variants}
    cells = {(r["method"], str(r["seed"])) for r in rows if r["method"] in labels}
    short = len(cells) < len(labels) * len(study.seeds)  # a failed job's cells: the caption counts each row's seeds
    named = ", ".join([", ".join(study.methods), *([f"budget {budget}"] if budget is not None else []),
                       f"{len(study.seeds)} seed{'s' * (len(study.seeds) != 1)}"
                       + (" planned, fewer in rows whose jobs failed" if short else "")])
    files = []
    for name, table in tables.items():
        table.title = f"{table.title} ({named})"
        for suffix, text in ((".md", table.markdown() + "\n"), (".csv", table_csv(table)), (".tex", table_latex(table))):
            (out / f"{name}{suffix}").write_text(text)
            files.append(out / f"{name}{suffix}")
    # one family: every row of the table, Holm-corrected together
    comparisons = list(holm_adjust(dict(enumerate(significance(rows, [v.label for v in variants], baselines, twins,
                                                                chosen=chosen)))).values())
    title = (f"{task.name}: each method against the best classical rule ({chosen}, chosen on the validation "
             f"suite from every classical rule) and its plain twin, whole test suite ({named}); "
             f"differences in {task.metric_label}")
    for suffix, text in ((".md", significance_markdown(comparisons, title) + "\n"),
                         (".csv", significance_csv(comparisons)), (".tex", significance_latex(comparisons, title))):
        (out / f"table_significance{suffix}").write_text(text)
        files.append(out / f"table_significance{suffix}")
    return tables, comparisons, files


def with_reference_rule(task, rows: list[dict]) -> list[dict]:
    """``rows`` with those of the best classical rule on the validation suite on the same test instances,
    where it is not one of the task's baselines (which compare evaluates as jobs) and ``rows`` lack it: the
    tables test every method against it and show its row, so ``results.csv`` holds its results too."""
    chosen = best_on_validation(task)
    if chosen is None or chosen in task.baselines or any(r["method"] == chosen for r in rows):
        return rows
    return rows + rule_rows(task, chosen, rows)


def rule_rows(task, name: str, rows: list[dict]) -> list[dict]:
    """Result rows of the classical rule ``name`` (in-process: the project's own code) on the test
    instances ``rows`` hold, as compare's baselines' rows read."""
    # a row names its dataset by family and sizes (the CSV's ``dataset`` column is both, joined)
    wanted = {(r["family"], str(r["params"]), str(r["instance"])) for r in rows}
    rule, out = classical_rules(task)[name], []
    for dataset in task.test_suite():
        params = ";".join(f"{k}={v}" for k, v in dataset.params.items())
        for i, instance in enumerate(dataset.instances):
            if (dataset.family, params, str(i)) in wanted:
                metric = suite_metrics(task, rule, [Dataset(dataset.family, dataset.params, [instance])])[0]
                out.append({"method": name, "variant": f"baseline-{name}", "kind": "baseline", "seed": "0",
                            "dataset": dataset.name, "family": dataset.family, "params": params, "instance": str(i),
                            "metric": repr(float(metric)), "valid": str(bool(metric == metric)), "reason": ""})
    return out
