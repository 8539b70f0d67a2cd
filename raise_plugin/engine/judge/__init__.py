"""The judge: a program runs in a confined process of its own (``program_process``, forked by the
worker's ``spawner``), answers each instance with its decisions (``protocol``), and the judge
replays them with the task's simulator, checking that they do not look ahead (``foresight``,
``stages``; its two processes on one CPU, ``one_cpu``)."""
from .judge import Judge, evaluate_heuristic

__all__ = ["Judge", "evaluate_heuristic"]
