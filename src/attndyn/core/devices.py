"""How many devices a simulation's seeds are sharded over: an execution setting, not a config.

The seed axis of the trainer's and the flow integrator's arrays (carry, fixed state, data keys)
is placed with ``NamedSharding(Mesh(devices[:n], ("seeds",)), PartitionSpec("seeds"))``, so the
jitted, seed-vmapped advance runs on n devices, each with S/n seeds; nothing crosses devices
(seeds are independent) and observations are gathered to the host as before. A seed's steps are
the same operations on every device count, so trajectories agree up to float rounding
(tests/test_devices.py measures how close).

The count n is, in order: the one requested with :func:`using` (``--devices N`` on the CLI), the
environment variable ``ATTNDYN_DEVICES``, or the automatic choice: 1 on CPU (two XLA host devices
on two cores were no faster, BENCHMARKS.md, "Seeds over devices") and every visible device on a
GPU or TPU. It is then lowered to the largest divisor of the seed count S that does not exceed it
(every device holds the same number of seeds; one line on stderr says so when the count was
asked for). A count above the visible devices is an InputError. On CPU there is one device
unless ``XLA_FLAGS=--xla_force_host_platform_device_count=N`` is set before JAX is imported.

The count is not part of a run's config or id; the trainer and the flow integrator return it
(``RunResult.devices``) and :func:`attndyn.core.simulate.simulate_problem` records it in the
Trajectory's attrs (``devices``). Documented in docs/sweeps.md, "Seeds over devices".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from attndyn.errors import InputError

ENV = "ATTNDYN_DEVICES"
HOST_FLAG = "--xla_force_host_platform_device_count"

_requested: ContextVar[int | None] = ContextVar("attndyn_devices", default=None)


def available() -> int:
    """Devices of JAX's default backend."""
    return jax.device_count()


def check(n: int | None, field: str = "--devices") -> int | None:
    """``n`` if it is None or 1 … :func:`available`; otherwise InputError naming ``field``."""
    if n is None:
        return None
    top = available()
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= top:
        hint = (
            f" (on CPU, more host devices need XLA_FLAGS={HOST_FLAG}=N set before jax starts)"
            if jax.default_backend() == "cpu"
            else ""
        )
        raise InputError(
            f"invalid value for '{field}': must be 1 … {top} (JAX sees {top} "
            f"{jax.default_backend()} device{'s' if top > 1 else ''}; got {n!r}){hint}"
        )
    return n


@contextmanager
def using(n: int | None) -> Iterator[None]:
    """Within: shard seeds over ``n`` devices (None: the environment's or automatic choice).
    ``n`` is checked first (InputError)."""
    token = _requested.set(check(n))
    try:
        yield
    finally:
        _requested.reset(token)


def requested() -> int | None:
    """The count asked for by :func:`using`, else by ``$ATTNDYN_DEVICES``, else None (auto)."""
    n = _requested.get()
    if n is not None:
        return n
    text = os.environ.get(ENV, "").strip()
    if not text:
        return None
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None:
        raise InputError(f"invalid value for '{ENV}': must be an integer (got {text!r})")
    return check(value, field=ENV)


def automatic() -> int:
    """1 on CPU, every visible device on a GPU or TPU."""
    return 1 if jax.default_backend() == "cpu" else available()


def count(n_seeds: int) -> int:
    """Devices to shard ``n_seeds`` seeds over: the largest divisor of ``n_seeds`` that is at most
    the requested (or automatic) count; a lowered request is said on stderr."""
    want = requested()
    n = largest_divisor(n_seeds, automatic() if want is None else want)
    if want is not None and n < want:  # the automatic choice lowers silently (attrs say it)
        print(
            f"note: {n_seeds} seeds sharded over {n} of the {want} devices asked for "
            "(the largest divisor of the seed count)",
            file=sys.stderr,
        )
    return n


def largest_divisor(n: int, at_most: int) -> int:
    """The largest d ≤ ``at_most`` dividing ``n`` (1 for n ≤ 1)."""
    return max((d for d in range(1, min(at_most, n) + 1) if n % d == 0), default=1)


def mesh(n: int) -> Mesh:
    """A one-axis mesh ``("seeds",)`` over the first ``n`` devices."""
    return Mesh(jax.devices()[:n], ("seeds",))


def shard(tree: Any, n: int) -> Any:
    """Every leaf of ``tree`` (leading seed axis) split along that axis over ``n`` devices; the
    tree itself when n = 1 (left where JAX put it)."""
    if n <= 1:
        return tree
    sharding = NamedSharding(mesh(n), PartitionSpec("seeds"))
    return jax.device_put(tree, sharding)


def spread(tree: Any) -> int:
    """The number of devices the leaves of ``tree`` lie on (their largest device set)."""
    return max((len(leaf.sharding.device_set) for leaf in jax.tree.leaves(tree)), default=0)
