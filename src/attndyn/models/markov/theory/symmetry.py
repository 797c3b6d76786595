"""Thm 3.9 of arXiv 2605.01199: the degenerate critical point (Prop. 3.8) and its Θ(δ) transverse
unstable eigenvalue for d = 3, π̃ = (π₁, (1 − π₁)/2 + δ, (1 − π₁)/2 − δ).

Method (ours, the paper's Eq. 22–23 set-up made numerical):
1. at δ = 0 the rank-one flow (Eq. 20) from θ_c¹ (Eq. 19, small η) stalls at a critical point
   θ₀ of 𝒲 where ∂L/∂M = ∂L/∂Φ = 0 (Prop. 3.8); :func:`degenerate_point` integrates to it;
2. with m = m_k = 2, α₁ = e₁, α̃ = e₁, the coordinates off 𝒲 (W₀'s second column, W₁'s second
   row, everything of W_Q, W_K but the (1, 1) entries) are odd under a reflection of the second
   axis of ℝ^m or ℝ^{m_k}, which maps 𝒲 to itself and leaves L invariant: the Hessian does not
   couple them to 𝒲's coordinates, and its block on them is the transverse Hessian. At θ₀ and
   δ = 0 that block vanishes (the transverse degeneracy of Prop. 3.8);
3. :func:`transverse_rate` returns the top eigenvalue of −∇²L restricted to the transverse block
   at δ, either at θ₀ itself (``at='frozen'``: J₀ + δ∂_δJ of Eq. 22 to first order) or at the
   critical point θ(δ) of 𝒲 that continues θ₀ (``at='range'``: Eq. 23's range equation solved
   by Newton on the range of the δ = 0 Hessian on 𝒲, kernel coordinates held at 0; the kernel
   equation then holds to rounding, ``kernel_residual``, because critical points of 𝒲 are not
   isolated — a one-parameter family of (γ, η) gives the same sums 𝔸_iγ — and persist at δ > 0).
Both are linear in δ as δ → 0 (with different slopes, since θ(δ) − θ₀ = O(δ)); the
critical-point one bends once δ is comparable with the small nonzero eigenvalues of the Hessian
on 𝒲. Whether θ₀ is neutrally stable on 𝒲 (Prop. 3.8) depends on (π₁, λ): at (0.6, 0.5) it is,
at (0.7, 0.8) the symmetric flow's end point has an O(1) unstable direction on 𝒲 breaking
γ₂ = γ₃ (:func:`degenerate_point` keeps the symmetry exactly). Measured numbers: docs/markov.md.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from attndyn.core.ode import integrate
from attndyn.models.markov.data import conditional_entropy, lazy_chain, two_group_pi
from attndyn.models.markov.model import population_loss
from attndyn.models.markov.theory import closed_forms, reduced

__all__ = [
    "perturbed_pi",
    "degenerate_point",
    "transverse_rate",
    "transverse_rates",
    "stall_hessian",
    "stall_kick",
]


def perturbed_pi(pi1: float, delta: float) -> np.ndarray:
    """Thm 3.9's π̃ = (π₁, (1 − π₁)/2 + δ, (1 − π₁)/2 − δ) (two_group_pi, d = 3, linear c)."""
    return two_group_pi(3, pi1, delta, "linear")


def degenerate_point(
    pi1: float, lam: float, eta0: float = 1e-6, t_end: float = 2000.0
) -> np.ndarray:
    """θ₀ = (γ, β, η) of Prop. 3.8 at δ = 0 (d = 3): Eq. 20 from γ = κ₁π/‖π‖,
    β = κ₁(π − 𝟙/3)/‖π − 𝟙/3‖, η = ``eta0`` (Eq. 19), integrated to ``t_end``."""
    pi = perturbed_pi(pi1, 0.0)
    k = closed_forms.kappa1(pi)
    u = pi - 1.0 / 3.0
    y0 = reduced.reduced_state(k * pi / np.linalg.norm(pi), k * u / np.linalg.norm(u), eta0)
    P = lazy_chain(pi, lam)

    def rhs(t, y):  # Prop. 3.6 keeps γ₂ = γ₃, β₂ = β₃; average out rounding that could grow
        f = reduced.reduced_rhs(y, pi, P)
        f[1] = f[2] = 0.5 * (f[1] + f[2])
        f[4] = f[5] = 0.5 * (f[4] + f[5])
        return f

    return integrate(rhs, y0, np.array([0.0, t_end]), rtol=1e-10)[:, -1]


def _coords(y: np.ndarray) -> np.ndarray:
    """(γ, β, λ_Q, λ_K) with λ_Q = λ_K = √η."""
    lq = np.sqrt(y[6])
    return np.concatenate([y[:6], [lq, lq]])


def _params(q):
    """m = m_k = 2 weights of 𝒲's coordinates q = (γ, β, λ_Q, λ_K) (α₁ = α̃ = e₁)."""
    e = jnp.eye(2)[0]
    qk = jnp.outer(e, e)
    return {
        "W0": jnp.outer(q[:3], e),
        "W1": jnp.outer(e, q[3:6]),
        "WQ": q[6] * qk,
        "WK": q[7] * qk,
    }


_MASK, _ = ravel_pytree(
    {
        "W0": jnp.asarray([[1.0, 0.0]] * 3),
        "W1": jnp.asarray([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]),
        "WQ": jnp.asarray([[1.0, 0.0], [0.0, 0.0]]),
        "WK": jnp.asarray([[1.0, 0.0], [0.0, 0.0]]),
    }
)


def _hessian_blocks(q: np.ndarray, pi: np.ndarray, P: np.ndarray) -> dict[str, float]:
    """Top eigenvalues of −∇²L on the transverse block and on 𝒲's block, and the largest
    Hessian entry coupling the two."""
    flat, unravel = ravel_pytree(_params(jnp.asarray(q)))
    H = jax.hessian(lambda f: population_loss(unravel(f), jnp.asarray(pi), jnp.asarray(P)))(flat)
    H = np.asarray(H)
    on = np.asarray(_MASK) > 0
    return {
        "rate": float(np.linalg.eigvalsh(-H[np.ix_(~on, ~on)])[-1]),
        "tangential": float(np.linalg.eigvalsh(-H[np.ix_(on, on)])[-1]),
        "coupling": float(np.max(np.abs(H[np.ix_(on, ~on)]))),
    }


def _range_solve(q0: np.ndarray, pi: np.ndarray, P: np.ndarray, pi0, P0, iters: int = 30):
    """Lyapunov–Schmidt's range equation (Eq. 23): q = q₀ + Q_R y with Q_R the range of the
    δ = 0 Hessian on 𝒲 at q₀ (eigenvalues above 1e-8 of the largest), and Q_Rᵀ∇L(q, δ) = 0
    solved by Newton in y; the kernel coordinates x stay 0. Returns (q, max |Q_Kᵀ∇L|)."""
    loss = lambda x, p, t: population_loss(_params(x), p, t)  # noqa: E731
    grad, hess = jax.jit(jax.grad(loss)), jax.jit(jax.hessian(loss))
    h0 = np.asarray(hess(jnp.asarray(q0), jnp.asarray(pi0), jnp.asarray(P0)))
    w, v = np.linalg.eigh(h0)
    keep = np.abs(w) > 1e-8 * np.max(np.abs(w))
    QR, QK = v[:, keep], v[:, ~keep]
    args = (jnp.asarray(pi), jnp.asarray(P))
    q = np.array(q0, dtype=np.float64)
    for _ in range(iters):
        g = QR.T @ np.asarray(grad(jnp.asarray(q), *args))
        if np.max(np.abs(g)) < 1e-15:
            break
        h = QR.T @ np.asarray(hess(jnp.asarray(q), *args)) @ QR
        q = q - QR @ np.linalg.lstsq(h, g, rcond=None)[0]
    return q, float(np.max(np.abs(QK.T @ np.asarray(grad(jnp.asarray(q), *args))), initial=0.0))


def transverse_rate(
    pi1: float, lam: float, delta: float, at: str = "range", theta0: np.ndarray | None = None
) -> dict[str, float]:
    """Thm 3.9's transverse unstable eigenvalue at δ (see the module docstring for ``at``).

    Returns ``rate`` (top eigenvalue of −∇²L_⊥), ``tangential`` (top eigenvalue of −∇²L on 𝒲;
    Thm 3.9: positive ones are O(δ²)), ``coupling`` (largest Hessian entry between 𝒲 and the
    transverse block: 0 by the reflection symmetry), ``grad`` (max |∇L| at the point used: 0 at
    a critical point, O(δ) when frozen), ``sigma_gm`` (top singular value of ∂L/∂M: Lemma D.17's
    mechanism, the transverse block being [[0, ∂L/∂M], [∂L/∂Mᵀ, 0]] up to ∂L/∂Φ terms),
    ``grad_phi`` (max |∂L/∂Φ|; Lemma D.17: O(δ²)) and ``kernel_residual`` (``at='range'``)."""
    with jax.enable_x64(True):
        y0 = degenerate_point(pi1, lam) if theta0 is None else np.asarray(theta0)
        pi = perturbed_pi(pi1, delta)
        P = lazy_chain(pi, lam)
        q = _coords(y0)
        kernel = float("nan")
        if at == "range":
            pi0 = perturbed_pi(pi1, 0.0)
            q, kernel = _range_solve(q, pi, P, pi0, lazy_chain(pi0, lam))
        elif at != "frozen":
            raise ValueError(f"at must be 'range' or 'frozen' (got {at!r})")
        out = _hessian_blocks(q, pi, P)
        g = jax.grad(lambda x: population_loss(_params(x), jnp.asarray(pi), jnp.asarray(P)))
        out["grad"] = float(np.max(np.abs(np.asarray(g(jnp.asarray(q))))))
        g_m, g_phi = reduced.shorthand_grads(
            np.outer(q[:3], q[3:6]), q[6] * q[7] * np.outer(q[:3], q[:3]), pi, P
        )
        out["sigma_gm"] = float(np.linalg.svd(g_m, compute_uv=False)[0])
        out["grad_phi"] = float(np.max(np.abs(g_phi)))
        out["kernel_residual"] = kernel
    return out


def transverse_rates(
    pi1: float, lam: float, deltas, at: str = "range"
) -> tuple[np.ndarray, np.ndarray]:
    """(δ, Θ(δ)) over ``deltas`` from one θ₀ (Thm 3.9's eigenvalue against δ)."""
    with jax.enable_x64(True):
        y0 = degenerate_point(pi1, lam)
    deltas = np.asarray(deltas, np.float64)
    rates = [transverse_rate(pi1, lam, float(dl), at, y0)["rate"] for dl in deltas]
    return deltas, np.asarray(rates)


SWAP = ((1, 2), (4, 5))
"""Index pairs of the state (γ₁, γ₂, γ₃, β₁, β₂, β₃, …) that the swap of the two low-frequency
tokens exchanges (δ = 0 leaves L invariant under it)."""


def _swap_bases(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal bases (n×6, n×2) of the swap-even and swap-odd subspaces of ℝⁿ (n = 8 for
    q = (γ, β, λ_Q, λ_K)): odd = (e₂ − e₃)/√2, (e₅ − e₆)/√2 (0-based (1, 2), (4, 5))."""
    odd = np.zeros((n, len(SWAP)))
    for c, (i, j) in enumerate(SWAP):
        odd[i, c], odd[j, c] = 2**-0.5, -(2**-0.5)
    even = np.linalg.svd(np.eye(n) - odd @ odd.T)[0][:, : n - len(SWAP)]
    return even, odd


def stall_hessian(pi1: float, lam: float, theta0: np.ndarray | None = None) -> dict[str, float]:
    """The Hessian of L on 𝒲 (coordinates q = (γ, β, λ_Q, λ_K), m = m_k = 1) at the symmetric
    flow's end point θ₀ (δ = 0, :func:`degenerate_point`), split by the swap of the two
    low-frequency tokens (L is swap-invariant at δ = 0, so the Hessian is block-diagonal in the
    even and odd subspaces; the coupling is returned as a check). The gradient flow θ̇ = −∇L grows
    a perturbation along an eigenvector of ∇²L with eigenvalue h at rate −h.

    Returns ``h_min`` (most negative eigenvalue of ∇²L on 𝒲), ``odd_fraction`` (‖odd part‖² of
    its eigenvector), ``rate_odd`` / ``rate_even`` (the largest −h on each block: > 0 is
    unstable), ``coupling`` (largest even–odd Hessian entry: 0), ``grad`` (max |∇L| at θ₀) and
    ``gap`` (L − L* there)."""
    with jax.enable_x64(True):
        y0 = degenerate_point(pi1, lam) if theta0 is None else np.asarray(theta0)
        pi = perturbed_pi(pi1, 0.0)
        P = lazy_chain(pi, lam)
        loss = lambda x: population_loss(_params(x), jnp.asarray(pi), jnp.asarray(P))  # noqa: E731
        q = jnp.asarray(_coords(y0))
        H = np.asarray(jax.hessian(loss)(q))
        grad = float(np.max(np.abs(np.asarray(jax.grad(loss)(q)))))
        gap = float(loss(q)) - conditional_entropy(pi, P)
    w, v = np.linalg.eigh(H)
    even, odd = _swap_bases(H.shape[0])
    return {
        "h_min": float(w[0]),
        "odd_fraction": float(np.sum((odd.T @ v[:, 0]) ** 2)),
        "rate_odd": float(np.linalg.eigvalsh(-(odd.T @ H @ odd))[-1]),
        "rate_even": float(np.linalg.eigvalsh(-(even.T @ H @ even))[-1]),
        "coupling": float(np.max(np.abs(even.T @ H @ odd))),
        "grad": grad,
        "gap": gap,
    }


def stall_kick(
    pi1: float,
    lam: float,
    parity: str = "odd",
    kick: float = 1e-8,
    t_end: float = 400.0,
    records: int = 81,
    theta0: np.ndarray | None = None,
    delta: float = 0.0,
) -> dict[str, Any]:
    """Eq. 20 at asymmetry ``delta`` (0: the symmetric law) from θ₀ (:func:`degenerate_point`,
    the δ = 0 stall) kicked along the swap-``parity`` direction (odd: γ₂ ± kick, γ₃ ∓ kick; even:
    γ₂ and γ₃ both + kick), without the symmetrisation :func:`degenerate_point` applies.
    Returns ``time``, ``size`` (the norm of y(t) − θ₀ in the kick's parity subspace of
    (γ, β, η)), ``rate`` (least-squares slope of log size over the second half of the horizon:
    the growth rate of the perturbation) and ``gap`` (L − L* along the way)."""
    if parity not in ("odd", "even"):
        raise ValueError(f"parity must be 'odd' or 'even' (got {parity!r})")
    with jax.enable_x64(True):
        y_star = degenerate_point(pi1, lam) if theta0 is None else np.asarray(theta0)
        pi = perturbed_pi(pi1, delta)
        P = lazy_chain(pi, lam)
        y0 = y_star.copy()
        y0[1] += kick
        y0[2] += -kick if parity == "odd" else kick
        times = np.linspace(0.0, t_end, records)
        ys = integrate(lambda t, y: reduced.reduced_rhs(y, pi, P), y0, times, rtol=1e-11)
        _, odd = _swap_bases(7)
        dev = ys - y_star[:, None]
        odd_part = odd.T @ dev
        size = np.linalg.norm(odd_part if parity == "odd" else dev - odd @ odd_part, axis=0)
        late = times >= t_end / 2
        rate = float(np.polyfit(times[late], np.log(size[late]), 1)[0])
        star = conditional_entropy(pi, P)
        gap = np.array(
            [
                float(
                    population_loss(
                        _params(jnp.asarray(_coords(y))), jnp.asarray(pi), jnp.asarray(P)
                    )
                )
                - star
                for y in ys.T
            ]
        )
    return {"time": times, "size": size, "rate": rate, "gap": gap}
