"""Direct S: the closed finite ODE of P1 Theorem 4 (App. E, Eqs. 402–404), time t = nα_d/d.

State t_k = Tr S_k/d, Ψ_kl = Tr(S_k S_l)/d, Ω_kl = Tr(S_k S_lᵀ)/d; with A = ∇_Ω Φ, B = ∇_Ψ Φ
(½ convention, Eqs. 458–459) and χ_k = 1 for trainable k:

    dt_k/dt  = −2χ_k Σ_m (A_km + B_km) t_m − γ χ_k t_k
    dΨ_kl/dt = −2χ_k Σ_m (A_km Ψ_ml + B_km Ω_ml) − 2χ_l Σ_m (A_lm Ψ_km + B_lm Ω_km) − γ(χ_k+χ_l)Ψ_kl
    dΩ_kl/dt = −2χ_k Σ_m (A_km Ω_ml + B_km Ψ_ml) − 2χ_l Σ_m (A_lm Ω_km + B_lm Ψ_km) − γ(χ_k+χ_l)Ω_kl
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attndyn.core.ode import integrate
from attndyn.models.aim.theory.potential import Potential


@dataclass
class DirectODE:
    potential: Potential
    trainable: tuple[int, ...]  # 1-based
    weight_decay: float = 0.0

    def _unpack(self, y):
        K = self.potential.K
        return y[:K], y[K : K + K * K].reshape(K, K), y[K + K * K :].reshape(K, K)

    def rhs(self, t, y):
        K = self.potential.K
        tk, psi, omega = self._unpack(y)
        _, A, B = self.potential.gradients(np.zeros(K), omega, psi)
        chi = np.zeros(K)
        chi[[k - 1 for k in self.trainable]] = 1.0
        g = self.weight_decay
        dt = -2 * chi * ((A + B) @ tk) - g * chi * tk
        left_psi = A @ psi + B @ omega  # Σ_m A_km Ψ_ml + B_km Ω_ml
        left_omega = A @ omega + B @ psi
        dpsi = -2 * chi[:, None] * left_psi - 2 * chi[None, :] * left_psi.T
        domega = -2 * chi[:, None] * left_omega - 2 * chi[None, :] * left_omega.T
        decay = g * (chi[:, None] + chi[None, :])
        return np.concatenate([dt, (dpsi - decay * psi).ravel(), (domega - decay * omega).ravel()])

    def solve(self, t0, psi0, omega0, times, rtol=1e-8) -> dict[str, np.ndarray]:
        """Observables t_k, Psi_kl, Omega_kl (and q, p, pPsi, pOmega, pplus, pminus) at times."""
        y0 = np.concatenate([np.asarray(t0, float), np.ravel(psi0), np.ravel(omega0)])
        y = integrate(self.rhs, y0, times, rtol=rtol)
        K = self.potential.K
        tk = y[:K]
        psi = y[K : K + K * K].reshape(K, K, -1)
        omega = y[K + K * K :].reshape(K, K, -1)
        out = {}
        for k in range(K):
            out[f"t_{k + 1}"] = tk[k]
        for k in range(K):
            for l in range(k, K):
                tag = f"{k + 1}{l + 1}"
                tt = tk[k] * tk[l]
                out[f"Psi_{tag}"] = psi[k, l]
                out[f"Omega_{tag}"] = omega[k, l]
                out[f"q_{tag}"] = psi[k, l]
                out[f"p_{tag}"] = psi[k, l] - tt
                out[f"pPsi_{tag}"] = psi[k, l] - tt
                out[f"pOmega_{tag}"] = omega[k, l] - tt
                out[f"pplus_{tag}"] = 0.5 * (omega[k, l] - tt + psi[k, l] - tt)
                out[f"pminus_{tag}"] = 0.5 * (omega[k, l] - psi[k, l])
        return out


def uninformative_manifold(
    potential: Potential, teacher_t: float, teacher_q: float, t_max: float = 1.0
) -> dict[str, float]:
    """Theorem 4's ODE (one student, one teacher index, L = 1) started on the uninformative
    manifold t₁ = 0, Ψ₁₂ = Ω₁₂ = 0 (i.i.d. student: Ψ₁₁ = 0, Ω₁₁ = 1; teacher t₂ =
    ``teacher_t``, Ψ₂₂ = Ω₂₂ = ``teacher_q``): max |p±₁₂| over t ≤ ``t_max`` and the
    cross-gradients g± = [∇_Ω Φ ± ∇_Ψ Φ]₁₂ at t = 0. P1 Cor. 7: the manifold is invariant
    exactly when g± vanish there (E σ'(Z) = 0, e.g. h2, h3), so p± stays 0."""
    psi0 = np.array([[0.0, 0.0], [0.0, teacher_q]])
    omega0 = np.array([[1.0, 0.0], [0.0, teacher_q]])
    _, A, B = potential.gradients(np.zeros(2), omega0, psi0)
    times = np.linspace(0.0, t_max, 11)
    obs = DirectODE(potential, (1,)).solve([0.0, teacher_t], psi0, omega0, times, rtol=1e-10)
    max_p = float(np.max(np.abs(np.concatenate([obs["pplus_12"], obs["pminus_12"]]))))
    return {
        "max_abs_p": max_p,
        "g_plus": float(A[0, 1] + B[0, 1]),
        "g_minus": float(A[0, 1] - B[0, 1]),
    }
