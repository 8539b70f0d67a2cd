"""Machinery shared by every task: shift dimension, families, suites, the host Evaluation."""
from .aggregation import Aggregation
from .decision import check_priorities, decide
from .errors import HeuristicError
from .families import FAMILIES, VALIDATION_FAMILIES, sample_family
from .layout import TableLayout
from .shift import ShiftDimension, is_distribution
from .suite import Dataset, seed_for
from .task import Task

__all__ = ["Aggregation", "HeuristicError", "check_priorities", "FAMILIES", "VALIDATION_FAMILIES",
           "sample_family", "TableLayout",
           "ShiftDimension", "is_distribution", "Dataset", "seed_for", "Task"]
