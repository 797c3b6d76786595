"""The Laplace gap's next order (src/attndyn/models/langevin/stationary.py,
``laplace_next_order``; docs/langevin.md, "Laplace gap, next order") against exact Gibbs means by
quadrature, and the symmetry generators it uses (model.py, ``orbit_generators``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree
from scipy.integrate import quad

from attndyn.models import langevin as L
from attndyn.models.langevin.model import (
    flat_directions,
    frozen_part,
    orbit_generators,
    potential,
)
from attndyn.models.langevin.stationary import laplace_next_order


def _gibbs_gap(f, weight, s: float, lo: float, hi: float, f_min: float) -> float:
    """E_μf − f* for μ ∝ weight(r)·exp(−2f/s) on [lo, hi], by adaptive quadrature."""
    beta = 2 / s
    z = quad(lambda r: weight(r) * np.exp(-beta * (f(r) - f_min)), lo, hi, limit=400)[0]
    m = quad(lambda r: weight(r) * (f(r) - f_min) * np.exp(-beta * (f(r) - f_min)), lo, hi,
             limit=400)[0]  # fmt: skip
    return m / z


def _slope_at_zero(ratio, s1: float = 1e-3) -> float:
    """c of ratio(s) = 1 + c·s + O(s²), by Richardson extrapolation from s1 and 2·s1."""
    return 2 * (ratio(s1) - 1) / s1 - (ratio(2 * s1) - 1) / (2 * s1)


def test_one_dimensional_coefficient_matches_quadrature():
    # f = θ²/2 + θ³/3 + θ⁴/2: T = 2, Q = 12 at θ* = 0, so b = −Q/8 + 5T²/24 = −2/3
    def f(x):
        t = x[0]
        return t**2 / 2 + t**3 / 3 + t**4 / 2

    got = laplace_next_order(f, np.zeros(1), None, 0)
    scalar = lambda t: t**2 / 2 + t**3 / 3 + t**4 / 2  # noqa: E731
    exact = _slope_at_zero(lambda s: _gibbs_gap(scalar, lambda r: 1.0, s, -3, 3, 0) / (s / 4))
    assert got["b"] == pytest.approx(-2 / 3, rel=1e-10)
    assert got["c"] == pytest.approx(exact, abs=1e-3), (got, exact)


def test_orbit_term_matches_radial_quadrature():
    """A rotation-invariant f on R² with its minimum on the circle |θ| = 1: the orbit is the
    circle, the slice the radius, and μ's radial law carries the orbit's length 2πr."""

    def radial(r):
        return (r**2 - 1) ** 2 + 0.5 * (r**2 - 1) ** 3

    def f(x):
        return radial(jnp.sqrt(jnp.sum(x**2)))

    rotate = jnp.array([[0.0, -1.0], [1.0, 0.0]])
    got = laplace_next_order(f, np.array([0.6, 0.8]), lambda z: (rotate @ z)[:, None], 1)
    exact = _slope_at_zero(lambda s: _gibbs_gap(radial, lambda r: r, s, 0, 1.8, 0) / (s / 4))
    without_orbit = got["c"] - got["orbit"]  # p_eff = 1
    assert got["p_eff"] == 1 and got["f_min"] == pytest.approx(0, abs=1e-12)
    assert got["c"] == pytest.approx(exact, abs=1e-3), (got, exact)
    assert abs(without_orbit - exact) > 0.1  # the orbit's volume term is needed


@pytest.mark.parametrize(
    "fields",
    [
        dict(model="lora", d=4, width=6, rank=3),
        dict(model="attention", d=4, tokens=3, heads=2, d_k=3),
        dict(model="attention", d=4, tokens=3, heads=2, d_k=2, output=True, d_v=2, d_out=2),
    ],
)
def test_generators_leave_f_invariant_and_span_the_orbit(fields):
    c = L.LangevinConfig(**fields, n=8, lam=0.3, dtype="float64")
    with jax.enable_x64(True):
        pot = potential(c)
        frozen = frozen_part(c, pot)
        params = pot.init(jax.random.PRNGKey(3))
        x, unravel = ravel_pytree(params)
        grad = jax.grad(lambda z: pot.F(unravel(z), frozen))(x)
        gens = orbit_generators(c)
        tangents = np.stack([np.asarray(ravel_pytree(g(params))[0]) for g in gens], axis=1)
    assert len(gens) == flat_directions(c)
    np.testing.assert_allclose(np.asarray(grad) @ tangents, 0, atol=1e-10)
    assert np.linalg.matrix_rank(tangents, tol=1e-8) == len(gens)


def test_frozen_pair_is_refused():
    c = L.LangevinConfig(model="attention", d=4, tokens=3, heads=1, d_k=2, train_k=False)
    with pytest.raises(ValueError, match="must be trained"):
        orbit_generators(c)
