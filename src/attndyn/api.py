"""The Python API: ``simulate`` or ``predict`` one configuration, ``run`` an experiment, open
stored ``results``, ``cite`` attndyn and the paper an experiment reproduces.

Simulations and theory return a Trajectory (:mod:`attndyn.core.trajectory`): an
``xarray.Dataset`` with one float64 data variable per observable, dims ``(seed, time)`` for a
simulation and ``(time,)`` for theory.
"""

from __future__ import annotations

import os
import re
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import xarray as xr

from attndyn import runs
from attndyn.claims.runner import ExperimentOutcome, run_experiment
from attndyn.core.progress_bars import shown
from attndyn.errors import InputError
from attndyn.store import Store, connect, queries, results_dir
from attndyn.store.views import Limits, limits_of


def on_devices(n: int | None) -> AbstractContextManager[None]:
    """A context within which simulations shard their seeds over ``n`` devices.

    Args:
        n: 1 … the number of visible devices (``jax.device_count()``); None keeps the default
            (``$ATTNDYN_DEVICES``, else 1 on CPU and every device on a GPU or TPU). The count used
            is the largest divisor of the seed count up to ``n``. It is not part of a run's
            config or id: results agree across device counts up to float rounding.

    Raises:
        InputError: ``n`` (or ``$ATTNDYN_DEVICES``) out of range, checked here, before the
            context is entered.
    """
    from attndyn.core import devices as core_devices  # JAX: imported when asked for

    if n is None:
        core_devices.requested()  # checks $ATTNDYN_DEVICES
    else:
        core_devices.check(n)
    return core_devices.using(n)


def interactive() -> bool:
    """Whether progress is shown by default: stderr is a terminal, or the code runs in a
    Jupyter kernel (where rich draws the bars in the cell's output)."""
    if sys.stderr.isatty():
        return True
    shell = sys.modules.get("IPython")
    get = getattr(shell, "get_ipython", None)
    return get is not None and type(get()).__name__ == "ZMQInteractiveShell"


def _progress(progress: bool | None) -> bool:
    return interactive() if progress is None else progress


def simulate(
    family: str,
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool | None = None,
    devices: int | None = None,
    **config: Any,
) -> xr.Dataset:
    """Simulate one configuration of ``family`` and return its Trajectory.

    Args:
        family: a registered family name (``attndyn list``), e.g. ``"aim"``, ``"circuits"``,
            ``"query"``.
        out: results folder (default ``$ATTNDYN_RESULTS`` or ``./attndyn-results``, as for
            the CLI and :func:`run`). The run is stored there, and a stored run with the same
            config (the same run id) is read back instead of recomputed.
        force: recompute and overwrite even when the run is stored.
        progress: show a progress bar (steps done, ETA) on stderr while it runs; default
            (None): when stderr is a terminal or in a Jupyter notebook (:func:`interactive`).
        devices: shard the seeds over this many devices (:func:`on_devices`); an execution
            setting, not part of the config or the run id.
        **config: fields of the family's ``Config`` (``attndyn.models.<family>.Config``); fields
            not given take their defaults. ``seeds`` (S) and ``seed`` (s0) select the seeds
            s0, …, s0 + S − 1, run in parallel.

    Returns:
        xarray.Dataset with dims ``(seed, time)`` = (S, R), R the number of record points:

        - data variables: one float64 array of shape (S, R) per observable (names per family,
          e.g. ``t_1``, ``q_12``, ``p_12``, ``loss`` for ``aim``);
        - coordinates: ``time`` (R,) float64, the family's macroscopic time; ``samples`` (R,)
          and ``step`` (R,) int64, samples seen and optimiser steps; any extra time axis of the
          family along ``time`` (e.g. ``time_fast``, ``ode_time``); ``seed`` (S,) int64;
          ``diverged`` (S,) bool and ``diverged_step`` (S,) int64 (−1 if the seed never
          diverged; a diverged seed is frozen at its last finite parameters);
        - attrs: ``family``, ``config`` (the full validated config as JSON text) and ``run_id``.

    Raises:
        InputError: unknown family, unknown config field or invalid value (one line naming the
            field and what is allowed).
    """
    cfg = runs.family_config(family, config)
    with shown(_progress(progress)), on_devices(devices):
        traj, _ = runs.simulation(family, cfg, Store(out), force)
    return traj


def predict(
    family: str,
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    progress: bool | None = None,
    **config: Any,
) -> xr.Dataset:
    """The theory's prediction for one configuration of ``family``.

    Args:
        family: a registered family that has a theory (``attndyn list``).
        out: results folder (default ``$ATTNDYN_RESULTS`` or ``./attndyn-results``, as for
            :func:`simulate` and :func:`run`); the prediction is stored there as a run of kind
            ``<family>:theory`` and read back when already stored.
        force: recompute and overwrite even when stored.
        progress: show progress on stderr while it runs (elapsed time; the integration time
            reached where the theory reports it); default as for :func:`simulate`.
        **config: fields of the theory's ``Config`` (``attndyn.models.<family>.theory.Config``):
            the simulator's model and grid fields plus the theory's own (e.g. ``method``,
            ``rtol``). A theory that starts from the simulator's initial state (``aim``,
            ``query``) also reads ``seeds`` and ``seed`` and averages over those seeds.

    Returns:
        xarray.Dataset with dim ``(time,)`` = (R,): one float64 (R,) data variable per
        predicted observable, named as the simulator's observables and on the simulator's record
        grid for the same config (so ``simulate(...).mean("seed") - predict(...)`` lines up);
        coordinates ``time`` (R,) float64, ``samples`` (R,) int64 and the family's extra time
        axes where they apply; no ``seed`` or ``step``; attrs ``family``, ``config`` (JSON) and
        ``run_id``. A family whose theory has its own time (``circuits``: the reduced flow's
        gradient-flow time) says so in its theory's docstring.

    Raises:
        InputError: unknown family, a family without theory, or a bad config.
    """
    cfg = runs.theory_config(family, config)
    with shown(_progress(progress)):
        traj, _ = runs.theory(family, cfg, Store(out), force)
    return traj


def run(
    name: str,
    preset: str = "small",
    *,
    out: str | os.PathLike | None = None,
    force: bool = False,
    control: str | None = None,
    progress: bool | None = None,
    devices: int | None = None,
    **overrides: Any,
) -> ExperimentOutcome:
    """Run a registered experiment, check its claims, draw its figure and store its record.

    Args:
        name: a registered experiment (``attndyn list``), e.g. ``"aim-solvable"``.
        preset: ``"tiny"`` (seconds to two minutes; run by the test suite), ``"small"``
            (10 s to about 15 min on two cores: ``attndyn run NAME --dry-run`` estimates it) or
            ``"paper"`` (the published setting).
        out: results folder (default ``$ATTNDYN_RESULTS`` or ``./attndyn-results``); the
            experiment's runs and its record are always stored, and stored runs are reused.
        force: recompute every run even when stored.
        control: a negative control of the experiment (a deliberately wrong model or scaling,
            docs/claims.md): its overrides are applied last and its claims are expected to fail.
        progress: show on stderr how many runs are done and the current run's progress;
            default as for :func:`simulate`.
        devices: shard each simulation's seeds over this many devices (:func:`on_devices`).
        **overrides: fields of the experiment's config, applied on top of the preset (``seed``:
            the seed offset, ``seeds``: their number).

    Returns:
        ExperimentOutcome with ``experiment`` and ``preset`` (str); ``config`` (dict, the
        validated config); ``claims`` (list of Claim: ``name``, ``statement``, ``value``,
        ``ci_low``, ``ci_high``, ``n_seeds``, ``target``, ``passed``); ``preconditions``;
        ``verdict`` (passed, failed, invalid, or a control's verdict); ``passed`` (bool: valid
        and all claims); ``summary`` (dict of scalars);
        ``run_ids`` (list of str, the stored runs it used); ``figure`` (Path of the PNG under
        ``<out>/figures``); ``results`` (dict, the experiment's raw results, mostly
        Trajectories as returned by :func:`simulate` and :func:`predict`).

    Raises:
        InputError: unknown experiment or preset, or a bad override.
    """
    with shown(_progress(progress), count="runs"), on_devices(devices):
        return run_experiment(name, preset, overrides, out=out, force=force, control=control)


@dataclass
class Results:
    """A results folder opened by :func:`results`: DuckDB views over its Parquet files and
    pandas/xarray accessors.

    Attributes:
        root: the folder.
        con: a DuckDB connection with the views ``runs``, ``observables``, ``claims``,
            ``experiments``, ``experiment_runs`` and ``failures`` (columns:
            :mod:`attndyn.store.views`). ``runs`` is a snapshot taken when the folder is
            opened; open it again to see runs stored since.
    """

    root: Path
    con: duckdb.DuckDBPyConnection

    def query(self, sql: str) -> pd.DataFrame:
        """Run SQL over the views.

        Args:
            sql: a DuckDB query, e.g. ``"SELECT run_id, d FROM runs WHERE family = 'aim'"``;
                read-only (SELECT or EXPLAIN statements, files inside the results folder only;
                anything else is an InputError).

        Returns:
            pandas.DataFrame with the query's columns, one row per result row.
        """
        queries.read_only(self.con, sql)
        try:
            queries.planned(self.con, sql, field="sql")  # InputError: the SQL itself is wrong
        except InputError as exc:
            hint = column_hint(self.con, sql, str(exc))
            if not hint:
                raise
            raise InputError(f"{exc}{hint}") from None
        try:
            return queries.executed(self.con, sql, field="sql")
        except queries.DataReadError as exc:  # a damaged run file: named, left out, asked again
            bad = queries.damaged_runs(self.con, self.root)
            if not bad:
                raise queries.blamed(exc) from None
            self.con = queries.reconnect(self.root, bad, limits_of(self.con))
            return queries.executed(self.con, sql)

    def runs(self, family: str | None = None) -> pd.DataFrame:
        """The ``runs`` view (or with ``family`` that family's typed view ``runs_<family>``,
        docs/store.md), oldest first.

        Returns:
            pandas.DataFrame with one row per stored run: ``run_id``, ``family``, ``kind``
            (simulation or theory), ``experiment``, ``sweep``, ``status``, ``n_diverged``,
            ``wall_s``, ``version``, ``created``, …; then ``config`` (JSON text) or, with
            ``family``, one column per config field of that family; then ``file``.
        """
        return queries.runs(self.con, family)

    def observables(self, run_id: str | None = None) -> pd.DataFrame:
        """Tidy observables of every stored run, or of ``run_id`` only.

        Returns:
            pandas.DataFrame with columns ``run_id, seed, time, samples, step, name, value``,
            one row per (run, seed, record point, observable); ``seed`` and ``step`` are −1 for
            theory runs.
        """
        if run_id is None:
            return self.query("SELECT * FROM observables")
        return queries.executed(self.con, "SELECT * FROM observables WHERE run_id = ?", [run_id])

    def trajectory(self, run_id: str) -> xr.Dataset:
        """The stored run ``run_id`` as a Trajectory, as :func:`simulate` or :func:`predict`
        returned it: dims ``(seed, time)`` for a simulation, ``(time,)`` for theory (extra time
        axes included, observables in alphabetical order). ``run_id`` must be stored in this
        folder (see :meth:`runs`).
        """
        store = Store(self.root)
        if (
            not isinstance(run_id, str)
            or not run_id
            or run_id.startswith(".")
            or any(sep in run_id for sep in "/\\\0")
            or not os.path.lexists(store.path(run_id))
        ):
            raise InputError(
                f"invalid value for 'run_id': no stored run {run_id!r} in {self.root} "
                "(Results.runs() lists them)"
            )
        return store.read(run_id)


def cite(experiment: str | None = None) -> str:
    """BibTeX for attndyn and JAX and, with ``experiment``, for the papers it reproduces (as
    ``attndyn cite [EXPERIMENT]`` prints it).

    Args:
        experiment: a registered experiment name (``attndyn list``); its papers are the arXiv
            ids of its "paper:" line (``attndyn describe NAME``: the parenthesis that opens its
            module docstring), resolved in attndyn's references (docs/references.md, shipped as
            ``attndyn/references.bib``). None: attndyn and JAX only.

    Returns:
        BibTeX entries, each after a ``%`` comment saying why it is there.

    Raises:
        InputError: an unknown experiment.
    """
    from attndyn.claims.papers import cite as cite_

    return cite_(experiment)


COLUMN_ALIASES = {("claims", "name"): "claim"}
"""Columns asked for by the name another output gives them: ``run --json`` calls a claim's name
``name``, the ``claims`` view ``claim``."""


def column_hint(con: duckdb.DuckDBPyConnection, sql: str, message: str) -> str:
    """For a binder error naming a column that does not exist, ``"; claims has the columns
    experiment, preset, …"`` for each view the SQL names (with a did-you-mean, and the view's
    name for a column another output names differently); ``""`` for any other error."""
    from attndyn.core.suggest import did_you_mean

    found = re.search(r'Binder Error: .*?column (?:named )?"([^"]+)"', message)
    if not found:
        return ""
    missing = found.group(1)
    views = [v for (v,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_type = 'VIEW' "
        "AND table_name NOT LIKE '\\_%' ESCAPE '\\'"
    ).fetchall()]  # fmt: skip
    named = sorted(
        (m.start(), v) for v in views if (m := re.search(rf"\b{re.escape(v)}\b", sql, re.I))
    )
    out = []
    for _, view in named:
        columns = [c for (c,) in con.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position", [view]
        ).fetchall()]  # fmt: skip
        alias = COLUMN_ALIASES.get((view, missing))
        hint = (f" (the name --json gives '{missing}' is '{alias}' here)" if alias in columns
                else did_you_mean(missing, columns))  # fmt: skip
        out.append(f"{view} has the columns {', '.join(columns)}{hint}")
    return "".join(f"; {line}" for line in out)


def results(
    path: str | os.PathLike | None = None,
    timeout: float | None = None,
    memory: str | None = None,
) -> Results:
    """Open a results folder for querying.

    Args:
        path: the folder; default ``$ATTNDYN_RESULTS``, else ``./attndyn-results``. A folder
            with no runs yet gives empty views.
        timeout: seconds after which a query is stopped (default
            ``$ATTNDYN_QUERY_TIMEOUT``, else 600; 0: no limit). Ctrl-C stops a query at once.
        memory: the memory a query may use, e.g. ``"2GB"`` or ``"25%"`` (default
            ``$ATTNDYN_QUERY_MEMORY``, else a quarter of this machine's memory).

    Returns:
        Results with ``root`` and a DuckDB connection ``con``; see :class:`Results` for
        ``query``, ``runs``, ``observables`` and ``trajectory``.
    """
    limits = Limits.resolve(timeout, memory)  # InputError naming the field: nothing opened
    root = results_dir(path)
    return Results(root=root, con=connect(root, limits=limits))
