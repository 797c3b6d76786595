"""An experiment's runs and their cost before it runs (``attndyn run NAME --dry-run``).

:func:`plan_experiment` calls the experiment's own ``run(config, ctx)`` with a
:class:`DryRunContext`: every ``ctx.simulate`` / ``ctx.predict`` / ``ctx.compute`` is recorded
(kind, family or name, run id, config) and answered without running it:

- a stored run (unless ``force``) is read back, and is free;
- a simulation to run is calibrated (:func:`attndyn.runs.estimate.calibrate_with_probe`, once per
  *program*: configs equal but for ``seed``, ``t_max``, ``records`` and ``grid`` share the
  compiled step and its per-step time) and answered by a placeholder Trajectory: the calibration
  run's observables, NaN, on the config's own record grid (``record_grid``; ``time`` and extra
  axes from the family's ``time_axes`` when it has one, ``samples`` = step × batch);
- a theory run is answered by NaN placeholders of its ``SUMMARY`` observables on its record grid;
  it is not timed (its cost is the ODE solver's, not a number of steps);
- a ``compute`` run (an experiment's own model) cannot be estimated without running its function:
  it is listed as not estimated, with steps × seeds when its config has them.

The estimate of the runs still to compute is

    Σ_runs (recompile + overhead + per-step time × steps)

(the calibration's numbers; :mod:`attndyn.runs.estimate`): the calibration compiles each program
first (JAX's persistent cache keeps it), so a run pays ``recompile_s``, its tracing and the
cache read (a full compile again when the cache is off); the first compile is part of the dry
run's own time. An experiment whose ``run()`` needs the
values of a run to choose the next one cannot go on with placeholders: the plan then holds the
runs found until it stopped and says so (``complete`` is False, ``stopped`` the error). Work that
``run()`` does itself, outside ``ctx``, is done by the dry run as well and is part of its own wall
time (``dry_run_s``), not of the estimate.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from pydantic import BaseModel

from attndyn.claims.config import changed
from attndyn.core import progress
from attndyn.core.config import canonical, run_id
from attndyn.errors import InputError

if TYPE_CHECKING:
    from attndyn.models.base import Family

PROGRAM_FREE = ("seed", "t_max", "records", "grid")
"""Config fields that do not change a simulation's compiled program (nor its per-step time)."""


@dataclass
class PlannedRun:
    """One run an experiment asks for: ``kind`` simulation, theory or compute; ``name`` the
    family (or the compute run's name); ``steps`` optimiser steps per seed where known."""

    kind: str
    name: str
    run_id: str
    stored: bool
    config: dict[str, Any]
    steps: int | None = None
    seeds: int | None = None
    values: int | None = None
    seconds: float | None = None
    program: int | None = None
    note: str = ""
    flops: float | None = None  # XLA's count of the run's steps (attndyn.core.cost)

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class ExperimentPlan:
    """The runs of an experiment at a config, and the estimated cost of those still to run."""

    experiment: str
    preset: str
    control: str | None
    config: dict[str, Any]
    runs: list[PlannedRun] = field(default_factory=list)
    programs: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    stopped: str | None = None
    dry_run_s: float = 0.0

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    def _to_run(self, kind: str | None = None) -> list[PlannedRun]:
        return [r for r in self.runs if not r.stored and (kind is None or r.kind == kind)]

    @property
    def compile_s(self) -> float:
        """The calibrations' first compiles (paid by the dry run, not by the runs)."""
        return sum(p["compile_s"] for p in self.programs)

    @property
    def unestimated(self) -> list[PlannedRun]:
        """Runs to compute whose time is not estimated (theory, compute, failed calibrations)."""
        return [r for r in self._to_run() if r.seconds is None]

    @property
    def seconds(self) -> float:
        """Estimated seconds of the simulations to run; the unestimated runs are not in it."""
        return sum(r.seconds or 0.0 for r in self._to_run())

    @property
    def steps(self) -> int:
        """Σ optimiser steps × seeds of the runs to compute whose steps are known."""
        return sum(r.steps * r.seeds for r in self._to_run() if r.steps and r.seeds)

    @property
    def values(self) -> int:
        return sum(r.values or 0 for r in self._to_run())

    @property
    def flops(self) -> float:
        """Σ XLA's FLOP counts of the simulations to run whose count is known."""
        return sum(r.flops or 0.0 for r in self._to_run())

    def counts(self) -> dict[str, int]:
        out = {"n_runs": len(self.runs), "stored": sum(r.stored for r in self.runs)}
        for kind in ("simulation", "theory", "compute"):
            out[f"{kind}_to_run"] = len(self._to_run(kind))
        out["not_estimated"] = len(self.unestimated)
        return out

    def as_json(self) -> dict[str, Any]:
        return {
            "experiment": self.experiment,
            "preset": self.preset,
            "control": self.control,
            "complete": self.complete,
            "stopped": self.stopped,
            "run_ids": self.run_ids,
            **self.counts(),
            "steps": self.steps,
            "memory_bytes": 8 * self.values,
            "seconds": self.seconds,
            "flops": self.flops,
            "compile_s": self.compile_s,
            "programs": self.programs,
            "dry_run_s": self.dry_run_s,
            "runs": [r.as_json() for r in self.runs],
            "config": self.config,
        }


class OverLimit(Exception):  # noqa: N818 - a stop signal, not an error
    """The runs found so far are already estimated above the limit: the dry run stops."""


def _program_key(family: str, config: BaseModel) -> str:
    values = {k: v for k, v in canonical(config).items() if k not in PROGRAM_FREE}
    return json.dumps({"family": family, "config": values}, sort_keys=True)


@dataclass
class DryRunContext:
    """A :class:`~attndyn.claims.base.RunContext` that records runs instead of making them
    (module doc)."""

    store: Any
    force: bool = False
    below: float | None = None
    enough_s: float | None = None
    limit: float | None = None  # stop (OverLimit) once the estimate passes it
    runs: list[PlannedRun] = field(default_factory=list)
    programs: list[dict[str, Any]] = field(default_factory=list)
    _keys: dict[str, int] = field(default_factory=dict)
    _probes: dict[int, Any] = field(default_factory=dict)
    _estimates: dict[int, Any] = field(default_factory=dict)  # program → its RunEstimate
    _calibrated_on: dict[int, tuple[str, Any]] = field(default_factory=dict)  # (family, config)
    _seen: dict[str, xr.Dataset] = field(default_factory=dict)

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    def _stored(self, rid: str) -> xr.Dataset | None:
        if rid in self._seen:
            return self._seen[rid]
        return None if self.force else self.store.load(rid)

    def _record(self, run: PlannedRun, traj: xr.Dataset) -> xr.Dataset:
        traj.attrs["run_id"] = run.run_id
        self.runs.append(run)
        self._seen[run.run_id] = traj
        return traj

    def simulate(self, family: str, base: BaseModel | None = None, **changes) -> xr.Dataset:
        from attndyn import runs

        values = changed(base, **changes) if base is not None else changes
        return self.simulate_config(family, runs.family_config(family, values))

    def simulate_config(self, family: str, config) -> xr.Dataset:
        rid = run_id(family, config)
        if (traj := self._stored(rid)) is not None:
            return traj if rid in self._seen else self._record(self._free(family, rid), traj)
        run = PlannedRun(
            "simulation", family, rid, False, canonical(config), config.total_steps, config.seeds
        )
        probe = self._calibrated(family, config, run)
        traj = self._record(run, simulation_placeholder(family, config, probe))
        if self.limit is not None and self._total() > self.limit:
            if self.below is not None:  # the estimates are upper bounds: measure them first
                self._refine()
            if self._total() > self.limit:
                raise OverLimit
        return traj

    def _total(self) -> float:
        return sum(r.seconds or 0.0 for r in self.runs)

    def _refine(self) -> None:
        """Calibrate every program again without ``below`` and re-estimate its runs. A
        calibration stopped by ``below`` bounds its run from above with the short call's fixed
        overhead counted per step: each bound is under the limit, but their sum need not be
        close to the total (on a GPU the overhead of a short call is most of it)."""
        from attndyn.runs import estimate

        self.below = None
        for index, (family, config) in self._calibrated_on.items():
            kwargs = {} if self.enough_s is None else {"enough_s": self.enough_s}
            try:
                with progress.listening(None):
                    est = estimate.calibrate(family, config, **kwargs)
            except Exception:  # noqa: BLE001 - keep the bound; the run would raise the same way
                continue
            self._estimates[index] = est
            for run in self.runs:
                if run.program == index and not run.stored and run.steps is not None:
                    run.seconds = est.recompile_s + est.run_seconds(run.steps, run.seeds)

    def predict(self, family: str, base: BaseModel | None = None, **changes) -> xr.Dataset:
        from attndyn import runs

        values = changed(base, **changes) if base is not None else changes
        config = runs.theory_config(family, values)
        rid = run_id(runs.theory_kind(family), config)
        if (traj := self._stored(rid)) is not None:
            if rid in self._seen:
                return traj
            return self._record(self._free(runs.theory_kind(family), rid, "theory"), traj)
        run = PlannedRun("theory", family, rid, False, canonical(config), note="theory: not timed")
        return self._record(run, theory_placeholder(family, config))

    def compute(self, name: str, config: BaseModel, fn) -> xr.Dataset:
        rid = run_id(name, config)
        if (traj := self._stored(rid)) is not None:
            return (
                traj if rid in self._seen else self._record(self._free(name, rid, "compute"), traj)
            )
        steps = _steps(config)
        seeds = getattr(config, "seeds", None) if steps is not None else None
        run = PlannedRun(
            "compute",
            name,
            rid,
            False,
            canonical(config),
            steps,
            seeds,
            note="not estimated: the experiment's own computation",
        )
        return self._record(run, compute_placeholder(config))

    def _free(self, name: str, rid: str, kind: str = "simulation") -> PlannedRun:
        return PlannedRun(kind, name, rid, True, {}, seconds=0.0, note="stored: free")

    def _calibrated(self, family: str, config, run: PlannedRun) -> Any:
        """Fill ``run``'s estimate from its program's calibration (made on first sight); the
        calibration's last short run (None if it failed)."""
        from attndyn.runs import estimate

        key = _program_key(family, config)
        if key not in self._keys:
            kwargs = {"below": self.below}
            if self.enough_s is not None:
                kwargs["enough_s"] = self.enough_s
            self._keys[key] = len(self.programs)
            try:
                with progress.listening(None):
                    cal, probe = estimate.calibrate_with_probe(family, config, **kwargs)
            except Exception as exc:  # noqa: BLE001 - the family's own code; the run would raise
                cal, probe = None, None
                error = " ".join(f"{type(exc).__name__}: {exc}".split())
            entry: dict[str, Any] = {"family": family, "run_id": run.run_id}
            entry |= cal.as_json() if cal else {"error": error, "compile_s": 0.0}
            self.programs.append(entry)
            self._probes[self._keys[key]] = probe
            self._estimates[self._keys[key]] = cal
            if cal is not None:
                self._calibrated_on[self._keys[key]] = (family, config)
        index = self._keys[key]
        run.program = index
        cal = self.programs[index]
        if "error" in cal:
            run.note = f"no estimate: {cal['error']}"
            return None
        est = self._estimates[index]
        run.seconds = est.recompile_s + est.run_seconds(config.total_steps, run.seeds)
        if cal.get("flops_per_step") is not None:
            run.flops = cal["flops_per_step"] / cal["seeds"] * run.seeds * config.total_steps
        records = estimate.record_count(config)
        run.values = round(cal["values"] / (cal["records"] * cal["seeds"]) * records * run.seeds)
        return self._probes[index]


def _steps(config: Any) -> int | None:
    try:
        steps = config.total_steps
    except Exception:  # noqa: BLE001 - a config without a step count
        return None
    return int(steps) if isinstance(steps, int | np.integer) else None


def _axes(family: Family, config: Any, steps: np.ndarray) -> dict[str, np.ndarray]:
    """The family's time axes on ``steps`` (``time_axes``) for a config of the family (a theory
    config that derives from it included); time = step for a theory of its own model (e.g.
    the circuits family's reduced flow, whose config is no family config)."""
    if isinstance(config, family.Config):
        return dict(family.time_axes(config, steps))
    return {"time": steps.astype(np.float64)}


def simulation_placeholder(family: str, config, probe: xr.Dataset | None) -> xr.Dataset:
    """NaN observables of ``probe`` (a short run of the same program; else the family's
    ``SUMMARY``) on ``config``'s record grid, with its seeds and time coordinates."""
    from attndyn.core.grids import record_grid
    from attndyn.models import get_family

    module = get_family(family)
    steps = record_grid(config)
    seeds = np.asarray(config.seed_list, np.int64)
    axes = _axes(module, config, steps)
    batch = 1
    if probe is not None and int(probe["step"].values[-1]) > 0:
        batch = int(probe["samples"].values[-1]) // int(probe["step"].values[-1])
    coords: dict[str, Any] = {
        "time": ("time", axes.pop("time")),
        "samples": ("time", steps * batch),
        "step": ("time", steps),
        "seed": ("seed", seeds),
        "diverged_step": ("seed", np.full(len(seeds), -1, np.int64)),
        "diverged": ("seed", np.zeros(len(seeds), bool)),
    }
    coords |= {k: ("time", np.asarray(v, np.float64)) for k, v in axes.items()}
    data: dict[str, Any] = {}
    if probe is None:
        shape = (len(seeds), len(steps))
        data = {n: (("seed", "time"), np.full(shape, np.nan)) for n in module.SUMMARY}
    else:
        for name, var in probe.data_vars.items():
            rest = var.shape[2:]
            data[name] = (var.dims, np.full((len(seeds), len(steps), *rest), np.nan))
        for name, coord in probe.coords.items():
            if name not in coords and "time" not in coord.dims and "seed" not in coord.dims:
                coords[name] = coord
            elif name not in coords:  # a coordinate along time the family's axes do not give
                coords[name] = ("time", np.full(len(steps), np.nan))
    attrs = {"family": family, "config": json.dumps(canonical(config), sort_keys=True)}
    return xr.Dataset(data, coords=coords, attrs={**attrs, "dry_run": 1})


def theory_placeholder(family: str, config) -> xr.Dataset:
    """NaN values of the theory's ``SUMMARY`` on its record grid (no seed axis)."""
    from attndyn.core.grids import record_grid
    from attndyn.models import get_family, get_theory

    theory = get_theory(family)
    try:
        steps = record_grid(config)
    except Exception:  # noqa: BLE001 - a theory whose grid is its solver's own
        steps = np.zeros(1, np.int64)
    axes = _axes(get_family(family), config, steps)
    coords = {k: ("time", np.asarray(v, np.float64)) for k, v in axes.items()}
    data = {n: ("time", np.full(len(steps), np.nan)) for n in theory.SUMMARY}
    attrs = {"family": family, "config": json.dumps(canonical(config), sort_keys=True)}
    return xr.Dataset(data, coords=coords, attrs={**attrs, "dry_run": 1})


def compute_placeholder(config) -> xr.Dataset:
    """An experiment's own run, not made: no observables, only a time axis (the record grid
    where the config has one)."""
    from attndyn.core.grids import record_grid

    try:
        steps = record_grid(config)
    except Exception:  # noqa: BLE001 - not a grid config
        steps = np.zeros(1, np.int64)
    return xr.Dataset(coords={"time": steps.astype(np.float64)}, attrs={"dry_run": 1})


def plan_experiment(
    name: str,
    preset: str = "small",
    overrides: dict[str, Any] | None = None,
    out=None,
    force: bool = False,
    control: str | None = None,
    *,
    below: float | None = None,
    enough_s: float | None = None,
    limit: float | None = None,
) -> ExperimentPlan:
    """The runs ``run_experiment`` would make with the same arguments, and their estimated
    cost (module doc). Reads the store, writes nothing. ``below``: a time limit in seconds; each
    calibration may stop as soon as its run is surely under it (an upper bound then).
    ``limit``: stop as soon as the runs found are estimated above it (a partial plan, its
    ``stopped`` says so)."""
    from attndyn.claims.runner import experiment_config
    from attndyn.store import Store

    exp, config = experiment_config(name, preset, overrides or {}, control)
    ctx = DryRunContext(Store(out), force, below, enough_s, limit)
    plan = ExperimentPlan(name, preset, control, json.loads(config.model_dump_json()))
    start = time.perf_counter()
    try:
        exp.run(config, ctx)
    except InputError:
        raise
    except OverLimit:
        plan.complete = False
        plan.stopped = f"the runs found are already estimated above {limit:g} s"
    except Exception as exc:  # noqa: BLE001 - run() needed values the placeholders lack
        plan.complete = False
        plan.stopped = " ".join(f"{type(exc).__name__}: {exc}".split())
    plan.dry_run_s = time.perf_counter() - start
    plan.runs, plan.programs = ctx.runs, ctx.programs
    return plan


def summary_lines(plan: ExperimentPlan) -> list[str]:
    """The dry run's totals: counts, steps, memory, time, and what is not estimated."""
    from attndyn.runs.estimate import duration, size

    c = plan.counts()
    lines = [
        f"{c['n_runs']} runs: {c['stored']} stored (free), {c['simulation_to_run']} simulations, "
        f"{c['theory_to_run']} theory and {c['compute_to_run']} experiment-computed runs to run"
    ]
    sims = plan._to_run("simulation")
    counted = sum(r.flops is not None for r in sims)
    flops = f"FLOPs: {plan.flops:.3g} (XLA's count, {counted} of {len(sims)} simulations); "
    lines.append(
        f"steps: {plan.steps:.4g} (optimiser steps × seeds, to run); {flops}memory: "
        f"{size(8 * plan.values)} of recorded simulation values; time: "
        f"{duration(plan.seconds)} for the simulations ({len(plan.programs)} programs, each "
        f"calibrated once; their first compile, {plan.compile_s:.3g} s, was the dry run's)"
    )
    if c["not_estimated"]:
        kinds = sorted({r.kind for r in plan.unestimated})
        lines.append(
            f"not estimated: {c['not_estimated']} runs ({', '.join(kinds)}); the time above "
            "leaves them out"
        )
    if not plan.complete:
        lines.append(
            f"partial: the experiment's run() stopped after {c['n_runs']} runs ({plan.stopped}); "
            "it needs values of a run to go on, so later runs, if any, are not listed"
        )
    lines.append(f"dry run took {duration(plan.dry_run_s)} (calibrations and run()'s own work)")
    return lines


COLUMNS = ["run_id", "kind", "name", "state", "time", "steps × seeds", "memory", "note"]


def plan_rows(plan: ExperimentPlan) -> list[list[Any]]:
    """One row per run for the dry run's table (:data:`COLUMNS`); time without compile."""
    from attndyn.runs.estimate import duration, size

    rows = []
    for r in plan.runs:
        steps = f"{r.steps} × {r.seeds}" if r.steps and r.seeds else None
        rows.append(
            [
                r.run_id,
                r.kind,
                r.name,
                "stored" if r.stored else "to run",
                None if r.seconds is None or r.stored else duration(r.seconds),
                None if r.stored else steps,
                None if r.values is None or r.stored else size(8 * r.values),
                r.note,
            ]
        )
    return rows
