"""Order parameters and word moments of given untied factors U_k, V_k ∈ R^{d×r_k} (float64
NumPy; all indices, students first): the finite-d state the untied theory starts from and moves
(arXiv 2609.03858 §4.1, Eqs. 26–27). Letters and words: :mod:`attndyn.models.aim.words`."""

from __future__ import annotations

import numpy as np

from attndyn.models.aim.observables import index_matrices, letters
from attndyn.models.aim.words import word_traces


def factors(student: dict, teacher: dict) -> tuple[list, list]:
    """Lists (U_k), (V_k) over all indices, students first, from the two sides of
    :func:`~attndyn.models.aim.theory.initial.initial_matrices` (untied, product teacher)."""
    U = [np.asarray(u, np.float64) for u in (*student["U"], *teacher["U"])]
    V = [np.asarray(v, np.float64) for v in (*student["V"], *teacher["V"])]
    return U, V


def letter_matrices(U: list, V: list) -> dict[str, np.ndarray]:
    """d×d matrices of every letter (M_k, M_kᵀ, A_k, B_k) of factors U_k, V_k (float64)."""
    side = {
        "U": [np.asarray(u, np.float64) for u in U],
        "V": [np.asarray(v, np.float64) for v in V],
    }
    return {name: m for name, (m, _) in letters(index_matrices(side)).items()}


def word_moments(mats: dict[str, np.ndarray], words: list[tuple[str, ...]]) -> np.ndarray:
    """μ_α = Tr(Z_1⋯Z_w)/d for each word (Eq. 26)."""
    return np.array(word_traces(mats, words), dtype=np.float64)


def order_parameters(U: list, V: list) -> dict[str, np.ndarray]:
    """m_k = Tr M_k/√d (K,), q⁽¹⁾_kl = Tr(M_k M_lᵀ)/d, q⁽²⁾_kl = Tr(M_k M_l)/d (K×K),
    t^A_k = Tr A_k/d, t^B_k = Tr B_k/d (K,), keys m, q1, q2, tA, tB."""
    d = U[0].shape[0]
    M = [u @ v.T for u, v in zip(U, V, strict=True)]
    K = len(M)
    return {
        "m": np.array([np.trace(x) for x in M]) / np.sqrt(d),
        "q1": np.array([[np.sum(M[k] * M[l]) / d for l in range(K)] for k in range(K)]),
        "q2": np.array([[np.sum(M[k] * M[l].T) / d for l in range(K)] for k in range(K)]),
        "tA": np.array([np.sum(u * u) for u in U]) / d,
        "tB": np.array([np.sum(v * v) for v in V]) / d,
    }


def psi_words(U: list, V: list, idx) -> np.ndarray:
    """P_kl = Tr[M_l (A_k + B_k)]/d for trainable k (0-based ``idx``), all l; since A_k + B_k
    is symmetric, μ_(M⁽ʳ⁾_l, B_k) + μ_(A_k, M⁽ʳ⁾_l) = P_kl for r = 1, 2, so Eq. 27 reads
    ψ_k = 2 Σ_l (a⁽¹⁾_kl + a⁽²⁾_kl) P_kl. Computed through r×r Gram matrices."""
    d = U[0].shape[0]
    P = np.zeros((len(idx), len(U)))
    for j, k in enumerate(idx):
        for l in range(len(U)):
            uu, uv = U[k].T @ U[l], U[k].T @ V[l]  # Tr(M_l A_k) = ⟨UₖᵀU_l, UₖᵀV_l⟩
            vu, vv = V[k].T @ U[l], V[k].T @ V[l]  # Tr(M_l B_k) = ⟨VₖᵀU_l, VₖᵀV_l⟩
            P[j, l] = (np.sum(uu * uv) + np.sum(vu * vv)) / d
    return P
