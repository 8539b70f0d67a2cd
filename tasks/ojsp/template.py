"""The OJSP program template and task description shown to the LLM."""

template_program = '''
import numpy as np

def priority(current_time: int, candidate_operations: np.ndarray) -> np.ndarray:
    """Returns the priority with which each candidate operation is dispatched now.
    Args:
        current_time: The current decision time; every candidate can start at it.
        candidate_operations: Array of shape (n, 6), one row per candidate operation, columns:
            0 machine_id: the machine the operation needs,
            1 duration: its processing time,
            2 release_time: its job's release time,
            3 due_date: its job's due date,
            4 remaining_work: total duration of its job's unscheduled operations (this one included),
            5 remaining_operations: number of its job's unscheduled operations (this one included).
    Return:
        Array of shape (n,) with the priority of each candidate; the highest is started now.
    """
    return -candidate_operations[:, 1]
'''

task_description = (
    "Implement a function that returns the priority of each candidate operation in online job shop "
    "scheduling. Jobs arrive over time; each job is a sequence of operations, one on every machine, in "
    "a job-specific machine order. Whenever machines can start work, the candidates are the next "
    "operations of the released jobs that can start at the current time; the candidate with the "
    "highest priority starts now, and the others are offered again. The goal is to minimise the "
    "makespan (the time the last operation finishes) relative to a lower bound."
)
