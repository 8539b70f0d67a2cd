"""``raise-ahd tasks``: list the registered tasks, or describe one (by name, file or module)."""
from __future__ import annotations

from raise_plugin.adversary.projection import check_epsilon, reachable_epsilon
from raise_plugin.resolve import final_selection, robust_defaults
from raise_plugin.errors import UserError
from raise_plugin.commands.flags import add_flags
from tasks import get_task, list_tasks
from tasks.common.classical import best_on_validation, classical_rules


def register(sub) -> None:
    p = sub.add_parser("tasks", help="list the registered tasks, or describe one")
    add_flags(p, ("task",), defaults={"task": None}, shown={"task": "every task"},
              helps={"task": "describe only this task: a name, path/to/file.py:Class or package.module:Class (a file "
                             "or module is loaded: this checks a task before a run)"})
    p.set_defaults(func=run)


def _defaults(name: str) -> str:
    d = robust_defaults(name)
    task = get_task(name)
    own = getattr(task, "robust_defaults", {}) or {}
    text = (f"eps {d['epsilon']:g}, projection {d['projection'] or 'paper'}, objective {d['adversary_objective']}, "
            f"aggregation {d['aggregation']}")
    text += " (chosen on its validation suite)" if own else " (the paper's)"
    beyond = check_epsilon(task, d["epsilon"])
    if beyond is None:
        return text
    fix = ("a robust run needs a smaller --epsilon" if reachable_epsilon(task) > 0
           else "no distribution moves from them, so a run is plain (--no-robust)")
    return f"{text}; its eps {beyond}: {fix}"


def _paper_shift(task) -> str:
    """What the paper's eps, 0.002, allows on ``task``: an L1 shift of K x eps, where the task's distributions
    reach that far from its nominal histograms."""
    beyond = check_epsilon(task, PAPER_EPSILON)
    return f"an L1 shift of {task.shift.cells * PAPER_EPSILON:.3g}" if beyond is None else f"but {beyond}"


PAPER_EPSILON = 0.002  # the yardstick the description measures every task by

_SELECTION = {"robust": "the run's robust best (the paper's)",
              "validation": "the last population's best on the validation suite (chosen on its validation suite)"}


def run(args) -> int:
    names = list_tasks()
    if getattr(args, "task", None):
        try:
            names = [get_task(args.task).name if ":" not in args.task else args.task]
        except KeyError:
            raise UserError(f"unknown task {args.task!r}; choose from {', '.join(list_tasks())}") from None
    for name in names:
        task = get_task(name)
        nominal = task.nominal_instances()
        suite = task.test_suite()
        validation = task.validation_suite()
        spread = task.nominal_spread
        yardstick = (f"{PAPER_EPSILON / spread:.3g} x spread" if spread > 0
                     else "no multiple of the spread (the nominal histograms are all one)")
        print(f"{task.name:8s} {type(task).__name__}: shift {task.shift.name}, K = {task.shift.cells}\n"
              f"       nominal {len(nominal)} instances, spread {spread:.3g} (mean d between two of them); "
              f"eps {PAPER_EPSILON:g} = {yardstick}, {_paper_shift(task)}\n"
              f"       validation suite {len(validation)} datasets, {sum(len(d.instances) for d in validation)} "
              f"instances; test suite {len(suite)} datasets, {sum(len(d.instances) for d in suite)} instances\n"
              f"       baselines: {', '.join(task.baselines)}\n"
              f"       classical rules: {', '.join(classical_rules(task))}; best on the validation suite: "
              f"{best_on_validation(task) or 'none'} (what a compare's tables and figures test against)\n"
              f"       robust defaults: {_defaults(name)}\n"
              f"       final program: {_SELECTION[final_selection(name)]}")
    return 0
