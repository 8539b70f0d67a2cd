"""Gene decoding: nine valid bases that move with their shape genes, the mixture, the length gene."""
from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from raise_plugin.adversary import genes as G
from tasks.common.shift import is_distribution

gene_vectors = arrays(np.float64, G.GENES, elements=st.floats(0.0, 1.0))
cell_counts = st.sampled_from([10, 99, 100])


def with_gene(index: int, value: float) -> np.ndarray:
    g = np.full(G.GENES, 0.5)
    g[index] = value
    return g


def mean_q(p: np.ndarray) -> float:
    centres = (np.arange(p.size) + 0.5) / p.size
    return float(p @ centres)


def std_q(p: np.ndarray) -> float:
    centres = (np.arange(p.size) + 0.5) / p.size
    m = p @ centres
    return float(np.sqrt(p @ (centres - m) ** 2))


LEVELS = np.linspace(0.0, 1.0, 6)


@settings(max_examples=60, deadline=None)
@given(gene_vectors, cell_counts)
def test_every_basis_is_a_probability_vector(genes, cells):
    phi = G.bases(genes, cells)
    assert phi.shape == (9, cells)
    for row in phi:
        assert is_distribution(row)


@settings(max_examples=60, deadline=None)
@given(gene_vectors, cell_counts)
def test_mixture_is_a_probability_vector_anchored_or_not(genes, cells):
    p_bar = np.random.default_rng(0).dirichlet(np.ones(cells))
    assert is_distribution(G.mixture(genes, p_bar, cells))
    assert is_distribution(G.mixture(genes, None, cells))


def test_zero_weights_give_the_mean_nominal_histogram():
    p_bar = np.random.default_rng(1).dirichlet(np.ones(100))
    genes = np.random.default_rng(2).random(G.GENES)
    genes[G.WEIGHTS] = 0.5
    np.testing.assert_allclose(G.mixture(genes, p_bar, 100), p_bar)
    flat = np.full(101, 0.5)
    np.testing.assert_allclose(G.flat_mixture(flat, p_bar, 100), p_bar)


def test_mixture_is_p_bar_plus_weighted_bases_when_nothing_is_clipped():
    p_bar = np.full(100, 0.01)
    genes = with_gene(0, 0.6)  # +0.1 uniform, the others weigh 0
    expected = p_bar + 0.1 * G.basis("uniform", genes, 100)
    np.testing.assert_allclose(G.mixture(genes, p_bar, 100), expected / expected.sum())


def test_weights_are_genes_minus_a_half():
    genes = np.linspace(0, 1, G.GENES)
    np.testing.assert_allclose(G.weights(genes), genes[:9] - 0.5)


def test_small_mean_falls_and_large_mean_rises_with_their_shape_genes():
    small = [mean_q(G.basis("small", with_gene(9, v), 100)) for v in LEVELS]
    large = [mean_q(G.basis("large", with_gene(10, v), 100)) for v in LEVELS]
    assert np.all(np.diff(small) < 0) and small[0] == pytest.approx(0.5, abs=1e-3)
    assert np.all(np.diff(large) > 0) and large[0] == pytest.approx(0.5, abs=1e-3)


@pytest.mark.parametrize("cells", [10, 100])
def test_gaussian_mode_follows_its_mean_gene_and_its_spread_the_std_gene(cells):
    for mu in LEVELS:
        p = G.basis("gaussian", with_gene(11, mu), cells)
        assert abs(int(np.argmax(p)) - min(int(mu * cells), cells - 1)) <= 1
    spreads = [std_q(G.basis("gaussian", with_gene(12, v), 100)) for v in LEVELS]
    assert np.all(np.diff(spreads) > 0)


@pytest.mark.parametrize("cells", [10, 99, 100])
def test_peak_mode_follows_its_position_gene_and_widens_with_its_spread_gene(cells):
    for c in np.linspace(0.02, 0.98, 9):
        p = G.basis("peak", with_gene(15, c), cells)
        assert abs(int(np.argmax(p)) - int(c * cells)) <= 1
    g = with_gene(15, 0.5)
    spreads = []
    for s in LEVELS:
        g[16] = s
        spreads.append(std_q(G.basis("peak", g, 100)))
    assert np.all(np.diff(spreads) > 0)


def test_poisson_mean_rises_with_its_rate_gene():
    means = [mean_q(G.basis("poisson", with_gene(14, v), 100)) for v in LEVELS]
    assert np.all(np.diff(means) > 0)
    # rate 1 + 9 g, count k spread over [k / 20, (k + 1) / 20): mean about (lambda + 0.5) / 20
    assert means[0] == pytest.approx(1.5 / 20, abs=0.01)
    assert means[-1] == pytest.approx(10.5 / 20, abs=0.02)


def test_periodic_frequency_rises_with_its_gene():
    def crossings(p):  # density 1 + sin(2 pi f q) crosses its mean 2 f - 1 times for whole f
        above = p > p.mean()
        return int(np.sum(above[:-1] != above[1:]))

    counts = [crossings(G.basis("periodic", with_gene(13, v), 100)) for v in LEVELS]
    assert counts[0] == 1 and counts[-1] == 19
    assert np.all(np.diff(counts) >= 0)


def test_fixed_bases_have_their_documented_shapes():
    g = np.full(G.GENES, 0.5)
    np.testing.assert_allclose(G.basis("uniform", g, 100), 0.01)
    center = G.basis("center", g, 100)
    np.testing.assert_allclose(center, center[::-1], atol=1e-12)
    assert np.argmax(center) in (49, 50)
    bimodal = G.basis("bimodal", g, 100)
    assert bimodal[30:70].sum() == pytest.approx(0.0, abs=1e-12)
    assert bimodal[:30].sum() == pytest.approx(0.5) and bimodal[70:].sum() == pytest.approx(0.5)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(1, 100_000))
def test_length_gene_stays_within_ten_percent(gene, nominal):
    n = G.instance_length(gene, nominal)
    assert 0.9 * nominal - 0.5 <= n <= 1.1 * nominal + 0.5 and n >= 1
    assert G.instance_length(gene, nominal, can_change=False) == nominal


def test_length_gene_ends_map_to_plus_minus_ten_percent():
    assert G.instance_length(0.0, 5000) == 4500
    assert G.instance_length(0.5, 5000) == 5000
    assert G.instance_length(1.0, 5000) == 5500


@pytest.mark.parametrize("bad", [np.full(G.GENES, 1.5), np.full(G.GENES, np.nan), np.zeros(5)])
def test_invalid_genes_are_refused(bad):
    with pytest.raises(ValueError):
        G.mixture(bad, None, 10)


_MIXTURES = """
import hashlib, numpy as np
from raise_plugin.adversary import genes as G
rng = np.random.default_rng(0)
p_bar = np.full(60, 1 / 60)
print(hashlib.sha256(b"".join(G.mixture(rng.random(G.GENES), p_bar, 60).tobytes() for _ in range(300))).hexdigest())
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="OpenBLAS names these kernels on x86-64 only")
def test_the_mixture_is_the_same_whichever_blas_kernel_the_cpu_picks():
    # OpenBLAS picks its kernels by CPU; these two order a matrix product's additions
    # differently (w @ rows differs in the last bits), and both run on any x86-64 with AVX2
    digests = set()
    for kernel in ("Sandybridge", "Haswell"):
        env = {**os.environ, "OPENBLAS_CORETYPE": kernel}
        done = subprocess.run([sys.executable, "-c", _MIXTURES], env=env, capture_output=True, text=True,
                              check=True, cwd=Path(__file__).resolve().parents[2])
        digests.add(done.stdout.strip())
    assert len(digests) == 1
