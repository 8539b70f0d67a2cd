"""``raise-ahd select``: a finished run's final program, chosen on the validation suite."""
from __future__ import annotations

from pathlib import Path

from raise_plugin.errors import UserError
from raise_plugin.harness.tables import render_table
from raise_plugin.rundir.reader import finished_summary, load_config
from raise_plugin.commands.evaluate import check_output
from raise_plugin.commands.flags import add_flags, check_flags
from raise_plugin.validation import SELECTION_FILE, select_final
from tasks import get_task


def register(sub) -> None:
    p = sub.add_parser("select", help="choose a finished run's final program on the validation suite (never the "
                                      "test suite): the member of its last population with the best metric there")
    p.add_argument("run_dir", metavar="RUN_DIR", help="a finished run directory")
    add_flags(p, ("per_dataset", "out", "workers"), helps={"out": "also write the chosen program to this .py file"},
              shown={"out": "none: the choice is recorded in RUN_DIR/selection.json only"}, metavars={"out": "FILE"})
    p.set_defaults(func=run)


def run(args) -> int:
    path = Path(args.run_dir)
    config = load_config(path, whole=True)
    finished_summary(path)
    check_flags(args, ("per_dataset", "workers"))
    check_output(args.out)  # a folder, or a place that cannot be written: refused before the suite is run
    if args.out and Path(args.out).resolve().is_relative_to(path.resolve()):
        raise UserError(f"--out {args.out}: is inside the run directory {path}, which holds only the run's own "
                        f"records; write the program outside it (the choice is recorded in {path / SELECTION_FILE})")
    task = get_task(config["task"])
    chosen = select_final(path, task, per_dataset=args.per_dataset, workers=args.workers)
    if chosen is None:
        raise UserError(f"{path}: the run has no valid program")
    print(candidates_table(chosen, task, robust=bool(config.get("robust", True)), per_dataset=args.per_dataset))
    print(f"chosen on the validation suite ({args.per_dataset} instance(s) per dataset): {chosen['program_id']}; "
          f"recorded in {path / SELECTION_FILE}")
    if args.out:  # folders on the way are made, as check_output lets them be
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(chosen["program"])
        print(f"program written to {args.out}")
    return 0


def candidates_table(chosen: dict, task, *, robust: bool, per_dataset: int) -> str:
    """The candidates of a selection, each labelled with its direction: the run's own score (higher
    is better; a RAISE run's robust score, a plain run's score on the nominal set) beside the
    validation metric (lower is better), with a caption naming both."""
    score, best = ("robust score", "robust best") if robust else ("nominal score", "the run's best")
    trained_on = "the nominal set grown by adversarial instances" if robust else "the nominal set"
    body = []
    for c in chosen["candidates"]:
        marks = [m for m, on in (("<- chosen", c["program_id"] == chosen["program_id"]),
                                 (f"({best})", c["program_id"] == chosen["robust_best"])) if on]
        body.append([c["program_id"][:18], "" if c["robust_score"] is None else f"{c['robust_score']:.4f}",
                     "failed" if c["validation_metric"] is None else f"{c['validation_metric']:.4f}",
                     " ".join(marks)])
    caption = (f"{score.capitalize()}: the run's score on the set it trained on ({trained_on}), minus the metric "
               f"(or regret) aggregated over it, so higher is better; validation: the mean metric over {per_dataset} instance(s) per validation "
               f"dataset, lower is better. Metric: {task.metric_label}.")
    headers = ["program", f"{score} (higher is better)", "validation (lower is better)", ""]
    return caption + "\n" + render_table(headers, body)
