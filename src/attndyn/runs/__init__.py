"""Load-or-compute: config → run id → the stored file, or a fresh computation that is stored.

The one path by which the API, experiments, sweeps, the demo and the CLI obtain a run. A run's id
is a hash of its kind (a family name, ``<family>:theory`` or an experiment's own model name), its
config's identity (:func:`attndyn.core.config.identity`) and the schema version, and of the
content of the files the config reads (a Markov text corpus,
:func:`attndyn.core.config.input_hashes`; then stored in the record as ``inputs``)
(:func:`attndyn.core.config.run_id`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import xarray as xr
from pydantic import BaseModel

from attndyn.core import progress
from attndyn.core.config import (
    GridConfig,
    SimulationConfig,
    identity,
    input_hashes,
    run_id,
    validate,
)
from attndyn.models import get_family, get_theory
from attndyn.runs import memory
from attndyn.store import Store


def family_config(family: str, values: dict[str, Any]) -> SimulationConfig:
    """Validate ``values`` against the family's simulation ``Config``.

    Args:
        family: a registered family name.
        values: config fields by name; missing fields take their defaults.

    Returns:
        The validated config (a :class:`~attndyn.core.config.SimulationConfig` subclass).

    Raises:
        InputError: unknown family, unknown field or invalid value.
    """
    return validate(get_family(family).Config, values)


def theory_config(family: str, values: dict[str, Any]) -> GridConfig:
    """Validate ``values`` against the family theory's ``Config``.

    Args:
        family: a registered family that has a theory.
        values: config fields by name; missing fields take their defaults.

    Returns:
        The validated theory config (a :class:`~attndyn.core.config.GridConfig` subclass).

    Raises:
        InputError: unknown family, a family without theory, unknown field or invalid value.
    """
    return validate(get_theory(family).Config, values)


def theory_kind(family: str) -> str:
    """The run-id kind of a family's theory runs: ``"<family>:theory"``."""
    return f"{family}:theory"


def load_or_compute(
    kind: str,
    config: BaseModel,
    compute: Callable[[], xr.Dataset],
    store: Store | None = None,
    force: bool = False,
) -> tuple[xr.Dataset, bool]:
    """Read run ``run_id(kind, config)`` from ``store``, or compute, time and store it.

    Args:
        kind: what is hashed with the config into the run id: a family name for simulations,
            ``"<family>:theory"`` for theory, an experiment's own model name otherwise.
        config: the validated config.
        compute: builds the Trajectory when it is not stored (or ``force``).
        store: results folder to read from and write to; None computes without storing.
        force: compute and overwrite even when stored.

    Returns:
        (Trajectory, read_back): the Trajectory, dims ``(seed, time)`` for a simulation or
        ``(time,)`` for theory, with ``attrs['run_id']`` set; ``read_back`` is True when it came
        from the store. A fresh computation is stored with its wall time (``wall_s``).

    Raises:
        NotWritable: the run is not stored and ``store`` cannot be written (checked before
            computing).

    A run is computed under its lock (docs/store.md, "Locks and temporary files"): a process
    asking for a run that another one is computing waits, then reads the stored run. The run's
    start and end are reported to the progress listener (:mod:`attndyn.core.progress`).
    """
    rid = run_id(kind, config)
    progress.run_started(f"{kind} {rid}")
    if store is None:
        return _finished(_computed(compute, rid), False)
    if not force and (stored := store.load(rid)) is not None:  # None: missing or damaged
        return _finished(stored, True)
    store.check_writable()  # NotWritable (exit 2) before any computation
    with store.lock(rid):  # a racing process computing the same run: wait, then read it
        if not force and (stored := store.load(rid)) is not None:
            return _finished(stored, True)
        start = time.perf_counter()
        traj = _computed(compute, rid)
        basis = (kind, identity(config), input_hashes(config))  # what rid hashes
        store.write(traj, rid, wall_s=time.perf_counter() - start, basis=basis)
    return _finished(traj, False)


def _finished(traj: xr.Dataset, read_back: bool) -> tuple[xr.Dataset, bool]:
    progress.run_finished(read_back)
    return traj, read_back


def _computed(compute: Callable[[], xr.Dataset], rid: str) -> xr.Dataset:
    traj = compute()
    traj.attrs["run_id"] = rid
    return traj


def simulation(
    family: str,
    config: SimulationConfig,
    store: Store | None = None,
    force: bool = False,
) -> tuple[xr.Dataset, bool]:
    """The family's simulation of ``config``, stored and reused (:func:`load_or_compute`).

    A stored run whose ``observables_version`` attribute differs from the family's
    ``OBSERVABLES_VERSION`` (:mod:`attndyn.models.base`) is recomputed and overwritten.

    Returns:
        (Trajectory with dims ``(seed, time)``, read_back); the Trajectory is described under
        :func:`attndyn.api.simulate`.

    Raises:
        TooLarge: the run is not stored and its estimated memory is above the machine's
            (:mod:`attndyn.runs.memory`), before anything is allocated.
    """
    module = get_family(family)

    def compute() -> xr.Dataset:
        memory.check(family, config)  # TooLarge (exit 2) before anything is allocated
        return module.simulate(config)

    traj, read_back = load_or_compute(family, config, compute, store, force)
    if read_back and traj.attrs.get("observables_version", 1) != module.OBSERVABLES_VERSION:
        # recorded by an older version of the family's observables: compute it again
        traj, read_back = load_or_compute(family, config, compute, store, force=True)
    note = all_diverged(traj)
    if note:
        print(note, file=sys.stderr)
    return traj, read_back


def all_diverged(traj: xr.Dataset) -> str | None:
    """One line saying that every seed of a simulation diverged, or None."""
    if "diverged" not in traj.coords or not traj["diverged"].values.all():
        return None
    first = int(traj["diverged_step"].values.min())
    return (
        f"warning: all {traj.sizes['seed']} seeds of run {traj.attrs.get('run_id', '?')} "
        f"diverged (first at step {first}); their values are missing (NaN) from there on"
    )


def theory(
    family: str, config: GridConfig, store: Store | None = None, force: bool = False
) -> tuple[xr.Dataset, bool]:
    """The family theory's prediction for ``config``, stored as a run of kind
    ``"<family>:theory"`` and reused (:func:`load_or_compute`).

    Returns:
        (Trajectory with dim ``time``, read_back); the Trajectory is described under
        :func:`attndyn.api.predict`.
    """
    module = get_theory(family)
    return load_or_compute(
        theory_kind(family), config, lambda: module.predict(config), store, force
    )
