"""ODE integration shared by the theories: scipy's adaptive Runge–Kutta on a fixed output grid."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from scipy.integrate import solve_ivp

from attndyn.core import progress

REPORT_S = 0.1
"""At most one progress report per this many seconds (the right-hand side is called often)."""


def integrate(
    rhs: Callable[[float, np.ndarray], np.ndarray],
    y0: np.ndarray,
    times: np.ndarray,
    *,
    rtol: float = 1e-8,
    atol_factor: float = 1e-2,
    method: str = "DOP853",
    events=None,
) -> np.ndarray:
    """y(t) at ``times`` (shape (len(y0), len(times))), absolute tolerance ``atol_factor·rtol``.

    Where the solver stops early (a terminal event, a blow-up), the remaining columns are NaN.
    The time reached is reported to the progress listener (:mod:`attndyn.core.progress`).
    """
    times = np.asarray(times, dtype=np.float64)
    sol = solve_ivp(
        _reporting(rhs, float(times[-1])) if progress.active() else rhs,
        (0.0, float(times[-1])),
        np.asarray(y0, dtype=np.float64),
        method=method,
        t_eval=times,
        rtol=rtol,
        atol=rtol * atol_factor,
        events=events,
    )
    out = np.full((len(y0), len(times)), np.nan)
    out[:, : sol.y.shape[1]] = sol.y
    return out


def _reporting(rhs: Callable, t_end: float) -> Callable:
    """``rhs`` that reports the time it is called at, at most every ``REPORT_S`` seconds."""
    last = [0.0]

    def reported(t, y):
        now = time.perf_counter()
        if now - last[0] >= REPORT_S:
            last[0] = now
            progress.report_steps(t, t_end, "time")
        return rhs(t, y)

    return reported
