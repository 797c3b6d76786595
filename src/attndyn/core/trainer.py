"""Online (stochastic) gradient training of a family's Problem, vmapped over seeds.

Every step k draws a fresh batch from the step key ``fold_in(data_key, k)`` and applies the
Problem's update rule (an optax transformation, :mod:`attndyn.core.updates`):

    (u, opt_state) ← update(∇L̄(θ; batch), opt_state, θ; key),    θ ← Π(θ + u),

where L̄ is the batch-mean loss and Π the optional projection. The default rule, per group g, is
SGD: u_g = −η_g s_g(k)(∇_g L̄ + λ_g θ_g). A rule that draws noise gets the seed's data key itself as
``key`` and indexes its draws by (step, element) with counters whose high word is never 0
(:func:`attndyn.core.fastrandom.counter_normal`), a stream disjoint from the step keys
``fold_in(data_key, k)``; so a seed's trajectory, noise included, depends neither on the record grid
nor on the other seeds, and no key is derived per step for it. Steps between record points run in
jitted ``fori_loop`` chunks of about :data:`attndyn.core.progress.TARGET_S` wall seconds each (the
trip count is traced: one compilation serves every chunk), so that progress is reported and Ctrl-C
is honoured between chunks; the chunking does not change the trajectory. Seeds run in parallel under
``vmap``, their arrays sharded over the devices that :func:`attndyn.core.devices.count` chooses. A
seed whose loss or parameters become non-finite is frozen (parameters and optimiser state) at its
last finite values and marked with the step at which it diverged; the run completes, and the
Trajectory stores the seed's later records as missing
(:func:`attndyn.core.trajectory.mark_divergence`, which also marks non-finite or overflowing
observables).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from attndyn.core import cost, devices
from attndyn.core.jaxsetup import enable_compilation_cache
from attndyn.core.progress import Chunker, report_steps

enable_compilation_cache()  # idempotent; every simulation imports the trainer

Params = dict[str, jnp.ndarray]


@dataclass(frozen=True)
class Problem:
    """A family's simulation, as pure functions.

    ``init(key) -> (params, state)``: trainable parameter groups and fixed state (e.g. the teacher).
    ``sample(key) -> batch``: one fresh batch.
    ``loss(params, state, batch) -> scalar`` (batch mean).
    ``observe(params, state) -> {name: scalar}``: observables at a record point.
    ``update``: the update rule, an optax transformation on the whole parameter tree (per-group
    rules through :func:`attndyn.core.updates.by_group`); it may read the extra argument ``key``.
    ``batch``: samples per step. Time axes are the family's business
    (:func:`attndyn.core.simulate.simulate_problem`).
    ``value_and_grad(params, state, batch) -> (loss, grads)``: optional replacement of
    ``jax.value_and_grad(loss)`` (an analytic or streamed gradient); ``loss`` is then unused by
    the step. ``project(params) -> params``: optional map applied after every update (e.g. the
    normalisation of projected SGD onto a sphere); identity when absent.
    """

    init: Callable[[jax.Array], tuple[Params, Any]]
    sample: Callable[[jax.Array], Any]
    loss: Callable[[Params, Any, Any], jax.Array]
    observe: Callable[[Params, Any], dict[str, jax.Array]]
    update: optax.GradientTransformation
    batch: int = 1
    value_and_grad: Callable[[Params, Any, Any], tuple[jax.Array, Params]] | None = None
    project: Callable[[Params], Params] | None = None


class Carry(NamedTuple):
    """What the loop carries per seed: parameters, optimiser state, diverged step (−1 if not)."""

    params: Params
    opt_state: Any
    diverged_step: jax.Array


@dataclass
class RunResult:
    """Raw output of :func:`train` (the family turns it into a Trajectory)."""

    steps: np.ndarray  # (time,)
    observables: dict[str, np.ndarray]  # name -> (seed, time)
    diverged_step: np.ndarray  # (seed,), -1 if never diverged
    final_params: Params  # leaves with a leading seed axis
    devices: int = 1  # devices the seed axis was sharded over


def seed_keys(seeds: np.ndarray | Sequence[int]) -> tuple[jax.Array, jax.Array]:
    """(init keys, data keys), one per seed, from ``PRNGKey(seed)``."""
    keys = jax.vmap(lambda s: jax.random.split(jax.random.PRNGKey(s), 2))(jnp.asarray(seeds))
    return keys[:, 0], keys[:, 1]


def make_step(problem: Problem) -> Callable:
    """One step for one seed: ``step(carry, state, data_key, k) -> carry``.

    θ ← Π(θ + u) with (u, opt_state) from ``problem.update`` on ∇L (from
    ``problem.value_and_grad`` when given); a seed that turns non-finite keeps its carry."""

    value_and_grad = problem.value_and_grad or jax.value_and_grad(problem.loss)
    rule = optax.with_extra_args_support(problem.update)

    def step(carry, state, data_key, k):
        params, opt_state, div = carry
        step_key = jax.random.fold_in(data_key, k)
        loss, grads = value_and_grad(params, state, problem.sample(step_key))
        updates, new_opt = rule.update(grads, opt_state, params, key=data_key)
        new = optax.apply_updates(params, updates)
        if problem.project is not None:
            new = problem.project(new)
        finite = jnp.isfinite(loss)
        for theta in jax.tree.leaves(new):
            finite &= jnp.all(jnp.isfinite(theta))
        div = jnp.where((div < 0) & ~finite, k, div)
        frozen = div >= 0

        def keep(new_leaf, old_leaf):
            return jnp.where(frozen, old_leaf, new_leaf)

        return Carry(jax.tree.map(keep, new, params), jax.tree.map(keep, new_opt, opt_state), div)

    return step


def make_advance(problem: Problem) -> Callable:
    """The jitted run between record points, vmapped over seeds:
    ``advance(carry, state, data_keys, k0, k1) -> carry`` takes steps k0 … k1 − 1.

    k0 and k1 are traced, so one compilation serves every segment of a record grid.
    """
    step = make_step(problem)

    def advance_one(carry, state, data_key, k0, k1):
        return jax.lax.fori_loop(k0, k1, lambda k, c: step(c, state, data_key, k), carry)

    return jax.jit(jax.vmap(advance_one, in_axes=(0, 0, 0, None, None)))


def init_seeds(problem: Problem, seeds: np.ndarray) -> tuple[Carry, Any, jax.Array]:
    """(carry, state, data keys) at step 0, each with a leading seed axis."""
    init_keys, data_keys = seed_keys(np.asarray(seeds))
    params, state = jax.vmap(problem.init)(init_keys)
    opt_state = jax.vmap(problem.update.init)(params)
    div = jnp.full(len(seeds), -1, dtype=jnp.int32)
    return Carry(params, opt_state, div), state, data_keys


def train(
    problem: Problem,
    record_steps: np.ndarray,
    seeds: np.ndarray,
    chunker: Chunker | None = None,
) -> RunResult:
    """Run every seed from step 0 to ``record_steps[-1]``, observing at each record step.

    The steps between record points run in chunks of ``chunker``'s lengths (default: about
    :data:`attndyn.core.progress.TARGET_S` seconds each), each waited for, then reported with
    :func:`attndyn.core.progress.report_steps`. The seed axis is sharded over
    :func:`attndyn.core.devices.count` devices."""
    n_devices = devices.count(len(seeds))
    carry, state, data_keys = devices.shard(init_seeds(problem, seeds), n_devices)
    advance = make_advance(problem)
    observe = jax.jit(jax.vmap(problem.observe))
    chunker = chunker or Chunker()
    total = int(record_steps[-1]) if len(record_steps) else 0

    records: list[dict[str, np.ndarray]] = []
    k = 0
    for target in record_steps:
        target = int(target)
        while k < target:
            n = chunker.next(target - k)
            start = chunker.clock()
            carry = jax.block_until_ready(advance(carry, state, data_keys, k, k + n))
            chunker.took(n, chunker.clock() - start)
            k += n
            report_steps(k, total)
        records.append(jax.device_get(observe(carry.params, state)))
    cost.report(total, advance, carry, state, data_keys, 0, 1)
    names = list(records[0])
    observables = {n: np.stack([r[n] for r in records], axis=1) for n in names}
    return RunResult(
        steps=np.asarray(record_steps, dtype=np.int64),
        observables=observables,
        diverged_step=np.asarray(carry.diverged_step, dtype=np.int64),
        final_params=carry.params,
        devices=n_devices,
    )
