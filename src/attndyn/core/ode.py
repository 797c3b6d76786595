"""ODE integration shared by the theories: every theory calls scipy's ``solve_ivp`` through
:func:`solve` (the result as scipy returns it; a failed solve raises :class:`ODEError` unless the
caller opts out), and :func:`integrate` gives values on a fixed output grid, NaN past an early
stop (scipy docs, ``scipy.integrate.solve_ivp``)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np
from scipy.integrate import solve_ivp

from attndyn.core import progress
from attndyn.errors import AttndynError, one_line

EventT = TypeVar("EventT", bound=Callable[..., Any])

REPORT_S = 0.1
"""At most one progress report per this many seconds (the right-hand side is called often)."""


class ODEError(AttndynError, RuntimeError):
    """scipy's solver failed (status −1: a step size underflow, a right-hand side that is not
    finite, …); the message names the integration, the time reached and scipy's reason."""


def solve(
    rhs: Callable[[float, np.ndarray], np.ndarray],
    t_span: tuple[float, float],
    y0: np.ndarray,
    *,
    method: str,
    rtol: float,
    atol: float,
    t_eval: np.ndarray | None = None,
    events=None,
    dense_output: bool = False,
    jac=None,
    allow_failure: bool = False,
    report: bool = False,
    what: str = "ODE",
):
    """``scipy.integrate.solve_ivp(rhs, t_span, y0, ...)`` with these settings, unchanged.

    A failed solve (status −1) raises :class:`ODEError` naming ``what``; with
    ``allow_failure=True`` the partial result comes back instead (``sol.success`` is False and
    ``sol.t``, ``sol.y`` end where the solver stopped) for a caller that handles an early stop
    itself. A terminal event (status 1) is not a failure. ``report=True`` sends the time reached
    to the progress listener (:mod:`attndyn.core.progress`). ``jac`` is passed only when given
    (the explicit Runge–Kutta methods warn about it).
    """
    options = {} if jac is None else {"jac": jac}
    t_end = float(t_span[1])
    sol = solve_ivp(
        _reporting(rhs, t_end) if report and progress.active() else rhs,
        t_span,
        y0,
        method=method,
        t_eval=t_eval,
        dense_output=dense_output,
        events=events,
        rtol=rtol,
        atol=atol,
        **options,
    )
    if sol.status == -1 and not allow_failure:
        reached = float(sol.t[-1]) if sol.t.size else float(t_span[0])
        raise ODEError(
            one_line(f"{what} integration failed at t = {reached:g} of {t_end:g}: {sol.message}")
        )
    return sol


def as_event(fn: EventT, *, terminal: bool | None = None, direction: float | None = None) -> EventT:
    """``fn`` made a ``solve_ivp`` event: scipy reads ``terminal`` (stop at its first zero) and
    ``direction`` (count only zeros crossed that way) off the function (scipy docs,
    ``scipy.integrate.solve_ivp``, ``events``); an attribute left None is not set."""
    marked: Any = fn  # a function's attributes are untyped
    if terminal is not None:
        marked.terminal = terminal
    if direction is not None:
        marked.direction = direction
    return fn


def integrate(
    rhs: Callable[[float, np.ndarray], np.ndarray],
    y0: np.ndarray | Sequence[float],
    times: np.ndarray,
    *,
    rtol: float = 1e-8,
    atol_factor: float = 1e-2,
    method: str = "DOP853",
    events=None,
) -> np.ndarray:
    """y(t) at ``times`` (shape (len(y0), len(times))) from t = 0, absolute tolerance
    ``atol_factor·rtol``.

    Where the solver stops early (a terminal event, a blow-up), the remaining columns are NaN.
    The time reached is reported to the progress listener (:mod:`attndyn.core.progress`).
    """
    times = np.asarray(times, dtype=np.float64)
    sol = solve(
        rhs,
        (0.0, float(times[-1])),
        np.asarray(y0, dtype=np.float64),
        method=method,
        t_eval=times,
        rtol=rtol,
        atol=rtol * atol_factor,
        events=events,
        allow_failure=True,
        report=True,
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
