"""Classical OVRP insertion baselines as priority functions (argmax wins, first index on ties).

Notation, per candidate row of ``candidate_insertions``: ``delta`` = column 2
(delta_distance, the route-length increase of the insertion), ``residual`` =
column 3 (free capacity of the route after the insertion, / Q), ``load`` =
column 4 (the route's load before the insertion, / Q); ``demand`` = feature 2
of ``customer_features`` (demand / Q).
"""
from __future__ import annotations

import numpy as np


def nf_insert(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """NF-Insert (nearest feasible): the cheapest position in the feasible route with the most residual capacity.

    ``score = -delta`` on the rows whose ``residual`` equals the largest residual,
    ``-inf`` elsewhere; among equally empty routes the lowest route id wins.
    """
    residual = candidate_insertions[:, 3]
    return np.where(residual >= residual.max(), -candidate_insertions[:, 2], -np.inf)


def sp_insert(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """SP-Insert (slack preserving): insertion cost over residual slack, ``score = -delta / (residual + 0.05)``."""
    return -candidate_insertions[:, 2] / (candidate_insertions[:, 3] + 0.05)


def uw_insert(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """UW-Insert (urgency weighted): ``score = -delta * (1 + demand / (1 - load))``.

    The urgency factor grows with the customer's demand and with how full the route
    already is; ``1 - load >= demand > 0`` on every feasible row, so it is finite.
    """
    demand = customer_features[2]
    return -candidate_insertions[:, 2] * (1.0 + demand / (1.0 - candidate_insertions[:, 4]))


def cheapest_insertion(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """Plain cheapest insertion, ``score = -delta`` (a reference point, not one of the paper's baselines)."""
    return -candidate_insertions[:, 2]


def regret2_insertion(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """Regret-2 insertion's placement: the customer's cheapest position in the route where it is
    cheapest. Regret-2 (after Potvin and Rousseau) computes each route's best insertion cost
    ``c1 <= c2 <= ...`` (rows share a route in column 0) and ranks the customers still to insert
    by the regret ``c2 - c1``, inserting the one of largest regret at its best position. Online
    one customer arrives at a time, so the regret has no customer to rank: the placement is
    cheapest insertion's, row for row (the first row on ties)."""
    routes, delta = candidate_insertions[:, 0], candidate_insertions[:, 2]
    # rows come by route, so the route of least c1 (the first on ties) holds the first row of least delta
    chosen = routes[int(np.argmin(delta))]
    return np.where(routes == chosen, -delta, -np.inf)


# the paper's rules: the task's ``baselines`` (the adversary's references, regret:baselines, GP's probe)
BASELINES = {"NF-Insert": nf_insert, "SP-Insert": sp_insert, "UW-Insert": uw_insert}
# every classical rule of the task, the paper's first: the rows of the tables, the "best classical" candidates
CLASSICAL_RULES = {**BASELINES, "CheapestInsertion": cheapest_insertion, "Regret-2": regret2_insertion}
