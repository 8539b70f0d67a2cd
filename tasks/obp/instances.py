"""OBP instances: the nominal Weibull set, the five shifted families and the 300-instance suite."""
from __future__ import annotations

import numpy as np

from tasks.common.families import FAMILIES, VALIDATION_FAMILIES, sample_family
from tasks.common.suite import Dataset, seed_for

NOMINAL_CAPACITY = 200
NOMINAL_ITEMS = 5000
NOMINAL_COUNT = 5
NOMINAL_SEED = 2024
SUITE_ITEMS = (1000, 5000, 10000)
SUITE_CAPACITIES = (100, 200, 300, 400)
SUITE_PER_DATASET = 5
# validation sizes: (n, C) pairs none of which the test grid or the nominal set uses
VALIDATION_SIZES = ((2000, 150), (3000, 350))
VALIDATION_PER_DATASET = 2


def make_instance(items, capacity: int) -> dict:
    """An instance in the host's format (``capacity``, ``num_items``, ``items``)."""
    items = np.asarray(items, dtype=np.int64)
    return {"capacity": int(capacity), "num_items": int(items.size), "items": items}


def weibull_instances(count: int = NOMINAL_COUNT, num_items: int = NOMINAL_ITEMS,
                      capacity: int = NOMINAL_CAPACITY, seed: int = NOMINAL_SEED,
                      rng: np.random.Generator | None = None) -> list[dict]:
    """Weibull(shape 3, scale 45) items, clipped to [1, C] and rounded.

    The same stream as the host's ``generate_weibull_dataset`` (legacy seed 2024, one
    draw of ``num_items`` per instance), from a local ``RandomState``, so the nominal
    set equals the host's own training set for the same sizes; or, given ``rng``, the same
    distribution drawn from it (a run's own nominal set).
    """
    rs = np.random.RandomState(seed) if rng is None else rng
    out = []
    for _ in range(count):
        sizes = np.round(np.clip(rs.weibull(3, num_items) * 45, 1, capacity)).astype(int)
        out.append(make_instance(sizes, capacity))
    return out


def family_instance(family: str, num_items: int, capacity: int, rng: np.random.Generator) -> dict:
    return make_instance(sample_family(family, num_items, capacity, rng), capacity)


def test_suite(families=FAMILIES, item_counts=SUITE_ITEMS, capacities=SUITE_CAPACITIES,
               per_dataset: int = SUITE_PER_DATASET) -> list[Dataset]:
    """5 families x n x C, ``per_dataset`` instances each, from fixed seeds."""
    suite = []
    for family in families:
        for n in item_counts:
            for c in capacities:
                instances = [family_instance(family, n, c, seed_for("obp", family, n, c, i))
                             for i in range(per_dataset)]
                suite.append(Dataset(family, {"n": n, "C": c}, instances))
    return suite


def validation_suite(families=VALIDATION_FAMILIES, sizes=VALIDATION_SIZES,
                     per_dataset: int = VALIDATION_PER_DATASET) -> list[Dataset]:
    """The validation families x (n, C) in ``VALIDATION_SIZES``, ``per_dataset`` instances each.

    Families, sizes and seeds are disjoint from the test suite's: choices are made here.
    """
    return [Dataset(family, {"n": n, "C": c},
                    [family_instance(family, n, c, seed_for("obp", "validation", family, n, c, i))
                     for i in range(per_dataset)])
            for family in families for n, c in sizes]
