"""Classical next-node rules in the host's signature: the next node to visit (0 = the depot)."""
from __future__ import annotations

import numpy as np


def nearest_neighbour(current_node, depot, unvisited_nodes, rest_capacity, demands, distance_matrix):
    """NearestNeighbour: the nearest feasible unvisited customer."""
    return unvisited_nodes[int(np.argmin(distance_matrix[current_node][unvisited_nodes]))]


def demand_per_distance(current_node, depot, unvisited_nodes, rest_capacity, demands, distance_matrix):
    """DemandPerDistance (the host's template): the feasible customer with the most demand per distance."""
    distance = distance_matrix[current_node][unvisited_nodes]
    with np.errstate(divide="ignore"):
        score = np.where(distance > 0, demands[unvisited_nodes] / distance, np.inf)
    return unvisited_nodes[int(np.argmax(score))]


BASELINES = {"NearestNeighbour": nearest_neighbour, "DemandPerDistance": demand_per_distance}
