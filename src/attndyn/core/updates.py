"""Update rules: each parameter group's step is an ``optax.GradientTransformation``.

A Problem's ``update`` maps the batch gradient g to the increment u that the trainer adds,
θ ← Π(θ + u) (Π the Problem's optional projection, a map applied after the update). The default,
``optimizer("sgd", η, s, λ)``, is

    u = −η s(k) (g + λθ),

with step size η, schedule s(k) (k = the step, which is the transformation's update count: runs
start at step 0) and the gradient λθ of the penalty (λ/2)‖θ‖²; its float operations are those of
the formula as written (η s(k) rounded once to the parameters' dtype). :func:`optimizer` also
names the other rules optax offers (momentum, Adam, AdamW, RMSProp) on the same (η, s, λ);
:func:`by_group` gives each top-level parameter group its own rule; :func:`gaussian_noise` adds
the Euler–Maruyama noise of a Langevin step. Transformations that need randomness read the extra
argument ``key``, the chain's own constant key (:func:`attndyn.core.trainer.make_step`), and index
their draws by step (counter-based), so a trajectory never depends on the record grid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from attndyn.core import fastrandom
from attndyn.core.config import OPTIMIZERS
from attndyn.core.schedules import Schedule
from attndyn.errors import InputError


def _step_size(lr: float, schedule: Schedule | None = None) -> float | Callable:
    """η, or k ↦ η s(k) when a schedule is given (optax's scalar-or-schedule)."""
    lr = float(lr)  # a Python float stays weakly typed: rounded once to the parameters' dtype
    if schedule is None:
        return lr
    return lambda count: lr * schedule(count)


def optimizer(
    name: str,
    lr: float,
    schedule: Schedule | None = None,
    weight_decay: float = 0.0,
    temperature: float = 0.0,
    **options,
) -> optax.GradientTransformationExtraArgs:
    """The optax rule ``name`` with step size η s(k) and penalty gradient λθ.

    ``sgd``: u = −η s(k) ĝ with ĝ = g + λθ; ``momentum``: heavy ball on ĝ (optax ``sgd`` with
    ``momentum``, default 0.9); ``adam`` / ``rmsprop``: optax's rules on ĝ (Kingma & Ba,
    arXiv 1412.6980, Alg. 1); ``adamw``: Adam with λ decoupled, u = −η s(k)(m̂/(√v̂ + ε) + λθ)
    (Loshchilov & Hutter, arXiv 1711.05101, Alg. 2). ``options`` go to the optax constructor
    (e.g. ``b1``, ``b2``, ``eps``). ``temperature`` T > 0 appends :func:`gaussian_noise` with
    variance T η s(k) per coordinate.
    """
    if name not in OPTIMIZERS:
        raise InputError(
            f"invalid value for 'optimizer': must be one of {OPTIMIZERS} (got {name!r})"
        )
    rate = _step_size(lr, schedule)
    if name == "adamw":
        parts = [optax.adamw(rate, weight_decay=weight_decay, **options)]
    else:
        rule = {
            "sgd": lambda: optax.sgd(rate, **options),
            "momentum": lambda: optax.sgd(rate, **{"momentum": 0.9, **options}),
            "adam": lambda: optax.adam(rate, **options),
            "rmsprop": lambda: optax.rmsprop(rate, **options),
        }[name]()
        parts = [optax.add_decayed_weights(weight_decay), rule] if weight_decay else [rule]
    if temperature:
        parts.append(gaussian_noise(_variance(temperature, lr, schedule)))
    return optax.chain(*parts)


def _variance(temperature: float, lr: float, schedule: Schedule | None) -> Callable:
    rate = _step_size(temperature * float(lr), schedule)
    return rate if callable(rate) else lambda count: rate


class NoiseState(NamedTuple):
    """The update count k of :func:`gaussian_noise` (``step``: a field ``count`` would shadow
    ``tuple.count``)."""

    step: jax.Array


def gaussian_noise(variance: Callable[[jax.Array], jax.Array]) -> optax.GradientTransformation:
    """Add ξ ~ N(0, v(k) I) to the update at step k (the transformation's update count), drawn
    counter-based from the extra argument ``key`` (the chain's constant key, not a per-step one).

    After SGD with v(k) = T η s(k) this is the Euler–Maruyama step, of size h = η s(k), of the
    Langevin SDE dΘ = −∇F dt + √T dW (stationary law ∝ exp(−2F/T)); T = η gives the
    learning-rate-dependent SDE that Shi, Su & Jordan (arXiv 2004.06977) use as a model of SGD.
    Element n of the flattened update tree (leaves in tree order) at step k is the normal of one
    hash, :func:`attndyn.core.fastrandom.counter_normal` (key, k, n): no key is derived per step,
    and the draws depend on neither the other chains nor the record grid.
    """

    def init(params):
        return NoiseState(step=jnp.zeros([], jnp.int32))

    def update(updates, state, params=None, *, key, **extra):
        std = jnp.sqrt(variance(state.step))
        leaves, tree = jax.tree.flatten(updates)
        noisy, offset = [], 0
        for u in leaves:
            xi = fastrandom.counter_normal(key, state.step, u.shape, offset, u.dtype)
            noisy.append(u + jnp.asarray(std, u.dtype) * xi)
            offset += u.size
        return jax.tree.unflatten(tree, noisy), NoiseState(
            step=optax.safe_int32_increment(state.step)
        )

    return optax.GradientTransformationExtraArgs(init, update)


def by_group(
    rules: Mapping[str, optax.GradientTransformation],
) -> optax.GradientTransformationExtraArgs:
    """Rule ``rules[g]`` on top-level group g (a group may be a dict of arrays).

    The state is one inner state per group; a ``key`` passed to the update reaches group g as
    ``fold_in(key, j)``, j the group's position in sorted order, so no two groups share noise.
    The groups of the parameters and of ``rules`` must be the same.
    """
    rules = {g: optax.with_extra_args_support(rule) for g, rule in rules.items()}

    def _check(params):
        if set(params) != set(rules):
            raise InputError(
                f"update rules are for groups {sorted(rules)}; the parameters have {sorted(params)}"
            )

    def init(params):
        _check(params)
        return {g: rules[g].init(p) for g, p in params.items()}

    def update(updates, state, params=None, **extra):
        _check(updates)
        key = extra.pop("key", None)
        new_updates, new_state = {}, {}
        for j, g in enumerate(sorted(updates)):
            group_extra = (
                dict(extra) if key is None else {**extra, "key": jax.random.fold_in(key, j)}
            )
            p = None if params is None else params[g]
            new_updates[g], new_state[g] = rules[g].update(updates[g], state[g], p, **group_extra)
        return new_updates, new_state

    return optax.GradientTransformationExtraArgs(init, update)
