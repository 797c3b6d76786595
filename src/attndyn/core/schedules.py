"""Step-size schedules: multipliers ``s(k)`` of a parameter group's base step size at step k.

A schedule is a pure function of the (integer) step index that works inside ``jit``. Robbins–Monro
schedules ``1/(k + k0)^γ`` with γ ∈ (1/2, 1] and linear ramps are provided; the constant schedule
is the default of every family.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp

from attndyn.errors import InputError

Schedule = Callable[[jnp.ndarray], jnp.ndarray]


def constant() -> Schedule:
    """s(k) = 1."""
    return lambda k: jnp.ones((), jnp.float32)


def inverse_power(k0: float = 1.0, gamma: float = 1.0) -> Schedule:
    """s(k) = (k0 / (k + k0))^γ, so s(0) = 1 (Robbins–Monro for γ ∈ (1/2, 1])."""
    if k0 <= 0:
        raise InputError(f"invalid value for 'k0': must be > 0 (got {k0})")
    if not 0 < gamma <= 1:
        raise InputError(f"invalid value for 'gamma': must be in (0, 1] (got {gamma})")
    return lambda k: (k0 / (k + k0)) ** gamma


def linear_ramp(start: float, end: float, steps: int) -> Schedule:
    """s(k) goes linearly from ``start`` at k = 0 to ``end`` at k = steps, then stays at ``end``."""
    if steps < 1:
        raise InputError(f"invalid value for 'steps': must be >= 1 (got {steps})")
    return lambda k: start + (end - start) * jnp.minimum(k / steps, 1.0)
