"""The circuits simulation: the trainer's :class:`~attndyn.core.trainer.Problem` (``build``) and
``simulate`` (Vashisht & Ramaswamy, arXiv 2608.06776; docs/circuits.md).

``build(config)`` uses the config's optimizer, SGD by default, with a fresh batch per step;
groups ``qk`` with η_QK = ratio·lr (times the QK schedule) and ``ov`` with η_OV = lr.
``simulate(config)`` returns a Trajectory whose time axis is the SGD step.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from attndyn.core.schedules import linear_ramp
from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import by_group, optimizer
from attndyn.models.circuits import data, model
from attndyn.models.circuits.config import NAME, CircuitsConfig
from attndyn.models.circuits.data import test_set
from attndyn.models.circuits.observables import (
    OVERFLOW,
    attention_observables,
    circuit_observables,
)

TIME_LABEL = "SGD step k"
"""Axis label of ``time``."""


def build(config: CircuitsConfig) -> Problem:
    """The circuits training problem as pure functions for the trainer."""
    dtype = jnp.dtype(config.dtype)
    scale = config.scale

    def init(key):
        params = model.init_params(key, config, dtype)
        tokens, labels = test_set(config)
        return params, {"tokens": tokens, "labels": labels}

    def sample(key):
        return data.sample_batch(key, config, config.batch)

    def loss(params, state, batch):
        return model.loss(params, batch[0], batch[1], scale)

    def observe(params, state):
        obs = circuit_observables(params, config)
        obs.update(attention_observables(params, state["tokens"], state["labels"], config))
        return obs

    qk_schedule = None
    if config.qk_schedule == "linear":
        qk_schedule = linear_ramp(config.qk_ramp_start, config.qk_ramp_end, config.total_steps)
    update = by_group(
        {
            "qk": optimizer(config.optimizer, config.lr_qk, qk_schedule),
            "ov": optimizer(config.optimizer, config.lr),
        }
    )
    return Problem(
        init=init, sample=sample, loss=loss, observe=observe, update=update, batch=config.batch
    )


def time_axes(config: CircuitsConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """``time`` = the SGD step."""
    return {"time": np.asarray(steps, dtype=np.float64)}


def simulate(config: CircuitsConfig, seeds=None):
    """Train the toy by SGD for every seed.

    Args:
        config: the validated CircuitsConfig.
        seeds: explicit seeds; default ``config.seed … config.seed + config.seeds − 1``.

    Returns:
        Trajectory (xarray.Dataset), dims ``(seed, time)`` = (S, R), ``time`` = SGD steps: the
        circuit and attention observables of :mod:`attndyn.models.circuits.observables` (e.g.
        ``loss``, ``attn_distinct``, ``frac_sharp``, ``qk_sv1``, ``ov_gap``), each (S, R)
        float64; coordinates ``samples``, ``step``, ``diverged``/``diverged_step`` per seed.
    """
    return simulate_problem(
        lambda: build(config),
        config,
        seeds,
        family=NAME,
        overflow=OVERFLOW,
        times=lambda s: time_axes(config, s),
    )
