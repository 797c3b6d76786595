"""Circuit and attention observables of the circuits toy (docs/circuits.md, "Observables").

Circuits (computed at record points from the parameters):

- W_QK and W_OV are kept as products A B (A = W_qᵀ, B = W_k; A = W_P, B = W_V) and analysed
  through their small core, as TransformerLens' FactoredMatrix: A = Q_A R_A, Bᵀ = Q_B R_B (QR),
  so A B = Q_A (R_A R_Bᵀ) Q_Bᵀ and the singular values of A B are those of the k×k core
  R_A R_Bᵀ (k the inner dimension). Collapsed circuits use their matrix directly.
  ``{c}_sv1..`` top singular values, ``{c}_fro`` = ‖W‖_F, ``{c}_erank`` = the entropy effective
  rank exp(−Σ p_i log p_i), p_i = σ_i/Σσ (Roy & Vetterli 2007).
- ``{c}_balance`` = ‖AᵀA − BBᵀ‖_F and ``{c}_balance_rel`` = that over max(‖AᵀA‖_F, ‖BBᵀ‖_F)
  (the notebooks' Δ), factorised circuits only. Gradient flow conserves AᵀA/η_A − BBᵀ/η_B
  (docs/circuits-theory.md §2); both factors of a circuit share one step size here (also under the
  QK ramp, which only reparameterises time), so AᵀA − BBᵀ itself is the conserved quantity.
- ``qk_gap``: scale·(mean over classes c of mean_{j distinct of c} W_QK[q_c, j] −
  mean_{j common} W_QK[q_c, j]), the score advantage of relevant tokens (≈ μ_QK of the reduced
  ODE, docs/circuits-theory.md §1; our reading); ``ov_gap``: mean over c of mean_{j distinct of c}
  (W_OV[label_c, j] − mean_{l ≠ c} W_OV[label_l, j]), the OV logit margin a distinct token carries.

Attention on the fixed test set (the notebooks' metrics): per sequence the distinct-token mass
Σ_{j: x_j relevant} a_j and the probability of the correct token; ``attn_distinct`` (mean mass),
``frac_sharp`` (fraction with mass ≥ sharp_threshold, 0.6 by default), ``hist_a{i}_p{j}`` the
Fig.-2 5×5 histogram in % of sequences (mass bin i, probability bin j, edges 0, .2, .4, .6, .8, 1;
the value 1 falls in the last bin), ``separability`` (mean of max_{distinct j} a_j −
min_{other j} a_j, the query position counting as "other" as in the code's ``inputs > 9``),
``attn_entropy`` (mean −Σ a log a, nats; an extra, not in the code), ``attn_query`` (mean
attention of the query on itself: the query id also identifies the class, so it is an alternative
to the distinct tokens), ``prob_correct``, ``loss`` (test cross-entropy), ``accuracy``.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from attndyn.core.linalg import effective_rank, qr_r, singular_values
from attndyn.models.circuits import model
from attndyn.models.circuits.data import relevant_mask

BINS = 5


def factored_svals(a: jnp.ndarray, b: jnp.ndarray) -> jnp.ndarray:
    """Singular values of A B (A: n×k, B: k×m) from the k×k core R_A R_Bᵀ, descending."""
    return singular_values(qr_r(a) @ qr_r(b.T).T)


def factors(params: dict) -> dict[str, tuple]:
    """{circuit: (A, B)} for factorised circuits, {circuit: (W,)} for collapsed ones."""
    qk, ov = params["qk"], params["ov"]
    return {
        "qk": (qk["Wq"].T, qk["Wk"]) if "Wq" in qk else (qk["Wkq"],),
        "ov": (ov["Wp"], ov["Wv"]) if "Wv" in ov else (ov["Wp"],),
    }


def circuit_observables(params: dict, cfg) -> dict:
    out = {}
    for name, fac in factors(params).items():
        if len(fac) == 2:
            a, b = fac
            s = factored_svals(a, b)
            ata, bbt = a.T @ a, b @ b.T
            bal = jnp.linalg.norm(ata - bbt)
            out[f"{name}_balance"] = bal
            out[f"{name}_balance_rel"] = bal / jnp.maximum(
                jnp.maximum(jnp.linalg.norm(ata), jnp.linalg.norm(bbt)), jnp.finfo(a.dtype).tiny
            )
        else:
            s = singular_values(fac[0])
        for i in range(min(cfg.top_sv, s.shape[0])):
            out[f"{name}_sv{i + 1}"] = s[i]
        out[f"{name}_fro"] = jnp.sqrt(jnp.sum(s**2))
        out[f"{name}_erank"] = effective_rank(s)
    out.update(_gaps(params, cfg))
    return out


def _gaps(params: dict, cfg) -> dict:
    c = np.arange(cfg.n_classes)
    distinct = cfg.n_common + c[:, None] * cfg.n_distinct + np.arange(cfg.n_distinct)  # [C, nd]
    w_qk = model.qk_matrix(params)
    rows = w_qk[cfg.query_start + c]  # [C, V]
    qk_gap = jnp.take_along_axis(rows, distinct, axis=1).mean(1) - rows[:, : cfg.n_common].mean(1)
    w_ov = model.ov_matrix(params)
    lab = w_ov[cfg.label_start + c]  # [C, V]: label rows
    own = jnp.take_along_axis(lab, distinct, axis=1)  # [C, nd]
    cols = lab[:, distinct]  # [C(label l), C(class c), nd]
    others = (cols.sum(0) - own) / max(cfg.n_classes - 1, 1)
    return {"qk_gap": cfg.scale * qk_gap.mean(), "ov_gap": (own - others).mean()}


def attention_observables(params: dict, tokens, labels, cfg) -> dict:
    attn, logits = model.forward(params, tokens, cfg.scale)
    rel = relevant_mask(tokens, cfg)
    mass = jnp.sum(jnp.where(rel, attn, 0.0), axis=1)
    ce = model.cross_entropy(logits, labels)
    prob = jnp.exp(-ce)
    ia = jnp.clip(jnp.floor(mass * BINS), 0, BINS - 1).astype(jnp.int32)
    ip = jnp.clip(jnp.floor(prob * BINS), 0, BINS - 1).astype(jnp.int32)
    counts = jnp.zeros(BINS * BINS, attn.dtype).at[ia * BINS + ip].add(1.0)
    pct = 100.0 * counts / tokens.shape[0]
    top = jnp.max(jnp.where(rel, attn, -jnp.inf), axis=1)
    bottom = jnp.min(jnp.where(rel, jnp.inf, attn), axis=1)
    sep = jnp.where(jnp.isfinite(top) & jnp.isfinite(bottom), top - bottom, 0.0)
    ent = -jnp.sum(attn * jnp.log(jnp.maximum(attn, jnp.finfo(attn.dtype).tiny)), axis=1)
    out = {
        "loss": jnp.mean(ce),
        "accuracy": jnp.mean(jnp.argmax(logits, axis=1) == labels),
        "prob_correct": jnp.mean(prob),
        "attn_distinct": jnp.mean(mass),
        "frac_sharp": jnp.mean(mass >= cfg.sharp_threshold),
        "separability": jnp.mean(sep),
        "attn_entropy": jnp.mean(ent),
        "attn_query": jnp.mean(attn[:, -1]),
    }
    for i in range(BINS):
        for j in range(BINS):
            out[f"hist_a{i}_p{j}"] = pct[i * BINS + j]
    return out


def histogram(traj, time=-1):
    """The 5×5 histogram (% of sequences, seed mean) at record ``time`` of a Trajectory:
    rows = distinct-mass bins, columns = correct-token probability bins."""
    h = np.zeros((BINS, BINS))
    for i in range(BINS):
        for j in range(BINS):
            h[i, j] = float(traj[f"hist_a{i}_p{j}"].isel(time=time).mean("seed"))
    return h


SUMMARY = ("loss", "accuracy", "attn_distinct", "frac_sharp", "separability", "qk_fro", "ov_fro")
"""Observables ``attndyn simulate circuits`` prints at the final time."""
LABELS = {
    "loss": "test cross-entropy",
    "accuracy": "test accuracy",
    "prob_correct": "probability of the correct token",
    "attn_distinct": "attention mass on distinct tokens",
    "attn_entropy": "attention entropy (nats)",
    "attn_query": "attention of the query on itself",
    "frac_sharp": "fraction of sharp sequences (mass ≥ threshold)",
    "separability": "separability max a_distinct − min a_other",
    "qk_fro": "‖W_QK‖_F",
    "ov_fro": "‖W_OV‖_F",
    "qk_erank": "effective rank of W_QK",
    "ov_erank": "effective rank of W_OV",
    "qk_gap": "score gap μ_QK",
    "ov_gap": "OV logit margin μ_OV",
    "qk_balance": "‖AᵀA − BBᵀ‖_F (QK)",
    "ov_balance": "‖AᵀA − BBᵀ‖_F (OV)",
}
"""Axis labels of the observables (:func:`attndyn.plot`)."""

OVERFLOW = 1e10
"""|value| marking a seed as diverged (:mod:`attndyn.models.base`): losses are cross-entropies
(O(log vocabulary) at init), accuracies and attention masses lie in [0, 1], histograms in
[0, 100] %, and the weight norms ``qk_fro``, ``ov_fro`` stay O(10²) in every documented run."""
