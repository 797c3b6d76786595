"""Tokens, attention output, objective and its analytic gradient, whole or streamed.

Model (our reconstruction of arXiv 2606.22406, whose body we could not read; docs/query.md,
"Model"): per sample, tokens x_i = θ ξ_i u 1[i < n_I] + z_i, z_i ~ N(0, σ² I_d); scores
s_i = β⟨q, x_i⟩, weights w = softmax(s), attention output a = Σ w_i x_i and objective ‖a‖².
Since ∂w_i/∂q = β w_i (x_i − a),

    ∇_q ‖a‖² = 2β Σ_i w_i ⟨x_i, a⟩ (x_i − a)
             = 2β (Σ_i w_i c_i x_i − (Σ_i w_i c_i) a),  c_i = ⟨x_i, a⟩.

The second form needs ⟨x_i, a⟩ with the *final* a, i.e. a second look at every token after the
softmax normaliser is known. Two exact routes:

- ``whole``: draw the sample's n×d tokens once, keep them, and run four matrix–vector products
  (scores, a, c, Σ w c x). Cost: one Gaussian draw of n·d values plus O(n·d) memory-bound
  arithmetic, which is small next to the draw (timings in BENCHMARKS.md, "Query SGA"). This is
  the cheapest exact route and the default whenever the tokens fit in memory.
- ``chunked``: memory O(chunk·d). Pass 1 scans the chunks with an online log-sum-exp (running
  max M, running Z = Σ e^{s−M}, running A = Σ e^{s−M} x, rescaled by e^{M_old − M_new} when the
  max grows), giving a = A/Z. Pass 2 regenerates each chunk from the same keys and accumulates
  Σ w_i c_i x_i and Σ w_i c_i with w_i = e^{s_i − M}/Z. Cost: two draws. The alternative single
  pass would accumulate the d×d matrix Σ e^{s−M} x xᵀ (then Σ w c x = M a), O(n d²) work —
  about d/2 times a draw, far dearer at d = 256.

Tokens are drawn in blocks of ``block = min(128, n)`` rows, block b from ``fold_in(k_tok, b)``,
so both routes see identical tokens and agree to rounding (tested). Padding rows beyond n get
score −∞ (weight 0).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attndyn.models.query.config import BLOCK


@dataclass(frozen=True)
class TokenSpec:
    """Static description of one sample's tokens and the attention temperature (effective units:
    ``sigma`` is the per-coordinate noise std, ``beta`` multiplies ⟨q, x⟩)."""

    d: int
    n_informative: int
    n_nuisance: int
    theta: float
    sigma: float
    beta: float
    sign_mode: str
    dtype: str = "float32"
    chunk_tokens: int | None = None  # None: whole route; else tokens per chunk (chunked route)

    @property
    def n(self) -> int:
        return self.n_informative + self.n_nuisance

    @property
    def block(self) -> int:
        return min(BLOCK, self.n)

    @property
    def n_blocks(self) -> int:
        return -(-self.n // self.block)

    @property
    def blocks_per_chunk(self) -> int:
        if self.chunk_tokens is None:
            return self.n_blocks
        return max(1, min(self.n_blocks, self.chunk_tokens // self.block))

    @property
    def n_chunks(self) -> int:
        return -(-self.n_blocks // self.blocks_per_chunk)


def signs(key: jax.Array, spec: TokenSpec) -> jax.Array:
    """ξ for the informative tokens, shape (max(n_I, 1),): one Rademacher sign repeated
    (sequence), i.i.d. signs (token) or ones (none)."""
    dt = jnp.dtype(spec.dtype)
    m = max(spec.n_informative, 1)
    if spec.sign_mode == "sequence":
        return jnp.full((m,), jax.random.rademacher(key, (), dt))
    if spec.sign_mode == "token":
        return jax.random.rademacher(key, (m,), dt)
    return jnp.ones((m,), dt)


def block_tokens(
    k_tok: jax.Array, b: jax.Array, u: jax.Array, xi: jax.Array, spec: TokenSpec
) -> tuple[jax.Array, jax.Array]:
    """Rows b·block … (b+1)·block − 1 of the sample: (tokens (block, d), valid mask (block,))."""
    dt = jnp.dtype(spec.dtype)
    z = spec.sigma * jax.random.normal(jax.random.fold_in(k_tok, b), (spec.block, spec.d), dt)
    idx = b * spec.block + jnp.arange(spec.block)
    if spec.n_informative > 0 and spec.theta != 0:
        informative = idx < spec.n_informative
        amp = jnp.where(informative, spec.theta * xi[jnp.clip(idx, 0, xi.shape[0] - 1)], 0.0)
        z = z + amp[:, None].astype(dt) * u[None, :]
    return z, idx < spec.n


def chunk_tokens(
    k_tok: jax.Array, c: jax.Array, u: jax.Array, xi: jax.Array, spec: TokenSpec
) -> tuple[jax.Array, jax.Array]:
    """Chunk c (blocks c·bpc … (c+1)·bpc − 1): tokens (bpc·block, d) and valid mask."""
    bpc = spec.blocks_per_chunk
    blocks = c * bpc + jnp.arange(bpc)
    x, valid = jax.vmap(lambda b: block_tokens(k_tok, b, u, xi, spec))(blocks)
    return x.reshape(bpc * spec.block, spec.d), valid.reshape(-1)


def all_tokens(key: jax.Array, u: jax.Array, spec: TokenSpec) -> tuple[jax.Array, jax.Array]:
    """Every token of the sample drawn from ``key`` (padded to whole blocks) and the mask."""
    k_sign, k_tok = jax.random.split(key)
    xi = signs(k_sign, spec)
    blocks = jnp.arange(spec.n_blocks)
    x, valid = jax.vmap(lambda b: block_tokens(k_tok, b, u, xi, spec))(blocks)
    return x.reshape(-1, spec.d), valid.reshape(-1)


def objective_and_grad_tokens(
    q: jax.Array, x: jax.Array, valid: jax.Array, beta: float
) -> tuple[jax.Array, jax.Array]:
    """(‖a‖², ∇_q‖a‖²) for explicit tokens x (n, d), by the analytic formula (module docstring)."""
    s = jnp.where(valid, beta * (x @ q), -jnp.inf)
    w = jax.nn.softmax(s)
    a = w @ x
    h = w * (x @ a)
    grad = 2.0 * beta * (h @ x - jnp.sum(h) * a)
    return a @ a, grad


def objective_tokens(q: jax.Array, x: jax.Array, valid: jax.Array, beta: float) -> jax.Array:
    """‖a(q; x)‖² for explicit tokens (the function autodiff and finite differences check)."""
    s = jnp.where(valid, beta * (x @ q), -jnp.inf)
    a = jax.nn.softmax(s) @ x
    return a @ a


def _pass_one(q, k_tok, u, xi, spec: TokenSpec):
    """Online log-sum-exp over chunks: (max M, Z = Σ e^{s−M}, A = Σ e^{s−M} x)."""
    dt = jnp.dtype(spec.dtype)

    def body(carry, c):
        m_old, z_old, a_old = carry
        x, valid = chunk_tokens(k_tok, c, u, xi, spec)
        s = jnp.where(valid, spec.beta * (x @ q), -jnp.inf)
        m_new = jnp.maximum(m_old, jnp.max(s))
        scale = jnp.exp(m_old - m_new)
        e = jnp.exp(s - m_new)
        return (m_new, z_old * scale + jnp.sum(e), a_old * scale + e @ x), None

    init = (jnp.asarray(-jnp.inf, dt), jnp.zeros((), dt), jnp.zeros((spec.d,), dt))
    (m, z, a_sum), _ = jax.lax.scan(body, init, jnp.arange(spec.n_chunks))
    return m, z, a_sum


def sample_objective_and_grad(
    q: jax.Array, key: jax.Array, u: jax.Array, spec: TokenSpec
) -> tuple[jax.Array, jax.Array]:
    """(‖a‖², ∇_q‖a‖²) for the sample drawn from ``key``, by the spec's route."""
    if spec.chunk_tokens is None or spec.n_chunks == 1:
        x, valid = all_tokens(key, u, spec)
        return objective_and_grad_tokens(q, x, valid, spec.beta)
    k_sign, k_tok = jax.random.split(key)
    xi = signs(k_sign, spec)
    m, z, a_sum = _pass_one(q, k_tok, u, xi, spec)
    a = a_sum / z

    def body(carry, c):
        g_sum, h_sum = carry
        x, valid = chunk_tokens(k_tok, c, u, xi, spec)
        s = jnp.where(valid, spec.beta * (x @ q), -jnp.inf)
        h = jnp.exp(s - m) / z * (x @ a)
        return (g_sum + h @ x, h_sum + jnp.sum(h)), None

    init = (jnp.zeros_like(a), jnp.zeros_like(z))
    (g_sum, h_sum), _ = jax.lax.scan(body, init, jnp.arange(spec.n_chunks))
    return a @ a, 2.0 * spec.beta * (g_sum - h_sum * a)


def sample_objective(q: jax.Array, key: jax.Array, u: jax.Array, spec: TokenSpec) -> jax.Array:
    """‖a‖² for the sample drawn from ``key`` (one pass; chunked when the spec streams)."""
    if spec.chunk_tokens is None or spec.n_chunks == 1:
        x, valid = all_tokens(key, u, spec)
        return objective_tokens(q, x, valid, spec.beta)
    k_sign, k_tok = jax.random.split(key)
    _, z, a_sum = _pass_one(q, k_tok, u, signs(k_sign, spec), spec)
    a = a_sum / z
    return a @ a
