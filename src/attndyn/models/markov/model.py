"""The one-layer transformer of arXiv 2605.01199, Def. 2.2, and its population loss (Prop. 2.3).

With one-hot inputs E_X (s×d), embedding W₀ (d×m), query/key W_Q, W_K (m×m_k) and output W₁
(m×d), Def. 2.2 reads Attn(Z) = softmax(Z W_Q W_Kᵀ Zᵀ) Z and f(X) = Attn(E_X W₀) W₁, with the
cross-entropy of the last position's output against the label (Eq. 3). In the shorthands

    M = W₀W₁ (d×d),   Φ = W₀ W_Q W_Kᵀ W₀ᵀ (d×d),

the last position's logits are z = Σ_t a_t M_{x_t,:} with a_t ∝ exp(Φ_{x_s, x_t}), so a batch
costs O(d m²) for (M, Φ) plus O(B s d) for the gathers. Options (off by default, docs/markov.md):
logits divided by √m_k, a residual path (z += (W₀W₁)_{x_s,:}), a value matrix
(M = W₀W_VW₁) and causal training of every position.

Population limit (Prop. 2.3, s → ∞, query x_s ~ π, context frequencies → π):

    𝔸_ij = π_j e^{Φ_ij} / Σ_k π_k e^{Φ_ik},   ℙ_i = softmax(𝔸_i M),
    L(θ) = −Σ_i π_i Σ_y P_iy log ℙ_iy.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

Params = dict[str, jax.Array]


@dataclass(frozen=True)
class Arch:
    """Static architecture options (all False/1 reproduce Def. 2.2)."""

    logit_scale: float = 1.0
    residual: bool = False
    value: bool = False
    causal: bool = False

    @classmethod
    def of(cls, config) -> Arch:
        scale = 1.0 if config.logit_scale == "none" else config.key_width**-0.5
        return cls(scale, config.residual, config.value, config.causal)


def init_params(key: jax.Array, d: int, m: int, m_k: int, eps: float, arch: Arch, dtype) -> Params:
    """Every weight i.i.d. N(0, ε²) (Section 3; Appendix E.1 takes ε = 1/m)."""
    shapes = {"W0": (d, m), "WQ": (m, m_k), "WK": (m, m_k), "W1": (m, d)}
    if arch.value:
        shapes["WV"] = (m, m)
    keys = jax.random.split(key, len(shapes))
    return {
        name: eps * jax.random.normal(k, shape, dtype)
        for k, (name, shape) in zip(keys, sorted(shapes.items()), strict=True)
    }


def shorthands(params: Params, arch: Arch = Arch()) -> dict[str, jax.Array]:
    """M (value path), Φ (token–token logits, scale included), W_QK = W_QW_Kᵀ and, with a
    residual, R = W₀W₁ (the residual's logits per query token)."""
    W0, W1 = params["W0"], params["W1"]
    out_path = W0 @ params["WV"] if arch.value else W0
    qk = params["WQ"] @ params["WK"].T
    phi = arch.logit_scale * ((W0 @ params["WQ"]) @ (W0 @ params["WK"]).T)
    out = {"M": out_path @ W1, "Phi": phi, "WQK": qk}
    if arch.residual:
        out["R"] = W0 @ W1
    return out


def last_position_logits(params: Params, inputs: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Logits (B, d) of the last position for token sequences ``inputs`` (B, s)."""
    sh = shorthands(params, arch)
    query = inputs[:, -1]
    scores = jnp.take_along_axis(sh["Phi"][query], inputs, axis=1)  # Φ_{x_s, x_t}, (B, s)
    a = jax.nn.softmax(scores, axis=1)
    z = jnp.einsum("bt,btd->bd", a, sh["M"][inputs])
    if arch.residual:
        z = z + sh["R"][query]
    return z


def causal_logits(params: Params, inputs: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Logits (B, s, d) of every position j, attending to positions t ≤ j."""
    sh = shorthands(params, arch)
    s = inputs.shape[1]
    scores = sh["Phi"][inputs[:, :, None], inputs[:, None, :]]  # (B, s, s): Φ_{x_j, x_t}
    mask = jnp.tril(jnp.ones((s, s), bool))
    a = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1)
    z = jnp.einsum("bjt,btd->bjd", a, sh["M"][inputs])
    if arch.residual:
        z = z + sh["R"][inputs]
    return z


def sequence_loss(params: Params, sequences: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Mean cross-entropy (Eq. 3) of sequences (B, s + 1): inputs x₁…x_s, label x_{s+1}; causal:
    mean over every position's next token."""
    inputs, labels = sequences[:, :-1], sequences[:, 1:]
    if arch.causal:
        logp = jax.nn.log_softmax(causal_logits(params, inputs, arch), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))
    logp = jax.nn.log_softmax(last_position_logits(params, inputs, arch), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, -1:], axis=1))


def population_attention(phi: jax.Array, pi: jax.Array) -> jax.Array:
    """Prop. 2.3: 𝔸_ij = π_j e^{Φ_ij} / Σ_k π_k e^{Φ_ik} (rows sum to 1)."""
    return jax.nn.softmax(jnp.log(pi)[None, :] + phi, axis=1)


def shorthand_logits(M: jax.Array, Phi: jax.Array, pi: jax.Array, R=None) -> jax.Array:
    """z_i = 𝔸_i M (+ R_i with a residual), one row of logits per query token i (d×d)."""
    z = population_attention(Phi, pi) @ M
    return z if R is None else z + R


def shorthand_loss(M: jax.Array, Phi: jax.Array, pi: jax.Array, P: jax.Array, R=None) -> jax.Array:
    """Prop. 2.3's L as a function of the shorthands: −Σ_i π_i Σ_y P_iy log softmax(z_i)_y."""
    logp = jax.nn.log_softmax(shorthand_logits(M, Phi, pi, R), axis=1)
    return -jnp.sum(pi[:, None] * P * logp)


def population_logits(params: Params, pi: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """:func:`shorthand_logits` at the parameters' (M, Φ, R)."""
    sh = shorthands(params, arch)
    return shorthand_logits(sh["M"], sh["Phi"], pi, sh.get("R"))


def population_loss(params: Params, pi: jax.Array, P: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Prop. 2.3: L = −Σ_i π_i Σ_y P_iy log ℙ_iy with ℙ_i = softmax(z_i)."""
    sh = shorthands(params, arch)
    return shorthand_loss(sh["M"], sh["Phi"], pi, P, sh.get("R"))


def population_curvature(z: jax.Array, pi: jax.Array) -> jax.Array:
    """∇²_z L of L = −Σ_i π_i Σ_y P_iy log softmax(z_i)_y for flattened logits z (d²): block
    diagonal, block i = π_i (diag(ℙ_i) − ℙ_iℙ_iᵀ) ⪰ 0 (independent of P since Σ_y P_iy = 1)."""
    d = pi.shape[0]
    prob = jax.nn.softmax(z.reshape(d, d), axis=1)
    blocks = pi[:, None, None] * (jax.vmap(jnp.diag)(prob) - prob[:, :, None] * prob[:, None, :])
    return jax.scipy.linalg.block_diag(*[blocks[i] for i in range(d)])


def gauss_newton(arch: Arch = Arch(), frozen: tuple[str, ...] = ()):
    """``(outputs, curvature)`` for :func:`attndyn.core.flow.integrate_flow`'s ROS2 solver: the
    flattened population logits z(θ) (state holds ``pi``) and ∇²_z L
    (:func:`population_curvature`). Groups in ``frozen`` are constants of z, so the solver's
    Jacobian has no columns for them and never moves them."""

    def outputs(p, st):
        p = {k: jax.lax.stop_gradient(v) if k in frozen else v for k, v in p.items()}
        return population_logits(p, st["pi"], arch).reshape(-1)

    return outputs, lambda z, st: population_curvature(z, st["pi"])
