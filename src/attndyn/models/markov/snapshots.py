"""Parameter snapshots of the focus–dilution family at the record times (arXiv 2605.01199).

Fig. 2(B) and Appendix E.2 apply PCA to the embedding snapshots W₀(t) of a run; Lemma 3.1 and
Thm 3.2 say the attention block W_QK = W_QW_Kᵀ stays O(ε) in Stage I. Neither is a scalar of the
current parameters alone, so :func:`snapshots` integrates a population run once more through
:func:`attndyn.models.markov.run_records` (the same init and solver as ``simulate``) and returns,
besides the observables of observables.py, per record:

- ``W0``: the embedding (seed, time, d, m);
- ``w0_pi``: ‖πᵀW₀‖/‖π‖, the embedding's component along the Stage-I left singular direction
  π/‖π‖ (Thm 3.2, Eq. 11); in the linearisation Eq. 10 it grows as e^{σ₁t} (docs/markov.md);
- ``stage1_mode``: ‖W₀ᵀπ̂ + W₁v̂‖/√2, π̂ = π/‖π‖, v̂ = (π − 𝟙/d)/‖π − 𝟙/d‖ (v̂ = 0 for uniform
  π): Thm 3.2's linearisation Ẇ₀ = σ₁π̂(W₁v̂)ᵀ, Ẇ₁ = σ₁(W₀ᵀπ̂)v̂ᵀ moves only x = W₀ᵀπ̂ and
  y = W₁v̂, by ẋ = σ₁y, ẏ = σ₁x, so (x + y)/√2 grows as exactly e^{σ₁t} from t = 0 and
  (x − y)/√2 decays as e^{−σ₁t} (``w0_pi`` = ‖x‖ mixes both);
- ``w0_norm``: ‖W₀‖_F;
- ``wqk_drift``: ‖W_QK(t) − W_QK(0)‖_F / ‖W_QK(0)‖_F.
"""

from __future__ import annotations

import dataclasses

import jax.numpy as jnp
import numpy as np

from attndyn.errors import InputError
from attndyn.models.markov.config import MarkovConfig


def stage1_mode(params, pi: jnp.ndarray) -> jnp.ndarray:
    """‖W₀ᵀπ̂ + W₁v̂‖/√2 (module docstring): Thm 3.2's growing Stage-I mode."""
    d = pi.shape[0]
    p_hat = pi / jnp.linalg.norm(pi)
    v = pi - 1.0 / d
    v_norm = jnp.linalg.norm(v)
    v_hat = jnp.where(v_norm > 0, v / jnp.where(v_norm > 0, v_norm, 1.0), 0.0)
    return jnp.linalg.norm(p_hat @ params["W0"] + params["W1"] @ v_hat) / jnp.sqrt(2.0)


def snapshots(config: MarkovConfig, seeds=None) -> dict[str, np.ndarray]:
    """Rerun ``config`` (population data; ``optimizer`` flow or gd) and return ``time`` (T,),
    ``seed`` (S,), ``W0`` (S, T, d, m) and every observable as (S, T) arrays, with ``w0_pi``,
    ``stage1_mode``, ``w0_norm`` and ``wqk_drift`` added (module docstring). The run is
    :func:`attndyn.models.markov.run_records`, the one that ``simulate`` records."""
    from attndyn.models.markov import run_records, time_axes

    if config.data != "population" or config.optimizer not in ("flow", "gd"):
        raise InputError(
            "invalid value for 'optimizer': snapshots need data='population' with optimizer "
            f"'flow' or 'gd' (got data={config.data!r}, optimizer={config.optimizer!r})"
        )

    def adapt(problem):
        def init(key):
            params, state = problem.init(key)
            return params, {**state, "WQK0": params["WQ"] @ params["WK"].T}

        def observe(params, state):
            out = problem.observe(params, state)
            qk = params["WQ"] @ params["WK"].T
            out["wqk_drift"] = jnp.linalg.norm(qk - state["WQK0"]) / jnp.linalg.norm(state["WQK0"])
            out["w0_pi"] = jnp.linalg.norm(state["pi"] @ params["W0"]) / jnp.linalg.norm(
                state["pi"]
            )
            out["stage1_mode"] = stage1_mode(params, state["pi"])
            out["w0_norm"] = jnp.linalg.norm(params["W0"])
            out["W0"] = params["W0"]
            return out

        return dataclasses.replace(problem, init=init, observe=observe)

    result, steps, seed_ids = run_records(config, seeds, adapt)
    out = {k: np.asarray(v, np.float64) for k, v in result.observables.items()}
    out["time"] = np.asarray(time_axes(config, steps)["time"], np.float64)
    out["seed"] = np.asarray(seed_ids)
    return out
