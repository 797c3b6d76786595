"""The adaptive gradient-flow integrator (attndyn.core.flow) on exactly solvable flows."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm

from attndyn.core.flow import integrate_flow


def test_quadratic_flow_matches_the_matrix_exponential():
    """L = ½ yᵀAy: y(t) = e^{−At} y₀ to the requested tolerance (rtol 1e-8)."""
    with jax.enable_x64():
        A = np.array([[2.0, 0.5, 0.0], [0.5, 1.0, 0.2], [0.0, 0.2, 0.1]])
        y0 = np.array([1.0, -2.0, 0.5])
        times = np.array([0.0, 0.5, 2.0, 10.0])
        res = integrate_flow(
            lambda key: ({"y": jnp.asarray(y0)}, {"A": jnp.asarray(A)}),
            lambda p, s: {"y": s["A"] @ p["y"]},
            lambda p, s: {f"y{i}": p["y"][i] for i in range(3)},
            times,
            np.array([0, 1]),
            rtol=1e-8,
        )
        for r, t in enumerate(times):
            want = expm(-A * t) @ y0
            got = np.array([res.observables[f"y{i}"][0, r] for i in range(3)])
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)
        assert (res.diverged_step == -1).all()


def test_blow_up_is_marked_and_later_records_are_nan():
    """L = −y⁴/4: ẏ = y³ blows up at t = 1/(2y₀²) = 0.5 for y₀ = 1."""
    with jax.enable_x64():
        res = integrate_flow(
            lambda key: ({"y": jnp.ones(())}, None),
            lambda p, s: {"y": -(p["y"] ** 3)},
            lambda p, s: {"y": p["y"]},
            np.array([0.0, 0.25, 1.0, 2.0]),
            np.array([0]),
        )
        y = res.observables["y"][0]
        assert y[1] == pytest.approx(1 / np.sqrt(1 - 2 * 0.25), rel=1e-4)
        assert res.diverged_step[0] == 2
        assert np.isnan(y[2:]).all()
