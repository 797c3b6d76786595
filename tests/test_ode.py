"""attndyn.core.ode: the one scipy ODE wrapper, against exactly solvable equations (a linear
system, y' = y² with its blow-up at t = 1/y₀, a decay stopped by an event) and against a direct
``solve_ivp`` call with the same settings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm

from attndyn.core import ode
from attndyn.core.progress import listening
from attndyn.errors import AttndynError

# y' = A y: a damped rotation, y(t) = exp(At) y₀
A = np.array([[-0.5, 2.0], [-2.0, -0.5]])
Y0 = np.array([1.0, -0.5])
TIMES = np.linspace(0.0, 3.0, 7)


def linear(t, y):
    return A @ y


@pytest.mark.parametrize("method", ["DOP853", "RK45", "LSODA", "BDF"])
def test_integrate_solves_a_linear_system(method):
    y = ode.integrate(linear, Y0, TIMES, rtol=1e-10, atol_factor=1e-2, method=method)
    exact = np.stack([expm(A * t) @ Y0 for t in TIMES], axis=1)
    assert y.shape == (2, len(TIMES))
    np.testing.assert_allclose(y, exact, rtol=0, atol=1e-8)


@pytest.mark.parametrize(
    "settings",
    [
        dict(method="DOP853", rtol=1e-9, atol=1e-12, t_eval=TIMES),
        dict(method="RK45", rtol=1e-7, atol=1e-10, t_eval=TIMES, dense_output=True),
        dict(method="BDF", rtol=1e-9, atol=1e-14, t_eval=TIMES[1:], jac=A),
    ],
)
def test_solve_is_solve_ivp_with_the_same_settings(settings):
    """The wrapper changes no number: the same steps, the same values, bit for bit."""
    ours = ode.solve(linear, (0.0, 3.0), Y0, **settings)
    theirs = solve_ivp(linear, (0.0, 3.0), Y0, **settings)
    assert ours.status == theirs.status == 0
    assert np.array_equal(ours.t, theirs.t) and np.array_equal(ours.y, theirs.y)
    assert ours.nfev == theirs.nfev
    if settings.get("dense_output"):
        assert np.array_equal(ours.sol(1.234), theirs.sol(1.234))


def blow_up(t, y):
    """y' = y², y(0) = 1: y = 1/(1 − t), infinite at t = 1."""
    return y * y


def test_a_failed_solve_raises_one_line_naming_the_integration():
    with pytest.raises(ode.ODEError, match=r"^test flow integration failed at t = 1 of 2: ") as e:
        ode.solve(blow_up, (0.0, 2.0), [1.0], method="DOP853", rtol=1e-8, atol=1e-10,
                  what="test flow")  # fmt: skip
    assert "\n" not in str(e.value)
    assert isinstance(e.value, AttndynError) and isinstance(e.value, RuntimeError)


def test_a_caller_may_take_the_partial_result_of_a_failed_solve():
    sol = ode.solve(blow_up, (0.0, 2.0), [1.0], method="DOP853", rtol=1e-8, atol=1e-10,
                    allow_failure=True)  # fmt: skip
    assert sol.status == -1 and not sol.success
    assert sol.t[-1] == pytest.approx(1.0, abs=1e-6)
    ok = sol.t < 0.99
    np.testing.assert_allclose(sol.y[0, ok], 1.0 / (1.0 - sol.t[ok]), rtol=1e-6)


def test_integrate_fills_nan_past_a_blow_up():
    times = np.array([0.0, 0.5, 0.9, 1.5, 2.0])
    y = ode.integrate(blow_up, [1.0], times, rtol=1e-10)
    np.testing.assert_allclose(y[0, :3], 1.0 / (1.0 - times[:3]), rtol=1e-8)
    assert np.all(np.isnan(y[0, 3:]))


def test_a_terminal_event_is_not_a_failure():
    """y' = −y stopped where y = ½, at t = ln 2."""

    def half(t, y):
        return y[0] - 0.5

    half.terminal = True
    sol = ode.solve(lambda t, y: -y, (0.0, 5.0), [1.0], method="DOP853", rtol=1e-10,
                    atol=1e-12, events=half)  # fmt: skip
    assert sol.status == 1
    assert sol.t_events[0][0] == pytest.approx(np.log(2.0), rel=1e-10)
    y = ode.integrate(lambda t, y: -y, [1.0], TIMES, rtol=1e-10, events=half)
    reached = TIMES <= np.log(2.0)
    np.testing.assert_allclose(y[0, reached], np.exp(-TIMES[reached]), rtol=1e-9)
    assert np.all(np.isnan(y[0, ~reached]))


def test_no_jacobian_means_no_warning_from_an_explicit_method():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ode.solve(linear, (0.0, 1.0), Y0, method="DOP853", rtol=1e-8, atol=1e-10)


class Times:
    """A progress listener that keeps the times it is told."""

    def __init__(self):
        self.seen: list[tuple[float, float, str]] = []

    def steps(self, done, total, unit):
        self.seen.append((done, total, unit))

    def run_started(self, label):
        pass

    def run_finished(self, reused):
        pass


def test_solve_reports_progress_only_when_asked(monkeypatch):
    monkeypatch.setattr(ode, "REPORT_S", 0.0)
    quiet, told = Times(), Times()
    settings = dict(method="DOP853", rtol=1e-8, atol=1e-10)
    with listening(quiet):
        ode.solve(linear, (0.0, 3.0), Y0, **settings)
    with listening(told):
        ode.solve(linear, (0.0, 3.0), Y0, report=True, **settings)
    assert quiet.seen == []
    assert len(told.seen) > 3 and {s[1:] for s in told.seen} == {(3.0, "time")}
    assert max(s[0] for s in told.seen) <= 3.0
