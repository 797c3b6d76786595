"""The fast phase of untied AIM (arXiv 2609.03858 §4.1, Eqs. 28–29, Assumption 5; App. F
Eqs. 566–573): the mean m_k = Tr M_k/√d relaxes on the fast time t = nα_d,

    dm_k/dt = −D_k(0) ∂Φ/∂m_k(m, q(0))                                         (Eq. 28)

with the moments frozen, to the critical point m*(q) of Φ (Eq. 29), which the slow phase then
follows. Notation: :mod:`attndyn.models.aim.theory.untied`."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import jax
import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from attndyn.core.ode import as_event, solve
from attndyn.core.roots import jacobian, newton
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.model import ACTIVATIONS
from attndyn.models.aim.theory.initial import initial_matrices
from attndyn.models.aim.theory.potential import Potential, potential_for
from attndyn.models.aim.theory.untied.moments import factors, order_parameters


@dataclass
class MeanDynamics:
    """The mean variables: fast flow (Eq. 28), the critical point m*(q) (Eq. 29) and its
    derivative along a change of q (implicit function theorem).

    ``m_fixed`` holds the full mean vector (teachers' entries are never changed); only the
    ``trainable`` (1-based) entries move. ``last`` is the warm start of the Newton solves.
    """

    potential: Potential
    trainable: tuple[int, ...]
    m_fixed: np.ndarray
    last: np.ndarray | None = None
    _warned: bool = field(default=False, repr=False)

    @property
    def idx(self) -> np.ndarray:
        return np.array([k - 1 for k in self.trainable])

    def full(self, m_tr: np.ndarray) -> np.ndarray:
        m = np.array(self.m_fixed, dtype=np.float64)
        m[self.idx] = m_tr
        return m

    def grad_m(self, m_tr, q1, q2) -> np.ndarray:
        """∂Φ/∂m_k for the trainable k (Eq. 570)."""
        return self.potential.gradients(self.full(m_tr), q1, q2)[0][self.idx]

    def hessian_m(self, m_tr, q1, q2, h: float = 1e-5) -> np.ndarray:
        """∇²_{m_𝒦}Φ by central differences of the gradient."""
        return jacobian(lambda m: self.grad_m(m, q1, q2), m_tr, h)

    def fast_flow(self, m0_tr, q1, q2, D_tr, times, extra=None) -> np.ndarray:
        """Eq. 28: dm_k/dt = −D_k ∂Φ/∂m_k(m, q(0)) at fast times ``times``; (len(times), |𝒦|).
        ``extra(m)`` adds a drift −extra(m) (the finite-d term ψ/√d of Eq. 573)."""
        times = np.asarray(times, np.float64)
        sol = solve(
            lambda t, m: self._fast_rhs(m, q1, q2, D_tr, extra),
            (0.0, max(float(times[-1]), 1e-12)),
            np.asarray(m0_tr, np.float64),
            method="DOP853",
            t_eval=times,
            rtol=1e-10,
            atol=1e-12,
            allow_failure=True,  # rows past an early stop are NaN
        )
        out = np.full((len(times), len(self.idx)), np.nan)
        out[: sol.y.shape[1]] = sol.y.T
        return out

    def _fast_rhs(self, m, q1, q2, D_tr, extra):
        out = -D_tr * self.grad_m(m, q1, q2)
        return out if extra is None else out - extra(m)

    def fast_limit(self, m0_tr, q1, q2, D_tr, extra=None, t_max: float = 1e4) -> np.ndarray:
        """The fast flow's end point: integrate Eq. 28 until its drift vanishes, then polish
        with Newton (without ``extra`` this is m*(q(0))). This selects the branch when
        ∇_m Φ = 0 has several roots."""
        rate = float(np.min(D_tr))

        def event(t, m):
            return np.max(np.abs(self._fast_rhs(m, q1, q2, D_tr, extra))) - 1e-9

        as_event(event, terminal=True)
        sol = solve(
            lambda t, m: self._fast_rhs(m, q1, q2, D_tr, extra),
            (0.0, t_max / rate),
            np.asarray(m0_tr, np.float64),
            method="LSODA",
            events=event,
            rtol=1e-10,
            atol=1e-12,
            allow_failure=True,  # Newton polishes from wherever the flow got to
        )
        if extra is None:
            return self.critical_point(q1, q2, sol.y[:, -1])
        m, _ = newton(lambda m: self._fast_rhs(m, q1, q2, D_tr, extra), sol.y[:, -1], tol=1e-12)
        return m

    def critical_point(self, q1, q2, guess=None, tol: float = 1e-11) -> np.ndarray:
        """m*(q): the critical point ∇_{m_𝒦}Φ = 0 nearest ``guess`` (default: the last one
        found), by Newton with backtracking on |∇Φ| (:func:`attndyn.core.roots.newton`)."""
        guess = self.last if guess is None else guess
        m, g = newton(lambda m: self.grad_m(m, q1, q2), guess, tol=tol)
        if not self._warned and np.max(np.abs(g)) > 1e-8:
            warnings.warn(f"m*(q): Newton stopped at |∇Φ| = {np.max(np.abs(g)):.2e}", stacklevel=2)
            self._warned = True
        self.last = m
        return m

    def slaved_rate(self, m_tr, q1, q2, dq1, dq2) -> np.ndarray:
        """dm*/dτ = −(∇²_m Φ)⁻¹ ∂_τ ∇_m Φ along dq/dτ = (dq1, dq2) (implicit function theorem)."""
        scale = max(float(np.max(np.abs(dq1))), float(np.max(np.abs(dq2))), 1e-300)
        eps = 1e-5 / scale
        dg = (
            self.grad_m(m_tr, q1 + eps * dq1, q2 + eps * dq2)
            - self.grad_m(m_tr, q1 - eps * dq1, q2 - eps * dq2)
        ) / (2 * eps)
        return -np.linalg.solve(self.hessian_m(m_tr, q1, q2), dg)


def boost(U: list, V: list, k: int, s: float) -> tuple[list, list]:
    """The fast phase on the factors of index k (0-based): the bias part of the SGD drift,
    dU_k = −(b_k/√d) V_k dt, dV_k = −(b_k/√d) U_k dt (Eqs. 566–567 at leading order on the fast
    scale), integrated exactly: U cosh s − V sinh s, V cosh s − U sinh s with s = ∫ b dt/√d."""
    U, V = list(U), list(V)
    c, sh = np.cosh(s), np.sinh(s)
    U[k], V[k] = U[k] * c - V[k] * sh, V[k] * c - U[k] * sh
    return U, V


def boost_for_mean(U: list, V: list, k: int, target: float) -> float:
    """s with Tr(U_k(s) V_k(s)ᵀ)/√d = target. Closed form: m(s) = m cosh 2s − a sinh 2s with
    a = √d (t^A + t^B)/2 = −√(a² − m²) sinh(2s − x₀), tanh x₀ = m/a (needs a > |m|)."""
    d = U[k].shape[0]
    m = float(np.sum(U[k] * V[k])) / np.sqrt(d)
    a = 0.5 * float(np.sum(U[k] ** 2) + np.sum(V[k] ** 2)) / np.sqrt(d)
    r = np.sqrt(a * a - m * m)
    return 0.5 * (np.arctanh(m / a) - np.arcsinh(target / r))


def fast_image(
    U0: list, V0: list, means: MeanDynamics, iters: int = 8
) -> tuple[list, list, np.ndarray]:
    """Factors at the end of the fast phase at finite d: boosts s_k with m_k = m*_k(q) at the
    boosted state (q moves by O(s²) = O(1/d) under the boost). Returns (U, V, s)."""
    s = np.zeros(len(means.idx))
    U, V = U0, V0
    for _ in range(iters):
        op = order_parameters(U, V)
        target = means.critical_point(op["q1"], op["q2"])
        s_new = np.array(
            [boost_for_mean(U0, V0, k, t) for k, t in zip(means.idx, target, strict=True)]
        )
        U, V = U0, V0
        for k, sk in zip(means.idx, s_new, strict=True):
            U, V = boost(U, V, k, sk)
        if np.max(np.abs(s_new - s)) < 1e-13:
            break
        s = s_new
    return U, V, s_new


def fast_state(config: AIMConfig, seed: int = 0) -> dict[str, float]:
    """The fast phase of one seed's initial state, K = 2 (student 1, teacher 2): m₁(0), the end
    point m* of Eq. 28, the teacher's m₂, and the recovery signal E σ'(Z₁)·E σ*'(Z₂) of Eq. 49
    with Z_k ~ N(m_k, q⁽¹⁾_kk + q⁽²⁾_kk), at the initial mean (``signal_init``) and at m*
    (``signal_fast``). Expectations by probabilists' Gauss–Hermite quadrature (40 nodes); σ' by
    automatic differentiation of the simulator's activation."""
    op = order_parameters(*factors(*initial_matrices(config, seed)))
    means = MeanDynamics(potential_for(config), (1,), op["m"])
    D = op["tA"][:1] + op["tB"][:1]
    m_star = float(means.fast_limit(op["m"][:1], op["q1"], op["q2"], D)[0])
    nodes, weights = hermegauss(40)
    weights = weights / weights.sum()
    with jax.enable_x64(True):
        dsigma = jax.vmap(jax.grad(ACTIVATIONS[config.activation]))

        def mean_slope(mean, var):
            return float(np.sum(weights * np.asarray(dsigma(mean + np.sqrt(var) * nodes))))

        v1 = op["q1"][0, 0] + op["q2"][0, 0]
        v2 = op["q1"][1, 1] + op["q2"][1, 1]
        teacher = mean_slope(op["m"][1], v2)
        return {
            "m0": float(op["m"][0]),
            "m_star": m_star,
            "m_teacher": float(op["m"][1]),
            "signal_init": mean_slope(op["m"][0], v1) * teacher,
            "signal_fast": mean_slope(m_star, v1) * teacher,
        }
