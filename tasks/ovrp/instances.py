"""OVRP instances: clustered customers, the nominal set, the five demand families and the 75-instance suite.

An instance is a plain, picklable dict:

    num_customers     N_c (50)
    capacity          Q (40)
    vehicles          V, the size of the fleet of empty routes the simulation starts with
    depot             (2,) float, (0.5, 0.5)
    coords            (N_c, 2) float in [0, 1]^2, customer locations
    demands           (N_c,) int64 in [1, 10]
    order             (N_c,) int64, the arrival order (a permutation of the customer indices)
    reference_length  float, the offline Clarke-Wright savings length (capacity Q, unlimited vehicles)
"""
from __future__ import annotations

import numpy as np

from tasks.common.families import FAMILIES, VALIDATION_FAMILIES, sample_family
from tasks.common.suite import Dataset, seed_for

from .reference import clarke_wright_length

NUM_CUSTOMERS = 50
CAPACITY = 40
MAX_DEMAND = 10
DEPOT = (0.5, 0.5)
NOMINAL_VEHICLES = 10
NOMINAL_COUNT = 5
SUITE_VEHICLES = (5, 10, 15)
SUITE_PER_DATASET = 5
VALIDATION_VEHICLES = (7, 12)  # fleet sizes neither the test grid nor the nominal set uses
VALIDATION_PER_DATASET = 2
LOGNORMAL_MEDIAN = 0.28  # LogNormal(ln(0.28 D_max), 0.55): the paper's VRP parameters
LOGNORMAL_SIGMA = 0.55


def clustered_locations(size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` points from a Gaussian mixture, clipped to [0, 1]^2.

    K in {2, 3} clusters; centres U[0.15, 0.85]^2; isotropic std U[0.08, 0.18] per
    cluster; mixture weights Dirichlet(1, ..., 1).
    """
    k = int(rng.integers(2, 4))
    centres = rng.uniform(0.15, 0.85, size=(k, 2))
    stds = rng.uniform(0.08, 0.18, size=k)
    weights = rng.dirichlet(np.ones(k))
    cluster = rng.choice(k, size=size, p=weights)
    points = centres[cluster] + stds[cluster, None] * rng.standard_normal((size, 2))
    return np.clip(points, 0.0, 1.0)


def make_instance(demands, rng: np.random.Generator, vehicles: int = NOMINAL_VEHICLES,
                  capacity: int = CAPACITY) -> dict:
    """An instance around the given demands; locations and arrival order drawn from ``rng``."""
    demands = np.asarray(demands, dtype=np.int64).copy()
    if demands.ndim != 1 or demands.size < 1:
        raise ValueError(f"demands must be a non-empty 1-D array, got shape {demands.shape}")
    if demands.min() < 1 or demands.max() > capacity:
        raise ValueError(f"demands must lie in [1, {capacity}]")
    if int(vehicles) < 1:
        raise ValueError(f"vehicles must be >= 1, got {vehicles}")
    n = int(demands.size)
    coords = clustered_locations(n, rng)
    order = rng.permutation(n).astype(np.int64)
    depot = np.array(DEPOT, dtype=float)
    return {
        "num_customers": n,
        "capacity": int(capacity),
        "vehicles": int(vehicles),
        "depot": depot,
        "coords": coords,
        "demands": demands,
        "order": order,
        "reference_length": clarke_wright_length(depot, coords, demands, int(capacity)),
    }


def nominal_instances(count: int = NOMINAL_COUNT, vehicles: int = NOMINAL_VEHICLES,
                      seed: int | None = None) -> list[dict]:
    """The nominal training set: demands uniform on the integers {1..10}, V = 10, fixed seeds (or,
    given ``seed``, drawn from it: a run's own nominal set).

    Discrete-uniform demands put equal mass on each of the K = 10 cells, so the
    nominal histogram is flat in expectation.
    """
    out = []
    for i in range(count):
        rng = seed_for("ovrp", "nominal", i) if seed is None else seed_for("ovrp", "nominal", seed, i)
        demands = rng.integers(1, MAX_DEMAND + 1, size=NUM_CUSTOMERS)
        out.append(make_instance(demands, rng, vehicles))
    return out


def family_instance(family: str, vehicles: int, rng: np.random.Generator) -> dict:
    demands = sample_family(family, NUM_CUSTOMERS, MAX_DEMAND, rng,
                            lognormal_median=LOGNORMAL_MEDIAN, lognormal_sigma=LOGNORMAL_SIGMA)
    return make_instance(demands, rng, vehicles)


def test_suite(families=FAMILIES, fleet_sizes=SUITE_VEHICLES,
               per_dataset: int = SUITE_PER_DATASET) -> list[Dataset]:
    """5 families x V in {5, 10, 15}, ``per_dataset`` instances each, from fixed seeds.

    Every (family, V, index) has its own seed, so the 15 datasets are independent
    draws, like OBP's and OJSP's.
    """
    suite = []
    for family in families:
        for v in fleet_sizes:
            instances = [family_instance(family, v, seed_for("ovrp", family, v, i)) for i in range(per_dataset)]
            suite.append(Dataset(family, {"V": v}, instances))
    return suite


def validation_suite(families=VALIDATION_FAMILIES, fleet_sizes=VALIDATION_VEHICLES,
                     per_dataset: int = VALIDATION_PER_DATASET) -> list[Dataset]:
    """The validation families x V in ``VALIDATION_VEHICLES``, ``per_dataset`` instances each.

    Families, fleet sizes and seeds are disjoint from the test suite's: choices are made here.
    """
    return [Dataset(family, {"V": v},
                    [family_instance(family, v, seed_for("ovrp", "validation", family, v, i))
                     for i in range(per_dataset)])
            for family in families for v in fleet_sizes]
