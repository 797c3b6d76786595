"""Untied AIM, S_k = U_k V_kᵀ: the fast–slow theory of P1 = arXiv 2609.03858 §4.1 (Eqs. 27–32,
Theorem 3, App. F), and here the composite prediction ``predict_untied``. By concern:
:mod:`.moments` (order parameters and word moments of given factors), :mod:`.fast` (Eqs. 28–29:
the mean's fast flow and its critical point m*(q)), :mod:`.slow` (Eqs. 30–32: the hierarchy and
the matrix-level flow); letters and words: :mod:`attndyn.models.aim.words`.

Notation (P1 §4.1): M_k = U_k V_kᵀ, A_k = U_k U_kᵀ, B_k = V_k V_kᵀ; m_k = Tr M_k/√d;
μ_α = Tr(Z_1⋯Z_w)/d for words over the alphabet {M_k, M_kᵀ, A_k, B_k} (Eq. 26); t^A_k = μ_(A_k),
t^B_k = μ_(B_k), q⁽¹⁾_kl = μ_(M_k, M_lᵀ), q⁽²⁾_kl = μ_(M_k, M_l); D_k = t^A_k + t^B_k.
Φ(m, q⁽¹⁾, q⁽²⁾) is :class:`~attndyn.models.aim.theory.potential.Potential` with Ω = q⁽¹⁾,
Ψ = q⁽²⁾; a⁽ʳ⁾_kl = [∇_{q⁽ʳ⁾}Φ]_kl with the ½ convention of Eqs. 571–572 and b_k = ∂Φ/∂m_k
(Eq. 570). M⁽¹⁾_l = M_l, M⁽²⁾_l = M_lᵀ, r̄ = 3 − r.

- **Fast phase** (Eq. 28, fast time t = nα_d): dm_k/dt = −D_k(0) ∂Φ/∂m_k(m, q(0)), moments
  frozen; its limit is the critical point m*(q) (Assumption 5).
- **Slow phase** (Eqs. 29–32, slow time τ = nα_d/d): m = m*(q(τ)) (Eq. 29), effective bias
  β_k = −ψ_k/D_k (Eq. 30) with ψ_k = 2 Σ_{l,r} a⁽ʳ⁾_kl [μ_(M⁽ʳ⁾_l, B_k) + μ_(A_k, M⁽ʳ⁾_l)]
  (Eq. 27), and for every word α

      dμ_α/dτ = − Σ_{i: k_i∈𝒦} β_{k_i} T^bias_i(μ)
                − 2 Σ_{i: k_i∈𝒦} Σ_{l,r} a⁽ʳ⁾_{k_i l} T^diff_{i,l,r}(μ)
                − 2γ |α|_𝒦 μ_α                                                     (Eq. 32)

  with the substitution operators of Eq. 31 as re-derived in docs/aim-untied-derivation.md
  (the printed Eq. 31 is garbled; the rows below are the one-step expansion Eqs. 742–745 with
  the bars restored):

      letter Z_i   T^bias_i replaces it by   T^diff_{i,l,r} replaces it by
      M_k          A_k + B_k                 M⁽ʳ⁾_l B_k + A_k M⁽ʳ⁾_l
      M_kᵀ         A_k + B_k                 B_k M⁽ʳ̄⁾_l + M⁽ʳ̄⁾_l A_k
      A_k          M_k + M_kᵀ                M⁽ʳ⁾_l M_kᵀ + M_k M⁽ʳ̄⁾_l
      B_k          M_k + M_kᵀ                M⁽ʳ̄⁾_l M_k + M_kᵀ M⁽ʳ⁾_l

- **Matrix-level slow flow** (the same field written on U, V; its traces satisfy Eq. 32
  identically, so integrating it from the finite-d initial matrices solves the untruncated
  hierarchy for that initial state, like the tied matrix flow):

      dU_k/dτ = −β_k V_k − 2 H_k V_k − γ U_k,   dV_k/dτ = −β_k U_k − 2 H_kᵀ U_k − γ V_k,
      H_k = Σ_{l,r} a⁽ʳ⁾_kl M⁽ʳ⁾_l,   ψ_k = (2/d) Tr[H_k (A_k + B_k)].

Letters use the simulator's names: "k" = M_k, "kT" = M_kᵀ, "Ak", "Bk" (attndyn.models.aim.words).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.models.aim.observables import observe
from attndyn.models.aim.theory.initial import initial_matrices, n_student, time_grid
from attndyn.models.aim.theory.potential import cached_potential
from attndyn.models.aim.theory.untied.fast import (
    MeanDynamics,
    boost,
    boost_for_mean,
    fast_image,
)
from attndyn.models.aim.theory.untied.moments import factors, order_parameters, psi_words
from attndyn.models.aim.theory.untied.slow import UntiedHierarchy, UntiedMatrixFlow


def _observe(U: list, V: list, n_s: int, degree: int) -> dict[str, float]:
    """The simulator's observables of factor lists (students first)."""
    with jax.enable_x64(True):
        out = observe(
            {"U": [jnp.asarray(u) for u in U[:n_s]], "V": [jnp.asarray(v) for v in V[:n_s]]},
            {"U": [jnp.asarray(u) for u in U[n_s:]], "V": [jnp.asarray(v) for v in V[n_s:]]},
            "untied",
            degree,
        )
    return {k: float(v) for k, v in out.items()}


def predict_untied(config, method: str) -> dict[str, np.ndarray]:
    """Observables averaged over the config's seeds, on the simulator's record grid
    (:func:`~attndyn.models.aim.theory.initial.time_grid`).

    Per seed, from the simulator's initial factors (same draws):

    1. fast phase, Eq. 28: m_fast(t) at t = nα_d, q(0) frozen; m_fast(∞) = m*(q(0));
    2. its image on the factors at finite d (:func:`fast_image`, the bias part of Eqs. 566–567
       integrated over the boundary layer): this adds the O(m²/d) "mean parts" that the
       simulator's overlaps carry at finite d (e.g. q₁₂ ∋ t₁t₂ = m₁m₂/d);
    3. slow phase from that image: ``untied`` = matrix-level flow, ``untied-hierarchy`` = Eq. 32
       truncated at ``config.truncation``; both keep m = m*(q(τ)) (Eq. 29);
    4. composite (matched asymptotics): obs(n) = slow(τ) + inner(t) − inner(∞), where inner(t) are
       the observables of the initial factors boosted to the mean m_fast(t); for m itself,
       m(n) = m*(q(τ)) + m_fast(t) − m_fast(∞). t_k = m_k/√d, p_kl = q_kl − t_k t_l.
    """
    axes, _ = time_grid(config)
    times, fast_times = axes["time"], axes["time_fast"]
    potential = cached_potential(config, config.quad_log2)
    K, n_s = potential.K, n_student(config)
    trainable = tuple(range(1, n_s + 1))
    seeds = config.seed_list
    hierarchy = None
    if method == "untied-hierarchy":
        hierarchy = UntiedHierarchy(K, trainable, config.truncation, config.weight_decay)
    acc: dict[str, np.ndarray] = {}
    for seed in seeds:
        obs = _seed_prediction(config, potential, hierarchy, seed, times, fast_times, n_s)
        for name, v in obs.items():
            acc[name] = acc.get(name, 0.0) + np.asarray(v, float) / len(seeds)
    return acc


def _seed_prediction(config, potential, hierarchy, seed, times, fast_times, n_s) -> dict:
    """One seed of :func:`predict_untied`."""
    K, d = potential.K, config.d
    idx = np.arange(n_s)
    U0, V0 = factors(*initial_matrices(config, seed))
    op = order_parameters(U0, V0)
    means = MeanDynamics(potential, tuple(range(1, n_s + 1)), op["m"])
    D0, m0, q1_0, q2_0 = (op["tA"] + op["tB"])[idx], op["m"][idx], op["q1"], op["q2"]
    m_star = means.fast_limit(m0, q1_0, q2_0, D0)  # Eq. 28's limit m*(q(0)); selects the branch
    Ub, Vb, _ = fast_image(U0, V0, means)
    m_b = means.critical_point(*_q(order_parameters(Ub, Vb)), guess=m_star)
    P0, Pb = psi_words(U0, V0, idx), psi_words(Ub, Vb, idx)
    span = np.where(np.abs(m_b - m0) > 1e-12, m_b - m0, np.inf)

    gamma = config.weight_decay

    def extra(m):  # ψ/√d + 2γm/d (Eq. 573), P interpolated in m between initial and fast states
        P = P0 + ((m - m0) / span)[:, None] * (Pb - P0)
        _, a1, a2 = potential.gradients(means.full(m), q1_0, q2_0)
        return 2.0 * np.sum((a1 + a2)[idx] * P, axis=1) / np.sqrt(d) + 2.0 * gamma * m / d

    m_fast = means.fast_flow(m0, q1_0, q2_0, D0, fast_times, extra)
    m_inf = means.fast_limit(m0, q1_0, q2_0, D0, extra)
    means.last = m_b

    # progress of the fast phase mapped onto the boost path [m(0), m_b] (exact at both ends)
    frac = (m_fast - m0) / np.where(np.abs(m_inf - m0) > 1e-12, m_inf - m0, np.inf)

    def inner(i):  # the initial factors boosted as far as the fast phase has got at t_i
        U, V = U0, V0
        for j, k in enumerate(idx):
            target = m0[j] + frac[i, j] * (m_b[j] - m0[j])
            U, V = boost(U, V, k, boost_for_mean(U0, V0, k, target))
        return U, V

    # ψ_k and D_k of the slow state at each time, for the finite-d offset of the mean
    psi, D = np.full((len(times), K), np.nan), np.full((len(times), K), np.nan)
    if hierarchy is not None:
        mu0 = hierarchy.initial(Ub, Vb)
        obs = hierarchy.solve(mu0, means, times, config.rtol, d=d)
        base = dict(zip(hierarchy.names, mu0, strict=True))
        for i in range(len(times)):
            mu = np.array([obs[name][i] for name in hierarchy.names])
            if np.all(np.isfinite(mu)):
                q1, q2 = hierarchy.q_of(mu)
                m_i = means.full(means.critical_point(q1, q2))
                _, a1, a2 = potential.gradients(m_i, q1, q2)
                psi[i], D[i] = hierarchy.psi(mu, a1, a2), hierarchy.D_of(mu)

        def inner_obs(i):
            return dict(zip(hierarchy.names, hierarchy.initial(*inner(i)), strict=True))

    else:
        flow = UntiedMatrixFlow(means, config.weight_decay)
        path = flow.solve(Ub, Vb, times, rtol=min(config.rtol * 10, 1e-6))
        base = _observe(Ub, Vb, n_s, config.moment_degree)
        obs = {name: np.full(len(times), np.nan) for name in base}
        for i, state in enumerate(path):
            if state is not None:
                for name, v in _observe(*state, n_s, config.moment_degree).items():
                    obs[name][i] = v
                st = flow.summary(*state)
                psi[i], D[i] = st["psi"], st["D"]

        def inner_obs(i):
            return _observe(*inner(i), n_s, config.moment_degree)

    # The slow mean: Tr M_k/√d of the slow state (kept at m*(q), Eq. 29) plus the finite-d
    # offset of the slow manifold, −(∇²_m Φ)⁻¹ (ψ/√d + 2γm/d)/D: SGD's mean drift
    # −α (D ∂Φ/∂m + ψ/√d + 2γm/d) (Eqs. 573, 580–582) vanishes there, not at ∂Φ/∂m = 0.
    m_slow = np.sqrt(d) * np.stack([obs[f"t_{k + 1}"] for k in idx], axis=1)
    q1 = np.stack([[obs[_qname(1, k, l)] for l in range(1, K + 1)] for k in range(1, K + 1)])
    q2 = np.stack([[obs[_qname(2, k, l)] for l in range(1, K + 1)] for k in range(1, K + 1)])
    for i in range(len(times)):
        if np.all(np.isfinite(psi[i, idx])):
            hess = means.hessian_m(m_slow[i], q1[:, :, i], q2[:, :, i])
            drift = psi[i, idx] / np.sqrt(d) + 2.0 * gamma * m_slow[i] / d
            m_slow[i] -= np.linalg.solve(hess, drift / D[i, idx])
    # composite: add inner(t) − inner(∞) where the fast flow has not converged; the mean is
    # m_fast(t) + m_slow(τ) − m_slow(0), exact at n = 0
    for i in range(len(times)):
        if np.max(np.abs(m_fast[i] - m_inf)) < 1e-10 * (1.0 + np.max(np.abs(m_inf))):
            continue
        values = inner_obs(i)
        for name in obs:
            if name in values:
                obs[name][i] += values[name] - base[name]
    for k in range(1, K + 1):
        obs[f"m_{k}"] = np.sqrt(d) * obs[f"t_{k}"]  # teachers: constant
    for j, k in enumerate(idx):
        obs[f"m_{k + 1}"] = m_fast[:, j] + m_slow[:, j] - m_slow[0, j]
    for k in range(1, K + 1):
        obs[f"t_{k}"] = obs[f"m_{k}"] / np.sqrt(d)
        for l in range(k, K + 1):
            obs[f"q_{k}{l}"] = obs[f"q2_{k}{l}"]
            obs[f"qsym_{k}{l}"] = 2.0 * (obs[f"q1_{k}{l}"] + obs[f"q2_{k}{l}"])
    for k in range(1, K + 1):
        for l in range(k, K + 1):
            obs[f"p_{k}{l}"] = obs[f"q_{k}{l}"] - obs[f"t_{k}"] * obs[f"t_{l}"]
    m = np.stack([obs[f"m_{k}"] for k in range(1, K + 1)], axis=1)
    obs["loss"] = np.array(
        [
            potential.value(m[i], q1[:, :, i], q2[:, :, i])
            if np.all(np.isfinite(q1[:, :, i])) and np.all(np.isfinite(m[i]))
            else np.nan
            for i in range(len(times))
        ]
    )
    return obs


def _q(op: dict) -> tuple[np.ndarray, np.ndarray]:
    return op["q1"], op["q2"]


def _qname(r: int, k: int, l: int) -> str:
    return f"q{r}_{min(k, l)}{max(k, l)}"
