"""The inner GA speaks ask/tell: truncation to the top half, crossover of kept pairs, clipped mutation."""
from __future__ import annotations

import numpy as np
import pytest

from raise_plugin.adversary import InnerGA, optimise


def ga(seed=0, **kwargs):
    return InnerGA(18, np.random.default_rng(seed), **kwargs)


def test_first_ask_is_the_uniform_population_then_only_the_offspring():
    opt = ga(population=8)
    first = opt.ask()
    assert first.shape == (8, 18) and np.all((first >= 0) & (first <= 1))
    np.testing.assert_array_equal(opt.ask(), first)  # asking again before tell repeats the question
    opt.tell(first, np.arange(8.0))
    second = opt.ask()
    assert second.shape == (4, 18) and np.all((second >= 0) & (second <= 1))


def test_the_top_half_survives_with_its_scores():
    opt = ga(population=8)
    genes = opt.ask()
    scores = np.array([3.0, 9.0, 1.0, 7.0, np.inf, 2.0, 8.0, np.nan])
    opt.tell(genes, scores)
    parents, kept = opt.parents
    np.testing.assert_array_equal(kept, [np.inf, 9.0, 8.0, 7.0])
    np.testing.assert_array_equal(parents, genes[[4, 1, 6, 3]])
    children = opt.ask()
    opt.tell(children, np.full(4, 100.0))  # all children beat the parents
    np.testing.assert_array_equal(opt.parents[1], [np.inf, 100.0, 100.0, 100.0])


def test_without_mutation_every_child_gene_comes_from_one_of_two_distinct_parents():
    opt = ga(population=8, mutation_rate=0.0)
    genes = opt.ask()
    opt.tell(genes, np.arange(8.0))
    parents = opt.parents[0]
    children = opt.ask()
    used_pairs = set()
    for child in children:
        pair = [(i, j) for i in range(4) for j in range(i + 1, 4)
                if np.all((child == parents[i]) | (child == parents[j]))]
        assert pair, "a child mixes genes of more than two parents"
        used_pairs.add(pair[0])
    assert len(used_pairs) == 4  # four distinct pairs of the six


def test_mutation_is_clipped_to_the_unit_cube():
    opt = ga(population=8, mutation_rate=1.0, mutation_sigma=5.0)
    genes = opt.ask()
    opt.tell(genes, np.arange(8.0))
    children = opt.ask()
    assert np.all((children >= 0) & (children <= 1))
    assert np.mean((children == 0) | (children == 1)) > 0.5


def test_tell_checks_its_arguments():
    opt = ga()
    with pytest.raises(RuntimeError):
        opt.tell(np.zeros((8, 18)), np.zeros(8))
    genes = opt.ask()
    with pytest.raises(ValueError):
        opt.tell(genes + 0.01, np.zeros(8))
    with pytest.raises(ValueError):
        opt.tell(genes, np.zeros(7))


@pytest.mark.parametrize("bad", [dict(population=1), dict(mutation_rate=1.5), dict(mutation_sigma=-1)])
def test_bad_settings_are_refused(bad):
    with pytest.raises(ValueError):
        ga(**bad)


def test_same_generator_seed_same_questions_and_state_round_trips():
    a, b = ga(seed=5), ga(seed=5)
    for _ in range(3):
        qa, qb = a.ask(), b.ask()
        np.testing.assert_array_equal(qa, qb)
        a.tell(qa, qa.sum(axis=1))
        b.tell(qb, qb.sum(axis=1))
    state = a.state_dict()
    c = ga(seed=99)
    c.load_state_dict(state)
    np.testing.assert_array_equal(c.ask(), a.ask())


def test_small_populations_still_breed():
    opt = ga(population=2)
    genes = opt.ask()
    opt.tell(genes, [1.0, 0.0])
    assert opt.ask().shape == (1, 18)


def test_optimise_climbs_a_simple_score():
    opt = ga(seed=1)
    first = opt.ask().sum(axis=1).max()
    best_genes, best = optimise(ga(seed=1), lambda g: float(g.sum()), generations=15)
    assert best > first and best == pytest.approx(best_genes.sum())
