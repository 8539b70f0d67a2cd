"""The classical rules beyond the paper's: each on small cases worked by hand; the OBP rules that
keep every bin's gap give the same packing however they are run (in-process after other instances,
after a run cut short, in two threads, through the engine under the look-ahead check)."""
import inspect
import threading

import numpy as np
import pytest

from raise_plugin.engine import Engine, ProcessExecutor, SandboxLimits
from tasks import get_task
from tasks.obp import sum_of_squares as ss_module
from tasks.obp.baselines import BASELINES as OBP_PAPER
from tasks.obp.baselines import CLASSICAL_RULES as OBP_RULES
from tasks.obp.simulator import _fastpack, pack
from tasks.obp.sum_of_squares import harmonic, sum_of_squares
from tasks.ojsp import baselines as ojsp
from tasks.ovrp import baselines as ovrp

COMPILED_LOOP = _fastpack


def _items(*sizes):
    return np.array(sizes, dtype=np.int64)


# -- OBP ------------------------------------------------------------------------------------------

def test_sum_of_squares_packs_a_hand_worked_case(compiled):
    # C = 10. 3: new bin (gap 7). 3: gap 7 -> 4 changes the sum by -1 + 1 = 0, a new bin by +3: bin 0.
    # 4: fills bin 0 (-1) against a new bin (+1). 6: new bin 1 (gap 4). 7: new bin 2 (gap 3).
    # 3: bin 1 (4 -> 1: -1 + 1 = 0), bin 2 (3 -> 0: -1), a new bin (+1): bin 2.
    residual = pack(_items(3, 3, 4, 6, 7, 3), 10, sum_of_squares, compiled=compiled)
    assert residual.tolist() == [0, 4, 0, 10, 10, 10]


def test_sum_of_squares_leaves_a_crowded_gap_level_where_best_fit_takes_the_tightest_bin():
    # C = 10; 6, 6, 6, 7 leave gaps 4, 4, 4 (N(4) = 3) and 3 (N(3) = 1). An item 1: a gap-4 bin
    # changes the sum by 1 - 2 * 3 + (2 * 1 + 1) = -2, the gap-3 bin by 1 - 2 + 1 = 0, a new bin by +1
    items = _items(6, 6, 6, 7, 1)
    assert pack(items, 10, sum_of_squares, compiled=False).tolist() == [3, 4, 4, 3, 10]
    assert pack(items, 10, OBP_PAPER["BestFit"], compiled=False).tolist() == [4, 4, 4, 2, 10]


def test_harmonic_packs_each_class_next_fit_in_bins_of_its_own(compiled):
    # C = 10: 3 is class 3 (bin 0), 3 joins it, 4 is class 2 (bin 1), 6 class 1 (bin 2), 7 class 1
    # does not fit bin 2 (new bin 3), 3 joins class 3's bin 0
    residual = pack(_items(3, 3, 4, 6, 7, 3), 10, harmonic, compiled=compiled)
    assert residual.tolist() == [1, 6, 4, 3, 10, 10]


def test_harmonic_closes_a_class_bin_after_its_class_count():
    # class 2 (sizes in (10/3, 5]): two items to a bin, then a new one, though 4 + 4 + 1 would fit 10
    residual = pack(_items(4, 4, 4, 1), 10, harmonic, compiled=False)
    assert residual.tolist() == [2, 6, 9, 10]  # the 1 (class 10) opens its own bin


@pytest.mark.parametrize("rule", [sum_of_squares, harmonic])
def test_a_rule_with_memory_packs_an_instance_as_it_does_alone(rule):
    task = get_task("obp")
    first, second = task.nominal_instances()[:2]
    alone = task.evaluate(rule, second)
    task.evaluate(rule, first)
    assert task.evaluate(rule, second) == alone
    pack(second["items"][:700], second["capacity"], rule)  # a run cut short: its packing is left unfinished
    assert task.evaluate(rule, second) == alone


def test_two_threads_packing_at_once_do_not_mix_their_memories():
    task = get_task("obp")
    instances = task.nominal_instances()[:2]
    alone = [task.evaluate(sum_of_squares, i) for i in instances]
    out = [None, None]

    def run(k):
        out[k] = task.evaluate(sum_of_squares, instances[k])

    threads = [threading.Thread(target=run, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == alone


def test_sum_of_squares_through_the_engine_passes_the_look_ahead_check_and_scores_as_in_process():
    task = get_task("obp")
    code = inspect.getsource(ss_module) + "\n\ndef priority(item, bins):\n    return sum_of_squares(item, bins)\n"
    instances = [{**i, "items": i["items"][:1500], "num_items": 1500} for i in task.nominal_instances()[:2]]
    limits = SandboxLimits(timeout=120.0, foresight=1.0)
    with ProcessExecutor(1, limits) as pool:
        results = [f.result() for f in Engine("obp", pool, limits=limits).submit_each(code, instances)]
    assert all(r.valid for r in results), [r.reason for r in results]
    assert [r.metrics[0] for r in results] == [task.evaluate(sum_of_squares, i) for i in instances]


def test_the_paper_rules_stay_the_task_baselines_and_every_rule_is_classical():
    task = get_task("obp")
    assert list(task.baselines) == ["BestFit", "FirstFit"] == list(OBP_PAPER)
    assert task.classical_rules == OBP_RULES and list(OBP_RULES)[:2] == ["BestFit", "FirstFit"]
    for name in ("ojsp", "ovrp"):
        t = get_task(name)
        assert list(t.classical_rules)[:len(t.baselines)] == list(t.baselines)


# -- OJSP -----------------------------------------------------------------------------------------

# columns: machine, duration, release, due, remaining work, remaining operations
ROWS = np.array([[0, 5, 0, 60, 20, 3],
                 [0, 3, 0, 40, 30, 2],
                 [1, 8, 2, 50, 8, 1],
                 [2, 4, 0, 90, 12, 3]], dtype=float)


def test_work_and_operation_rules_on_hand_rows():
    assert ojsp.most_work_remaining(0, ROWS).tolist() == [20, 30, 8, 12]
    assert ojsp.least_work_remaining(0, ROWS).tolist() == [-20, -30, -8, -12]
    assert ojsp.most_operations_remaining(0, ROWS).tolist() == [3, 2, 1, 3]


def test_winq_is_the_mean_queue_of_the_other_machines_shown_and_zero_after_the_last_operation():
    # queues: machine 0 holds 5 + 3 = 8, machine 1 8, machine 2 4; rows 0 and 1 (machine 0) see
    # (8 + 4) / 2 = 6, row 2 is its job's last operation (0), row 3 sees (8 + 8) / 2 = 8
    assert ojsp.expected_next_queue(ROWS).tolist() == [6, 6, 0, 8]
    # NPT: (W - p) / (k - 1): (20 - 5) / 2, (30 - 3) / 1, 0, (12 - 4) / 2
    assert ojsp.expected_next_duration(ROWS).tolist() == [7.5, 27, 0, 4]
    assert ojsp.pt_plus_winq(0, ROWS).tolist() == [-11, -9, -8, -12]
    assert ojsp.two_pt_winq_npt(0, ROWS).tolist() == [-23.5, -39, -16, -20]


def test_winq_with_one_machine_shown_is_zero():
    rows = ROWS[:2]
    assert ojsp.expected_next_queue(rows).tolist() == [0, 0]


def test_atc_weighs_short_operations_against_slack():
    # t = 10, mean p = 5: slack d - t - W = 30, 0, 32, 68; log priority -ln p - max(0, slack) / (2 * 5)
    expected = [-np.log(5) - 3.0, -np.log(3), -np.log(8) - 3.2, -np.log(4) - 6.8]
    assert np.allclose(ojsp.apparent_tardiness_cost(10, ROWS), expected)
    assert int(np.argmax(ojsp.apparent_tardiness_cost(10, ROWS))) == 1  # no slack left: first


# -- OVRP -----------------------------------------------------------------------------------------

def test_regret2_inserts_at_the_cheapest_position_of_the_cheapest_route():
    # columns 0 route, 2 delta; route 0 best 0.3, route 1 best 0.2 (two rows tie at 0.2: the first)
    rows = np.zeros((5, 8))
    rows[:, 0] = [0, 0, 1, 1, 1]
    rows[:, 2] = [0.5, 0.3, 0.2, 0.4, 0.2]
    scores = ovrp.regret2_insertion(np.zeros(6), rows)
    assert int(np.argmax(scores)) == 2
    assert np.isneginf(scores[:2]).all()


def test_regret2_chooses_as_cheapest_insertion_on_every_decision():
    task = get_task("ovrp")
    for instance in task.nominal_instances():
        assert task.evaluate(ovrp.regret2_insertion, instance) == task.evaluate(ovrp.cheapest_insertion, instance)
