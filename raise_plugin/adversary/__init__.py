"""The LLM-free adversary (the inner loop): genes -> distribution -> eps-projection -> instance, searched by a GA.

``search(task, priority, epsilon)`` is the one-call entry point; ``InnerGA`` is the
ask/tell optimiser it drives; ``genes`` and ``projection`` hold the decoding and the
eps-ball geometry; ``decoding`` turns genes into candidates, ``results`` holds what a search
returns, ``adversary_config`` and ``objective`` what it is asked. ``default_draws(task)`` is the
recommended number of instances drawn per candidate distribution (``draws=``) for a task
(the task's own ``default_draws``).
"""
from .adversary_config import (CONSTRAINTS, ENCODINGS, LENGTHS, NOISE, OBJECTIVES, PAPER_DRAWS, PER_REFRESH, TAU_UNITS,
                               AdversaryConfig, AdversaryConfigError, SearchConfig)
from .decoding import Adversary
from .ga import AskTell, InnerGA, evaluate_batch, optimise
from .genes import BASES, GENES, bases, basis, flat_mixture, instance_length, mixture, weights
from .objective import POPULATION_REFERENCES, Objective, parse_objective
from .projection import PROJECTIONS, Projection, distance, distances, nearest, project
from .results import AdversarialDraw, AdversarialResult, Candidate, GenerationRecord
from .search import AdversaryReferenceError, default_draws, instance_seed, sample_and_evaluate, search

__all__ = ["search", "SearchConfig", "AdversarialResult", "AdversarialDraw", "Candidate", "GenerationRecord", "Adversary",
           "AdversaryReferenceError", "default_draws", "PAPER_DRAWS",
           "InnerGA", "AskTell", "optimise", "evaluate_batch", "instance_seed", "sample_and_evaluate",
           "GENES", "BASES", "weights", "basis", "bases", "mixture", "flat_mixture", "instance_length",
           "PROJECTIONS", "Projection", "distance", "distances", "nearest", "project",
           "ENCODINGS", "CONSTRAINTS", "NOISE", "OBJECTIVES", "LENGTHS",
           "AdversaryConfig", "AdversaryConfigError", "TAU_UNITS", "PER_REFRESH", "Objective", "parse_objective",
           "POPULATION_REFERENCES"]
