"""The rank-one reduced flow of arXiv 2605.01199, Prop. 3.6 (Eq. 18–20).

On the manifold 𝒲 (Eq. 18) W₀ = γα₁ᵀ, W₁ = α₁βᵀ, W_Q = λ_Qα₁α̃ᵀ, W_K = λ_Kα₁α̃ᵀ (α₁, α̃ unit)
the shorthands are M = γβᵀ and Φ = ηγγᵀ, η = λ_Qλ_K, and the gradient flow of Eq. 4 closes on
(γ, β, η) (Eq. 20):

    γ̇ = −(∂L/∂M)β − η(∂L/∂Φ + ∂L/∂Φᵀ)γ,   β̇ = −(∂L/∂M)ᵀγ,   η̇ = −2ηγᵀ(∂L/∂Φ)γ.

Eq. 4 gives λ̇_Q = −λ_Kγᵀ(∂L/∂Φ)γ and λ̇_K = −λ_Qγᵀ(∂L/∂Φ)γ, so λ_Q² − λ_K² is conserved and
η̇ = −(λ_Q² + λ_K²)γᵀ(∂L/∂Φ)γ: Eq. 20's η̇ holds for balanced λ_Q = λ_K (Eq. 19's start), which
this module assumes. ∂L/∂M and ∂L/∂Φ are JAX derivatives of Prop. 2.3's loss as a function of
(M, Φ) (equal to the closed forms of :func:`closed_forms.population_grads`; tested).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.ode import integrate
from attndyn.models.markov.model import shorthand_loss

__all__ = [
    "loss_mphi",
    "shorthand_grads",
    "manifold_params",
    "manifold_coordinates",
    "reduced_rhs",
    "reduced_state",
    "integrate_reduced",
    "integrate_full",
]


loss_mphi = shorthand_loss
"""Prop. 2.3's L as a function of (M, Φ) (:func:`attndyn.models.markov.model.shorthand_loss`)."""

_grads = jax.jit(jax.grad(loss_mphi, argnums=(0, 1)))


def shorthand_grads(M, Phi, pi, P) -> tuple[np.ndarray, np.ndarray]:
    """(∂L/∂M, ∂L/∂Φ) in float64 (JAX autodiff of :func:`loss_mphi`)."""
    with jax.enable_x64(True):
        gm, gp = _grads(*(jnp.asarray(np.asarray(x, np.float64)) for x in (M, Phi, pi, P)))
        return np.asarray(gm), np.asarray(gp)


def manifold_params(
    gamma, beta, lam_q, lam_k, m: int, m_k: int, alpha=None, alpha_t=None
) -> dict[str, np.ndarray]:
    """Eq. 18's point: W₀ = γα₁ᵀ, W₁ = α₁βᵀ, W_Q = λ_Qα₁α̃ᵀ, W_K = λ_Kα₁α̃ᵀ (defaults e₁)."""
    a1 = np.eye(m)[0] if alpha is None else np.asarray(alpha, np.float64)
    at = np.eye(m_k)[0] if alpha_t is None else np.asarray(alpha_t, np.float64)
    qk = np.outer(a1, at)
    return {
        "W0": np.outer(np.asarray(gamma, np.float64), a1),
        "W1": np.outer(a1, np.asarray(beta, np.float64)),
        "WQ": float(lam_q) * qk,
        "WK": float(lam_k) * qk,
    }


def manifold_coordinates(params, alpha, alpha_t) -> dict[str, np.ndarray | float]:
    """(γ, β, λ_Q, λ_K) of ``params`` projected on Eq. 18 with directions α₁, α̃, and the
    Frobenius norm ``off`` of what lies off the manifold (0 on it)."""
    a1, at = np.asarray(alpha, np.float64), np.asarray(alpha_t, np.float64)
    W0, W1, WQ, WK = (np.asarray(params[k], np.float64) for k in ("W0", "W1", "WQ", "WK"))
    gamma, beta = W0 @ a1, W1.T @ a1
    lq, lk = a1 @ WQ @ at, a1 @ WK @ at
    rest = manifold_params(gamma, beta, lq, lk, len(a1), len(at), a1, at)
    off = np.sqrt(
        sum(np.sum((np.asarray(params[k]) - rest[k]) ** 2) for k in ("W0", "W1", "WQ", "WK"))
    )
    return {"gamma": gamma, "beta": beta, "lam_q": lq, "lam_k": lk, "off": float(off)}


def reduced_state(gamma, beta, eta) -> np.ndarray:
    """y = (γ, β, η) as one vector."""
    return np.concatenate([np.asarray(gamma, float), np.asarray(beta, float), [float(eta)]])


def _rhs(y, pi, P):
    d = pi.shape[0]
    gamma, beta, eta = y[:d], y[d : 2 * d], y[2 * d]
    g_m, g_phi = jax.grad(loss_mphi, argnums=(0, 1))(
        jnp.outer(gamma, beta), eta * jnp.outer(gamma, gamma), pi, P
    )
    d_gamma = -g_m @ beta - eta * (g_phi + g_phi.T) @ gamma
    d_beta = -g_m.T @ gamma
    d_eta = -2.0 * eta * (gamma @ g_phi @ gamma)
    return jnp.concatenate([d_gamma, d_beta, d_eta[None]])


_rhs_jit = jax.jit(_rhs)


def reduced_rhs(y: np.ndarray, pi: np.ndarray, P: np.ndarray) -> np.ndarray:
    """Eq. 20's right-hand side at y = (γ, β, η) (float64)."""
    with jax.enable_x64(True):
        args = (jnp.asarray(np.asarray(x, np.float64)) for x in (y, pi, P))
        return np.array(_rhs_jit(*args))


def integrate_reduced(
    y0: np.ndarray, times: np.ndarray, pi: np.ndarray, P: np.ndarray, rtol: float = 1e-10
) -> np.ndarray:
    """Eq. 20 from y0 at t = 0, sampled at ``times`` (shape (2d + 1, len(times))), by scipy's
    DOP853 (:func:`attndyn.core.ode.integrate`)."""
    pi, P = np.asarray(pi, np.float64), np.asarray(P, np.float64)
    return integrate(lambda t, y: reduced_rhs(y, pi, P), y0, times, rtol=rtol)


def integrate_full(
    params0: dict[str, np.ndarray],
    times: np.ndarray,
    pi: np.ndarray,
    P: np.ndarray,
    rtol: float = 1e-10,
    solver: str = "bs3",
) -> dict[str, np.ndarray]:
    """The full gradient flow of Eq. 4 on Prop. 2.3's loss (the simulator's ``optimizer='flow'``
    integrator, :func:`attndyn.core.flow.integrate_flow`, float64, ``solver`` bs3 or ros2 as
    ``markov.simulate`` sets them up) from ``params0``; returns each weight at ``times``, shape
    (len(times), …)."""
    from attndyn.core.flow import integrate_flow
    from attndyn.models.markov.model import gauss_newton, population_loss

    if solver not in ("bs3", "ros2"):
        raise ValueError(f"solver must be 'bs3' or 'ros2' (got {solver!r})")

    with jax.enable_x64(True):
        p0 = {k: jnp.asarray(v, jnp.float64) for k, v in params0.items()}
        state = {"pi": jnp.asarray(pi, jnp.float64), "P": jnp.asarray(P, jnp.float64)}
        result = integrate_flow(
            lambda key: (p0, state),
            jax.grad(lambda p, s: population_loss(p, s["pi"], s["P"])),
            lambda p, s: p,
            np.asarray(times, np.float64),
            np.array([0]),
            rtol=rtol,
            atol=1e-14,
            gauss_newton=gauss_newton() if solver == "ros2" else None,
        )
    return {k: np.asarray(v)[0] for k, v in result.observables.items()}
