"""The markov simulation (arXiv 2605.01199): ``build(config)`` returns the trainer's
:class:`~attndyn.core.trainer.Problem` for the model of Def. 2.2 (model.py) on population
(Prop. 2.3), online or fixed Markov data (data.py) or text (text.py); ``optimizer='flow'``
integrates the population gradient flow of Eq. 4 adaptively (:mod:`attndyn.core.flow`: the
Rosenbrock W-method ROS2 with the Gauss–Newton Jacobian of the logits, or explicit
Bogacki–Shampine). ``time`` = lr·step (flow time).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.config import canonical
from attndyn.core.flow import integrate_flow
from attndyn.core.grids import record_grid
from attndyn.core.simulate import seed_array
from attndyn.core.trainer import Problem, RunResult, train
from attndyn.core.trajectory import make_trajectory
from attndyn.core.updates import optimizer as update_rule
from attndyn.models.markov import data, model, observables
from attndyn.models.markov.config import NAME, MarkovConfig
from attndyn.models.markov.data import DataLaw
from attndyn.models.markov.observables import OBSERVABLES_VERSION, OVERFLOW, tracked_tokens

TIME_LABEL = "flow time t = lr·k"
"""Axis label of ``time``."""
FROZEN = ("WQ", "WK")
"""The groups that ``train_attention=false`` freezes."""


def build(config: MarkovConfig, law: DataLaw | None = None) -> Problem:
    """The Problem (init, sample, loss, observe, update) of ``config``."""
    law = law or DataLaw(config)
    dtype = jnp.dtype(config.dtype)
    arch = model.Arch.of(config)
    d, s = law.d, config.seq_len
    track = tracked_tokens(config, law.pi)
    pi = jnp.asarray(law.pi, dtype)
    P = jnp.asarray(law.P, dtype)
    tokens = None if law.tokens is None else jnp.asarray(law.tokens, jnp.int32)
    if tokens is not None:
        from attndyn.models.markov.text import require_windows

        require_windows(tokens.shape[0], s)

    def init(key):
        k_params, k_data = jax.random.split(key)
        params = model.init_params(
            k_params, d, config.m, config.key_width, config.epsilon, arch, dtype
        )
        state = {"pi": pi, "P": P}
        if config.data == "fixed":
            state["sequences"] = data.sample_sequences(k_data, P, config.n_sequences, s + 1)
        return params, state

    def sample(key):
        if config.data == "online":
            return data.sample_sequences(key, P, config.batch, s + 1)
        if config.data == "text":
            starts = jax.random.randint(key, (config.batch,), 0, tokens.shape[0] - s)
            return jax.vmap(lambda a: jax.lax.dynamic_slice(tokens, (a,), (s + 1,)))(starts)
        if config.data == "fixed" and config.batch == config.n_sequences:
            return jnp.arange(config.n_sequences)  # the whole set: one step is one epoch
        if config.data == "fixed":
            return jax.random.randint(key, (config.batch,), 0, config.n_sequences)
        return key  # population: nothing is sampled

    def loss(params, state, batch):
        if config.data == "population":
            return model.population_loss(params, state["pi"], state["P"], arch)
        if config.data == "fixed":
            batch = state["sequences"][batch]
        return model.sequence_loss(params, batch, arch)

    def observe(params, state):
        return observables.observe(params, state["pi"], state["P"], law.entropy_star, track, arch)

    value_and_grad = None
    if not config.train_attention:
        full = jax.value_and_grad(loss)

        def value_and_grad(params, state, batch):
            """∇L with the W_Q, W_K blocks zeroed: attention stays at its init."""
            value, grads = full(params, state, batch)
            return value, {
                k: jnp.zeros_like(g) if k in ("WQ", "WK") else g for k, g in grads.items()
            }

    name = "adam" if config.optimizer == "adam" else "sgd"  # flow: the update is unused
    return Problem(
        init=init,
        sample=sample,
        loss=loss,
        observe=observe,
        update=update_rule(name, config.lr),
        batch=1 if config.data == "population" else config.batch,
        value_and_grad=value_and_grad,
    )


def time_axes(config: MarkovConfig, steps: np.ndarray) -> dict[str, np.ndarray]:
    """``time`` = lr·step (the gradient-flow time of GD; nominal for Adam)."""
    return {"time": config.lr * np.asarray(steps, dtype=np.float64)}


def run_records(
    config: MarkovConfig,
    seeds=None,
    adapt: Callable[[Problem], Problem] | None = None,
) -> tuple[RunResult, np.ndarray, np.ndarray]:
    """Train (gd, adam: :func:`attndyn.core.trainer.train`) or integrate (flow:
    :func:`attndyn.core.flow.integrate_flow`, ROS2 with :func:`model.gauss_newton` or bs3) every
    seed on the record grid. ``adapt(problem)`` may replace the Problem's ``init`` or
    ``observe`` (whose values may be arrays: they come back with shape (seed, time, …)).

    Returns:
        (RunResult, record steps, seed ids).
    """
    law = DataLaw(config)
    steps = record_grid(config)
    seed_ids = seed_array(config, seeds)
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(config, law)
        if adapt is not None:
            problem = adapt(problem)
        if config.optimizer != "flow":
            return train(problem, steps, seed_ids), steps, seed_ids
        frozen = () if config.train_attention else FROZEN
        arch = model.Arch.of(config)
        gauss_newton = model.gauss_newton(arch, frozen) if config.solver == "ros2" else None

        def grad(p, st):
            return model.population_gradient(p, st["pi"], st["P"], arch, frozen)

        result = integrate_flow(
            problem.init,
            grad,
            problem.observe,
            time_axes(config, steps)["time"],
            seed_ids,
            rtol=config.rtol,
            gauss_newton=gauss_newton,
        )
    return result, steps, seed_ids


def simulate(config: MarkovConfig, seeds=None):
    """Train every seed and record the observables (observables.py) on the record grid.

    Returns:
        Trajectory, dims ``(seed, time)``, ``time`` = lr·step, ``samples`` = step·batch (batch 1
        for population data). For ``optimizer='flow'`` the record times are the same lr·step
        grid, ``step`` counts the adaptive steps taken and ``samples`` is 0.
    """
    result, steps, seed_ids = run_records(config, seeds)
    flow = config.optimizer == "flow"
    batch = 0 if flow else 1 if config.data == "population" else config.batch
    div = result.diverged_step
    if flow:  # the flow marks a record index: its step count there
        div = np.where(div >= 0, result.steps[np.maximum(div, 0)], -1)
    traj = make_trajectory(
        result.observables,
        time=time_axes(config, steps)["time"],
        samples=steps * batch,
        step=result.steps if flow else steps,
        seeds=seed_ids,
        diverged_step=div,
        family=NAME,
        overflow=OVERFLOW,
        config=canonical(config),
    )
    traj.attrs["devices"] = result.devices  # seeds sharded over (attndyn.core.devices)
    traj.attrs["observables_version"] = OBSERVABLES_VERSION
    return traj
