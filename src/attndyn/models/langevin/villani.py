"""The Villani probe of condition (iii) along random rays (docs/langevin.md, "Villani probe").

Shi, Su & Jordan (arXiv 2004.06977) call F a Villani function when, among other conditions,

    V_s(θ) = ‖∇F(θ)‖²/s − ΔF(θ) → +∞   as ‖θ‖ → ∞              (condition (iii)),

which with (i)–(ii) gives the Gibbs measure μ_s ∝ exp(−2F/s) a Poincaré inequality (Villani's
criterion). This module evaluates V_s at θ = c + R·u along random unit rays u for a grid of
radii R. The Laplacian ΔF = tr ∇²F is estimated by Hutchinson's estimator (Hutchinson 1990):
ΔF ≈ (1/m) Σ_j z_jᵀ ∇²F z_j with Rademacher z_j (E zzᵀ = I), each Hessian-vector product
∇²F z = d/dε ∇F(θ + εz) computed by a jvp of the gradient (forward-over-reverse). The per-probe
spread gives the estimator's Monte Carlo standard error.

A probe is evidence, not a proof: a min over finitely many rays cannot see a measure-zero set of
bad directions (e.g. the flat GL(d_k) orbit of attention's (W_Q, W_K) at λ = 0 is not a ray
through the origin).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from attndyn.models.langevin.config import LangevinConfig
from attndyn.models.langevin.model import Potential, attention_shapes, potential

FlatF = Callable[[jax.Array], jax.Array]


def flat_potential(pot: Potential, frozen: dict, template) -> tuple[FlatF, Callable]:
    """F as a function of the flat parameter vector, and ``unravel`` (flat → params pytree)."""
    _, unravel = ravel_pytree(template)

    def f(x):
        return pot.F(unravel(x), frozen)

    return f, unravel


def hvp(f: FlatF, x: jax.Array, v: jax.Array) -> jax.Array:
    """∇²F(x) v by forward-over-reverse: the jvp of ∇F at x along v."""
    return jax.jvp(jax.grad(f), (x,), (v,))[1]


def rademacher(key: jax.Array, probes: int, p: int, dtype) -> jax.Array:
    """``probes`` vectors of i.i.d. ±1 entries, shape (probes, p)."""
    return jax.random.rademacher(key, (probes, p), dtype=dtype)


def hutchinson_terms(f: FlatF, x: jax.Array, z: jax.Array) -> jax.Array:
    """zᵀ∇²F(x)z for each probe row of ``z``: unbiased for ΔF(x) = tr ∇²F(x)."""
    return jax.vmap(lambda v: jnp.vdot(v, hvp(f, x, v)))(z)


def hutchinson_laplacian(
    f: FlatF, x: jax.Array, key: jax.Array, probes: int
) -> tuple[jax.Array, jax.Array | float]:
    """(estimate, standard error) of ΔF(x) from ``probes`` Rademacher probes.

    The Hutchinson variance is 2 Σ_{i≠j} H_ij² / m (Rademacher), estimated here by the sample
    variance of the m terms."""
    terms = hutchinson_terms(f, x, rademacher(key, probes, x.shape[0], x.dtype))
    se = jnp.std(terms, ddof=1) / jnp.sqrt(probes) if probes > 1 else jnp.inf
    return jnp.mean(terms), se


def exact_laplacian(f: FlatF, x: jax.Array) -> jax.Array:
    """tr ∇²F(x) from the full Hessian (small p only: tests)."""
    return jax.jit(lambda x: jnp.trace(jax.hessian(f)(x)))(x)


@dataclass(frozen=True)
class Probe:
    """V_s on a (ray, radius) grid: arrays of shape (rays, radii).

    ``value`` = ``grad_sq``/s − ``laplacian``; ``laplacian_se`` is the Hutchinson standard error
    (so ``value`` carries the same error)."""

    radii: np.ndarray
    value: np.ndarray
    grad_sq: np.ndarray
    laplacian: np.ndarray
    laplacian_se: np.ndarray
    s: float


def villani_probe(
    f: FlatF,
    center: jax.Array,
    rays: jax.Array,
    radii,
    s: float,
    key: jax.Array,
    probes: int = 16,
) -> Probe:
    """V_s(c + R·u) = ‖∇F‖²/s − ΔF for every unit ray u (rows of ``rays``) and radius R.

    Each (ray, radius) point draws its own Rademacher probes from ``key``."""
    if s <= 0:
        raise ValueError("s: the Villani probe needs a temperature s > 0")
    radii_arr = jnp.asarray(radii, center.dtype)
    n_rays, n_radii = rays.shape[0], radii_arr.shape[0]
    keys = jax.random.split(key, n_rays * n_radii).reshape(n_rays, n_radii, -1)

    def point(u, r, k):
        x = center + r * u
        g = jax.grad(f)(x)
        lap, se = hutchinson_laplacian(f, x, k, probes)
        return jnp.vdot(g, g), lap, se

    over_radii = jax.vmap(point, in_axes=(None, 0, 0))
    grad_sq, lap, se = jax.jit(jax.vmap(over_radii, in_axes=(0, None, 0)))(rays, radii_arr, keys)
    grad_sq, lap, se = (np.asarray(a, dtype=float) for a in (grad_sq, lap, se))
    return Probe(np.asarray(radii, dtype=float), grad_sq / s - lap, grad_sq, lap, se, s)


def random_rays(key: jax.Array, n_rays: int, p: int, dtype=jnp.float32) -> jax.Array:
    """``n_rays`` directions uniform on the unit sphere of ℝ^p (normalised Gaussians)."""
    z = jax.random.normal(key, (n_rays, p), dtype)
    return z / jnp.linalg.norm(z, axis=1, keepdims=True)


def init_radius(config: LangevinConfig) -> float:
    """√E‖θ₀‖² of the Gaussian initialisation, the natural unit of the radii: Σ_g of
    init_scale²·size_g/fan_in_g (model.py: weights N(0, init_scale²/fan_in))."""
    c = config
    if c.model == "attention":
        from attndyn.models.langevin.model import attention_trained

        shapes = attention_shapes(c)
        total = 0.0
        for g in attention_trained(c):
            shape, fan = shapes[g]
            total += float(np.prod(shape)) / fan
    elif c.model == "lora":
        total = c.rank * c.d / c.d  # A: r×d, fan_in d
        total += 0.0 if c.lora_init == "zero-b" else c.width * c.rank / c.rank
        total += 1.0 if c.train_outer else 0.0  # a: p entries, fan_in p
    else:
        total = float(c.dim)
    return float(np.sqrt(c.init_scale**2 * total))


def probe_config(
    config: LangevinConfig,
    radii,
    n_rays: int,
    probes: int,
    key: jax.Array,
    s: float | None = None,
) -> Probe:
    """The Villani probe of the config's F (its data from ``data_seed``) along ``n_rays``
    uniform rays from the origin at the radii ``radii`` (absolute ‖θ‖), temperature ``s``
    (default the config's)."""
    from attndyn.models.langevin.model import frozen_part

    with jax.enable_x64(config.dtype == "float64"):
        pot = potential(config)
        frozen = frozen_part(config, pot)
        template = pot.init(jax.random.PRNGKey(0))
        f, _ = flat_potential(pot, frozen, template)
        flat, _ = ravel_pytree(template)
        k_rays, k_probe = jax.random.split(key)
        rays = random_rays(k_rays, n_rays, flat.shape[0], flat.dtype)
        return villani_probe(
            f,
            jnp.zeros_like(flat),
            rays,
            radii,
            config.s if s is None else s,
            k_probe,
            probes,
        )


def probe_trajectory(
    config: LangevinConfig, radii, n_rays: int, probes: int, seed: int, s: float | None = None
):
    """:func:`probe_config` as a Trajectory for the run store: dims ``(seed, time)`` = (ray,
    radius index), coordinate ``radius``; observables ``V``, ``grad_sq``, ``laplacian``,
    ``laplacian_se``. Rays and probes are drawn from ``PRNGKey(seed)``."""
    from attndyn.core.config import canonical
    from attndyn.core.trajectory import make_trajectory

    pr = probe_config(config, radii, n_rays, probes, jax.random.PRNGKey(seed), s)
    return make_trajectory(
        {
            "V": pr.value,
            "grad_sq": pr.grad_sq,
            "laplacian": pr.laplacian,
            "laplacian_se": pr.laplacian_se,
        },
        time=np.arange(len(pr.radii), dtype=float),
        extra_times={"radius": pr.radii},
        seeds=np.arange(n_rays),
        family="langevin:villani",
        config={**canonical(config), "radii": list(pr.radii), "rays": n_rays, "probes": probes},
    )
