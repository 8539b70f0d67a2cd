"""The OBP program template and task description shown to the LLM."""

template_program = '''
import numpy as np

def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Returns priority with which we want to add item to each bin.
    Args:
        item: Size of item to be added to the bin.
        bins: Array of capacities for each bin.
    Return:
        Array of same size as bins with priority score of each bin.
    """
    return item - bins
'''

task_description = (
    "Implement a function that returns the priority with which we want to add an item to each bin "
    "in online bin packing. Items arrive one at a time and each goes irrevocably into the feasible "
    "bin with the highest priority; `bins` holds the remaining capacities of every bin that can "
    "take the item (still-empty bins included). The goal is to use as few bins as possible."
)
