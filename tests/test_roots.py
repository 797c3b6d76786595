"""attndyn.core.roots: Newton with a central-difference Jacobian and backtracking, against
closed-form roots and Jacobians."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn.core.roots import jacobian, newton


def test_jacobian_matches_analytic():
    def f(x):
        return np.array([x[0] ** 2 * x[1], np.sin(x[0]) + x[1] ** 3])

    x = np.array([0.7, -1.3])
    exact = np.array([[2 * x[0] * x[1], x[0] ** 2], [np.cos(x[0]), 3 * x[1] ** 2]])
    np.testing.assert_allclose(jacobian(f, x), exact, rtol=1e-9)


def test_newton_finds_the_root_of_a_circle_and_a_line():
    """x² + y² = 4, x = y: from (1, 0.5) the root is (√2, √2)."""
    x, fx = newton(lambda v: np.array([v[0] ** 2 + v[1] ** 2 - 4.0, v[0] - v[1]]), [1.0, 0.5])
    np.testing.assert_allclose(x, [np.sqrt(2.0), np.sqrt(2.0)], rtol=1e-12)
    assert np.max(np.abs(fx)) < 1e-11


def test_backtracking_rescues_newton_on_arctan():
    """Plain Newton on arctan x diverges from |x0| > 1.39 (its steps overshoot and grow); the
    backtracking on |f| converges to the root 0."""
    x0 = 2.0
    plain = x0
    for _ in range(5):
        plain = plain - np.arctan(plain) * (1 + plain**2)
    assert abs(plain) > 1e3  # the undamped iteration runs away
    x, fx = newton(lambda v: np.arctan(v), [x0])
    assert x[0] == pytest.approx(0.0, abs=1e-11)
    assert abs(fx[0]) < 1e-11


def test_newton_returns_the_residual_where_there_is_no_root():
    """x² + 1 has no real root: the iteration stops (no step lowers |f|) and says how far off."""
    x, fx = newton(lambda v: v**2 + 1.0, [0.5], max_iter=100)
    assert fx[0] >= 1.0
    assert np.isfinite(x[0])
