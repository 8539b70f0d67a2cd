"""``raise-ahd tasks``: list the registered tasks."""
from __future__ import annotations

from tasks import get_task, list_tasks


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list the registered tasks")
    p.set_defaults(func=run)


def run(args) -> int:
    for name in list_tasks():
        task = get_task(name)
        nominal = task.nominal_instances()
        suite = task.test_suite()
        print(f"{name:6s} {type(task).__name__:10s} shift: {task.shift.name} (K={task.shift.cells}); "
              f"nominal {len(nominal)} instances; test suite {len(suite)} datasets, "
              f"{sum(len(d.instances) for d in suite)} instances; baselines: {', '.join(task.baselines)}")
    return 0
