"""The Python API: ``simulate`` one configuration, open stored ``results``."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import xarray as xr

from attndyn.core.config import RunConfig, run_id, validate
from attndyn.models import get_family, get_theory
from attndyn.store import Store, connect, results_dir


def make_config(family: str, values: dict[str, Any]) -> RunConfig:
    """Validate ``values`` against the family's config (InputError on bad input)."""
    return validate(get_family(family).Config, values)


def run_config(
    family: str, config: RunConfig, store: Store | None = None, force: bool = False
) -> tuple[xr.Dataset, bool]:
    """Simulate ``config``; with a store, reuse a stored run unless ``force``.

    Returns (trajectory, reused).
    """
    module = get_family(family)
    return _cached(run_id(family, config), lambda: module.simulate(config), store, force)


def _cached(rid: str, compute, store: Store | None, force: bool) -> tuple[xr.Dataset, bool]:
    """Read run ``rid`` from the store, or compute, time and store it."""
    if store is not None and store.exists(rid) and not force:
        return store.read(rid), True
    start = time.perf_counter()
    traj = compute()
    wall = time.perf_counter() - start
    traj.attrs["run_id"] = rid
    if store is not None:
        store.write(traj, rid, wall_s=wall)
    return traj, False


def simulate(
    family: str = "aim",
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    **config: Any,
) -> xr.Dataset:
    """Simulate one configuration of ``family`` and return its Trajectory.

    Keyword arguments are config fields (see ``attndyn.models.<family>.Config``). With ``out``,
    the run is stored in that results folder, and a stored run with the same config is read back
    instead of recomputed unless ``force=True``.
    """
    cfg = make_config(family, config)
    traj, _ = run_config(family, cfg, Store(out) if out is not None else None, force)
    return traj


def make_theory_config(family: str, values: dict[str, Any]) -> RunConfig:
    """Validate ``values`` against the family's theory config."""
    return validate(get_theory(family).Config, values)


def run_theory_config(
    family: str, config: RunConfig, store: Store | None = None, force: bool = False
) -> tuple[xr.Dataset, bool]:
    """Integrate the theory for ``config``; stored like a run (kind ``theory``)."""
    module = get_theory(family)
    return _cached(run_id(f"{family}:theory", config), lambda: module.predict(config), store, force)


def predict(
    family: str = "aim",
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    **config: Any,
) -> xr.Dataset:
    """The theory's Trajectory for one configuration (same names and time grid as
    ``simulate``; no seed axis). With ``out`` it is stored as a run of kind ``theory``."""
    cfg = make_theory_config(family, config)
    traj, _ = run_theory_config(family, cfg, Store(out) if out is not None else None, force)
    return traj


def run(
    name: str,
    preset: str = "small",
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    **overrides: Any,
):
    """Run a registered experiment: returns an outcome with ``claims``, ``summary``,
    ``run_ids``, ``figure`` and the raw ``results`` (Trajectories)."""
    from attndyn.experiments.runner import run_experiment

    return run_experiment(name, preset, overrides, out=out, force=force)


@dataclass
class Results:
    """A results folder: DuckDB views ``runs`` and ``observables`` and pandas/xarray accessors."""

    root: Path
    con: duckdb.DuckDBPyConnection

    def query(self, sql: str) -> pd.DataFrame:
        """Run SQL over the views and return a DataFrame."""
        return self.con.execute(sql).df()

    def runs(self) -> pd.DataFrame:
        """One row per stored run with its flattened config."""
        return self.query("SELECT * FROM runs ORDER BY created, run_id")

    def observables(self, run_id: str | None = None) -> pd.DataFrame:
        """Tidy observables, all runs or one."""
        if run_id is None:
            return self.query("SELECT * FROM observables")
        return self.con.execute("SELECT * FROM observables WHERE run_id = ?", [run_id]).df()

    def trajectory(self, run_id: str) -> xr.Dataset:
        """The stored run as a Trajectory."""
        return Store(self.root).read(run_id)


def results(path: str | os.PathLike | None = None) -> Results:
    """Open a results folder (default ``$ATTNDYN_RESULTS`` or ``./attndyn-results``)."""
    root = results_dir(path)
    return Results(root=root, con=connect(root))
