"""Gradient flow θ̇ = −∇L(θ) by adaptive one-step methods, vmapped over seeds, in JAX.

For dynamics that sit on saddle plateaus for decades of time (e.g. arXiv 2605.01199's stages),
fixed-step GD wastes steps where ∇L is tiny. Two pairs are offered:

- ``bs3``: the explicit Bogacki–Shampine 3(2) pair (Bogacki & Shampine 1989, Appl. Math. Lett.
  2:321; scipy's ``RK23``)::

      k₁ = f(y), k₂ = f(y + h k₁/2), k₃ = f(y + 3h k₂/4),
      y' = y + h(2k₁ + 3k₂ + 4k₃)/9,  k₄ = f(y')  (first stage of the next step),
      e = h(−5k₁/72 + k₂/12 + k₃/9 − k₄/8).

  Its step is bounded by stability, h ≲ 2.5/λ_max(∇²L), which is small once the loss is sharp.
- ``ros2``: the two-stage Rosenbrock W-method ROS2 (Verwer, Spee, Blom & Hundsdorfer 1999, SIAM
  J. Sci. Comput. 20:1456), second order for *any* matrix A and L-stable for A = ∂f/∂y::

      (I − γhA)k₁ = f(y),  (I − γhA)k₂ = f(y + hk₁) − 2k₁,  γ = 1 + 1/√2,
      y' = y + h(3k₁ + k₂)/2,  e = h(k₁ + k₂)/2  (against the first-order y + hk₁).

  For a loss L = ℓ(z(u(θ))) whose few outputs z (K of them) depend on the N parameters only
  through P numbers u (e.g. a network's products of weight matrices) we take the Gauss–Newton
  Jacobian A = −JᵀHJ with J = G L, G = ∂z/∂u (K×P), L = ∂u/∂θ (P×N), H = ∇²_zℓ ⪰ 0, and solve
  by Woodbury, (I + cJᵀHJ)⁻¹v = v − cLᵀGᵀ(I_K + cHJJᵀ)⁻¹HG(Lv) with JJᵀ = G(LLᵀ)Gᵀ: one
  Jacobian–vector product Lv and one transposed product Lᵀw of u(θ) (no N-wide matrix is
  formed) and one K×K solve per stage. G, H, the Gram LLᵀ and the linearisation (closed forms
  from the family, :class:`GaussNewton`) are refreshed every 8 steps (a W-method needs no exact
  Jacobian). The stiff directions of a sharp loss are those of JᵀHJ, so the step is set by
  accuracy.

Both accept when ‖e/(atol + rtol·max(|y|, |y'|))‖_rms ≤ 1 and set h ← h·clip(0.9‖·‖^{−1/(q+1)},
0.2, 5) (q the order of the embedded estimate). Each seed has its own step size; seeds run in one
``vmap``-ed ``while_loop``, called in chunks of a bounded number of steps per record segment
(about :data:`attndyn.core.progress.TARGET_S` wall seconds each; a chunk of ``ros2`` ends where a
Jacobian is refreshed, so the chunking does not change the result), between which progress is
reported and Ctrl-C is honoured. The seed axis is sharded over the devices that
:func:`attndyn.core.devices.count` chooses. A seed whose state turns non-finite, or that needs
more than ``max_steps`` steps in one segment, stops and is reported as diverged (its later records
NaN).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core import cost, devices
from attndyn.core.progress import Chunker, report_steps
from attndyn.core.trainer import RunResult, seed_keys

Tree = dict
GAMMA_ROS2 = 1.0 + 1.0 / np.sqrt(2.0)


class FlowCarry(NamedTuple):
    """Per-seed state: y, f(y), the next trial step h, steps taken, diverged flag."""

    y: Tree
    f: Tree
    h: jax.Array
    steps: jax.Array
    diverged: jax.Array


def _lin(y, coefs, ks, h=1.0):
    """y + h Σ c_i k_i on pytrees."""

    def one(y_leaf, *k_leaves):
        acc = y_leaf
        for c, k in zip(coefs, k_leaves, strict=True):
            acc = acc + (h * c) * k
        return acc

    return jax.tree.map(one, y, *ks)


class Method(NamedTuple):
    """A one-step pair: ``prepare(y, state) -> aux`` (arrays reused for ``every`` steps, e.g. a
    Jacobian), ``step(y, f, h, state, aux) -> (y', f(y'), e)``, and the order of the error
    estimate e."""

    prepare: Callable
    step: Callable
    error_order: int
    every: int


def bs3(rhs: Callable) -> Method:
    """The Bogacki–Shampine pair (module docstring); nothing to prepare."""

    def step(y, k1, h, state, aux):
        k2 = rhs(_lin(y, (0.5,), (k1,), h), state)
        k3 = rhs(_lin(y, (0.75,), (k2,), h), state)
        y1 = _lin(y, (2 / 9, 1 / 3, 4 / 9), (k1, k2, k3), h)
        k4 = rhs(y1, state)
        e = _lin(
            jax.tree.map(jnp.zeros_like, y), (-5 / 72, 1 / 12, 1 / 9, -1 / 8), (k1, k2, k3, k4), h
        )
        return y1, k4, e

    return Method(lambda y, state: (), step, 2, 1 << 30)


class GaussNewton(NamedTuple):
    """The structure of L = ℓ(z(u(θ))) that ``ros2`` uses: ``linearize(θ, state) -> (u, jvp,
    vjp)`` with u the P numbers (flat) through which the outputs depend on θ, jvp(v) = Lv and
    vjp(w) = Lᵀw (L = ∂u/∂θ; :func:`autodiff_linearize` builds them from u(θ));
    ``outputs(u, state) -> z`` (K, flat); ``curvature(z, state)`` = ∇²_zℓ (K×K, ⪰ 0); and
    ``gram(θ, state)`` = LLᵀ (P×P) (:func:`autodiff_gram` forms L by P vector–Jacobian
    products, which costs what a closed form saves)."""

    linearize: Callable
    outputs: Callable
    curvature: Callable
    gram: Callable


def autodiff_linearize(inner: Callable) -> Callable:
    """``linearize(θ, state)`` of u = ``inner(θ, state)`` by ``jax.linearize`` and its
    transpose."""

    def linearize(y, state):
        u, jvp = jax.linearize(lambda p: inner(p, state), y)
        transpose = jax.linear_transpose(jvp, y)
        return u, jvp, lambda w: transpose(w)[0]

    return linearize


def autodiff_gram(inner: Callable) -> Callable:
    """``gram(θ, state)`` = LLᵀ with L = ∂u/∂θ from P vector–Jacobian products of ``inner``."""

    def gram(y, state):
        u, vjp = jax.vjp(lambda p: inner(p, state), y)
        (rows,) = jax.vmap(vjp)(jnp.eye(u.shape[0], dtype=u.dtype))  # pytree, leaves (P, …)
        flat = jnp.concatenate([r.reshape(u.shape[0], -1) for r in jax.tree.leaves(rows)], 1)
        return flat @ flat.T

    return gram


def ros2(rhs: Callable, gn: GaussNewton, every: int = 8) -> Method:
    """ROS2 with A = −JᵀHJ, J = G L (module docstring), its parts computed once per ``every``
    steps (a W-method keeps its order with any A, so a Jacobian a few steps old costs accuracy
    nothing and stability little)."""

    def prepare(y, state):
        u, jvp, vjp = gn.linearize(y, state)
        G = jax.jacfwd(lambda w: gn.outputs(w, state))(u)  # (K, P)
        H = gn.curvature(gn.outputs(u, state), state)
        HG = H @ G
        return jvp, vjp, G, HG, HG @ (gn.gram(y, state) @ G.T)

    def step(y, f0, h, state, aux):
        jvp, vjp, G, HG, HJJt = aux
        c = GAMMA_ROS2 * h
        lu = jax.scipy.linalg.lu_factor(jnp.eye(HJJt.shape[0], dtype=HJJt.dtype) + c * HJJt)

        def solve(v):
            w = vjp(G.T @ jax.scipy.linalg.lu_solve(lu, HG @ jvp(v)))
            return jax.tree.map(lambda a, b: a - c * b, v, w)

        k1 = solve(f0)
        f1 = rhs(_lin(y, (1.0,), (k1,), h), state)
        k2 = solve(_lin(f1, (-2.0,), (k1,)))
        y1 = _lin(y, (1.5, 0.5), (k1, k2), h)
        e = _lin(jax.tree.map(jnp.zeros_like, y), (0.5, 0.5), (k1, k2), h)
        return y1, rhs(y1, state), e

    return Method(prepare, step, 1, every)


def make_flow_advance(
    method: Method, rtol: float, atol: float, max_steps: int = 10_000_000
) -> Callable:
    """``advance(carry, t, state, t1, budget) -> (carry, t)``, vmapped over seeds (``carry``,
    ``t`` and ``state`` per seed; ``t1`` and ``budget`` shared) and jitted: integrates from each
    seed's t towards t1 with ``method``, preparing its ``aux`` every ``method.every`` steps, and
    stops after ``budget`` more steps (for a method with an ``aux``: at the first refresh after
    them), so that one segment may take several calls without changing the result. A seed that
    turns non-finite or reaches ``max_steps`` steps before t1 is marked diverged."""
    exponent = -1.0 / (method.error_order + 1)
    split_inner = method.every >= 1 << 20  # no aux to keep: a chunk may end at any step

    def err_norm(e, y0, y1):
        total, count = 0.0, 0
        for e_l, a, b in zip(*(jax.tree.leaves(x) for x in (e, y0, y1)), strict=True):
            scale = atol + rtol * jnp.maximum(jnp.abs(a), jnp.abs(b))
            total = total + jnp.sum((e_l / scale) ** 2)
            count += e_l.size
        return jnp.sqrt(total / count)

    def advance_one(carry: FlowCarry, t0, state, t1, budget):
        stop = carry.steps + budget

        def going(t, fc):
            return (t < t1) & ~fc.diverged & (fc.steps < max_steps)

        def body(t, fc, aux):
            h = jnp.minimum(fc.h, t1 - t)
            y1, f1, e = method.step(fc.y, fc.f, h, state, aux)
            err = err_norm(e, fc.y, y1)
            finite = jnp.isfinite(err)
            for leaf in jax.tree.leaves(f1):
                finite &= jnp.all(jnp.isfinite(leaf))
            ok = finite & (err <= 1.0)
            factor = jnp.clip(0.9 * jnp.where(err > 0, err, 1e-12) ** exponent, 0.2, 5.0)
            h_next = jnp.where(finite, h * factor, h * 0.2)
            pick = lambda new, old: jax.tree.map(lambda a, b: jnp.where(ok, a, b), new, old)  # noqa: E731
            # repeated non-finite trials shrink h by 5 each; below 1e-12 (1 + t) the seed is lost
            diverged = ~finite & (h < 1e-12 * (1.0 + t))
            new = FlowCarry(
                pick(y1, fc.y), pick(f1, fc.f), h_next, fc.steps + 1, fc.diverged | diverged
            )
            return jnp.where(ok, t + h, t), new

        def inner_going(ci):
            more = going(ci[0], ci[1]) & (ci[2] < method.every)
            return more & (ci[1].steps < stop) if split_inner else more

        def outer(c):
            t, fc = c
            aux = method.prepare(fc.y, state)
            t, fc, _ = jax.lax.while_loop(
                inner_going,
                lambda ci: (*body(ci[0], ci[1], aux), ci[2] + 1),
                (t, fc, 0),
            )
            return t, fc

        t_end, out = jax.lax.while_loop(
            lambda c: going(*c) & (c[1].steps < stop), outer, (t0, carry)
        )
        lost = (t_end < t1) & (out.steps >= max_steps)  # stopped early: lost
        return out._replace(diverged=out.diverged | lost), t_end

    return jax.jit(jax.vmap(advance_one, in_axes=(0, 0, 0, None, None)))


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
    gauss_newton: GaussNewton | None = None,
    chunker: Chunker | None = None,
) -> RunResult:
    """Gradient flow ẏ = −grad(y, state) from ``init(key)`` (the init key of
    :func:`attndyn.core.trainer.seed_keys`), observed at ``times`` (t = 0 first): ``bs3``, or
    ``ros2`` when a :class:`GaussNewton` ``gauss_newton`` is given (module docstring).

    ``observe`` may return arrays; they come back with shape (seed, time, …).
    Returns a RunResult whose ``steps`` are the RK steps (accepted or rejected) taken up to each
    record (the maximum over seeds); ``diverged_step`` is the record index at which a seed
    stopped being finite (−1 if never). ``chunker`` sets how many steps one call takes (default:
    about :data:`attndyn.core.progress.TARGET_S` seconds' worth)."""
    init_keys, _ = seed_keys(np.asarray(seeds))
    y, state = jax.vmap(init)(init_keys)
    rhs = lambda p, s: jax.tree.map(jnp.negative, grad(p, s))  # noqa: E731
    method = bs3(rhs) if gauss_newton is None else ros2(rhs, gauss_newton)
    f = jax.vmap(rhs)(y, state)
    dtype = jax.tree.leaves(y)[0].dtype
    n = len(seeds)
    carry = FlowCarry(y, f, jnp.full(n, h0, dtype), jnp.zeros(n, jnp.int32), jnp.zeros(n, bool))
    n_devices = devices.count(n)
    carry, state = devices.shard((carry, state), n_devices)
    advance = make_flow_advance(method, rtol, atol)
    obs_fn = jax.jit(jax.vmap(observe))
    records, steps = [], []
    div_at = np.full(n, -1, np.int64)
    times = np.asarray(times, dtype=np.float64)
    t, t_seed = 0.0, devices.shard(jnp.zeros(n, dtype), n_devices)
    chunker = chunker or Chunker()
    for r, target in enumerate(times):
        if target > t:
            t1 = jnp.asarray(target, dtype)
            while True:
                before = int(np.max(np.asarray(carry.steps)))
                budget = chunker.next(1 << 30)
                start = chunker.clock()
                carry, t_seed = jax.block_until_ready(advance(carry, t_seed, state, t1, budget))
                taken = int(np.max(np.asarray(carry.steps))) - before
                chunker.took(taken, chunker.clock() - start)
                live = ~np.asarray(carry.diverged)
                t_live = np.asarray(t_seed)[live]
                report_steps(float(t_live.min()) if t_live.size else target, times[-1], "time")
                if not np.any(t_live < np.asarray(t1)):  # t1: target rounded to the dtype
                    break
            t = float(target)
            t_seed = devices.shard(jnp.full(n, t, dtype), n_devices)  # segments start at records
        obs = jax.device_get(obs_fn(carry.y, state))
        bad = np.asarray(carry.diverged) & (div_at < 0)
        div_at[bad] = r
        dead = div_at >= 0
        records.append(
            {
                k: np.where(dead.reshape(-1, *[1] * (np.ndim(v) - 1)), np.nan, v)
                for k, v in obs.items()
            }
        )
        steps.append(int(np.max(np.asarray(carry.steps))))
    cost.report(steps[-1], advance, carry, t_seed, state, jnp.asarray(times[-1], dtype), 1)
    names = list(records[0])
    return RunResult(
        steps=np.asarray(steps, np.int64),
        observables={k: np.stack([rec[k] for rec in records], axis=1) for k in names},
        diverged_step=div_at,
        final_params=carry.y,
        devices=n_devices,
    )
