"""The Langevin simulation (arXiv 2605.07959; docs/langevin.md): ``build(config)`` returns the
trainer's Problem, whose update is optax SGD with step h plus the trainer's Gaussian noise of
variance s·h (:func:`attndyn.core.updates.optimizer` with ``temperature``), drawn from the
step's key; chains (seeds) are vmapped and share the data. ``simulate`` runs it on the SDE's
time axis.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.simulate import simulate_problem
from attndyn.core.trainer import Problem
from attndyn.core.updates import optimizer
from attndyn.models.langevin.config import NAME, LangevinConfig
from attndyn.models.langevin.model import frozen_part, potential
from attndyn.models.langevin.observables import OVERFLOW, observe

TIME_LABEL = "SDE time t = k·h (SGD: k·s)"
"""Axis label of ``time``."""


def sme_loss(pot, config: LangevinConfig):
    """The loss whose gradient step is one Euler–Maruyama step of sme1/sme2 (config docstring):
    F̃(θ) + Σ_i w_i ℓ_i(θ) with w_i = −√(s/(h b n))(ζ_i − ζ̄), so that −h∇ of the second term
    is √(s h/(b n)) Σ_i (ζ_i − ζ̄)∇ℓ_i, of covariance s·h·Σ_b (Σ_i (ζ_i − ζ̄) = 0 removes the
    mean gradient); ζ is the step's draw, passed as the batch."""
    n, s, h, b = config.n, config.s, config.step, config.batch
    per_sample = jax.vmap(lambda params, fz, i: pot.empirical(params, fz, i[None]), (None, None, 0))

    def loss(params, frozen, zeta):
        F = pot.F(params, frozen, None)
        if config.dynamics == "sme2":
            grad = jax.grad(lambda p: pot.F(p, frozen, None))(params)
            F = F + (s / 4) * sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grad))
        weights = -jnp.sqrt(s / (h * b * n)) * (zeta - jnp.mean(zeta))
        return F + jnp.sum(weights * per_sample(params, frozen, jnp.arange(n)))

    return loss


def build(config: LangevinConfig) -> Problem:
    """The trainer's Problem: loss F (full batch, or a minibatch for sgd; sme1/sme2:
    :func:`sme_loss`), update SGD(step) plus N(0, s·h) noise (sde, lmc); ``state`` = the
    frozen part, identical across chains."""
    pot = potential(config)
    n = config.n

    def init(key):
        return pot.init(key), frozen_part(config, pot)

    if config.dynamics in ("sme1", "sme2"):
        dtype = jnp.dtype(config.dtype)

        def sample(key):
            return jax.random.normal(key, (n,), dtype)  # ζ: the step's noise

        batch, loss = n, sme_loss(pot, config)
    elif config.dynamics == "sgd":

        def sample(key):
            return jax.random.randint(key, (config.batch,), 0, n)

        def loss(params, frozen, idx):
            return pot.F(params, frozen, idx)

        batch = config.batch
    else:

        def sample(key):
            return jnp.zeros((0,), jnp.int32)  # full batch: nothing to draw

        def loss(params, frozen, idx):
            return pot.F(params, frozen, None)

        batch = n if config.model in ("attention", "lora") else 1

    rule = optimizer("sgd", config.step, temperature=config.temperature)
    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=lambda params, frozen: observe(config, pot, params, frozen),
        update=rule,
        batch=batch,
    )


def time_axes(config: LangevinConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """``time`` = k·h (sde, lmc, sme1, sme2) or k·s (sgd): the SDE's time."""
    return {"time": np.asarray(steps, dtype=np.float64) * config.step}


def simulate(config: LangevinConfig, seeds=None):
    """Run every chain (seed) of the config's dynamics on its F.

    Returns:
        Trajectory, dims ``(seed, time)``, ``time`` = SDE time; the observables of the module
        docstring; coordinates ``step``, ``samples`` (gradient samples used), ``diverged``.
    """
    return simulate_problem(
        lambda: build(config),
        config,
        seeds,
        family=NAME,
        overflow=OVERFLOW,
        times=lambda s: time_axes(config, s),
    )
