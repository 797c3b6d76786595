"""Parameter snapshots of the focus–dilution family at the record times (arXiv 2605.01199).

Fig. 2(B) and Appendix E.2 apply PCA to the embedding snapshots W₀(t) of a run; Lemma 3.1 and
Thm 3.2 say the attention block W_QK = W_QW_Kᵀ stays O(ε) in Stage I. Neither is a scalar of the
current parameters alone, so :func:`snapshots` integrates a population run once more (the same
init, the same flow solver — ``solver`` ros2 or bs3 — or GD as
:func:`attndyn.models.markov.simulate`) and returns, besides the
observables of observables.py, per record:

- ``W0``: the embedding (seed, time, d, m);
- ``w0_pi``: ‖πᵀW₀‖/‖π‖, the embedding's component along the Stage-I left singular direction
  π/‖π‖ (Thm 3.2, Eq. 11); in the linearisation Eq. 10 it grows as e^{σ₁t} (docs/focus.md);
- ``w0_norm``: ‖W₀‖_F;
- ``wqk_drift``: ‖W_QK(t) − W_QK(0)‖_F / ‖W_QK(0)‖_F.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.flow import (
    FlowCarry,
    bs3_step,
    gauss_newton_solver,
    make_flow_advance,
    ros2_step,
)
from attndyn.core.grids import record_grid
from attndyn.core.simulate import seed_array
from attndyn.core.trainer import seed_keys
from attndyn.errors import InputError
from attndyn.models.markov import model
from attndyn.models.markov.config import MarkovConfig


def snapshots(config: MarkovConfig, seeds=None) -> dict[str, np.ndarray]:
    """Rerun ``config`` (population data; ``optimizer`` flow or gd) and return ``time`` (T,),
    ``seed`` (S,), ``W0`` (S, T, d, m) and every observable as (S, T) arrays, with ``w0_pi``,
    ``w0_norm`` and ``wqk_drift`` added (module docstring)."""
    from attndyn.models.markov import DataLaw, build, time_axes

    if config.data != "population" or config.optimizer not in ("flow", "gd"):
        raise InputError(
            "invalid value for 'optimizer': snapshots need data='population' with optimizer "
            f"'flow' or 'gd' (got data={config.data!r}, optimizer={config.optimizer!r})"
        )
    steps = record_grid(config)
    times = time_axes(config, steps)["time"]
    seed_ids = seed_array(config, seeds)
    law = DataLaw(config)
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(config, law)
        pi = jnp.asarray(law.pi, jnp.dtype(config.dtype))

        def init(key):
            params, state = problem.init(key)
            return params, {**state, "WQK0": params["WQ"] @ params["WK"].T}

        def observe(params, state):
            out = problem.observe(params, state)
            qk = params["WQ"] @ params["WK"].T
            out["wqk_drift"] = jnp.linalg.norm(qk - state["WQK0"]) / jnp.linalg.norm(state["WQK0"])
            out["w0_pi"] = jnp.linalg.norm(pi @ params["W0"]) / jnp.linalg.norm(pi)
            out["w0_norm"] = jnp.linalg.norm(params["W0"])
            return out, params["W0"]

        grad = jax.grad(lambda p, st: problem.loss(p, st, None))
        init_keys, _ = seed_keys(np.asarray(seed_ids))
        y, state = jax.vmap(init)(init_keys)
        obs_fn = jax.jit(jax.vmap(observe))
        if config.optimizer == "flow":
            rhs = lambda p, s: jax.tree.map(jnp.negative, grad(p, s))  # noqa: E731
            dtype = jax.tree.leaves(y)[0].dtype
            n = len(seed_ids)
            carry = FlowCarry(
                y,
                jax.vmap(rhs)(y, state),
                jnp.full(n, 1e-3, dtype),
                jnp.zeros(n, jnp.int32),
                jnp.zeros(n, bool),
            )
            if config.solver == "ros2":  # as in markov.simulate
                arch = model.Arch.of(config)
                solve = gauss_newton_solver(
                    lambda p, st: model.population_logits(p, st["pi"], arch).reshape(-1),
                    lambda z, st: model.population_curvature(z, st["pi"]),
                )
                step, order = ros2_step(rhs, solve), 1
            else:
                step, order = bs3_step(rhs), 2
            advance = make_flow_advance(rhs, step, order, config.rtol, 1e-12)
        else:
            lr = config.lr

            @jax.jit
            def gd(params, state, k):
                def body(_, p):
                    return jax.vmap(
                        lambda q, s: jax.tree.map(lambda a, g: a - lr * g, q, grad(q, s))
                    )(p, state)

                return jax.lax.fori_loop(0, k, body, params)

        records, w0s = [], []
        t, step = 0.0, 0
        for target_step, target in zip(steps, times, strict=True):
            if config.optimizer == "flow":
                if target > t:
                    carry = advance(carry, state, jnp.asarray(t, dtype), jnp.asarray(target, dtype))
                    t = float(target)
                params = carry.y
            else:
                if target_step > step:
                    y = gd(y, state, int(target_step - step))
                    step = int(target_step)
                params = y
            obs, w0 = jax.device_get(obs_fn(params, state))
            records.append(obs)
            w0s.append(np.asarray(w0))
    out = {k: np.stack([np.asarray(r[k], np.float64) for r in records], axis=1) for k in records[0]}
    out["W0"] = np.stack(w0s, axis=1).astype(np.float64)
    out["time"] = np.asarray(times, np.float64)
    out["seed"] = np.asarray(seed_ids)
    return out
