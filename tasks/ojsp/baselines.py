"""Classical OJSP dispatching rules as priority functions (argmax wins, first index on ties).

Columns of ``candidate_operations``: 0 machine_id, 1 duration, 2 release_time,
3 due_date, 4 remaining_work, 5 remaining_operations.
"""
from __future__ import annotations

import numpy as np


def shortest_processing_time(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """SPT: the shortest operation first, priority ``-p``."""
    return -candidate_operations[:, 1]


def minimum_slack(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """MinSlack: the least slack ``d - r - remaining work`` first (= ``d_j - r_j - P_j`` at a job's first operation)."""
    return candidate_operations[:, 2] + candidate_operations[:, 4] - candidate_operations[:, 3]


def earliest_due_date(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """EDD: the earliest due date first, priority ``-d``."""
    return -candidate_operations[:, 3]


BASELINES = {"SPT": shortest_processing_time, "MinSlack": minimum_slack, "EDD": earliest_due_date}
