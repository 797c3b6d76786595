"""Online (stochastic) gradient training of a family's Problem, vmapped over seeds.

Every step draws a fresh batch and takes, for each parameter group g,

    θ_g ← θ_g − η_g s_g(k) (∇_g L̄(θ; batch) + λ_g θ_g),

where L̄ is the batch-mean loss, η_g the group's step size, s_g its schedule and λ_g its
weight-decay coefficient. The step key is ``fold_in(data_key, k)``, so a seed's trajectory does not
depend on the record grid. Steps between record points run inside one jitted ``fori_loop``; seeds
run in parallel under ``vmap``. A seed whose loss or parameters become non-finite is frozen at its
last finite parameters and marked with the step at which it diverged; the run completes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.jaxsetup import enable_compilation_cache
from attndyn.core.schedules import Schedule

enable_compilation_cache()  # idempotent; every simulation imports the trainer

Params = dict[str, jnp.ndarray]


@dataclass(frozen=True)
class Problem:
    """A family's simulation, as pure functions.

    ``init(key) -> (params, state)``: trainable parameter groups and fixed state (e.g. the teacher).
    ``sample(key) -> batch``: one fresh batch. ``loss(params, state, batch) -> scalar`` (batch mean).
    ``observe(params, state) -> {name: scalar}``: observables at a record point.
    ``lr``: step size η_g per top-level group (an array or a dict of arrays);
    ``weight_decay``: λ_g per group (0 if absent);
    ``schedule``: s_g per group (constant if absent).
    ``time_per_sample``: macroscopic time per sample; ``extra_times``: other time axes per sample.
    ``value_and_grad(params, state, batch) -> (loss, grads)``: optional replacement of
    ``jax.value_and_grad(loss)`` (an analytic or streamed gradient); ``loss`` is then unused by
    the step. ``project(params) -> params``: optional map applied after every update (e.g. the
    normalisation of projected SGD onto a sphere); identity when absent.
    """

    init: Callable[[jax.Array], tuple[Params, Any]]
    sample: Callable[[jax.Array], Any]
    loss: Callable[[Params, Any, Any], jax.Array]
    observe: Callable[[Params, Any], dict[str, jax.Array]]
    lr: Mapping[str, float]
    batch: int = 1
    time_per_sample: float = 1.0
    weight_decay: Mapping[str, float] = field(default_factory=dict)
    schedule: Mapping[str, Schedule] = field(default_factory=dict)
    extra_times: Mapping[str, float] = field(default_factory=dict)
    value_and_grad: Callable[[Params, Any, Any], tuple[jax.Array, Params]] | None = None
    project: Callable[[Params], Params] | None = None


@dataclass
class RunResult:
    """Raw output of :func:`train` (the family turns it into a Trajectory)."""

    steps: np.ndarray  # (time,)
    observables: dict[str, np.ndarray]  # name -> (seed, time)
    diverged_step: np.ndarray  # (seed,), -1 if never diverged
    final_params: Params  # leaves with a leading seed axis


def seed_keys(seeds: np.ndarray) -> tuple[jax.Array, jax.Array]:
    """(init keys, data keys), one per seed, from ``PRNGKey(seed)``."""
    keys = jax.vmap(lambda s: jax.random.split(jax.random.PRNGKey(s), 2))(jnp.asarray(seeds))
    return keys[:, 0], keys[:, 1]


def make_step(problem: Problem) -> Callable:
    """One SGD step for one seed: (params, diverged_step, state, data_key, k) -> (params, div).

    θ ← Π(θ − η s(k)(∇L + λθ)) with ∇L from ``problem.value_and_grad`` when given and Π =
    ``problem.project`` (identity when absent)."""

    value_and_grad = problem.value_and_grad or jax.value_and_grad(problem.loss)

    def step(params, div, state, data_key, k):
        batch = problem.sample(jax.random.fold_in(data_key, k))
        loss, grads = value_and_grad(params, state, batch)
        new = {}
        for g, theta in params.items():
            eta = problem.lr[g]
            if g in problem.schedule:
                eta = eta * problem.schedule[g](k)
            lam = problem.weight_decay.get(g, 0.0)

            def update(theta, grad, eta=eta, lam=lam):
                if lam:
                    grad = grad + lam * theta
                return theta - jnp.asarray(eta, theta.dtype) * grad

            new[g] = jax.tree.map(update, theta, grads[g])  # a group may be a dict of arrays
        if problem.project is not None:
            new = problem.project(new)
        finite = jnp.isfinite(loss)
        for theta in jax.tree.leaves(new):
            finite &= jnp.isfinite(jnp.sum(theta))
        bad = (div < 0) & ~finite
        div = jnp.where(bad, k, div)
        frozen = div >= 0
        params = jax.tree.map(lambda n, o: jnp.where(frozen, o, n), new, params)
        return params, div

    return step


def make_advance(problem: Problem) -> Callable:
    """The jitted run between record points, vmapped over seeds:
    ``advance(params, div, state, data_keys, k0, k1) -> (params, div)`` takes steps k0 … k1 − 1.

    k0 and k1 are traced, so one compilation serves every segment of a record grid.
    """
    step = make_step(problem)

    def advance_one(params, div, state, data_key, k0, k1):
        def body(k, carry):
            return step(carry[0], carry[1], state, data_key, k)

        return jax.lax.fori_loop(k0, k1, body, (params, div))

    return jax.jit(jax.vmap(advance_one, in_axes=(0, 0, 0, 0, None, None)))


def init_seeds(problem: Problem, seeds: np.ndarray) -> tuple[Params, Any, jax.Array, jax.Array]:
    """(params, state, diverged_step, data keys) at step 0, each with a leading seed axis."""
    init_keys, data_keys = seed_keys(np.asarray(seeds))
    params, state = jax.vmap(problem.init)(init_keys)
    div = jnp.full(len(seeds), -1, dtype=jnp.int32)
    return params, state, div, data_keys


def train(problem: Problem, record_steps: np.ndarray, seeds: np.ndarray) -> RunResult:
    """Run every seed from step 0 to ``record_steps[-1]``, observing at each record step."""
    params, state, div, data_keys = init_seeds(problem, seeds)
    advance = make_advance(problem)
    observe = jax.jit(jax.vmap(problem.observe))

    records: list[dict[str, np.ndarray]] = []
    k = 0
    for target in record_steps:
        target = int(target)
        if target > k:
            params, div = advance(params, div, state, data_keys, k, target)
            k = target
        records.append(jax.device_get(observe(params, state)))
    names = list(records[0])
    observables = {n: np.stack([r[n] for r in records], axis=1) for n in names}
    return RunResult(
        steps=np.asarray(record_steps, dtype=np.int64),
        observables=observables,
        diverged_step=np.asarray(div, dtype=np.int64),
        final_params=params,
    )
