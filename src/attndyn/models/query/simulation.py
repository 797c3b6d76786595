"""The query simulation (our reconstruction of arXiv 2606.22406, docs/query.md): ``build(config)``
returns the trainer's :class:`~attndyn.core.trainer.Problem` (analytic gradient, sphere
projection); ``simulate`` runs it and returns a Trajectory whose ``time`` counts SGA steps, with
the extra time axis ``ode_time`` = Σ_{j<k} η_j (the limiting ODE's time, docs/query-theory.md
§2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.schedules import inverse_power
from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import optimizer
from attndyn.models.query import model, reduced
from attndyn.models.query.config import NAME, QueryConfig
from attndyn.models.query.observables import OVERFLOW, observe

TIME_LABEL = "SGA step k"
"""Axis label of ``time``."""


def token_spec(config: QueryConfig, n_seeds: int | None = None) -> model.TokenSpec:
    """The static token description; resolves ``stream='auto'`` with the memory the whole
    route would need for ``n_seeds`` (default ``config.seeds``) × ``batch`` samples."""
    n_seeds = config.seeds if n_seeds is None else n_seeds
    itemsize = 8 if config.dtype == "float64" else 4
    whole_mb = n_seeds * config.batch * config.n_tokens * config.d * itemsize / 2**20
    stream = config.stream
    if stream == "auto":
        stream = "whole" if whole_mb <= config.max_token_mb else "chunked"
    return model.TokenSpec(
        d=config.d,
        n_informative=config.n_informative,
        n_nuisance=config.n_nuisance,
        theta=config.theta,
        sigma=config.sigma_eff,
        beta=config.beta_eff,
        sign_mode=config.sign_mode,
        dtype=config.dtype,
        chunk_tokens=None if stream == "whole" else config.chunk,
    )


def _unit(v: jax.Array) -> jax.Array:
    return v / jnp.linalg.norm(v)


def init_query(key: jax.Array, u: jax.Array, config: QueryConfig) -> jax.Array:
    """q₀ uniform on the sphere of radius ``init_norm``, or with overlap ``init_overlap`` exactly
    (q₀ = r(m₀u + √(1 − m₀²) v), v uniform on the unit sphere of u^⊥)."""
    g = jax.random.normal(key, u.shape, u.dtype)
    if config.init_overlap is None:
        return config.init_norm * _unit(g)
    v = _unit(g - (g @ u) * u)
    m0 = config.init_overlap
    return config.init_norm * (m0 * u + np.sqrt(1.0 - m0 * m0) * v)


def build(config: QueryConfig, n_seeds: int | None = None) -> Problem:
    """The SGA problem as pure functions: ascent on ‖a‖² is descent on −‖a‖², with the analytic
    (whole or streamed) gradient and the sphere normalisation as the trainer's hooks.
    ``sampler='reduced'``: the exact reduced chain of (α, b) (reduced.py), params (α, b, 0)."""
    spec = token_spec(config, n_seeds)
    if config.sampler == "reduced":
        return reduced.build_problem(config, spec)
    dtype = jnp.dtype(config.dtype)
    d, B = config.d, config.batch
    eval_n = config.eval_samples

    def init(key):
        k_u, k_q, k_eval = jax.random.split(key, 3)
        if config.latent == "e1":
            u = jnp.zeros((d,), dtype).at[0].set(1.0)
        else:
            u = _unit(jax.random.normal(k_u, (d,), dtype))
        return {"q": init_query(k_q, u, config)}, {"u": u, "eval_key": k_eval}

    def sample(key):
        return jax.random.split(key, B)

    def value_and_grad(params, state, keys):
        obj, grad = jax.vmap(
            lambda k: model.sample_objective_and_grad(params["q"], k, state["u"], spec)
        )(keys)
        return -jnp.mean(obj), {"q": -jnp.mean(grad, axis=0)}

    def loss(params, state, keys):
        obj = jax.vmap(lambda k: model.sample_objective(params["q"], k, state["u"], spec))(keys)
        return -jnp.mean(obj)

    def observe_fn(params, state):
        obs = observe(params["q"], state["u"])
        if eval_n > 0:
            keys = jax.random.split(state["eval_key"], eval_n)
            obj = jax.lax.map(
                lambda k: model.sample_objective(params["q"], k, state["u"], spec), keys
            )
            obs["objective"] = jnp.mean(obj)
        return obs

    project = None
    if config.constraint == "sphere":
        project = lambda p: {"q": _unit(p["q"])}  # noqa: E731

    schedule = None
    if config.schedule == "robbins-monro":
        schedule = inverse_power(config.k0, config.gamma)
    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=observe_fn,
        update=optimizer("sgd", config.eta, schedule, config.l2),
        batch=B,
        value_and_grad=value_and_grad,
        project=project,
    )


def step_sizes(config: QueryConfig, k: np.ndarray) -> np.ndarray:
    """η_k in float64: η·(k0/(k + k0))^γ (Robbins–Monro) or η."""
    k = np.asarray(k, dtype=np.float64)
    if config.schedule == "constant":
        return np.full_like(k, config.eta)
    return config.eta * (config.k0 / (k + config.k0)) ** config.gamma


def ode_times(config: QueryConfig, steps: np.ndarray, block: int = 1 << 20) -> np.ndarray:
    """t_K = Σ_{j<K} η_j at each record step K, summed exactly in float64 (the limiting
    ODE's time is the cumulative step size, docs/query-theory.md §2)."""
    out = np.empty(len(steps), dtype=np.float64)
    total, k = 0.0, 0
    for i, target in enumerate(np.asarray(steps, dtype=np.int64)):
        while k < target:
            stop = min(int(target), k + block)
            total += float(np.sum(step_sizes(config, np.arange(k, stop))))
            k = stop
        out[i] = total
    return out


def time_axes(config: QueryConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """``time`` = SGA steps and ``ode_time`` = Σ_{j<k} η_j (:func:`ode_times`)."""
    return {"time": np.asarray(steps, dtype=np.float64), "ode_time": ode_times(config, steps)}


def simulate(config: QueryConfig, seeds=None):
    """Run projected SGA for every seed.

    Args:
        config: the validated QueryConfig.
        seeds: explicit seeds; default ``config.seed … config.seed + config.seeds − 1``.

    Returns:
        Trajectory (xarray.Dataset), dims ``(seed, time)`` = (S, R), ``time`` = SGA steps:
        ``overlap``, ``alignment``, ``q_norm``, ``perp_norm``, ``objective``, each (S, R)
        float64; coordinates ``samples`` = steps·batch, ``step``, ``ode_time`` = Σ_{j<k} η_j
        (R,), ``diverged``/``diverged_step`` per seed.
    """
    n_seeds = config.seeds if seeds is None else len(seeds)
    return simulate_problem(
        lambda: build(config, n_seeds=n_seeds),
        config,
        seeds,
        family=NAME,
        overflow=OVERFLOW,
        times=lambda s: time_axes(config, s),
    )
