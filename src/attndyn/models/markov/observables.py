"""Observables of the focus–dilution family (arXiv 2605.01199, Sections 3–4, Appendix E.2).

All are functions of the parameters and the data law (π, P) — for text, the corpus's unigram π̂
and bigram P̂ — evaluated in the population limit of Prop. 2.3:

- ``loss`` L(θ) and ``loss_gap`` L − L*, L* = −Σ_i π_i Σ_y P_iy log P_iy;
- ``kl_uniform``, ``kl_unigram``, ``kl_bigram``: Σ_i π_i KL(ref_i ‖ ℙ_i) against the uniform
  law, π and P_i (Edelman et al. 2024's phase observables; kl_bigram = loss_gap);
- ``erank_W0``, ``erank_W1``, ``erank_WQK``: entropy effective rank exp(H(σ/Σσ)) (Roy & Vetterli
  2007) — 1 for a rank-one matrix, r for r equal singular values;
- ``sv_ratio_W0`` σ₂(W₀)/σ₁(W₀): the size of W₀ off its rank-one manifold (Thm 3.9's
  transverse direction, experiments/markov/symmetry.py), and ``sv_ratio{k}_W0`` = σ_k/σ₁ for
  k = 3 … min(d, m, :data:`MAX_SV`): with σ₂/σ₁ they give W₀'s rank at any threshold a,
  #{k: σ_k ≥ a σ₁} (:func:`attndyn.models.markov.stages.rank_signal`), which unlike the entropy
  rank does not count directions the flow has not trained (docs/markov.md, "Observables");
- ``stable_rank_W0`` ‖W₀‖²_F/σ₁²: 1 + Σ_{k≥2}(σ_k/σ₁)², ≈ 1 when the untrained bulk is small
  against σ₁ whatever its dimension;
- ``gradM_sv1``: the top singular value of G = ∂L/∂M = 𝔸ᵀ diag(π)(ℙ − P) (Prop. 2.3), the
  growth rate of a perturbation off the rank-one manifold (docs/markov.md, "Symmetry and
  restart");
- for tracked tokens i, j: ``loss_gap_i`` = KL(P_i ‖ ℙ_i), the excess loss of query group S_i
  (Appendix E.1 groups sequences by X[−2] = i; Fig. 2A's per-group loss curves; Σ_i π_i
  ``loss_gap_i`` = ``loss_gap`` over all i), ``attn_i_j`` = 𝔸_ij, ``entropy_i`` = H(𝔸_i)
  (nats), ``norm_i`` = ‖W₀[i]‖, ``gamma_i`` = (W₀ v₁)_i with v₁ W₀'s top right singular
  vector (sign: Σπ_iγ_i ≥ 0), ``cos_i_j`` the cosine of rows i and j of W₀ (Appendix E.2's
  condensation heatmap);
- ``entropy_mean`` Σ_i π_i H(𝔸_i);
- ``align_pi`` |cos(u₁, π)|, u₁ W₀'s top left singular vector (Stage I: W₀ → (π/‖π‖)α₁ᵀ);
  ``align_phi`` cos_F(Φ, ππᵀ) (Stage II: Φ/‖Φ‖ → ππᵀ/‖π‖²);
- ``thm37``: (1 − π₁)γ₁ − (d − 1)π₁ γ̄_{i≠1} (Thm 3.7's mass-redistribution combination, γ̄ the
  mean of the others), ``phi_norm`` ‖Φ‖_F, ``m_norm`` ‖M‖_F.

SVDs go through :mod:`attndyn.core.linalg` (one matrix per LAPACK call: batched calls can hang
jaxlib's CPU thread pool).
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.linalg import effective_rank, singular_values, thin_svd
from attndyn.errors import InputError
from attndyn.models.markov.config import MarkovConfig
from attndyn.models.markov.model import (
    Arch,
    Params,
    population_attention,
    population_logits,
    shorthands,
)


def row_entropy(a: jax.Array) -> jax.Array:
    """H(a_i) = −Σ_j a_ij log a_ij per row (nats)."""
    return -jnp.sum(jnp.where(a > 0, a * jnp.log(jnp.where(a > 0, a, 1.0)), 0.0), axis=1)


def _kl_rows(ref: jax.Array, logp: jax.Array) -> jax.Array:
    safe = jnp.where(ref > 0, ref, 1.0)
    return jnp.sum(jnp.where(ref > 0, ref * (jnp.log(safe) - logp), 0.0), axis=1)


def _cos(u: jax.Array, v: jax.Array) -> jax.Array:
    den = jnp.linalg.norm(u) * jnp.linalg.norm(v)
    return jnp.sum(u * v) / jnp.maximum(den, jnp.finfo(u.dtype).tiny)


def observe(
    params: Params,
    pi: jax.Array,
    P: jax.Array,
    entropy_star: float,
    track: Sequence[int],
    arch: Arch = Arch(),
) -> dict[str, jax.Array]:
    """The observables above at one record point (scalars)."""
    sh = shorthands(params, arch)
    W0 = params["W0"]
    A = population_attention(sh["Phi"], pi)
    logp = jax.nn.log_softmax(population_logits(params, pi, arch), axis=1)
    loss = -jnp.sum(pi[:, None] * P * logp)
    d = pi.shape[0]
    uniform = jnp.full((d, d), 1.0 / d, pi.dtype)
    out = {
        "loss": loss,
        "loss_gap": loss - entropy_star,
        "kl_uniform": jnp.sum(pi * _kl_rows(uniform, logp)),
        "kl_unigram": jnp.sum(pi * _kl_rows(jnp.broadcast_to(pi, (d, d)), logp)),
        "kl_bigram": jnp.sum(pi * _kl_rows(P, logp)),
        "erank_W0": effective_rank(singular_values(W0)),
        "erank_W1": effective_rank(singular_values(params["W1"])),
        "erank_WQK": effective_rank(singular_values(sh["WQK"])),
        "phi_norm": jnp.linalg.norm(sh["Phi"]),
        "m_norm": jnp.linalg.norm(sh["M"]),
    }
    H = row_entropy(A)
    out["entropy_mean"] = jnp.sum(pi * H)
    grad_m = A.T @ (pi[:, None] * (jnp.exp(logp) - P))  # ∂L/∂z_i = π_i(ℙ_i − P_i), z = 𝔸M
    out["gradM_sv1"] = singular_values(grad_m)[0]
    u, sv, vt = thin_svd(W0)
    second = sv[1] if sv.shape[0] > 1 else jnp.zeros((), sv.dtype)  # m = 1: rank one always
    top = jnp.maximum(sv[0], jnp.finfo(sv.dtype).tiny)
    out["sv_ratio_W0"] = second / top
    for k in range(3, min(sv.shape[0], MAX_SV) + 1):
        out[f"sv_ratio{k}_W0"] = sv[k - 1] / top
    out["stable_rank_W0"] = jnp.sum(sv**2) / top**2
    gamma = W0 @ vt[0]
    gamma = jnp.where(jnp.sum(pi * gamma) < 0, -gamma, gamma)
    out["align_pi"] = jnp.abs(_cos(u[:, 0], pi))
    out["align_phi"] = _cos(sh["Phi"], jnp.outer(pi, pi))
    out["thm37"] = (1.0 - pi[0]) * gamma[0] - (d - 1) * pi[0] * jnp.mean(gamma[1:])
    norms = jnp.linalg.norm(W0, axis=1)
    unit = W0 / jnp.maximum(norms, jnp.finfo(W0.dtype).tiny)[:, None]
    cos = unit @ unit.T
    kl_rows = _kl_rows(P, logp)
    for i in track:
        out[f"loss_gap_{i}"] = kl_rows[i]
        out[f"entropy_{i}"] = H[i]
        out[f"norm_{i}"] = norms[i]
        out[f"gamma_{i}"] = gamma[i]
        for j in track:
            out[f"attn_{i}_{j}"] = A[i, j]
            if j > i:
                out[f"cos_{i}_{j}"] = cos[i, j]
    return out


OBSERVABLES_VERSION = 2
"""2: ``sv_ratio{k}_W0``, ``stable_rank_W0`` and ``loss_gap_i`` added (2026-12-04); stored runs
without them are recomputed (:mod:`attndyn.models.base`)."""

MAX_SV = 8
"""Largest k whose σ_k/σ₁ is recorded (``sv_ratio{k}_W0``)."""

SUMMARY = ("loss_gap", "erank_W0", "erank_WQK", "entropy_mean", "align_pi", "align_phi")
"""Observables ``attndyn simulate markov`` prints at the final time."""
LABELS = {
    "loss": "population loss L(θ)",
    "loss_gap": "loss gap L − L*",
    "kl_uniform": "Σπ_i KL(uniform ‖ ℙ_i)",
    "kl_unigram": "Σπ_i KL(π ‖ ℙ_i)",
    "kl_bigram": "Σπ_i KL(P_i ‖ ℙ_i)",
    "erank_W0": "effective rank of W₀",
    "erank_W1": "effective rank of W₁",
    "erank_WQK": "effective rank of W_QK",
    "sv_ratio_W0": "σ₂(W₀)/σ₁(W₀)",
    "stable_rank_W0": "stable rank ‖W₀‖²_F/σ₁²",
    **{f"sv_ratio{k}_W0": f"σ_{k}(W₀)/σ₁(W₀)" for k in range(3, MAX_SV + 1)},
    "gradM_sv1": "σ₁(∂L/∂M)",
    "entropy_mean": "mean attention entropy Σπ_i H(𝔸_i) (nats)",
    "align_pi": "|cos(u₁, π)|",
    "align_phi": "cos_F(Φ, ππᵀ)",
    "thm37": "(1 − π₁)γ₁ − (d − 1)π₁γ̄ (Thm 3.7)",
    "phi_norm": "‖Φ‖_F",
    "m_norm": "‖M‖_F",
}
"""Axis labels of the observables (:func:`attndyn.plot`)."""

OVERFLOW = 1e10
"""|value| marking a seed as diverged (:mod:`attndyn.models.base`): effective ranks lie in
[1, m], entropies in [0, log T], alignments in [−1, 1] and the loss gap is O(log m)."""


def tracked_tokens(config: MarkovConfig, pi: np.ndarray) -> tuple[int, ...]:
    """``config.track``, else every token when d ≤ 8, else the 3 most frequent and the 3 around
    the median frequency (Section 4.2 tracks the top 3 and 3 medium-frequency tokens)."""
    d = len(pi)
    if config.track is not None:
        bad = [t for t in config.track if not 0 <= t < d]
        if bad:
            raise InputError(
                f"invalid value for 'track': token ids must be in [0, {d}) (got {bad})"
            )
        return tuple(config.track)
    if d <= 8:
        return tuple(range(d))
    order = np.argsort(-pi, kind="stable")
    mid = d // 2
    return tuple(int(t) for t in (*order[:3], *order[mid - 1 : mid + 2]))
