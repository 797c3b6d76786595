"""The one simulation path: a family's Problem, trained over seeds, recorded as a Trajectory.

A family's ``simulate`` is, in most cases, one call::

    def simulate(config, seeds=None):
        return simulate_problem(lambda: build(config), config, seeds, family=NAME,
                                times=lambda steps: time_axes(config, steps))

``times(steps)`` maps the record steps to the family's time axes: ``time`` (the macroscopic time
the theory shares) and optional extra axes (e.g. ``samples``-based fast time), all arrays over
the record grid. ``samples`` defaults to ``steps · problem.batch``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import numpy as np
import xarray as xr

from attndyn.core.config import SimulationConfig, canonical
from attndyn.core.grids import record_grid
from attndyn.core.trainer import Problem, train
from attndyn.core.trajectory import make_trajectory

TimeAxes = Callable[[np.ndarray], Mapping[str, np.ndarray]]


def seed_array(config: SimulationConfig, seeds: Sequence[int] | None = None) -> np.ndarray:
    """``seeds`` as int64, or the config's own ``seed, …, seed + seeds − 1``."""
    return np.asarray(config.seed_list if seeds is None else list(seeds), dtype=np.int64)


def simulate_problem(
    build: Callable[[], Problem],
    config: SimulationConfig,
    seeds: Sequence[int] | None = None,
    *,
    family: str,
    times: TimeAxes | None = None,
    config_extra: Mapping[str, Any] | None = None,
    overflow: float | None = None,
) -> xr.Dataset:
    """Train ``build()`` for every seed on the config's record grid and return the Trajectory.

    Args:
        build: makes the Problem; called inside ``jax.enable_x64`` when ``config.dtype`` is
            float64, so that float64 constants are not rounded to float32.
        config: the family's validated config (``total_steps``, ``records``, ``grid``, ``seed``,
            ``seeds``, ``dtype``).
        seeds: explicit seeds instead of the config's own.
        family: the family name stored in the Trajectory's attrs.
        times: record steps (shape ``(T,)``) → ``{"time": (T,), other axes: (T,)}``; default:
            time = step.
        config_extra: entries added to the stored config (e.g. a sub-model's name).
        overflow: the family's ``OVERFLOW`` divergence bound (default
            :data:`~attndyn.core.trajectory.DEFAULT_OVERFLOW`).

    Returns:
        Trajectory with dims ``(seed, time)``; coordinates ``time``, ``samples``, ``step``, the
        extra time axes, ``diverged`` and ``diverged_step`` per seed; attrs ``family``,
        ``config`` and ``devices`` (the devices the seeds were sharded over).
    """
    steps = record_grid(config)
    seed_ids = seed_array(config, seeds)
    with jax.enable_x64(config.dtype == "float64"):
        problem = build()
        result = train(problem, steps, seed_ids)
    axes = dict(times(steps)) if times is not None else {"time": steps.astype(np.float64)}
    time = axes.pop("time")
    traj = make_trajectory(
        result.observables,
        time=time,
        samples=steps * problem.batch,
        step=steps,
        seeds=seed_ids,
        diverged_step=result.diverged_step,
        extra_times=axes,
        family=family,
        config={**canonical(config), **(config_extra or {})},
        overflow=overflow,
    )
    traj.attrs["devices"] = result.devices  # an execution setting, not part of the config
    return traj
