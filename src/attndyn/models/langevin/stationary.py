"""Stationary statistics of an ensemble of Langevin chains (docs/langevin.md, "Diagnostics").

With F Villani, the law of Θ_t approaches μ_s ∝ exp(−2F/s) exponentially (Shi, Su & Jordan,
arXiv 2004.06977, main theorem): E F(Θ_t) − E_μF ≈ D e^{−λ_s t}. These functions estimate the
plateau E_μF and the rate λ_s from a Trajectory's (seed, time) array; confidence intervals over
chains are the experiments' business (attndyn.claims.stats), which resample seeds and call
these functions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from attndyn.models.langevin.config import LangevinConfig


def time_average(values: np.ndarray, times: np.ndarray, t_from: float) -> np.ndarray:
    """Per-chain mean of ``values`` (seed, time) over the record points with time ≥ t_from.

    Chains are independent, so these are i.i.d. estimates of E_μ of the observable (once the
    chains have forgotten their start); their spread gives the CI."""
    mask = np.asarray(times) >= t_from
    if not mask.any():
        raise ValueError(f"no record point at time >= {t_from:g}")
    return np.mean(np.asarray(values)[:, mask], axis=1)


def exponential_rate(
    times: np.ndarray, mean_curve: np.ndarray, plateau: float, floor: float
) -> float:
    """λ of the least-squares fit log(m(t) − plateau) ≈ c − λt over the initial stretch where
    m(t) − plateau > floor (e.g. a few standard errors of the plateau): the approach to the
    Gibbs level. NaN when fewer than three points qualify."""
    excess = np.asarray(mean_curve, dtype=float) - plateau
    t = np.asarray(times, dtype=float)
    above = excess > floor
    # the first contiguous stretch above the floor
    stop = int(np.argmin(above)) if not above.all() else len(above)
    if stop < 3:
        return float("nan")
    slope, _ = np.polyfit(t[:stop], np.log(excess[:stop]), 1)
    return float(-slope)


def laplace_gap(s: float, p_eff: int) -> float:
    """E_μF − min F ≈ s·p_eff/4 at small s [I]: μ_s ≈ N(θ*, (s/2)H⁻¹) near a nondegenerate
    minimiser, so E(F − F*) ≈ ½ tr(H · (s/2)H⁻¹) = s·p/4; flat (symmetry) directions of an
    orbit of minimisers carry no energy (docs/langevin.md, "p_eff")."""
    return s * p_eff / 4.0


def relaxation_rate(
    times: np.ndarray, mean_curve: np.ndarray, plateau: float, floor: float
) -> float:
    """λ of the fit log|m(t) − plateau| ≈ c − λt over the first stretch where the excess keeps
    the sign it has at t = 0 and |m(t) − plateau| > floor: :func:`exponential_rate` for an
    approach from either side (E F rises to the plateau from a small start, e.g. LoRA's B = 0).
    NaN when fewer than three points qualify."""
    excess = np.asarray(mean_curve, dtype=float) - plateau
    sign = 1.0 if excess[0] >= 0 else -1.0
    return exponential_rate(times, plateau + sign * excess, plateau, floor)


def window_change(values: np.ndarray, times: np.ndarray, t_from: float) -> float:
    """The change of the ensemble mean of ``values`` (seed, time) over the window t ≥ t_from,
    b·(t_end − t_from) with b the least-squares slope of the mean curve there: zero (within
    noise) once the plateau is reached, the remaining relaxation otherwise."""
    t = np.asarray(times, dtype=float)
    mask = t >= t_from
    if mask.sum() < 2:
        raise ValueError(f"fewer than two record points at time >= {t_from:g}")
    slope, _ = np.polyfit(t[mask], np.mean(np.asarray(values)[:, mask], axis=0), 1)
    return float(slope * (t[mask][-1] - t[mask][0]))


def em_gap_factor(eigenvalues: np.ndarray, h: float, n_flat: int) -> float:
    """Euler–Maruyama's stationary gap of the Gaussian (Laplace) approximation over s·p_eff/4.

    Along a Hessian eigendirection of curvature H_i, EM with step h is the AR(1) chain
    x ← (1 − hH_i)x + √(sh) ξ, whose stationary variance is s/(2H_i(1 − hH_i/2)), so
    E[½H_i x²] = s/(4(1 − hH_i/2)) (exact for the quadratic; the O(h) bias of EM). The
    ``n_flat`` eigenvalues smallest in modulus (the symmetry orbit) carry no energy. Returns
    (1/p_eff) Σ_i 1/(1 − hH_i/2) over the others: 1 + h·mean(H)/2 + O(h²)."""
    ev = np.asarray(eigenvalues, dtype=float)
    ev = ev[np.argsort(np.abs(ev))][n_flat:]
    if np.any(h * ev >= 2):
        return float("inf")  # EM is unstable along the stiffest direction
    return float(np.mean(1.0 / (1.0 - 0.5 * h * ev)))


def minimise(
    config: LangevinConfig, seeds, steps: int, step: float
) -> tuple[np.ndarray, np.ndarray, dict]:
    """min F by deterministic gradient descent θ ← θ − η∇F (the s = 0 dynamics) from the
    chains' initial law, one start per seed (keys PRNGKey(seed), independent of the chains').

    Returns (F, ‖∇F‖², params) at the end of each start: arrays over seeds and the parameter
    tree with a leading seed axis. Several starts show whether GD finds one minimum or several
    (other basins, or saddles not yet left)."""
    from attndyn.models.langevin.model import frozen_part, potential

    with jax.enable_x64(config.dtype == "float64"):
        pot = potential(config)
        frozen = frozen_part(config, pot)
        keys = jnp.stack([jax.random.PRNGKey(int(k)) for k in seeds])
        grad = jax.grad(pot.F)

        def descend(params):
            def body(_, p):
                g = grad(p, frozen)
                return jax.tree.map(lambda w, gw: w - step * gw, p, g)

            return jax.lax.fori_loop(0, steps, body, params)

        params = jax.jit(jax.vmap(descend))(jax.vmap(pot.init)(keys))
        F, g = jax.vmap(jax.value_and_grad(pot.F), in_axes=(0, None))(params, frozen)
        g_sq = jax.vmap(lambda t: sum(jnp.sum(jnp.square(w)) for w in jax.tree.leaves(t)))(g)
        return np.asarray(F), np.asarray(g_sq), jax.device_get(params)


def hessian_eigenvalues(config: LangevinConfig, params: dict) -> np.ndarray:
    """Eigenvalues (ascending) of ∇²F at one parameter tree ``params`` (no seed axis), all p of
    them: at a minimiser, p − p_eff of them vanish along the symmetry orbit
    (:func:`attndyn.models.langevin.model.flat_directions`) and the others are positive
    when the minimiser is nondegenerate."""
    from attndyn.models.langevin.model import frozen_part, potential

    with jax.enable_x64(config.dtype == "float64"):
        pot = potential(config)
        frozen = frozen_part(config, pot)
        flat, unravel = ravel_pytree(jax.tree.map(jnp.asarray, params))
        H = jax.jit(jax.hessian(lambda x: pot.F(unravel(x), frozen)))(flat)
        H = np.asarray(H, dtype=np.float64)
    return np.linalg.eigvalsh(0.5 * (H + H.T))


def minimise_newton(
    config: LangevinConfig, seeds, iterations: int = 200, tol: float = 1e-20
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """min F by damped Newton (Levenberg–Marquardt) steps θ ← θ − (H + μI)⁻¹∇F from one start
    per seed (the chains' initial law, keys PRNGKey(seed)): μ shrinks after a step that lowers F
    and grows otherwise, and H + μI is kept positive, so every accepted step descends and the
    iteration converges to a minimum (not a saddle), quadratically once μ → 0; the symmetry
    orbit's zero eigenvalues need no special care (μ > 0 there).

    Returns (F, ‖∇F‖² per start, Hessian eigenvalues (ascending) at the best start, the best
    start's parameter tree): the orbit through it
    (:func:`attndyn.models.langevin.model.orbit_dimension`) is the count of flat
    eigenvalues expected there."""
    from attndyn.models.langevin.model import frozen_part, potential

    with jax.enable_x64(config.dtype == "float64"):
        pot = potential(config)
        frozen = frozen_part(config, pot)
        _, unravel = ravel_pytree(pot.init(jax.random.PRNGKey(0)))

        def f(x):
            return pot.F(unravel(x), frozen)

        vgh = jax.jit(lambda x: (f(x), jax.grad(f)(x), jax.hessian(f)(x)))
        results = []
        for seed in seeds:
            x = ravel_pytree(pot.init(jax.random.PRNGKey(int(seed))))[0]
            dtype = x.dtype
            F, g, H = (np.asarray(a, dtype=np.float64) for a in vgh(x))
            mu = 1.0
            for _ in range(iterations):
                if float(g @ g) < tol or mu > 1e12:  # converged, or at the precision floor
                    break
                lam, V = np.linalg.eigh(0.5 * (H + H.T))
                shift = mu + max(0.0, -float(lam[0]))
                step = V @ ((V.T @ g) / (lam + shift))
                y = jnp.asarray(np.asarray(x, dtype=np.float64) - step, dtype=dtype)
                F_new, g_new, H_new = (np.asarray(a, dtype=np.float64) for a in vgh(y))
                if F_new < F:  # strict: at the precision floor μ grows and the loop ends
                    x, F, g, H, mu = y, F_new, g_new, H_new, mu / 4
                else:
                    mu *= 8
            results.append((float(F), float(g @ g), H, x))
        best = int(np.argmin([r[0] for r in results]))
        eig = np.linalg.eigvalsh(0.5 * (results[best][2] + results[best][2].T))
        params = jax.tree.map(np.asarray, unravel(results[best][3]))
        return np.array([r[0] for r in results]), np.array([r[1] for r in results]), eig, params


def sgd_stability_limit(hessian: np.ndarray, sample_hessians: np.ndarray, batch: int) -> float:
    """The largest learning rate s at which minibatch SGD, linearised at a minimiser θ*, keeps a
    bounded second moment (mean-square stability; docs/langevin.md, "Stable rates").

    With H = ∇²F(θ*) = H̃ + λI, H̃ = E_i H_i the mean of the per-sample Hessians ``sample_hessians``
    (n, p, p), and b = ``batch`` samples drawn with replacement, δ_{k+1} = (I − sH_B)δ_k + noise
    gives C_{k+1} = T_s(C_k) + s²Σ_b with T_s(C) = (I − sH)C(I − sH) + (s²/b)(E_i H_iCH_i − H̃CH̃).
    T_s keeps PSD matrices PSD, and ρ(T_s) = 1 exactly where HC + CH = s·Q(C) for a PSD C, Q(C) =
    HCH + (1/b)(E_i H_iCH_i − H̃CH̃); so s_c = 1/μ, μ the spectral radius of C ↦ L⁻¹Q(C) with
    L(C) = HC + CH (H ≻ 0 required), found by Arnoldi iteration (ARPACK) on the p² entries of C.
    Without sampling noise (every H_i equal) s_c = 2/λ_max(H), gradient descent's limit."""
    from scipy.sparse.linalg import LinearOperator, eigs

    h, U = np.linalg.eigh(0.5 * (hessian + hessian.T))
    if h[0] <= 0:
        raise ValueError(f"hessian: must be positive definite (smallest eigenvalue {h[0]:.3g})")
    p = len(h)
    Hi = U.T @ np.asarray(sample_hessians, np.float64) @ U  # in H's eigenbasis, (n, p, p)
    n = len(Hi)
    Hm = Hi.mean(axis=0)
    rows = Hi.reshape(n * p, p)  # [H_1; …; H_n] stacked, so E_i H_iCH_i is two plain GEMMs
    lyap = h[:, None] + h[None, :]

    def op(c: np.ndarray) -> np.ndarray:
        C = c.reshape(p, p)
        HC = (rows @ C).reshape(n, p, p)
        var = HC.transpose(1, 0, 2).reshape(p, n * p) @ rows / n - Hm @ C @ Hm
        return ((h[:, None] * C * h[None, :] + var / batch) / lyap).ravel()

    if p == 1:
        return 1.0 / float(op(np.ones(1))[0])
    A = LinearOperator((p * p, p * p), matvec=op, dtype=np.float64)
    mu = eigs(A, k=1, which="LM", v0=np.eye(p).ravel(), return_eigenvectors=False, tol=1e-10)
    return 1.0 / float(abs(mu[0]))


def slowest_rate(values: np.ndarray, lag: int, dt: float) -> float:
    """The slowest relaxation rate seen by a basis of observables at stationarity: the
    variational (Ritz) estimate of the generator's spectral gap over their span
    (docs/langevin.md, "A bound on the Poincaré constant"; Noé & Nüske, Multiscale Model. Simul.
    11, 635 (2013)).

    ``values`` is (chain, time, k): k observables on a uniform record grid of spacing ``dt``,
    the chains stationary and independent. With the observables centred and standardised, C(0)
    and the symmetrised lagged covariance C(τ) at τ = lag·dt pooled over chains, ρ = the largest
    eigenvalue of C(0)^{-½} C(τ) C(0)^{-½} and the rate is −log(ρ)/τ. For a reversible process
    ρ ≤ e^{−κτ} for the gap κ, so the rate is ≥ κ (an upper bound on the gap, equal to it when
    the span holds the slowest eigenfunction). NaN when ρ ≤ 0 (no correlation left at the lag)."""
    x = np.asarray(values, dtype=float)
    x = x - x.mean(axis=(0, 1))
    sd = x.std(axis=(0, 1))
    x = x[..., sd > 0] / sd[sd > 0]
    a, b = x[:, :-lag].reshape(-1, x.shape[2]), x[:, lag:].reshape(-1, x.shape[2])
    c0 = (a.T @ a + b.T @ b) / (2 * len(a))
    ct = (a.T @ b + b.T @ a) / (2 * len(a))
    w, v = np.linalg.eigh(c0)
    keep = w > 1e-10 * w.max()  # drop exactly collinear observables (e.g. F = loss + reg)
    white = v[:, keep] / np.sqrt(w[keep])
    rho = float(np.linalg.eigvalsh(white.T @ ct @ white).max())
    return -np.log(rho) / (lag * dt) if rho > 0 else float("nan")


def laplace_next_order(f, x: np.ndarray, tangents, flat: int) -> dict[str, float]:
    """The Laplace gap's next order at a minimiser ``x`` of ``f`` (docs/langevin.md, "Laplace
    gap, next order"): with μ_s ∝ exp(−βf), β = 2/s,

        (E_μf − f*)/(s·p_eff/4) = 1 + c·s + O(s²),   c = b/p_eff,

    from log Z = −(p_eff/2) log β + b/β + O(β⁻²) (Wick's theorem at covariance H⁻¹/β on the slice
    through x orthogonal to the symmetry orbit, eigenbasis of H there with eigenvalues h_i):

        b = −⅛ Σ Q_iijj/(h_i h_j) + ⅛ Σ_k u_k²/h_k + (1/12) Σ T_ijk²/(h_i h_j h_k)
            − ½ Σ_k a_k u_k/h_k,

    T, Q the third and fourth derivatives of f, u_k = Σ_i T_iik/h_i, and a = ∇_y log J the
    first order of the orbit's volume J(y) = |det(Φᵀ G(x + Py))| over the slice (Φ the ``flat``
    eigenvectors of H, the orbit's tangent at x; G(θ) the (p, flat) matrix of the generators'
    tangents at θ, ``tangents``, linear in θ). ``f`` and ``tangents`` take flat float64 vectors;
    ``x`` is polished by Newton steps on the non-flat directions first. Returns c, b, its four
    terms, p_eff, f(x) and ‖∇f(x)‖."""
    with jax.enable_x64(True):
        x = np.asarray(x, np.float64)
        grad, hess = jax.jit(jax.grad(f)), jax.jit(jax.hessian(f))
        for _ in range(10):
            w, U = np.linalg.eigh(np.asarray(hess(x)))
            keep = np.arange(len(w)) >= flat
            x = x - U[:, keep] @ ((U[:, keep].T @ np.asarray(grad(x))) / w[keep])
        w, U = np.linalg.eigh(np.asarray(hess(x)))
        if flat and w[flat] <= 0:
            raise ValueError(f"x: not a nondegenerate minimiser (eigenvalue {w[flat]:.3g})")
        Phi, P, h = U[:, :flat], U[:, flat:], w[flat:]
        D = jnp.asarray(P / h @ P.T)  # P diag(1/h) Pᵀ: the slice's covariance at β = 1

        def g(z):  # Σ_i ∂²f[P_i, P_i]/h_i
            return jnp.sum(D * jax.hessian(f)(z))

        T = np.einsum("abc,ai,bj,ck->ijk", np.asarray(jax.jacfwd(hess)(x)), P, P, P)
        u = P.T @ np.asarray(jax.grad(g)(x))
        quartic = float(np.sum(np.asarray(D) * np.asarray(jax.hessian(g)(x))))
        if flat:
            M = Phi.T @ np.asarray(tangents(x))
            a = np.array([np.trace(np.linalg.solve(M, Phi.T @ np.asarray(tangents(col))))
                          for col in jnp.asarray(P.T)])  # fmt: skip
        else:
            a = np.zeros(len(h))
        terms = {
            "quartic": -quartic / 8,
            "cubic_trace": float(np.sum(u**2 / h)) / 8,
            "cubic_full": float(np.einsum("ijk,i,j,k->", T**2, 1 / h, 1 / h, 1 / h)) / 12,
            "orbit": -0.5 * float(np.sum(a * u / h)),
        }
        b = sum(terms.values())
        return {
            "c": b / len(h),
            "b": b,
            **terms,
            "p_eff": len(h),
            "f_min": float(f(x)),
            "grad_norm": float(np.linalg.norm(np.asarray(grad(x)))),
        }


def laplace_next_order_at(config: LangevinConfig, params: dict, flat: int) -> dict[str, float]:
    """:func:`laplace_next_order` for the config's F at the parameter tree ``params`` (a
    minimiser, :func:`minimise_newton`) with its symmetry orbit of dimension ``flat``
    (:func:`attndyn.models.langevin.model.orbit_dimension`; its generators,
    :func:`attndyn.models.langevin.model.orbit_generators`, must span it). The data are drawn
    in the config's dtype and cast to float64."""
    from attndyn.models.langevin.model import frozen_part, orbit_generators, potential

    pot = potential(config)
    with jax.enable_x64(True):
        f64 = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, jnp.float64), tree)  # noqa: E731
        frozen = f64(frozen_part(config, pot))
        x, unravel = ravel_pytree(f64(params))
        gens = orbit_generators(config) if flat else []
        if len(gens) != flat:
            raise ValueError(
                f"flat: the orbit has dimension {flat} but the model's generators span "
                f"{len(gens)} (a rank-deficient minimiser's orbit is not handled)"
            )

        def tangents(z):
            tree = unravel(z)
            return jnp.stack([ravel_pytree(gen(tree))[0] for gen in gens], axis=1)

        return laplace_next_order(
            lambda z: pot.F(unravel(z), frozen), np.asarray(x), tangents, flat
        )
