"""The measurements of ``aim-landscape`` (P1 = arXiv 2609.03858, Thm 1, Lemma 10): for fixed
matrices, the finite-d population loss E_x L(G(x)) by Monte Carlo over fresh tokens, and the
Gaussian potential Φ of the same matrices' order parameters with its Edgeworth term.

Monte Carlo with control variates. The forms' first three joint moments are known exactly at every
d: mean 0 (centred tied forms, P1 Cor. 5, Eq. 80), covariance C_ii'C_jj'Ω + C_ij'C_ji'Ψ (Eqs. 71,
79: Thm 1's covariance holds at every d) and third cumulants κ (Eq. 75 with m = 3: the Wick
cycles of :class:`~attndyn.models.aim.theory.population.ThirdCumulants`). So every polynomial P
of degree ≤ 3 in the forms has a known mean E_x P, and

    E_x L = E_x [L − βᵀ(P − E_x P)]       for any β,

with β the least-squares coefficients of L on P over the same draws (the regression estimator,
Owen 2013 §8.9; its bias is O(1/N)). P spans the monomials of degree 1–3 of the forms' reduced
coordinates Y (the directions the loss depends on, :func:`~attndyn.models.aim.theory.potential.
loss_basis`). The raw sample mean over the same tokens is kept beside it.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.gaussian import antithetic
from attndyn.models.aim import model as aim_model
from attndyn.models.aim.config import AIMConfig
from attndyn.models.aim.theory.initial import initial_matrices
from attndyn.models.aim.theory.population import (
    ThirdCumulants,
    order_parameters,
    side_matrices,
)
from attndyn.models.aim.theory.potential import POTENTIAL_FIELDS, Potential, potential_for

ARCHS: dict[str, dict[str, Any]] = {
    "h1": {"output": "softmax", "heads": 1},
    "h2": {"output": "softmax", "heads": 2},
    "two-layer": {"output": "softmax", "layers": 1, "heads": 1},
}
"""The architectures (tied, L = 2): one softmax head, two heads, two softmax layers."""

MC_KEY = 7_919
"""Offset of the token stream's key (seed s draws its tokens from PRNGKey(MC_KEY + s), folded
with d): the same tokens for every architecture of a seed and d."""


def arch_config(base: AIMConfig, arch: str, d: int) -> AIMConfig:
    """``base`` at dimension ``d`` with the architecture's fields."""
    values = {k: getattr(base, k) for k in AIMConfig.model_fields}
    return AIMConfig(**{**values, **ARCHS[arch], "d": d})


def mirrored_potential(config: AIMConfig, log2_qmc: int) -> Potential:
    """Φ of ``config``'s loss on mirrored nodes (:func:`~attndyn.core.gaussian.antithetic`;
    Gauss–Hermite where ≥ 8 nodes per axis fit in 2^log2_qmc, which is symmetric already)."""
    pot = potential_for(config, log2_qmc=log2_qmc)
    return dataclasses.replace(pot, rule=antithetic(pot.rule), _jit={})


def centred_flags(config: AIMConfig, potential: Potential) -> np.ndarray:
    """Which indices (students then teachers) have centred forms (the simulator's convention)."""
    kinds = config.student_kinds + config.teacher_kinds
    return np.array([k not in ("untied", "product") for k in kinds])


def moments(config: AIMConfig, potential: Potential, student: dict, teacher: dict):
    """(m, Ω, Ψ, κ) of the stacked matrices (students then teachers): Thm 1's order parameters
    (Eq. 4) and the forms' exact third cumulants over the potential's kept entries."""
    with jax.enable_x64(True):
        mats = jnp.concatenate(
            [
                side_matrices(jax.tree.map(jnp.asarray, student)),
                side_matrices(jax.tree.map(jnp.asarray, teacher)),
            ]
        )
        m, omega, psi = order_parameters(mats, centred_flags(config, potential))
        symmetric = all(k in ("tied", "wishart", "identity") for k in
                        config.student_kinds + config.teacher_kinds)  # fmt: skip
        kappa = ThirdCumulants(potential, symmetric)(mats)
        return tuple(np.asarray(a, np.float64) for a in (m, omega, psi, kappa))


def theory_values(
    potential: Potential, m, omega, psi, kappa, psi_factor: float = 1.0, edgeworth: float = 1.0
) -> tuple[float, float]:
    """(Φ, Φ₃): Theorem 1's Gaussian potential Φ(m, Ω, ψ_f·Ψ) and Φ₃ = Φ plus the Edgeworth term
    with the cumulants scaled by ``edgeworth`` (the term is linear in κ). The factors are 1 for
    the theory; the controls set ψ_f = 0 (the C_ij'C_ji'Ψ covariance dropped) or a wrong
    Edgeworth factor."""
    psi = psi_factor * np.asarray(psi)
    kappa = np.asarray(kappa)
    # Φ is the same compiled quadrature with κ = 0 (the Hermite weight is then 1): one compile
    phi = potential.value_edgeworth(m, omega, psi, np.zeros_like(kappa))
    phi3 = potential.value_edgeworth(m, omega, psi, edgeworth * kappa)
    return phi, phi3


def _monomials(r: int) -> list[tuple[int, ...]]:
    """Index tuples of the monomials of degree 1, 2, 3 in r variables (sorted indices)."""
    out: list[tuple[int, ...]] = []
    for deg in (1, 2, 3):
        out += list(itertools.combinations_with_replacement(range(r), deg))
    return out


def monomial_means(mons: list[tuple[int, ...]], cov: np.ndarray, kappa: np.ndarray) -> np.ndarray:
    """E of each monomial of a centred vector with covariance ``cov`` and third cumulants
    ``kappa``: 0, cov_ab, κ_abc (for a centred vector the third moment is the third cumulant)."""
    out = np.zeros(len(mons))
    for n, mon in enumerate(mons):
        if len(mon) == 2:
            out[n] = cov[mon]
        elif len(mon) == 3:
            out[n] = kappa[mon]
    return out


def reduction(potential: Potential) -> np.ndarray:
    """The rows B (r × n_kept) of the reduced coordinates Y = B G_kept (identity if the loss
    depends on every kept entry)."""
    n = len(potential.keep)
    return np.eye(n) if potential.basis is None else np.asarray(potential.basis)


_KERNELS: dict = {}


def _kernel(potential: Potential, L: int, d: int, chunk: int, n_mons: int, idx: tuple):
    """The compiled sums of one chunk of token draws (memoised: one compile per potential, d)."""
    key = (id(potential), L, d, chunk, idx)
    if key in _KERNELS:
        return _KERNELS[key]
    if len(_KERNELS) > 64:
        _KERNELS.clear()
    keep = np.asarray(potential.keep)
    cols = [np.asarray(c) for c in idx]

    def features(y):
        ones = jnp.ones((y.shape[0], 1), y.dtype)
        ext = jnp.concatenate([y, ones], axis=1)  # index −1: the constant 1
        return ext[:, cols[0]] * ext[:, cols[1]] * ext[:, cols[2]]

    @jax.jit
    def one(k, s_side, t_side, basis, means):
        eye = jnp.eye(L, dtype=jnp.float64)
        x = jax.random.normal(k, (chunk, L, d), jnp.float64)
        g = jnp.concatenate(
            [aim_model.forms(s_side, x, eye, True), aim_model.forms(t_side, x, eye, True)],
            axis=1,
        )
        loss = jax.vmap(potential.loss)(g)
        odd = 0.5 * (loss - jax.vmap(potential.loss)(-g))  # the same tokens, G → −G
        y = g.reshape(chunk, -1)[:, keep] @ basis.T
        p = features(y) - means
        v = jnp.stack([loss, odd], axis=1)
        return jnp.sum(v, axis=0), v.T @ v, jnp.sum(p, axis=0), p.T @ p, p.T @ v

    _KERNELS[key] = one
    return one


def mc_population_loss(
    config: AIMConfig,
    potential: Potential,
    student: dict,
    teacher: dict,
    moments_: tuple,
    key: jax.Array,
    samples: int,
    chunk: int = 4096,
) -> dict[str, float]:
    """E_x L(G(x)) over ``samples`` fresh token draws X ~ N(0, C ⊗ I_d) (the simulator's forms
    and loss): the raw sample mean (``mc_raw``) and the regression estimator with the degree-1–3
    monomials of the reduced forms as control variates (``mc``, module docstring), each with its
    standard error (``*_se``); and the same for the odd part ½E_x[L(G) − L(−G)] (``odd``, control
    variates: the odd monomials), whose Gaussian value is 0."""
    if config.param != "tied" or config.mixed or config.C is not None:
        raise ValueError("mc_population_loss: tied students and C = I only (centred forms)")
    m, omega, psi, kappa = moments_
    basis = reduction(potential)
    with jax.enable_x64(True):
        keep = np.asarray(potential.keep)
        cov_kept = np.asarray(potential.covariance(omega, psi))[keep][:, keep]
    cov_y = basis @ cov_kept @ basis.T
    kappa_y = np.einsum("ai,bj,ck,ijk->abc", basis, basis, basis, kappa)
    mons = _monomials(basis.shape[0])
    means = monomial_means(mons, cov_y, kappa_y)
    idx = [np.array([mon[i] if i < len(mon) else -1 for mon in mons]) for i in range(3)]
    kernel = _kernel(potential, config.L, config.d, chunk, len(mons), tuple(map(tuple, idx)))
    n_chunks = max(2, -(-samples // chunk))
    with jax.enable_x64(True):
        args = (
            jax.tree.map(jnp.asarray, student),
            jax.tree.map(jnp.asarray, teacher),
            jnp.asarray(basis),
            jnp.asarray(means),
        )
        acc: list[np.ndarray] | None = None
        for c in range(n_chunks):
            sums = [np.asarray(a) for a in kernel(jax.random.fold_in(key, c), *args)]
            acc = sums if acc is None else [a + b for a, b in zip(acc, sums, strict=True)]
    assert acc is not None
    n = n_chunks * chunk
    s_v, s_vv, s_p, s_pp, s_pv = acc
    odd_mons = np.array([len(mon) % 2 == 1 for mon in mons])
    out: dict[str, float] = {"draws": float(n)}
    for j, name, use in ((0, "mc", np.ones(len(mons), bool)), (1, "odd", odd_mons)):
        mean_v, mean_p = s_v[j] / n, s_p[use] / n
        var_v = s_vv[j, j] / n - mean_v**2
        cov_pp = s_pp[np.ix_(use, use)] / n - np.outer(mean_p, mean_p)
        cov_pv = s_pv[use, j] / n - mean_p * mean_v
        beta = np.linalg.lstsq(cov_pp, cov_pv, rcond=1e-12)[0]
        resid = max(var_v - cov_pv @ beta, 0.0)
        out[f"{name}_raw"] = float(mean_v)
        out[f"{name}_raw_se"] = float(np.sqrt(max(var_v, 0.0) / n))
        out[name] = float(mean_v - beta @ mean_p)
        out[f"{name}_se"] = float(np.sqrt(resid / n))
    return out


_POTENTIALS: dict = {}


def cached_potential(config: AIMConfig, log2_qmc: int) -> Potential:
    """:func:`mirrored_potential` memoised on the fields the loss reads (the theory's own
    memo's, :data:`attndyn.models.aim.theory.potential.POTENTIAL_FIELDS`: Φ does not depend
    on d)."""
    key = (json.dumps([getattr(config, f) for f in POTENTIAL_FIELDS]), log2_qmc)
    if key not in _POTENTIALS:
        _POTENTIALS[key] = mirrored_potential(config, log2_qmc)
    return _POTENTIALS[key]


def even_loss(arch: str, L: int) -> bool:
    """Whether the architecture's loss is even, L(−G) = L(G): a sum of row-wise softmax heads
    with two tokens, y(−G) = H − y(G) (softmax(−a, −b) = 1 − softmax(a, b) entrywise), so
    y − y* changes sign and the squared error does not."""
    return ARCHS[arch]["output"] == "softmax" and ARCHS[arch].get("layers", 0) == 0 and L == 2


MC_NODES = 8
"""Node budget 2^m of the potential the Monte Carlo uses (only its loss and reduced basis)."""


def seed_point(
    base: AIMConfig,
    arch: str,
    d: int,
    seed: int,
    samples: int | None,
    log2_qmc: int | None,
    chunk: int = 4096,
    psi_factor: float = 1.0,
    edgeworth: float = 1.0,
    coarse: bool = True,
) -> dict[str, float]:
    """One seed's initial matrices at one d: the Monte Carlo population loss (``samples`` given;
    :func:`mc_population_loss`), or the theory (``log2_qmc`` given): Φ and Φ₃ at 2^log2_qmc
    mirrored nodes (``phi``, ``phi3``) and, with ``coarse``, at a quarter as many
    (``phi_coarse``, ``phi3_coarse``), whose difference bounds the quadrature error of the finer
    rule from above (a QMC rule's error falls at least like 1/n)."""
    config = arch_config(base, arch, d)
    student, teacher = initial_matrices(config, seed)
    if samples is not None:
        pot = cached_potential(config, MC_NODES)
        mom = moments(config, pot, student, teacher)
        key = jax.random.fold_in(jax.random.PRNGKey(MC_KEY + seed), d)
        return mc_population_loss(config, pot, student, teacher, mom, key, samples, chunk)
    assert log2_qmc is not None
    out = {}
    budgets = (("", log2_qmc), ("_coarse", log2_qmc - 2)) if coarse else (("", log2_qmc),)
    for suffix, m in budgets:
        pot = cached_potential(config, m)
        m_, omega, psi, kappa = moments(config, pot, student, teacher)
        out[f"phi{suffix}"], out[f"phi3{suffix}"] = theory_values(
            pot, m_, omega, psi, kappa, psi_factor, edgeworth
        )
    return out


def mp_top_moment(ratio: float, fraction: float) -> float:
    """∫ λ² dμ over the top ``fraction`` of the Marchenko–Pastur law μ of ratio y = ``ratio`` and
    mean 1 (Marchenko & Pastur 1967): the limit of (1/r*) Σ_{i ≤ fraction·r*} λ_i² over the
    nonzero eigenvalues of the Wishart teacher W*W*ᵀ (W* ∈ R^{d×r*}, N(0, 1/d) entries, y =
    r*/d), density √((b − λ)(λ − a))/(2πyλ) on [a, b] = [(1 − √y)², (1 + √y)²]."""
    from scipy.integrate import quad
    from scipy.optimize import brentq

    a, b = (1 - np.sqrt(ratio)) ** 2, (1 + np.sqrt(ratio)) ** 2

    def density(x: float) -> float:
        return float(np.sqrt(max((b - x) * (x - a), 0.0)) / (2 * np.pi * ratio * x))

    if fraction >= 1:
        return float(quad(lambda x: x * x * density(x), a, b)[0])
    edge = brentq(lambda t: quad(density, t, b)[0] - fraction, a, b, xtol=1e-13)
    return float(quad(lambda x: x * x * density(x), edge, b)[0])


def inf_width_constrained(
    potential: Potential, top: float, q22: float, time: float = 100.0, rtol: float = 1e-6
) -> dict:
    """inf Φ over the order parameters (q₁₁, q₁₂) a PSD student of rank r can realise against a
    fixed teacher of second moment q₂₂ = Tr(S₂²)/d (P1 Cor. 1, Eq. 6; L = 2 tokens, C = I,
    centred tied forms, so Ω = Ψ = q): by von Neumann's trace inequality q₁₂ ≤ √(q₁₁·top), with
    ``top`` = (1/d) Σ_{i ≤ r} λ_i(S₂)², the bound reached by S₁ ∝ the top-r part of S₂. Φ
    decreases in q₁₂ at the optimum, so the infimum lies on that boundary: a minimisation over
    s = q₁₁ alone, by the gradient flow ds/dt = −dΦ/ds (central differences, step 10⁻⁶) to
    ``time`` (:func:`attndyn.core.ode.integrate`), from s = top (the value at the end moves by
    < 10⁻⁸ between rtol 10⁻⁹, time 400 and the defaults). ``top = q₂₂`` drops the width
    constraint (Cauchy–Schwarz only): the student can reach S₂ itself."""
    from attndyn.core.ode import integrate

    def phi(s: float) -> float:
        s = max(s, 1e-12)
        q12 = np.sqrt(s * top)
        q = np.array([[s, q12], [q12, q22]])
        return potential.value(np.zeros(2), q, q)

    def rhs(_t, y):
        h = 1e-6
        return np.array([-(phi(y[0] + h) - phi(y[0] - h)) / (2 * h)])

    s = float(integrate(rhs, np.array([top]), np.array([0.0, time]), rtol=rtol)[0, -1])
    return {"phi": phi(s) + potential.constant, "q11": s}


def cor1_point(
    config: AIMConfig,
    seed: int,
    flow_time: float,
    flow_log2_qmc: int,
    samples: int,
    chunk: int = 4096,
) -> dict[str, float]:
    """One seed of P1 Cor. 1 at finite d: the tied student (rank r = ρd) minimised over its own
    factor W by the gradient flow of the population potential Φ_d (:class:`~attndyn.models.aim.
    theory.population.PopulationFlow`, 2^flow_log2_qmc nodes) from the seed's initial W to
    ``flow_time``, and the finite-d population loss E_x L at that minimiser by Monte Carlo
    (:func:`mc_population_loss`, ``mc``); beside it Φ_d there (``phi_min``) and the teacher's
    order parameters (``q22``, ``top``: (1/d) Σ of its r largest squared eigenvalues)."""
    from attndyn.models.aim.theory.population import flow_for

    student, teacher = initial_matrices(config, seed)
    flow = flow_for(config, potential_for(config, log2_qmc=flow_log2_qmc), teacher, cumulants=2)
    end = flow.solve(student, np.array([0.0, flow_time]), rtol=1e-6)[-1]
    pot = cached_potential(config, MC_NODES)
    mom = moments(config, pot, end, teacher)
    key = jax.random.fold_in(jax.random.PRNGKey(MC_KEY + seed), config.d)
    mc = mc_population_loss(config, pot, end, teacher, mom, key, samples, chunk)
    w = np.asarray(teacher["F"])[0]
    lam = np.sort(np.linalg.eigvalsh(w @ w.T))[::-1]
    r = np.asarray(student["F"]).shape[-1]
    q22, top = float(np.sum(lam**2) / config.d), float(np.sum(lam[:r] ** 2) / config.d)
    return {
        "mc": mc["mc"],
        "mc_se": mc["mc_se"],
        "phi_min": flow.value(end),
        # the same potential's infimum over this teacher's realisable set (von Neumann's bound)
        "phi_bound": inf_width_constrained(flow.potential, top, q22)["phi"],
        "q22": q22,
        "top": top,
    }
