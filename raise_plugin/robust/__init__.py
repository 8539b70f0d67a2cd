"""``robust(Method)``: attach callbacks (RAISE's inner loop among them) to a host method without editing it.

    method = robust(EoH, callbacks=[AdversarialInstanceCallback(epsilon=0.002)])(
        llm=llm, evaluation=task.evaluation(), max_sample_nums=1000, pop_size=10, max_generations=None)
    method.run()

The wrapped class is a subclass of the host method: ``RobustMethodMixin`` (the core, below),
then the adapter for the host's shape, then the host class. After the host's constructor
the core swaps the evaluator for one that scores a program on the current instance set
(per-instance metrics, cached per program and instance, run by the sandboxed engine), keeps
a profiler attached (the hosts count samples only through one), and lets the adapter swap
the parts that hold the search state. The files, one idea each:

- ``hooks.py``      the hook protocol (``Callback``) and the frozen views its hooks receive
- ``refresh.py`` ``AdversarialInstanceCallback``, RAISE's inner loop as a callback;
  ``budget.py`` ``LLMBudget``, the LLM spend caps; ``progress.py`` the progress bar;
  ``owned.py`` what a run made itself (its workers, its LLM back-end), closed at its end
- ``instances.py``  the instance set (nominal first, then adversarial), versioned
- ``scores.py``     the score book: per-program, per-instance metrics
- ``evaluator.py``  the one evaluator (engine jobs, counted by purpose)
- ``gate.py``       run events queued under one lock and fired outside it (the lock order)
- ``core.py``       construction, adding an instance and re-scoring, run, events;
  ``host_profiler.py`` the host's own profiler logs of a recorded run (``HostProfiler``)
- ``view.py``       what callbacks read; ``accounting.py`` compute and summary;
  ``resume.py`` checkpoints and restore
- ``shape.py``      what an adapter provides; ``population.py`` (EoH, ReEvo, PartEvo,
  EoH-S), ``database.py`` (FunSearch), ``tap.py`` + ``incumbent.py`` (HillClimb, RandSample)
- ``wrap.py``       ``robust()``: picks the adapter

``docs/architecture.md`` follows one sample through them.
"""
from __future__ import annotations

from .refresh import AdversarialInstanceCallback, IdleAdversaryWarning, idle_adversary
from .host_profiler import QuietProfiler
from .evaluator import InstanceSetEvaluator
from .hooks import Callback, InstanceUpdate, InstanceView, ProgramView, RunSnapshot, SampleView
from .instances import ADVERSARIAL, NOMINAL, InstanceEntry, instance_digest
from .population import RobustPopulationMixin
from .scores import ProgramRecord, ScoreBook, program_id_of
from .wrap import RobustMethodMixin, robust, shape_of

__all__ = ["robust", "shape_of", "Callback", "AdversarialInstanceCallback", "RunSnapshot", "ProgramView",
           "InstanceView", "SampleView", "InstanceUpdate", "RobustMethodMixin", "RobustPopulationMixin", "InstanceSetEvaluator",
           "InstanceEntry", "ProgramRecord", "ScoreBook", "QuietProfiler", "instance_digest", "program_id_of",
           "NOMINAL", "ADVERSARIAL", "IdleAdversaryWarning", "idle_adversary"]
