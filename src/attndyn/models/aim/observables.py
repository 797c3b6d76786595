"""AIM order parameters and trace moments, computed at record points from the d×d matrices.

For indices k, l (students first, then teachers), with S_k the index's matrix:

- t_k = Tr S_k / d,  q_kl = Tr(S_k S_l)/d,  p_kl = q_kl − t_k t_l (structural overlap, P1 §5);
- direct S (P1 App. E): Psi_kl = Tr(S_k S_l)/d, Omega_kl = Tr(S_k S_lᵀ)/d,
  pPsi = Psi − t t, pOmega = Omega − t t, pplus/pminus = (pOmega ± pPsi)/2;
- untied (P1 §4.1): m_k = Tr M_k/√d, q1_kl = Tr(M_k M_lᵀ)/d, q2_kl = Tr(M_k M_l)/d,
  qsym_kl = Tr((M_k + M_kᵀ)(M_l + M_lᵀ))/d (Fig. 3), tA_k = Tr(U Uᵀ)/d, tB_k = Tr(V Vᵀ)/d;
- per-head kinds (``head_params``): each kind's extras present, the pair ones for every pair,
  m_k, tA_k, tB_k for the product indices (untied students, product teachers) only;
- mu_<word> = Tr(Z_1 ⋯ Z_w)/d for words of degree 3..M over the letters {S_k, S_kᵀ} (tied: the
  S_k are symmetric; untied adds A_k, B_k), one per class under cyclic rotation and
  transpose-reversal. Degrees 1 and 2 are the t's and q's above.
"""

from __future__ import annotations

import itertools
from typing import Any

import jax.numpy as jnp

from attndyn.models.aim.words import canonical_words, word_traces


def index_matrices(side: dict | list[dict]) -> list[dict]:
    """d×d matrices of each stacked index on one side: {"S": S_k} plus "A", "B" for products.

    Sides: {"F": factors} (S = FFᵀ), {"Ssym": symmetric S}, {"S": general S}, {"U", "V"}, or a
    list of such blocks (one per head, ``head_params``) in index order."""
    if isinstance(side, list):
        return [m for block in side for m in index_matrices(block)]
    out = []
    if "F" in side:
        for f in side["F"]:
            out.append({"S": f @ f.T, "symmetric": True})
    elif "Ssym" in side:  # symmetric matrices given directly (theory's matrix flow)
        for s in side["Ssym"]:
            out.append({"S": s, "symmetric": True})
    elif "S" in side:
        for s in side["S"]:
            out.append({"S": s, "symmetric": False})
    else:
        for u, v in zip(side["U"], side["V"], strict=True):
            out.append({"S": u @ v.T, "A": u @ u.T, "B": v @ v.T, "symmetric": False})
    return out


def letters(mats: list[dict]) -> dict[str, tuple[Any, str]]:
    """Alphabet for moment words: name -> (matrix, name of its transpose); the matrices are
    those of ``mats`` (NumPy or JAX arrays)."""
    alphabet: dict[str, tuple[Any, str]] = {}
    for k, m in enumerate(mats, start=1):
        if m["symmetric"]:
            alphabet[f"{k}"] = (m["S"], f"{k}")
        else:
            alphabet[f"{k}"] = (m["S"], f"{k}T")
            alphabet[f"{k}T"] = (m["S"].T, f"{k}")
        if "A" in m:
            alphabet[f"A{k}"] = (m["A"], f"A{k}")
            alphabet[f"B{k}"] = (m["B"], f"B{k}")
    return alphabet


def observe(student, teacher, param: str | tuple[str, ...], moment_degree: int) -> dict:
    """All order parameters for one seed (see module docstring); ``param`` names the student's
    parameterisation, or a tuple of them for per-head ones (the extras of each kind present)."""
    kinds = {param} if isinstance(param, str) else set(param)
    mats = index_matrices(student) + index_matrices(teacher)
    d = mats[0]["S"].shape[0]
    n = len(mats)
    out: dict[str, jnp.ndarray] = {}
    t = [jnp.trace(m["S"]) / d for m in mats]
    for k in range(n):
        out[f"t_{k + 1}"] = t[k]
    for k, l in itertools.combinations_with_replacement(range(n), 2):
        sk, sl = mats[k]["S"], mats[l]["S"]
        tag = f"{k + 1}{l + 1}"
        q = jnp.sum(sk * sl.T) / d  # Tr(S_k S_l)/d
        out[f"q_{tag}"] = q
        out[f"p_{tag}"] = q - t[k] * t[l]
        if "direct" in kinds:
            omega = jnp.sum(sk * sl) / d  # Tr(S_k S_lᵀ)/d
            out[f"Psi_{tag}"] = q
            out[f"Omega_{tag}"] = omega
            p_psi, p_omega = q - t[k] * t[l], omega - t[k] * t[l]
            out[f"pPsi_{tag}"] = p_psi
            out[f"pOmega_{tag}"] = p_omega
            out[f"pplus_{tag}"] = 0.5 * (p_omega + p_psi)
            out[f"pminus_{tag}"] = 0.5 * (p_omega - p_psi)
        if "untied" in kinds:
            q1 = jnp.sum(sk * sl) / d
            out[f"q1_{tag}"] = q1
            out[f"q2_{tag}"] = q
            out[f"qsym_{tag}"] = 2.0 * (q1 + q)
    if "untied" in kinds:
        for k, m in enumerate(mats, start=1):
            if isinstance(param, str) or "A" in m:  # mixed heads: the product indices only
                out[f"m_{k}"] = jnp.trace(m["S"]) / jnp.sqrt(d)
            if "A" in m:
                out[f"tA_{k}"] = jnp.trace(m["A"]) / d
                out[f"tB_{k}"] = jnp.trace(m["B"]) / d
    out.update(moments(mats, moment_degree))
    return out


def moments(mats: list[dict], max_degree: int) -> dict:
    """mu_<w> = Tr(Z_1⋯Z_w)/d for canonical words of degree 3..max_degree (dot-joined names)."""
    alphabet = letters(mats)
    names = list(alphabet)
    transpose = {z: alphabet[z][1] for z in names}
    words = [w for n in range(3, max_degree + 1) for w in canonical_words(names, transpose, n)]
    values = word_traces({z: alphabet[z][0] for z in names}, words)
    return {"mu_" + ".".join(w): v for w, v in zip(words, values, strict=True)}


SUMMARY = ("loss", "t_1", "q_11", "q_12", "p_12", "pplus_12", "pminus_12", "m_1", "tA_1", "tB_1")
"""Observables ``attndyn simulate aim`` prints at the final time (those the run has)."""

OVERFLOW = 1e10
"""|value| marking a seed as diverged (:mod:`attndyn.models.base`): the order parameters and
moments are traces Tr(S_k⋯)/d of O(1) size at the default scales (a degree-w moment grows like
teacher_scale^w), and the test loss is O(q²); a seed beyond 1e10 has left the dynamics of P1."""

_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def _labels() -> dict[str, str]:
    """Axis labels (P1's symbols, observables.py) for indices 1..4 (students, then teachers)."""
    out = {"loss": "test loss", "time_fast": "fast time nα_d"}
    for k in range(1, 5):
        i = str(k).translate(_SUB)
        out |= {f"t_{k}": f"t{i} = Tr S{i}/d", f"m_{k}": f"m{i} = Tr M{i}/√d",
                f"tA_{k}": f"tᴬ{i} = Tr UUᵀ/d", f"tB_{k}": f"tᴮ{i} = Tr VVᵀ/d"}  # fmt: skip
        for m in range(k, 5):
            kl = f"{k}{m}".translate(_SUB)
            out |= {
                f"q_{k}{m}": f"q{kl} = Tr(S{i}S{str(m).translate(_SUB)})/d",
                f"p_{k}{m}": f"structural overlap p{kl} = q{kl} − t{i}t{str(m).translate(_SUB)}",
                f"pplus_{k}{m}": f"p⁺{kl} = (p^Ω + p^Ψ)/2",
                f"pminus_{k}{m}": f"p⁻{kl} = (p^Ω − p^Ψ)/2",
                f"Psi_{k}{m}": f"Ψ{kl}", f"Omega_{k}{m}": f"Ω{kl}",
                f"q1_{k}{m}": f"q¹{kl}", f"q2_{k}{m}": f"q²{kl}", f"qsym_{k}{m}": f"q^sym{kl}",
            }  # fmt: skip
    return out


LABELS = _labels()
"""Axis labels of the observables (:func:`attndyn.plot`)."""
