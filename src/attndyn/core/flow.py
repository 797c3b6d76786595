"""Gradient flow θ̇ = −∇L(θ) by adaptive Runge–Kutta, vmapped over seeds, in JAX.

For dynamics that sit on saddle plateaus for decades of time (e.g. arXiv 2605.01199's stages),
fixed-step GD wastes steps where ∇L is tiny. The Bogacki–Shampine 3(2) pair (Bogacki & Shampine
1989, Appl. Math. Lett. 2:321; scipy's ``RK23``) takes

    k₁ = f(y), k₂ = f(y + h k₁/2), k₃ = f(y + 3h k₂/4),
    y' = y + h(2k₁ + 3k₂ + 4k₃)/9,  k₄ = f(y')  (first stage of the next step),
    e = h(−5k₁/72 + k₂/12 + k₃/9 − k₄/8),

accepts when ‖e/(atol + rtol·max(|y|, |y'|))‖_rms ≤ 1 and sets h ← h·clip(0.9‖·‖^{-1/3}, 0.2, 5).
Each seed has its own step size; seeds run in one ``vmap``-ed ``while_loop`` per record segment.
A seed whose state turns non-finite, or that needs more than ``max_steps`` steps in one segment,
stops and is reported as diverged (its later records NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.trainer import RunResult

Tree = dict


class FlowCarry(NamedTuple):
    """Per-seed state: y, f(y), the next trial step h, steps taken, diverged flag."""

    y: Tree
    f: Tree
    h: jax.Array
    steps: jax.Array
    diverged: jax.Array


def _axpy(y, coefs, ks, h):
    """y + h Σ c_i k_i on pytrees."""

    def one(y_leaf, *k_leaves):
        acc = y_leaf
        for c, k in zip(coefs, k_leaves, strict=True):
            acc = acc + (h * c) * k
        return acc

    return jax.tree.map(one, y, *ks)


def make_flow_advance(
    rhs: Callable[[Tree, object], Tree], rtol: float, atol: float, max_steps: int = 10_000_000
) -> Callable:
    """``advance(carry, state, t0, t1) -> carry``, vmapped over seeds and jitted: integrates
    ẏ = rhs(y, state) from t0 to t1 (scalars shared by all seeds)."""

    def err_norm(e, y0, y1):
        def leaf(e_l, a, b):
            scale = atol + rtol * jnp.maximum(jnp.abs(a), jnp.abs(b))
            return jnp.sum((e_l / scale) ** 2), e_l.size

        parts = jax.tree.leaves(
            jax.tree.map(leaf, e, y0, y1), is_leaf=lambda x: isinstance(x, tuple)
        )
        total = sum(p[0] for p in parts)
        count = sum(p[1] for p in parts)
        return jnp.sqrt(total / count)

    def advance_one(carry: FlowCarry, state, t0, t1):
        def cond(c):
            t, fc = c
            return (t < t1) & ~fc.diverged & (fc.steps < max_steps)

        def body(c):
            t, fc = c
            h = jnp.minimum(fc.h, t1 - t)
            k1 = fc.f
            k2 = rhs(_axpy(fc.y, (0.5,), (k1,), h), state)
            k3 = rhs(_axpy(fc.y, (0.75,), (k2,), h), state)
            y1 = _axpy(fc.y, (2 / 9, 1 / 3, 4 / 9), (k1, k2, k3), h)
            k4 = rhs(y1, state)
            e = jax.tree.map(
                lambda a, b, c_, d: h * (-5 / 72 * a + 1 / 12 * b + 1 / 9 * c_ - 1 / 8 * d),
                k1,
                k2,
                k3,
                k4,
            )
            err = err_norm(e, fc.y, y1)
            finite = jnp.isfinite(err)
            ok = finite & (err <= 1.0)
            factor = jnp.clip(0.9 * jnp.where(err > 0, err, 1e-12) ** (-1 / 3), 0.2, 5.0)
            h_next = jnp.where(finite, h * factor, h * 0.2)
            pick = lambda new, old: jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, old)  # noqa: E731
            # repeated non-finite trials shrink h by 5 each; below 1e-12 (1 + t) the seed is lost
            diverged = ~finite & (h < 1e-12 * (1.0 + t))
            new = FlowCarry(
                pick(y1, fc.y), pick(k4, fc.f), h_next, fc.steps + 1, fc.diverged | diverged
            )
            return jnp.where(ok, t + h, t), new

        t_end, out = jax.lax.while_loop(cond, body, (t0, carry))
        return out._replace(diverged=out.diverged | (t_end < t1))  # stopped early: lost

    return jax.jit(jax.vmap(advance_one, in_axes=(0, 0, None, None)))


def integrate_flow(
    init: Callable[[jax.Array], tuple[Tree, object]],
    grad: Callable[[Tree, object], Tree],
    observe: Callable[[Tree, object], dict[str, jax.Array]],
    times: np.ndarray,
    seeds: np.ndarray,
    *,
    rtol: float = 1e-6,
    atol: float = 1e-12,
    h0: float = 1e-3,
) -> RunResult:
    """Gradient flow ẏ = −grad(y, state) from ``init(PRNGKey(seed))`` (the init key of
    :func:`attndyn.core.trainer.seed_keys`), observed at ``times`` (t = 0 first).

    Returns a RunResult whose ``steps`` are the accepted-or-rejected RK steps taken up to each
    record (per seed, the maximum over seeds); ``diverged_step`` is the record index at which a
    seed stopped being finite (−1 if never)."""
    from attndyn.core.trainer import seed_keys

    init_keys, _ = seed_keys(np.asarray(seeds))
    y, state = jax.vmap(init)(init_keys)
    rhs = lambda p, s: jax.tree.map(jnp.negative, grad(p, s))  # noqa: E731
    f = jax.vmap(rhs)(y, state)
    dtype = jax.tree.leaves(y)[0].dtype
    n = len(seeds)
    carry = FlowCarry(y, f, jnp.full(n, h0, dtype), jnp.zeros(n, jnp.int32), jnp.zeros(n, bool))
    advance = make_flow_advance(rhs, rtol, atol)
    obs_fn = jax.jit(jax.vmap(observe))
    records, steps = [], []
    div_at = np.full(n, -1, np.int64)
    t = 0.0
    for r, target in enumerate(np.asarray(times, dtype=np.float64)):
        if target > t:
            carry = advance(carry, state, jnp.asarray(t, dtype), jnp.asarray(target, dtype))
            t = float(target)
        obs = jax.device_get(obs_fn(carry.y, state))
        bad = np.asarray(carry.diverged) & (div_at < 0)
        div_at[bad] = r
        dead = div_at >= 0
        records.append({k: np.where(dead, np.nan, v) for k, v in obs.items()})
        steps.append(int(np.max(np.asarray(carry.steps))))
    names = list(records[0])
    return RunResult(
        steps=np.asarray(steps, np.int64),
        observables={k: np.stack([rec[k] for rec in records], axis=1) for k in names},
        diverged_step=div_at,
        final_params=carry.y,
    )
