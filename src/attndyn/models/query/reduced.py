"""Exact reduced sampler: the SGA step of the query model from O(n) scalars per sample.

Proof and notation: docs/query-reduced-sampler.md. Summary. With e the unit vector of
P_⊥q (P_⊥ = I − uuᵀ), α = ⟨q, u⟩, b = ‖P_⊥q‖, the tokens split as x_i = U_i u + E_i e + z_i^⊥
with U_i = θξ_i 1[i < n_I] + σg_i, E_i = σh_i (g, h ~ N(0, 1)) and Z = (z_i^⊥) an n×m Gaussian
matrix (m = d − 2, entries N(0, σ²)) independent of (U, E), which fix the weights w. With
ŵ = w/‖w‖, v = a^⊥ = Zᵀw, f = v/‖v‖, one has in law, given (U, E):

    ‖v‖ = σ‖w‖ ‖g‖,  ‖g‖² ~ χ²_m,  f uniform on S^{m−1}  (g ~ N(0, I_m), f = g/‖g‖)
    y := (⟨z_i^⊥, a^⊥⟩)_i = ŵ ‖v‖²/‖w‖ + σ‖v‖ ρ,          ρ ~ N(0, I_n − ŵŵᵀ)
    c = U Ā_U + E Ā_E + y,  C = ‖a‖² = Ā_U² + Ā_E² + ‖v‖²,  r = w∘c
    G_u = 2β(rᵀU − C Ā_U),   G_e = 2β(rᵀE − C Ā_E)                 (components along u, e)
    G_⊥ = 2β(φ f + κ γ),  φ = (ŵᵀr)‖v‖/‖w‖ + σρᵀr − C‖v‖,  κ = σ(‖r‖² − (ŵᵀr)²)^{1/2}

with Ā_U = wᵀU, Ā_E = wᵀE and γ | f ~ N(0, I_m − ffᵀ). For a batch of B samples only rotation
invariants of Σ_b G_⊥^{(b)} are needed; the 2B vectors g_b, g'_b (γ_b = (I − f_bf_bᵀ)g'_b) are
represented in p = min(m, 2B) coordinates: directly when m ≤ 2B, else by the Bartlett factor of
their Gram matrix (W_{2B}(I, m) = LLᵀ, L_ii² ~ χ²_{m−i}, L_ij ~ N(0, 1), i > j, 0-indexed).

The law of (α_k, b_k) is a Markov chain (rotations fixing u leave the token law invariant), so
the state is the 3-vector p = (α, b, 0): the ascent direction is Ĝ = (Ĝ_u, Ĝ_e, ‖Ĝ_⊥‖) and the
projection hook maps (x, y, z) → (x, √(y² + z²), 0), then onto the sphere if constrained. Cost per
sample: 3n Gaussian scalars (U, E, ρ) instead of n·d.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.models.query.model import TokenSpec, signs


def frame(key: jax.Array, m: int, batch: int, dtype) -> tuple[jax.Array, jax.Array]:
    """Coordinates (each (batch, p), p = min(m, 2·batch)) of 2·batch i.i.d. N(0, I_m) vectors
    g_b, g'_b, exact in the law of their Gram matrix (Bartlett when m > 2·batch)."""
    k = 2 * batch
    if m <= k:
        vecs = jax.random.normal(key, (k, m), dtype)
    else:
        k_diag, k_off = jax.random.split(key)
        df = jnp.asarray(m - np.arange(k), dtype)
        diag = jnp.sqrt(jax.random.chisquare(k_diag, df, (k,), dtype))
        off = jnp.tril(jax.random.normal(k_off, (k, k), dtype), -1)
        vecs = off + jnp.diag(diag)
    return vecs[:batch], vecs[batch:]


def scalars(U, E, rho, g_norm, alpha, b, sigma: float, beta: float) -> dict[str, jax.Array]:
    """The exact scalars of one sample from its coordinates U = (⟨u, x_i⟩), E = (⟨e, x_i⟩), a
    standard Gaussian n-vector ``rho`` (projected here onto ŵ^⊥) and ‖g‖ (module docstring):
    objective C = ‖a‖², G_u, G_e, φ, κ (the last four without the factor 2β)."""
    w = jax.nn.softmax(beta * (alpha * U + b * E))
    a_u, a_e = w @ U, w @ E
    w_norm = jnp.sqrt(w @ w)
    w_hat = w / w_norm
    v_norm = sigma * w_norm * g_norm
    rho = rho - (w_hat @ rho) * w_hat
    y = w_hat * (v_norm**2 / w_norm) + sigma * v_norm * rho
    c = U * a_u + E * a_e + y
    big_c = a_u**2 + a_e**2 + v_norm**2
    r = w * c
    wr = w_hat @ r
    return {
        "objective": big_c,
        "g_u": r @ U - big_c * a_u,
        "g_e": r @ E - big_c * a_e,
        "phi": wr * v_norm / w_norm + sigma * (rho @ r) - big_c * v_norm,
        "kappa": sigma * jnp.sqrt(jnp.maximum(r @ r - wr**2, 0.0)),
    }


def sample_scalars(key: jax.Array, alpha, b, g_norm, spec: TokenSpec) -> dict[str, jax.Array]:
    """Draw one sample's U, E, ρ (3n Gaussian scalars) and return :func:`scalars`."""
    dt = jnp.dtype(spec.dtype)
    n, n_i, sigma = spec.n, spec.n_informative, spec.sigma
    k_sign, k_u, k_e, k_rho = jax.random.split(key, 4)
    U = sigma * jax.random.normal(k_u, (n,), dt)
    if n_i > 0 and spec.theta != 0:
        xi = signs(k_sign, spec)[:n_i]
        U = U.at[:n_i].add(spec.theta * xi)
    E = sigma * jax.random.normal(k_e, (n,), dt)
    rho = jax.random.normal(k_rho, (n,), dt)
    return scalars(U, E, rho, g_norm, alpha, b, sigma, spec.beta)


def batch_step(key: jax.Array, alpha, b, spec: TokenSpec, batch: int) -> dict[str, jax.Array]:
    """Batch-mean ascent direction in the reduced coordinates: ``g_u`` = Ĝ_u, ``g_e`` = Ĝ_e,
    ``g_perp`` = ‖Ĝ_⊥‖ (all with the factor 2β), and ``objective`` = mean ‖a‖²."""
    dt = jnp.dtype(spec.dtype)
    m = spec.d - 2
    k_frame, k_samples = jax.random.split(key)
    keys = jax.random.split(k_samples, batch)
    if m == 0:
        scal = jax.vmap(lambda k: sample_scalars(k, alpha, b, jnp.zeros((), dt), spec))(keys)
        g_perp = jnp.zeros((), dt)
    else:
        g, g2 = frame(k_frame, m, batch, dt)
        g_norm = jnp.sqrt(jnp.sum(g * g, axis=1))
        scal = jax.vmap(lambda k, gn: sample_scalars(k, alpha, b, gn, spec))(keys, g_norm)
        f = g / g_norm[:, None]
        gamma = g2 - jnp.sum(g2 * f, axis=1, keepdims=True) * f
        total = jnp.sum(scal["phi"][:, None] * f + scal["kappa"][:, None] * gamma, axis=0)
        g_perp = jnp.sqrt(total @ total) / batch
    two_beta = 2.0 * spec.beta
    return {
        "objective": jnp.mean(scal["objective"]),
        "g_u": two_beta * jnp.mean(scal["g_u"]),
        "g_e": two_beta * jnp.mean(scal["g_e"]),
        "g_perp": two_beta * g_perp,
    }


def sample_objective(key: jax.Array, alpha, b, spec: TokenSpec) -> jax.Array:
    """‖a‖² of one sample at (α, b), exact in law (‖v‖ from a χ²_m draw)."""
    dt = jnp.dtype(spec.dtype)
    m = spec.d - 2
    k_chi, k_s = jax.random.split(key)
    g_norm = jnp.sqrt(jax.random.chisquare(k_chi, m, (), dt)) if m > 0 else jnp.zeros((), dt)
    return sample_scalars(k_s, alpha, b, g_norm, spec)["objective"]


def init_state(key: jax.Array, d: int, overlap: float | None, norm: float, dtype) -> jax.Array:
    """(α₀, b₀, 0): q₀ uniform on the sphere of radius ``norm`` (α₀/norm = g₁/‖g‖ with
    g ~ N(0, I_d), via g₁ ~ N(0, 1) and ‖g_{2:d}‖² ~ χ²_{d−1}), or with overlap m₀ exactly."""
    if overlap is None:
        k1, k2 = jax.random.split(key)
        g1 = jax.random.normal(k1, (), dtype)
        rest = jnp.sqrt(jax.random.chisquare(k2, d - 1, (), dtype))
        r = jnp.sqrt(g1**2 + rest**2)
        return norm * jnp.stack([g1 / r, rest / r, jnp.zeros((), dtype)])
    m0 = overlap
    return jnp.asarray([norm * m0, norm * np.sqrt(1.0 - m0 * m0), 0.0], dtype)


def fold(p: jax.Array) -> jax.Array:
    """(x, y, z) → (x, √(y² + z²), 0): the new (α, b) after an update leaving span{u, e}."""
    return jnp.stack([p[0], jnp.sqrt(p[1] ** 2 + p[2] ** 2), jnp.zeros_like(p[0])])


def observe(p: jax.Array) -> dict[str, jax.Array]:
    """The full simulator's observables from (α, b, 0)."""
    norm = jnp.sqrt(p[0] ** 2 + p[1] ** 2)
    return {
        "overlap": p[0] / norm,
        "alignment": jnp.abs(p[0]) / norm,
        "q_norm": norm,
        "perp_norm": p[1],
    }


def build_problem(config, spec: TokenSpec):
    """The trainer's Problem for ``sampler='reduced'``: params {"q": (α, b, 0)}."""
    from attndyn.core.schedules import inverse_power
    from attndyn.core.trainer import Problem
    from attndyn.core.updates import optimizer

    dtype = jnp.dtype(config.dtype)
    batch, eval_n = config.batch, config.eval_samples

    def init(key):
        k_q, k_eval = jax.random.split(key)
        p0 = init_state(k_q, config.d, config.init_overlap, config.init_norm, dtype)
        return {"q": p0}, {"eval_key": k_eval}

    def value_and_grad(params, state, key):
        p = params["q"]
        out = batch_step(key, p[0], p[1], spec, batch)
        grad = -jnp.stack([out["g_u"], out["g_e"], out["g_perp"]])
        return -out["objective"], {"q": grad}

    def loss(params, state, key):
        p = params["q"]
        return -batch_step(key, p[0], p[1], spec, batch)["objective"]

    def observe_fn(params, state):
        p = params["q"]
        obs = observe(p)
        if eval_n > 0:
            keys = jax.random.split(state["eval_key"], eval_n)
            obj = jax.lax.map(lambda k: sample_objective(k, p[0], p[1], spec), keys)
            obs["objective"] = jnp.mean(obj)
        return obs

    if config.constraint == "sphere":

        def project(params):
            p = fold(params["q"])
            return {"q": p / jnp.sqrt(p[0] ** 2 + p[1] ** 2)}
    else:

        def project(params):
            return {"q": fold(params["q"])}

    schedule = None
    if config.schedule == "robbins-monro":
        schedule = inverse_power(config.k0, config.gamma)
    return Problem(
        init=init,
        sample=lambda key: key,
        loss=loss,
        observe=observe_fn,
        update=optimizer("sgd", config.eta, schedule, config.l2),
        batch=batch,
        value_and_grad=value_and_grad,
        project=project,
    )
