"""Roots of small smooth systems f(x) = 0, x ∈ Rⁿ: Newton's method with a central-difference
Jacobian and a backtracking line search on ‖f‖ (Nocedal & Wright, *Numerical Optimization*,
2nd ed., ch. 11). Newton rather than a global solver because the callers
follow one branch of roots from a guess (a fast flow's end point, the last root on a path)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """J_ij = ∂f_i/∂x_j at x by central differences (f(x + h e_j) − f(x − h e_j))/(2h)."""
    x = np.asarray(x, dtype=np.float64)
    columns = []
    for j in range(len(x)):
        e = np.zeros(len(x))
        e[j] = h
        columns.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
    return np.stack(columns, axis=-1)


def newton(
    f: Callable[[np.ndarray], np.ndarray],
    x0: np.ndarray,
    tol: float = 1e-11,
    max_iter: int = 50,
    h: float = 1e-5,
) -> tuple[np.ndarray, np.ndarray]:
    """(x, f(x)) after Newton steps x ← x − λ J(x)⁻¹ f(x) from ``x0``, stopping once
    max|f| < ``tol``, after ``max_iter`` steps, or when no λ ∈ {1, ½, …, > 10⁻³} lowers ‖f‖
    (round-off level). The caller checks the returned residual."""
    x = np.array(x0, dtype=np.float64)
    fx = np.asarray(f(x), dtype=np.float64)
    for _ in range(max_iter):
        if np.max(np.abs(fx)) < tol:
            break
        step = np.linalg.solve(jacobian(f, x, h), -fx)
        lam = 1.0
        while lam > 1e-3:
            trial = x + lam * step
            f_trial = np.asarray(f(trial), dtype=np.float64)
            if np.linalg.norm(f_trial) < np.linalg.norm(fx):
                break
            lam /= 2
        else:
            break
        x, fx = trial, f_trial
    return x, fx
