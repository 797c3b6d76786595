"""Factorisation as implicit learning-rate rescaling (our derivation, docs/circuits-theory.md §2).

The paper's claim (abstract of arXiv 2608.06776): under gradient flow, factorising a circuit
implicitly rescales its learning rate. The standard derivation (for equal rates it is the
balancedness result of Arora, Cohen & Hazan, arXiv 1802.06509, and Du, Hu & Lee, arXiv
1806.00900), with separate rates η_A, η_B:

Take W = A B (A: p×k, B: k×q), a loss L(W), G = ∂L/∂W. Gradient flow on the factors is

    dA/dt = −η_A G Bᵀ,        dB/dt = −η_B Aᵀ G,

so (product rule)

    dW/dt = (dA/dt) B + A (dB/dt) = −η_A G BᵀB − η_B A Aᵀ G          (the matrix operator)

and, since d(AᵀA)/dt = −η_A (B Gᵀ A + Aᵀ G Bᵀ) and d(BBᵀ)/dt = −η_B (Aᵀ G Bᵀ + B Gᵀ A),

    C = AᵀA/η_A − BBᵀ/η_B   is conserved (k×k).

For equal rates this is the familiar AᵀA − BBᵀ; with unequal rates AᵀA − BBᵀ drifts at the
rate −(η_A − η_B)(B Gᵀ A + Aᵀ G Bᵀ).

Closed forms in W alone:

- scalar (p = k = q = 1, W = a b): dW/dt = −(η_B a² + η_A b²) L'(W) and
  (η_B a² + η_A b²)² = (η_B a² − η_A b²)² + 4 η_A η_B a² b² = η_A² η_B² C² + 4 η_A η_B W², so the
  effective learning rate is √(η_A² η_B² C² + 4 η_A η_B W²) (= 2|W|√(η_A η_B) when balanced,
  C = 0): tiny at small init, growing with |W|;
- balanced matrices (C = 0): WWᵀ = A BBᵀ Aᵀ = (η_B/η_A)(AAᵀ)², so AAᵀ = √(η_A/η_B)(WWᵀ)^{1/2},
  likewise BᵀB = √(η_B/η_A)(WᵀW)^{1/2}, and
  dW/dt = −√(η_A η_B) [(WWᵀ)^{1/2} G + G (WᵀW)^{1/2}].

Consequence: at equal nominal rates a factorised OV circuit, whose effective rate
grows with |W_OV|, outruns a collapsed one.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = [
    "conserved",
    "equal_lr_conserved",
    "factor_velocity",
    "scalar_effective_lr",
    "psd_sqrt",
    "balanced_velocity",
    "balanced_factors",
    "factorised_gd",
]


def conserved(A, B, eta_a: float, eta_b: float):
    """C = AᵀA/η_A − BBᵀ/η_B for W = A B. For OV (W_OV = W_P W_V): A = W_P, B = W_V;
    for QK (W_QK = W_qᵀ W_k): A = W_qᵀ, B = W_k."""
    return A.T @ A / eta_a - B @ B.T / eta_b


def equal_lr_conserved(A, B):
    """AᵀA − BBᵀ: conserved only when η_A = η_B (the authors' code's balancedness check)."""
    return A.T @ A - B @ B.T


def factor_velocity(A, B, G, eta_a: float, eta_b: float):
    """dW/dt = −η_B A Aᵀ G − η_A G BᵀB under gradient flow on (A, B)."""
    return -eta_b * A @ A.T @ G - eta_a * G @ B.T @ B


def scalar_effective_lr(W, C, eta_a: float, eta_b: float):
    """Effective rate of a scalar product W = a b: √(η_A² η_B² C² + 4 η_A η_B W²), with
    C = a²/η_A − b²/η_B, so that dW/dt = −lr_eff · L'(W)."""
    W = np.asarray(W, dtype=np.float64)
    return np.sqrt(eta_a**2 * eta_b**2 * np.asarray(C) ** 2 + 4.0 * eta_a * eta_b * W**2)


def psd_sqrt(S: np.ndarray) -> np.ndarray:
    """Symmetric PSD square root by eigendecomposition (negative round-off eigenvalues → 0)."""
    S = 0.5 * (S + S.T)
    w, V = np.linalg.eigh(S)
    return (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T


def balanced_velocity(W: np.ndarray, G: np.ndarray, eta_a: float, eta_b: float) -> np.ndarray:
    """dW/dt = −√(η_A η_B) [(WWᵀ)^{1/2} G + G (WᵀW)^{1/2}] on the balanced set C = 0."""
    return -np.sqrt(eta_a * eta_b) * (psd_sqrt(W @ W.T) @ G + G @ psd_sqrt(W.T @ W))


def balanced_factors(
    W: np.ndarray, eta_a: float, eta_b: float, Q: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) with A B = W and C = 0: W = U Σ Vᵀ, A = (η_A/η_B)^{1/4} U Σ^{1/2} Q,
    B = (η_B/η_A)^{1/4} Qᵀ Σ^{1/2} Vᵀ for any orthogonal Q (k = rank of the thin SVD)."""
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    k = len(s)
    Q = np.eye(k) if Q is None else Q
    c = (eta_a / eta_b) ** 0.25
    A = c * (U * np.sqrt(s)) @ Q
    B = (Q.T * np.sqrt(s)) @ Vt / c
    return A, B


def factorised_gd(
    loss_w: Callable,
    A0,
    B0,
    eta_a: float,
    eta_b: float,
    steps: int,
    record_every: int,
):
    """Plain gradient descent on (A, B) for L(A B) in JAX (float64 if x64 is enabled):
    A ← A − η_A ∂L/∂A, B ← B − η_B ∂L/∂B. Returns (A, B) stacked at steps 0, record_every,
    2·record_every, … ≤ steps (the flow time of step k is t = k)."""
    import jax
    import jax.numpy as jnp

    grad = jax.grad(lambda A, B: loss_w(A @ B), argnums=(0, 1))

    def step(carry, _):
        A, B = carry
        gA, gB = grad(A, B)
        return (A - eta_a * gA, B - eta_b * gB), None

    def block(carry, _):
        carry, _ = jax.lax.scan(step, carry, None, length=record_every)
        return carry, carry

    n_rec = steps // record_every
    carry = (jnp.asarray(A0), jnp.asarray(B0))
    _, (As, Bs) = jax.jit(lambda c: jax.lax.scan(block, c, None, length=n_rec))(carry)
    As = jnp.concatenate([carry[0][None], As])
    Bs = jnp.concatenate([carry[1][None], Bs])
    return np.asarray(As), np.asarray(Bs)
