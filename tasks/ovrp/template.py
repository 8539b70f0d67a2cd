"""The OVRP program template and task description shown to the LLM."""

template_program = '''
import numpy as np

def priority(customer_features: np.ndarray, candidate_insertions: np.ndarray) -> np.ndarray:
    """Returns a priority for inserting the arriving customer at each candidate position.
    Args:
        customer_features: Array of 6 numbers describing the arriving customer:
            [0] x coordinate in [0, 1];
            [1] y coordinate in [0, 1];
            [2] demand / vehicle capacity Q;
            [3] Euclidean distance from the customer to the depot at (0.5, 0.5);
            [4] progress: fraction of the customers already placed, in [0, 1);
            [5] fleet slack: free capacity of all routes / total demand seen so far
                (this customer included).
        candidate_insertions: Array of shape (n, 8), one row per feasible insertion
            (every position of every route with room for the demand), ordered by
            route and then position. Columns:
            [0] route_id: index of the route;
            [1] position: 0-based index the customer would take in the route;
            [2] delta_distance: increase of the route length caused by the insertion;
            [3] residual_capacity: free capacity of the route after the insertion / Q;
            [4] current_load: load of the route before the insertion / Q;
            [5] route_size: number of stops of the route / number of customers;
            [6] customer_dist: distance from the customer to the nearest stop of the
                route, depot included;
            [7] projected_route: route length after the insertion / reference length.
    Return:
        Array of shape (n,) with one priority per row; the customer is inserted at the
        row with the highest priority.
    """
    return -candidate_insertions[:, 2]
'''

task_description = (
    "Implement a function that returns the priority with which an arriving customer is inserted at "
    "each candidate position of the vehicle routes in online capacitated vehicle routing. Customers "
    "arrive one at a time from a clustered map and each is inserted irrevocably at the candidate "
    "(route, position) with the highest priority; every vehicle has capacity Q and starts and ends "
    "at the central depot. When no route has room a new route is opened. The goal is to minimise the "
    "total route length."
)
