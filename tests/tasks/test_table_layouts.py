"""Each task declares its paper tables; the harness builds them with no task-name branch."""
from __future__ import annotations

import pytest

from raise_plugin.harness.compare_tables import paper_tables
from tasks import get_task
from tasks.common.families import FAMILIES
from tasks.common.layout import TableLayout

SIZES = {"obp": [{"n": n, "C": c} for n in (1000, 5000) for c in (100, 200)],
         "ojsp": [{"M": m, "J": j} for m in (10, 20) for j in (20, 50)],
         "ovrp": [{"V": v} for v in (5, 10)],
         "knapsack": list(get_task("knapsack").test_sizes),
         "cvrp": list(get_task("cvrp").test_sizes)}


def rows_for(name):
    return [{"method": m, "seed": 0, "family": f, "params": ";".join(f"{k}={v}" for k, v in p.items()),
             "instance": 0, "metric": float(i), "valid": True}
            for m in ("A", "B") for f in FAMILIES for i, p in enumerate(SIZES[name])]


@pytest.mark.parametrize("name, tables, columns", [
    ("obp", ["table1_per_distribution", "table2_per_size"],
     [["Uniform", "Normal", "Lognormal", "Exponential", "Triangular", "Avg."],
      ["C=100, n=1000", "C=100, n=5000", "C=200, n=1000", "C=200, n=5000"]]),
    ("ojsp", ["table3_ojsp"], [["10-machine", "20-machine"]]),
    ("ovrp", ["table3_ovrp"], [["5-vehicle", "10-vehicle"]]),
    ("knapsack", ["table_per_size"], [["n=50, C=100", "n=50, C=200", "n=100, C=100", "n=100, C=200",
                                       "n=200, C=100", "n=200, C=200"]]),
    ("cvrp", ["table_per_size"], [["n=20, C=30", "n=50, C=40", "n=100, C=50"]]),
])
def test_a_tasks_tables_come_from_its_layouts(name, tables, columns):
    built = paper_tables(name, rows_for(name), ["A", "B"], [])
    assert list(built) == tables + ["table_all_distributions"]
    for key, cols in zip(tables, columns):
        assert built[key].columns == cols
    if name in ("knapsack", "cvrp"):
        task = get_task(name)
        assert f"{name}: {task.metric_name} ({task.metric_unit}) per size" in built["table_per_size"].title
    for table in built.values():  # the line under every title names the metric, its unit and direction
        assert table.markdown().split("\n\n")[1].startswith(f"Metric: {get_task(name).metric_label}.")


def test_a_per_distribution_table_at_a_size_is_left_out_when_that_size_is_absent():
    rows = [r for r in rows_for("obp") if r["params"] != "n=5000;C=200"]
    assert "table1_per_distribution" not in paper_tables("obp", rows, ["A", "B"], [])


def test_a_layout_says_which_field_is_wrong():
    with pytest.raises(ValueError, match="by must be one of"):
        TableLayout("t", "t", by="machine")
    with pytest.raises(ValueError, match="exactly one size key"):
        TableLayout("t", "t", by="size", keys=("n", "C"), label="{}-x")
