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

from attndyn.core.flow import integrate_flow
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
            return out

        grad = jax.grad(lambda p, st: problem.loss(p, st, None))
        d, m = len(law.pi), config.m
        if config.optimizer == "flow":
            # W₀'s entries as scalar observables, so integrate_flow records them as it is
            def observe_all(params, state):
                out = observe(params, state)
                for i in range(d):
                    for k in range(m):
                        out[f"__W0_{i}_{k}"] = params["W0"][i, k]
                return out

            gauss_newton = None
            if config.solver == "ros2":  # as in markov.simulate
                arch = model.Arch.of(config)
                gauss_newton = (
                    lambda p, st: model.population_logits(p, st["pi"], arch).reshape(-1),
                    lambda z, st: model.population_curvature(z, st["pi"]),
                )
            result = integrate_flow(
                init,
                grad,
                observe_all,
                times,
                seed_ids,
                rtol=config.rtol,
                gauss_newton=gauss_newton,
            )
            obs = result.observables
            W0 = np.stack(
                [np.stack([obs.pop(f"__W0_{i}_{k}") for k in range(m)], -1) for i in range(d)],
                axis=-2,
            )
            out = {k: np.asarray(v, np.float64) for k, v in obs.items()}
            out["W0"] = W0.astype(np.float64)
            out["time"] = np.asarray(times, np.float64)
            out["seed"] = np.asarray(seed_ids)
            return out
        lr = config.lr

        @jax.jit
        def gd(params, state, k):
            def body(_, p):
                return jax.vmap(lambda q, s: jax.tree.map(lambda a, g: a - lr * g, q, grad(q, s)))(
                    p, state
                )

            return jax.lax.fori_loop(0, k, body, params)

        def observe_w0(params, state):
            return observe(params, state), params["W0"]

        init_keys, _ = seed_keys(np.asarray(seed_ids))
        y, state = jax.vmap(init)(init_keys)
        obs_fn = jax.jit(jax.vmap(observe_w0))
        records, w0s = [], []
        step = 0
        for target_step in steps:
            if target_step > step:
                y = gd(y, state, int(target_step - step))
                step = int(target_step)
            obs, w0 = jax.device_get(obs_fn(y, state))
            records.append(obs)
            w0s.append(np.asarray(w0))
    out = {k: np.stack([np.asarray(r[k], np.float64) for r in records], axis=1) for k in records[0]}
    out["W0"] = np.stack(w0s, axis=1).astype(np.float64)
    out["time"] = np.asarray(times, np.float64)
    out["seed"] = np.asarray(seed_ids)
    return out
