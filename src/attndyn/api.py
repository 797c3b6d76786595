"""The Python API: ``simulate`` one configuration, open stored ``results``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import xarray as xr

from attndyn import runs
from attndyn.experiments.runner import ExperimentOutcome, run_experiment
from attndyn.store import Store, connect, results_dir


def simulate(
    family: str,
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
    cfg = runs.family_config(family, config)
    traj, _ = runs.simulation(family, cfg, Store(out) if out is not None else None, force)
    return traj


def predict(
    family: str,
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    **config: Any,
) -> xr.Dataset:
    """The theory's Trajectory for one configuration (same names and time grid as
    ``simulate``; no seed axis). With ``out`` it is stored as a run of kind ``theory``."""
    cfg = runs.theory_config(family, config)
    traj, _ = runs.theory(family, cfg, Store(out) if out is not None else None, force)
    return traj


def run(
    name: str,
    preset: str = "small",
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    **overrides: Any,
) -> ExperimentOutcome:
    """Run a registered experiment: returns an outcome with ``claims``, ``summary``,
    ``run_ids``, ``figure`` and the raw ``results`` (Trajectories)."""
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
