"""The eps-projection: always a probability vector within eps of its nearest nominal histogram."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from raise_plugin.adversary import GENES, distance, distances, mixture, nearest, project
from tasks.common.shift import is_distribution

TOL = 1e-12


@st.composite
def settings_(draw):
    """Nominal histograms (some with empty cells), a candidate p_adv and a radius."""
    cells = draw(st.sampled_from([10, 99, 100]))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    count = draw(st.integers(1, 5))
    support = draw(st.integers(2, cells))
    histograms = np.zeros((count, cells))
    histograms[:, :support] = rng.dirichlet(np.full(support, 5.0), size=count)
    kind = draw(st.sampled_from(["mixture", "dirichlet", "near"]))
    if kind == "mixture":  # what the decoder produces
        p_adv = mixture(rng.random(GENES), histograms.mean(axis=0), cells)
    elif kind == "dirichlet":
        p_adv = rng.dirichlet(np.full(cells, draw(st.sampled_from([0.1, 1.0, 10.0]))))
    else:  # a small move from one nominal histogram (often inside the ball)
        t = draw(st.floats(0.0, 0.2))
        p_adv = (1 - t) * histograms[0] + t * rng.dirichlet(np.ones(cells))
    epsilon = draw(st.sampled_from([1e-4, 1e-3, 2e-3, 5e-3, 1e-2, 5e-2]))
    return histograms, p_adv, epsilon


@settings(max_examples=150, deadline=None)
@given(settings_())
def test_paper_projection_is_a_distribution_within_eps_and_on_the_boundary_when_outside(case):
    histograms, p_adv, eps = case
    out = project(p_adv, histograms, eps, "paper")
    b = histograms[out.nearest]
    assert is_distribution(out.distribution)
    assert out.distance == pytest.approx(distance(out.distribution, b), abs=TOL)
    assert out.distance <= eps + TOL
    if out.raw_distance > eps:
        assert out.distance == pytest.approx(eps, rel=1e-9)
    else:  # identity inside the ball
        np.testing.assert_array_equal(out.distribution, p_adv)


@settings(max_examples=150, deadline=None)
@given(settings_())
def test_sphere_projection_is_a_distribution_at_exactly_eps(case):
    histograms, p_adv, eps = case
    out = project(p_adv, histograms, eps, "sphere")
    assert is_distribution(out.distribution)
    # d is at most 2 / K; a radius near that may be out of reach (see the next tests)
    assume(out.raw_distance > 1e-13 and eps <= 1.0 / histograms.shape[1])
    # the clipped ray from b through p_adv tends to the normalised positive part of the
    # displacement; a sphere farther out than that limit cannot be reached along it
    b = histograms[out.nearest]
    push = np.clip(p_adv - b, 0.0, None)
    assume(distance(push / push.sum(), b) > 1.01 * eps)
    assert out.distance == pytest.approx(eps, rel=1e-9)
    if out.raw_distance >= eps:  # outside, the two projections agree
        np.testing.assert_allclose(out.distribution, project(p_adv, histograms, eps, "paper").distribution)


def test_sphere_follows_the_simplex_when_the_ray_leaves_it():
    b = np.array([0.5, 0.5, 0.0, 0.0])
    p_adv = np.array([0.49, 0.5, 0.01, 0.0])  # extending the ray empties cell 0 only at t = 50
    eps = 0.4  # d(b, p_adv) = 0.005; the straight ray would need t = 80
    out = project(p_adv, b[None], eps, "sphere")
    assert is_distribution(out.distribution)
    assert out.distance == pytest.approx(eps, rel=1e-9)
    assert out.distribution[3] == 0.0  # still moves only along the cells the ray moves


def test_sphere_short_of_eps_only_when_the_whole_clipped_ray_is_inside():
    b = np.array([0.5, 0.5])
    p_adv = np.array([0.49, 0.51])
    out = project(p_adv, b[None], 0.9, "sphere")  # no distribution is 0.9 away from b
    assert is_distribution(out.distribution)
    np.testing.assert_allclose(out.distribution, [0.0, 1.0])


@settings(max_examples=60, deadline=None)
@given(settings_())
def test_none_projection_is_the_identity_and_nearest_is_the_argmin(case):
    histograms, p_adv, eps = case
    out = project(p_adv, histograms, eps, "none")
    np.testing.assert_array_equal(out.distribution, p_adv)
    index, d = nearest(p_adv, histograms)
    assert out.nearest == index == int(np.argmin(distances(p_adv, histograms)))
    assert out.raw_distance == d == out.distance


def test_distance_is_the_mean_absolute_difference():
    assert distance([0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5]) == pytest.approx(0.5)


@pytest.mark.parametrize("mode, eps", [("orthogonal", 0.1), ("paper", 0.0), ("paper", -1.0)])
def test_bad_arguments_are_refused(mode, eps):
    with pytest.raises(ValueError):
        project(np.full(4, 0.25), np.full((1, 4), 0.25), eps, mode)
