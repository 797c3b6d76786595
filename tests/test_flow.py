"""The adaptive gradient-flow integrator (attndyn.core.flow) on exactly solvable flows."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import quadratic_gauss_newton
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


def test_float32_record_times_that_round_down_are_reached():
    """float32(0.35) < 0.35: the driver must stop at the rounded time, not wait for ever for a
    seed time that cannot pass it (the markov flow at lr = 0.05 once hung here)."""
    assert float(np.float32(0.35)) < 0.35
    times = np.array([0.0, 0.05, 0.35])
    res = integrate_flow(
        lambda key: ({"y": jnp.ones((), jnp.float32)}, None),
        lambda p, s: {"y": p["y"]},
        lambda p, s: {"y": p["y"]},
        times,
        np.array([0, 1]),
        rtol=1e-5,
    )
    np.testing.assert_allclose(res.observables["y"], np.exp(-times)[None].repeat(2, 0), rtol=1e-4)


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


def test_ros2_takes_accuracy_sized_steps_on_a_stiff_gauss_newton_flow():
    """L = ½‖Cy‖² with eigenvalues of CᵀC from 10⁻² to 10⁴: ROS2 with the (here exact)
    Gauss–Newton Jacobian matches e^{−CᵀCt}y₀ (rtol 1e-4, checked to 1e-3) in fewer steps than the
    explicit pair, whose step is held at h ≲ 2.5·10⁻⁴ by stability (≥ 10⁴ steps to t = 5)."""
    with jax.enable_x64():
        rng = np.random.default_rng(0)
        q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
        C = np.diag([100.0, 10.0, 1.0, 0.1]) @ q
        y0 = rng.normal(size=4)
        times = np.array([0.0, 0.1, 1.0, 5.0])
        init = lambda key: ({"y": jnp.asarray(y0)}, {"C": jnp.asarray(C)})  # noqa: E731
        grad = lambda p, s: {"y": s["C"].T @ (s["C"] @ p["y"])}  # noqa: E731
        obs = lambda p, s: {f"y{i}": p["y"][i] for i in range(4)}  # noqa: E731
        gn = quadratic_gauss_newton()
        stiff = integrate_flow(init, grad, obs, times, np.array([0]), rtol=1e-4, gauss_newton=gn)
        explicit = integrate_flow(init, grad, obs, times, np.array([0]), rtol=1e-4)
        for r, t in enumerate(times):
            want = expm(-C.T @ C * t) @ y0
            got = np.array([stiff.observables[f"y{i}"][0, r] for i in range(4)])
            np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-5)
        assert explicit.steps[-1] >= 10_000
        assert stiff.steps[-1] < explicit.steps[-1] / 10
