"""The Trajectory: where simulation and theory meet.

A Trajectory is an ``xarray.Dataset`` whose data variables are observables. Simulations have dims
``(seed, time)``; theory has dim ``time`` only. Coordinates: ``time`` (the family's macroscopic
time), ``samples`` (samples seen, along ``time``), ``step`` (optimiser steps, simulations only),
any extra time axes a family defines (e.g. ``time_fast`` for untied AIM), and per seed the
divergence marks ``diverged`` and ``diverged_step`` (-1 when the seed never diverged). ``attrs``
carry ``family``, ``config`` (JSON text) and, once stored, ``run_id``.

Divergence (:func:`mark_divergence`, applied by :func:`make_trajectory` to every simulation, i.e.
a Trajectory with seeds and steps): a seed diverges at the first record where any observable is
non-finite or beyond the family's overflow bound ``OVERFLOW`` (default
:data:`DEFAULT_OVERFLOW`), or after the step at which the trainer froze it; ``diverged_step`` is
the earlier of the two, in steps, and the seed's values from that record on are NaN (missing),
never frozen numbers.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

COORDS = ("time", "samples", "step")

DEFAULT_OVERFLOW = 1e10
"""|value| beyond which a recorded observable marks its seed as diverged, unless the caller
passes its family's ``OVERFLOW`` (:mod:`attndyn.models.base`)."""


def mark_divergence(
    observables: Mapping[str, np.ndarray],
    step: np.ndarray,
    diverged_step: np.ndarray | None,
    bound: float,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """(observables with NaN from each seed's divergence record on, diverged_step per seed).

    ``observables``: name → (seed, time); ``step``: (time,) record steps; ``diverged_step``: the
    trainer's marks (−1: not diverged; a seed frozen at step k holds frozen values at records
    with step > k). A seed also diverges at the first record r with a non-finite value or
    |value| > ``bound`` in any observable (its mark: ``step[r]``). The result is idempotent."""
    obs = {k: np.array(v, dtype=np.float64) for k, v in observables.items()}
    step = np.asarray(step, np.int64)
    if diverged_step is not None:
        div = np.asarray(diverged_step, np.int64)
    else:
        div = np.full(next(iter(obs.values())).shape[0] if obs else 0, -1, np.int64)
    n_seed, n_time = len(div), len(step)
    bad = np.zeros((n_seed, n_time), bool)
    for v in obs.values():
        bad |= ~(np.abs(v) <= bound)  # NaN compares False: non-finite is bad
    first = np.where(bad.any(axis=1), bad.argmax(axis=1), n_time)
    frozen = np.searchsorted(step, np.where(div >= 0, div, np.iinfo(np.int64).max), "right")
    start = np.minimum(first, frozen)  # first missing record per seed
    by_obs = np.where(first < n_time, step[np.minimum(first, n_time - 1)], -1)
    div = np.where((div >= 0) & (by_obs >= 0), np.minimum(div, by_obs), np.maximum(div, by_obs))
    missing = np.arange(n_time)[None, :] >= start[:, None]
    for v in obs.values():
        v[missing] = np.nan
    return obs, div


def make_trajectory(
    observables: Mapping[str, np.ndarray],
    *,
    time: np.ndarray,
    samples: np.ndarray | None = None,
    step: np.ndarray | None = None,
    seeds: np.ndarray | None = None,
    diverged_step: np.ndarray | None = None,
    extra_times: Mapping[str, np.ndarray] | None = None,
    family: str = "",
    config: Mapping[str, Any] | None = None,
    overflow: float | None = None,
) -> xr.Dataset:
    """Build a Trajectory; arrays are ``(seed, time)`` when ``seeds`` is given, else ``(time,)``.

    A simulation (``seeds`` and ``step`` given) has its divergence marked
    (:func:`mark_divergence`) with the bound ``overflow`` (the family's ``OVERFLOW``; by default
    :data:`DEFAULT_OVERFLOW`)."""
    if seeds is not None and step is not None:
        bound = DEFAULT_OVERFLOW if overflow is None else overflow
        observables, diverged_step = mark_divergence(observables, step, diverged_step, bound)
    dims = ("seed", "time") if seeds is not None else ("time",)
    coords: dict[str, Any] = {"time": ("time", np.asarray(time, dtype=np.float64))}
    if samples is not None:
        coords["samples"] = ("time", np.asarray(samples, dtype=np.int64))
    if step is not None:
        coords["step"] = ("time", np.asarray(step, dtype=np.int64))
    for name, values in (extra_times or {}).items():
        coords[name] = ("time", np.asarray(values, dtype=np.float64))
    if seeds is not None:
        coords["seed"] = ("seed", np.asarray(seeds, dtype=np.int64))
        div = (
            np.full(len(seeds), -1, np.int64)
            if diverged_step is None
            else np.asarray(diverged_step, np.int64)
        )
        coords["diverged_step"] = ("seed", div)
        coords["diverged"] = ("seed", div >= 0)
    data = {name: (dims, np.asarray(v, dtype=np.float64)) for name, v in observables.items()}
    attrs = {"family": family, "config": json.dumps(dict(config or {}), sort_keys=True)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def config_of(traj: xr.Dataset) -> dict[str, Any]:
    """The config dict stored in a Trajectory's attrs."""
    return json.loads(traj.attrs.get("config", "{}"))


def to_frame(traj: xr.Dataset) -> pd.DataFrame:
    """Tidy table: one row per (seed, time, observable) with columns
    ``seed, time, samples, step, name, value`` (``seed`` is -1 for theory)."""
    frames = []
    names = list(traj.data_vars)
    n_time = traj.sizes["time"]
    seeds = traj["seed"].values if "seed" in traj.dims else np.array([-1])
    base = {
        "seed": np.repeat(seeds, n_time),
        "time": np.tile(traj["time"].values, len(seeds)),
        "samples": np.tile(_coord(traj, "samples", n_time), len(seeds)),
        "step": np.tile(_coord(traj, "step", n_time), len(seeds)),
    }
    for name in names:
        values = np.asarray(traj[name].values, dtype=np.float64).reshape(-1)
        frames.append(pd.DataFrame({**base, "name": name, "value": values}))
    if not frames:
        return pd.DataFrame(columns=["seed", "time", "samples", "step", "name", "value"])
    return pd.concat(frames, ignore_index=True)


def _coord(traj: xr.Dataset, name: str, n: int) -> np.ndarray:
    return traj[name].values if name in traj.coords else np.full(n, -1, np.int64)


def from_frame(
    frame: pd.DataFrame,
    *,
    diverged_step: Mapping[int, int] | None = None,
    extra_times: Mapping[str, np.ndarray] | None = None,
    family: str = "",
    config: Mapping[str, Any] | None = None,
) -> xr.Dataset:
    """Inverse of :func:`to_frame` (observable order is alphabetical)."""
    wide = frame.pivot(index=["seed", "time"], columns="name", values="value").sort_index()
    grid = frame.drop_duplicates("time").sort_values("time")
    seeds = np.sort(frame["seed"].unique())
    n_seed, n_time = len(seeds), len(grid)
    obs = {name: wide[name].to_numpy().reshape(n_seed, n_time) for name in wide.columns}
    theory = len(seeds) == 1 and seeds[0] == -1
    div = None
    if not theory and diverged_step is not None:
        div = np.array([diverged_step.get(int(s), -1) for s in seeds])
    return make_trajectory(
        {k: (v[0] if theory else v) for k, v in obs.items()},
        time=grid["time"].to_numpy(),
        samples=grid["samples"].to_numpy(),
        step=None if theory else grid["step"].to_numpy(),
        seeds=None if theory else seeds,
        diverged_step=div,
        extra_times=extra_times,
        family=family,
        config=config,
        overflow=np.inf,  # stored values were bounded when written; NaN marks stay marks
    )
