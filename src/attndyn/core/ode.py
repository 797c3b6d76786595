"""ODE integration shared by the theories: scipy's adaptive Runge–Kutta on a fixed output grid."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.integrate import solve_ivp


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
    """
    times = np.asarray(times, dtype=np.float64)
    sol = solve_ivp(
        rhs,
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
