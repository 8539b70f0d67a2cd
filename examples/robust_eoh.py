"""Wrap llm4ad's EoH with RAISE's adversarial inner loop in a few lines (OBP, offline sampler, small budget).

    python examples/robust_eoh.py            # about a minute on two cores; no LLM, no network
"""
import time

from llm4ad.method.eoh import EoH

from raise_plugin.robust import AdversarialInstanceCallback
from raise_plugin.llm import make_llm
from raise_plugin.robust import robust
from raise_plugin.rundir.writer import RunDirectory
from tasks import get_task

task = get_task("obp")
evaluation = task.evaluation(instances=task.nominal_instances()[:2])  # two nominal instances keep it quick

method = robust(EoH, callbacks=[AdversarialInstanceCallback(epsilon=0.002, tau=2)])(
    llm=make_llm("offline", seed=0, task="obp"), evaluation=evaluation,
    max_sample_nums=30, pop_size=5, max_generations=None,   # max_generations=None: stop on the sample budget
    seed=0, recorder=RunDirectory(time.strftime("runs/example-robust-eoh-%Y%m%d-%H%M%S")))  # optional
method.run()

summary = method.summary(finished=True)
print(f"{summary['samples']} samples, {summary['generations']} generations, {summary['refreshes']} refreshes")
print(f"instance set: {[e['origin'] for e in summary['instance_set']]}")
print(f"best robust score {summary['best']['robust_score']:.4f}:\n{summary['best']['program']}")
