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
