"""Closed forms of arXiv 2605.01199, Section 3 (population loss of Prop. 2.3).

- Thm 3.2: at θ = 0 (M = 0, Φ = 0), ℙ_i = 𝟙/d and 𝔸_i = πᵀ, so
  ∂L/∂M = −Σ_i π_i 𝔸_iᵀ(P_i − ℙ_i) = −π(πᵀP − 𝟙ᵀ/d) = −π(π − 𝟙/d)ᵀ (any P with πᵀP = πᵀ), and
  ∂L/∂Φ = 0 (the logits do not depend on Φ while M = 0).
- Stage I (Thm 3.2–3.3): the linearised (W₀, W₁) system Ẇ₀ = −(∂L/∂M)W₁ᵀ, Ẇ₁ = −W₀ᵀ(∂L/∂M)
  grows at the top singular value of ∂L/∂M, σ₁ = ‖π‖ ‖π − 𝟙/d‖.
- Prop. 3.3: on the condensation ray the flow reaches θ_c¹ with ℙ_i = πᵀ for every i (the
  unigram predictor), where L − L* = Σ_i π_i KL(P_i ‖ π).
"""

from __future__ import annotations

import numpy as np


def grad_m_at_origin(pi: np.ndarray) -> np.ndarray:
    """Thm 3.2: ∂L/∂M at θ = 0, −π(π − 𝟙/d)ᵀ (d×d, rank one)."""
    pi = np.asarray(pi, dtype=np.float64)
    return -np.outer(pi, pi - 1.0 / len(pi))


def stage1_rate(pi: np.ndarray) -> float:
    """σ₁ = ‖π‖ ‖π − 𝟙/d‖, the exponential growth rate of ‖W₀‖ (and ‖W₁‖) in Stage I."""
    pi = np.asarray(pi, dtype=np.float64)
    return float(np.linalg.norm(pi) * np.linalg.norm(pi - 1.0 / len(pi)))


def plateau_gap(pi: np.ndarray, P: np.ndarray) -> float:
    """Prop. 3.3: L(θ_c¹) − L* = Σ_i π_i KL(P_i ‖ π), the unigram predictor's excess loss."""
    pi = np.asarray(pi, dtype=np.float64)
    P = np.asarray(P, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(P > 0, P * (np.log(P) - np.log(pi)[None, :]), 0.0)
    return float(np.sum(pi * terms.sum(axis=1)))


# --- Thm 3.2: the attention gradient at the origin ----------------------------------------------


def grad_phi_at_origin(pi: np.ndarray) -> np.ndarray:
    """Thm 3.2 (Eq. 9): ∂L/∂Φ = 0 at θ = 0 — Prop. 2.3's ∂L/∂Φ = −Σ_i π_i e_i(P_i − ℙ_i)MᵀVar(𝔸_i)
    carries a factor M = 0."""
    d = len(np.asarray(pi))
    return np.zeros((d, d))


# --- Prop. 3.3: the second critical point θ_c¹ -------------------------------------------------


def unigram_direction(pi: np.ndarray) -> np.ndarray:
    """w = (log π − mean(log π))/‖π‖²: with M = π wᵀ and Φ = 0, every query's logits are
    𝔸_iM = πᵀM = ‖π‖²wᵀ, so ℙ_i = softmax(log π) = πᵀ (Prop. 3.3's unigram predictor; any π)."""
    pi = np.asarray(pi, dtype=np.float64)
    x = np.log(pi)
    return (x - x.mean()) / float(pi @ pi)


def is_two_valued(pi: np.ndarray, tol: float = 1e-12) -> bool:
    """π₁ > π₂ = … = π_d, the assumption of Prop. 3.3–3.6."""
    pi = np.asarray(pi, dtype=np.float64)
    return bool(pi[0] > pi[1] and np.ptp(pi[1:]) <= tol)


def kappa1(pi: np.ndarray) -> float:
    """Prop. 3.3 (Eq. 12): κ₁ > 0 with softmax(πᵀM) = π for M = κ₁² π(π − 𝟙/d)ᵀ/(‖π‖‖π − 𝟙/d‖),
    i.e. κ₁²‖π‖(π − 𝟙/d)/‖π − 𝟙/d‖ = log π + const — solvable only for π₁ > π₂ = … = π_d:
    κ₁² = ‖π − 𝟙/d‖ (log π₁ − log π₂)/(‖π‖(π₁ − π₂))."""
    pi = np.asarray(pi, dtype=np.float64)
    if not is_two_valued(pi):
        raise ValueError("Prop. 3.3's θ_c¹ (Eq. 12) needs π₁ > π₂ = … = π_d")
    u = np.linalg.norm(pi - 1.0 / len(pi))
    k2 = u * (np.log(pi[0]) - np.log(pi[1])) / (np.linalg.norm(pi) * (pi[0] - pi[1]))
    return float(np.sqrt(k2))


def critical_point_c1(
    pi: np.ndarray,
    m: int,
    m_k: int | None = None,
    rho: float | None = None,
    alpha: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """θ_c¹ (Prop. 3.3) for any π: W₀ = ρ(π/‖π‖)α₁ᵀ, W₁ = α₁vᵀ with v = ‖π‖w/ρ (w of
    :func:`unigram_direction`, so M = W₀W₁ = πwᵀ and ℙ_i = πᵀ), W_Q = W_K = 0.

    ``rho`` None: the balanced ρ² = ‖π‖‖w‖ (‖W₀‖ = ‖W₁‖, as gradient flow from a small init
    keeps W₀ᵀW₀ − W₁W₁ᵀ ≈ 0). For π₁ > π₂ = … = π_d this is Eq. 12 with ρ = κ₁ (w ∝ π − 𝟙/d).
    ``alpha``: unit α₁ ∈ ℝ^m (default e₁)."""
    pi = np.asarray(pi, dtype=np.float64)
    m_k = m if m_k is None else m_k
    w = unigram_direction(pi)
    npi = float(np.linalg.norm(pi))
    rho = float(np.sqrt(npi * np.linalg.norm(w))) if rho is None else float(rho)
    a1 = np.eye(m)[0] if alpha is None else np.asarray(alpha, dtype=np.float64)
    return {
        "W0": rho * np.outer(pi / npi, a1),
        "W1": np.outer(a1, npi * w / rho),
        "WQ": np.zeros((m, m_k)),
        "WK": np.zeros((m, m_k)),
    }


def _ab(pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a_i = π_i(log π_i + H(π)), b = Var(π)π = π∘π − ‖π‖²π (Var(α) = diag(α) − ααᵀ)."""
    pi = np.asarray(pi, dtype=np.float64)
    entropy = -float(pi @ np.log(pi))
    return pi * (np.log(pi) + entropy), pi * pi - float(pi @ pi) * pi


def grad_phi_at_c1(pi: np.ndarray, lam: float) -> np.ndarray:
    """∂L/∂Φ at θ_c¹ for the lazy chain P = λI + (1 − λ)𝟙πᵀ (Eq. 2): −(λ/‖π‖²) a bᵀ.

    From Prop. 2.3 with 𝔸_i = ℙ_i = πᵀ, P_i − πᵀ = λ(e_i − π)ᵀ and M = πwᵀ:
    row i = −π_iλ(w_i − w·π)πᵀVar(π), and ‖π‖²(w_i − w·π) = log π_i + H(π)."""
    pi = np.asarray(pi, dtype=np.float64)
    a, b = _ab(pi)
    return -(lam / float(pi @ pi)) * np.outer(a, b)


def attention_rate(pi: np.ndarray, lam: float, rho: float | None = None) -> float:
    """Prop. 3.4's c (Eq. 14: ΔẆ_Q = cα₁α₁ᵀΔW_K, ΔẆ_K = cα₁α₁ᵀΔW_Q) at θ_c¹ of
    :func:`critical_point_c1`: c = −(ρ²/‖π‖²)πᵀ(∂L/∂Φ)π = ρ²λ(π·a)(π·b)/‖π‖⁴ (any π; lazy chain).

    π·b = πᵀVar(π)π = Σπ³ − (Σπ²)² ≥ 0 and π·a = Σπ²(log π + H) ≥ 0, both 0 only for uniform π."""
    pi = np.asarray(pi, dtype=np.float64)
    if rho is None:
        rho = float(np.sqrt(np.linalg.norm(pi) * np.linalg.norm(unigram_direction(pi))))
    a, b = _ab(pi)
    return float(rho**2 * lam * (pi @ a) * (pi @ b) / float(pi @ pi) ** 2)


def attention_rate_paper(pi: np.ndarray, lam: float) -> float:
    """Prop. 3.4 as printed: c = λκ₁⁴‖π‖⁴_{Var(π)}/(‖π − 𝟙/d‖‖π‖³), reading ‖x‖²_A = xᵀAx, so
    ‖π‖⁴_{Var(π)} = (πᵀVar(π)π)². Equals :func:`attention_rate` at ρ = κ₁ for π₁ > π₂ = … = π_d
    (there π·a = κ₁²‖π‖(π·b)/‖π − 𝟙/d‖)."""
    pi = np.asarray(pi, dtype=np.float64)
    k = kappa1(pi)
    _, b = _ab(pi)
    return float(
        lam
        * k**4
        * float(pi @ b) ** 2
        / (np.linalg.norm(pi - 1.0 / len(pi)) * np.linalg.norm(pi) ** 3)
    )


# --- Prop. 2.3: the population gradients in (M, Φ) ---------------------------------------------


def population_grads(
    M: np.ndarray, Phi: np.ndarray, pi: np.ndarray, P: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Prop. 2.3: ∂L/∂M = −Σ_i π_i 𝔸_iᵀ(P_i − ℙ_i), ∂L/∂Φ = −Σ_i π_i e_i(P_i − ℙ_i)MᵀVar(𝔸_i),
    with 𝔸_ij ∝ π_j e^{Φ_ij}, ℙ_i = softmax(𝔸_iM), Var(α) = diag(α) − ααᵀ (float64 NumPy)."""
    pi, P = np.asarray(pi, np.float64), np.asarray(P, np.float64)
    logits = np.log(pi)[None, :] + np.asarray(Phi, np.float64)
    A = np.exp(logits - logits.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    z = A @ M
    Pm = np.exp(z - z.max(axis=1, keepdims=True))
    Pm /= Pm.sum(axis=1, keepdims=True)
    R = pi[:, None] * (P - Pm)  # rows π_i(P_i − ℙ_i)
    g_m = -A.T @ R
    v = R @ np.asarray(M).T  # rows π_i(P_i − ℙ_i)Mᵀ
    g_phi = -(A * v - A * np.sum(A * v, axis=1, keepdims=True))  # row i: v_i Var(𝔸_i)
    return g_m, g_phi
