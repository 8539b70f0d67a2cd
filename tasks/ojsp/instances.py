"""OJSP instances: the generator of SPEC 3.2, the nominal Uniform set and the 100-instance suite.

An instance is a plain dict (picklable, no objects):

- ``num_jobs`` J, ``num_machines`` M (ints);
- ``machines`` (J, M) int64: ``machines[j, k]`` is the machine of job j's k-th operation
  (each row a permutation of ``0..M-1``);
- ``durations`` (J, M) int64 in [1, 99]: ``durations[j, k]`` is the duration of that
  operation (stored in processing order, not machine order);
- ``release`` (J,) and ``due`` (J,) int64: release time r_j and due date d_j;
- ``horizon`` H (int) and ``release_window`` (the share of H the releases span).
"""
from __future__ import annotations

import numpy as np

from tasks.common.families import FAMILIES, VALIDATION_FAMILIES, sample_family
from tasks.common.suite import Dataset, seed_for

__all__ = ["MAX_DURATION", "NOMINAL_MACHINES", "NOMINAL_JOBS", "RELEASE_WINDOW", "make_instance",
           "lower_bound", "family_instance", "nominal_instances", "test_suite", "validation_suite"]

MAX_DURATION = 99  # D_max: durations are integers in [1, D_max]
NOMINAL_MACHINES = 10
NOMINAL_JOBS = 20
NOMINAL_COUNT = 5
NOMINAL_FAMILY = "uniform"
RELEASE_WINDOW = 0.45  # releases span [0, 0.45 H], the paper's value
ZERO_GAP_PROBABILITY = 0.35
DUE_FACTOR = (1.35, 1.75)  # multiplicative slack U(1.35, 1.75) * P_j
CONGESTION_ALLOWANCE = 0.35  # additive slack 0.35 * mean(P)
NOISE_SHARE = 0.1  # due-date noise U(-b, b), b = 0.1 * mean(P)
SUITE_MACHINES = (10, 20)
SUITE_JOBS = (20, 50)
SUITE_PER_DATASET = 5
# validation sizes: (M, J) pairs none of which the test grid or the nominal set uses
VALIDATION_SIZES = ((5, 30), (15, 30))
VALIDATION_PER_DATASET = 2


def lower_bound(durations: np.ndarray, num_machines: int) -> int:
    """LB = max(max_j P_j, ceil(sum p / M)), P_j the total work of job j."""
    durations = np.asarray(durations, dtype=np.int64)
    longest_job = int(durations.sum(axis=1).max())
    machine_load = -(-int(durations.sum()) // int(num_machines))
    return max(longest_job, machine_load)


def make_instance(durations, rng: np.random.Generator, M: int = NOMINAL_MACHINES,
                  release_window: float = RELEASE_WINDOW, **_) -> dict:
    """An instance around the given durations (J * M of them, J = len / M); the rest from ``rng``.

    Machine orders are uniform permutations. With ``H = 2 LB``, release gaps are 0 with
    probability 0.35 and U(0, 1) otherwise; their cumulative sums are rescaled so the
    largest equals ``release_window * H``, rounded, and permuted across jobs. Due dates:
    ``d_j = r_j + P_j + max(0, U(1.35, 1.75) P_j + 0.35 mean(P) + U(-b, b))``,
    ``b = 0.1 mean(P)``, with the slack ``d_j - r_j - P_j`` rounded to an integer.
    """
    M = int(M)
    values = np.asarray(durations, dtype=np.int64).ravel()
    if M < 1:
        raise ValueError(f"the machine count M must be >= 1, got {M}")
    if values.size == 0 or values.size % M:
        raise ValueError(f"{values.size} durations do not fill whole jobs of M = {M} operations")
    if values.min() < 1 or values.max() > MAX_DURATION:
        raise ValueError(f"durations must lie in [1, {MAX_DURATION}]")
    if not 0 <= release_window:
        raise ValueError(f"release_window must be >= 0, got {release_window}")
    durations = values.reshape(-1, M)
    J = durations.shape[0]
    machines = rng.permuted(np.tile(np.arange(M, dtype=np.int64), (J, 1)), axis=1)
    work = durations.sum(axis=1)
    horizon = 2 * lower_bound(durations, M)

    gaps = np.where(rng.random(J) < ZERO_GAP_PROBABILITY, 0.0, rng.random(J))
    arrivals = np.cumsum(gaps)
    if arrivals[-1] > 0:
        # divide first so the largest is exactly 1 and becomes exactly release_window * H
        arrivals = arrivals / arrivals[-1] * (release_window * horizon)
    release = rng.permutation(np.round(arrivals).astype(np.int64))

    mean_work = float(work.mean())
    noise = NOISE_SHARE * mean_work
    slack = (rng.uniform(*DUE_FACTOR, J) * work + CONGESTION_ALLOWANCE * mean_work
             + rng.uniform(-noise, noise, J))
    due = release + work + np.round(np.maximum(slack, 0.0)).astype(np.int64)
    return {"num_jobs": int(J), "num_machines": M, "machines": machines, "durations": durations,
            "release": release, "due": due, "horizon": int(horizon),
            "release_window": float(release_window)}


def family_instance(family: str, num_jobs: int, num_machines: int, rng: np.random.Generator,
                    release_window: float = RELEASE_WINDOW) -> dict:
    """One instance whose J * M durations come from a test family with D_max = 99."""
    durations = sample_family(family, num_jobs * num_machines, MAX_DURATION, rng)
    return make_instance(durations, rng, M=num_machines, release_window=release_window)


def nominal_instances(count: int = NOMINAL_COUNT, release_window: float = RELEASE_WINDOW,
                      seed: int | None = None) -> list[dict]:
    """The nominal training set: Uniform durations, M = 10, J = 20, fixed seeds (or, given
    ``seed``, drawn from it: a run's own nominal set)."""
    key = ("ojsp", "nominal") if seed is None else ("ojsp", "nominal", seed)
    return [family_instance(NOMINAL_FAMILY, NOMINAL_JOBS, NOMINAL_MACHINES, seed_for(*key, i), release_window)
            for i in range(count)]


def test_suite(families=FAMILIES, machine_counts=SUITE_MACHINES, job_counts=SUITE_JOBS,
               per_dataset: int = SUITE_PER_DATASET, release_window: float = RELEASE_WINDOW) -> list[Dataset]:
    """5 families x M x J, ``per_dataset`` instances each, from fixed seeds.

    The seeds do not depend on ``release_window``: the suite with another window has the
    same durations and machine orders, only releases and due dates move.
    """
    suite = []
    for family in families:
        for m in machine_counts:
            for j in job_counts:
                instances = [family_instance(family, j, m, seed_for("ojsp", family, m, j, i), release_window)
                             for i in range(per_dataset)]
                suite.append(Dataset(family, {"M": m, "J": j}, instances))
    return suite


def validation_suite(families=VALIDATION_FAMILIES, sizes=VALIDATION_SIZES,
                     per_dataset: int = VALIDATION_PER_DATASET,
                     release_window: float = RELEASE_WINDOW) -> list[Dataset]:
    """The validation families x (M, J) in ``VALIDATION_SIZES``, ``per_dataset`` instances each.

    Families, sizes and seeds are disjoint from the test suite's: choices are made here.
    """
    return [Dataset(family, {"M": m, "J": j},
                    [family_instance(family, j, m, seed_for("ojsp", "validation", family, m, j, i), release_window)
                     for i in range(per_dataset)])
            for family in families for m, j in sizes]
