"""Classical OJSP dispatching rules as priority functions (argmax wins, first index on ties).

Columns of ``candidate_operations``: 0 machine_id, 1 duration, 2 release_time,
3 due_date, 4 remaining_work, 5 remaining_operations.

The candidates of one call on different machines all start at the same time whatever their order
(the others are offered again at the same time), so a rule decides only among the candidates of
each machine; every rule here is a function of the call's rows alone.
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


def most_work_remaining(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """MWKR: the job with the most work remaining first (this operation included), priority ``W``."""
    return candidate_operations[:, 4].copy()


def least_work_remaining(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """LWKR: the job with the least work remaining first, priority ``-W``."""
    return -candidate_operations[:, 4]


def most_operations_remaining(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """MOPNR: the job with the most operations remaining first (this one included), priority ``k``."""
    return candidate_operations[:, 5].copy()


def expected_next_queue(candidate_operations: np.ndarray) -> np.ndarray:
    """WINQ as far as the call shows it: the work waiting at the job's next machine, 0 after its
    last operation. The next machine is not among the columns and no state recovers it (the
    heuristic first sees it when that operation is offered), so it is taken as one of the other
    machines with candidates in this call, uniformly: the mean of their queued work (the sum of
    their candidates' durations)."""
    machines = candidate_operations[:, 0].astype(np.int64)
    queued = np.bincount(machines, weights=candidate_operations[:, 1])
    others = np.count_nonzero(np.bincount(machines)) - 1
    mean_other = (queued.sum() - queued[machines]) / others if others else np.zeros(len(machines))
    return np.where(candidate_operations[:, 5] > 1, mean_other, 0.0)


def expected_next_duration(candidate_operations: np.ndarray) -> np.ndarray:
    """NPT as far as the columns tell: the mean duration of the job's later operations,
    ``(W - p) / (k - 1)`` (0 after its last operation); the next one is not among the columns,
    and durations are drawn alike for every operation of a job."""
    later = candidate_operations[:, 5] - 1
    rest = candidate_operations[:, 4] - candidate_operations[:, 1]
    return np.where(later > 0, rest / np.maximum(later, 1), 0.0)


def pt_plus_winq(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """PT+WINQ (Holthaus and Rajendran): the smallest ``p + WINQ`` first, WINQ as
    ``expected_next_queue`` estimates it."""
    return -(candidate_operations[:, 1] + expected_next_queue(candidate_operations))


def two_pt_winq_npt(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """2PT+WINQ+NPT (Holthaus and Rajendran): the smallest ``2 p + WINQ + NPT`` first, WINQ and NPT as
    ``expected_next_queue`` and ``expected_next_duration`` estimate them."""
    return -(2.0 * candidate_operations[:, 1] + expected_next_queue(candidate_operations)
             + expected_next_duration(candidate_operations))


ATC_LOOKAHEAD = 2.0  # K of ATC, fixed (not tuned)


def apparent_tardiness_cost(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """ATC (Vepsalainen and Morton), unit weights: ``(1 / p) exp(-max(0, d - t - W) / (K p_mean))``,
    ``W`` the job's remaining work (this operation included), ``p_mean`` the mean duration of the
    candidates; returned as its logarithm (the same order, no underflow to ties). The published
    job-shop slack also subtracts estimated waiting times of the later operations; they are 0 here."""
    durations = candidate_operations[:, 1]
    slack = candidate_operations[:, 3] - current_time - candidate_operations[:, 4]
    return -np.log(durations) - np.maximum(slack, 0.0) / (ATC_LOOKAHEAD * durations.mean())


# the paper's rules: the task's ``baselines`` (the adversary's references, regret:baselines, GP's probe)
BASELINES = {"SPT": shortest_processing_time, "MinSlack": minimum_slack, "EDD": earliest_due_date}
# every classical rule of the task, the paper's first: the rows of the tables, the "best classical" candidates
CLASSICAL_RULES = {**BASELINES, "MWKR": most_work_remaining, "LWKR": least_work_remaining,
                   "MOPNR": most_operations_remaining, "PT+WINQ": pt_plus_winq, "2PT+WINQ+NPT": two_pt_winq_npt,
                   "ATC": apparent_tardiness_cost}
