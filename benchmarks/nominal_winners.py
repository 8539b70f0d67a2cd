"""What a robust run's score did with the programs that beat the best classical rule on the nominal set.

For each run directory: every valid sample's mean metric on the nominal instances beside the
best classical rule's, and, for the samples that beat it there, whether they met an
adversarial instance and their largest regret (metric minus the best baseline's on the same
instance, the reference of ``regret:`` aggregations, or the named rule's under ``regret:NAME:``;
an adversarial instance's is the one its search recorded) on the instances of the set they met,
from the run's own records (``samples.jsonl``, ``scores.jsonl``, the instance index); nothing
is evaluated again but the baselines on the nominal set. A score that lets such a program win
trades the nominal set against the instances that expose it; ``regret:min`` never does.

    python benchmarks/nominal_winners.py runs/obp-seed0 runs/obp-seed1
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from raise_plugin.rundir.files import read_jsonl  # noqa: E402
from tasks import get_task  # noqa: E402
from tasks.common.aggregation import Aggregation  # noqa: E402
from tasks.common.evaluation import baseline_reference  # noqa: E402


def summarise(run: Path, margin: float) -> dict:
    config = json.loads((run / "config.json").read_text())
    task = get_task(config["task"])
    index = [r for r in read_jsonl(run / "instances" / "index.jsonl") if r.get("kind") == "instance"]
    nominal = [r["instance_id"] for r in index if r["origin"] == "nominal"]
    adversarial = {r["instance_id"] for r in index if r["origin"] != "nominal"}
    reference = {r["instance_id"]: r["provenance"].get("reference_metric") for r in index
                 if r["origin"] != "nominal"}
    evaluation = task.evaluation(instances=task.nominal_instances()[:len(nominal)])
    named = Aggregation.parse(config.get("aggregation") or "mean").reference  # regret:NAME:A: that rule alone
    reference.update({i: baseline_reference(task, inst, named) for i, inst in zip(nominal, evaluation.instances)})
    rule = min(task.baselines, key=lambda b: float(np.mean(evaluation.metrics(task.baselines[b]))))
    rule_nominal = float(np.mean(evaluation.metrics(task.baselines[rule])))
    metrics: dict[str, dict] = {}
    for row in read_jsonl(run / "samples.jsonl") + read_jsonl(run / "scores.jsonl"):
        if row.get("metrics") and not row.get("failed_on"):
            metrics.setdefault(row["program_id"], {}).update(row["metrics"])
    winners, met, exposed, worst = 0, 0, 0, []
    for values in metrics.values():
        if not all(i in values and values[i] is not None for i in nominal):
            continue
        if float(np.mean([values[i] for i in nominal])) < rule_nominal - margin:
            winners += 1
            met += any(i in adversarial for i in values)
            regrets = [values[i] - reference[i] for i in values if reference.get(i) is not None and values[i] is not None]
            if max(regrets) > 0:
                exposed += 1
                worst.append(max(regrets))
    return {"run": str(run), "aggregation": config.get("aggregation"), "programs": len(metrics), "rule": rule,
            "rule_nominal": rule_nominal, "nominal_winners": winners, "met_adversarial": met, "exposed": exposed,
            "median_worst_regret": float(np.median(worst)) if worst else None}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs", nargs="+", help="run directories")
    p.add_argument("--margin", type=float, default=0.05, help="how far below the rule's nominal mean counts as "
                                                                "beating it (default 0.05)")
    args = p.parse_args(argv)
    for run in args.runs:
        if not (Path(run) / "config.json").exists():
            p.error(f"{run} is not a run directory (no config.json)")
        s = summarise(Path(run), args.margin)
        worst = "-" if s["median_worst_regret"] is None else f"{s['median_worst_regret']:.3f}"
        print(f"{s['run']} ({s['aggregation']}): {s['programs']} programs; {s['nominal_winners']} beat {s['rule']} "
              f"({s['rule_nominal']:.3f}) on the nominal set by more than {args.margin:g}; {s['met_adversarial']} of them "
              f"met an adversarial instance; {s['exposed']} lose to the reference on an instance they met "
              f"(median worst regret {worst})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
