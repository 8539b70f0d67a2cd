"""Seeding for the next program: the module code seeds numpy's and Python's global random
generators, so a later program that draws from them makes the draws this one chose.
Its decisions are best fit's."""
import random

import numpy as np

np.random.seed(123)
random.seed(123)


def priority(item, bins):
    return -(bins - item)
