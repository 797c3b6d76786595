"""A sweep's size and cost before it runs (``attndyn sweep --dry-run``, and the time limit).

Counts come from the grid's list lengths, never from an expanded grid. A grid of at most
:data:`FULL_LIMIT` points is expanded and every point validated (the run list, tasks and what is
stored are exact); a larger one is checked on :data:`SAMPLE` evenly spaced points (first and
last included) plus its seed axes, and its step and time totals are the sample's scaled to the
grid. A full run (``attndyn sweep`` without ``--dry-run``) always validates every point first.

The time comes from one calibration (:func:`attndyn.runs.estimate.calibrate`) of the vmapped
seed group with the most seed-steps (the last one on ties): its seconds per seed-step, fixed
overhead and compile time give

    compute = Σ_groups (steps × seeds × seconds per seed-step + overhead) + compile × programs

over the groups still to run (``programs``: configs that differ in more than the seed), and the
wall time is ``compute / min(workers, tasks)``. Experiment sweeps get counts only (an experiment
runs several simulations of its own; no time estimate).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from attndyn.errors import InputError
from attndyn.runs.estimate import RunEstimate, try_calibrate
from attndyn.sweep.run import SweepPlan, plan_sweep
from attndyn.sweep.spec import RunItem, SweepSpec, load_spec
from attndyn.sweep.tasks import Group

FULL_LIMIT = 10_000
"""A dry run expands and validates every point of a grid up to this size."""

SAMPLE = 1_000
"""Points of a larger grid that a dry run validates (evenly spaced, first and last included)."""


@dataclass
class SweepEstimate:
    """Counts and cost of a sweep; ``None`` where not known (a sampled grid, no calibration)."""

    sweep: str
    kind: str
    name: str
    points: int
    validated: int
    sampled: bool
    runs: int | None = None
    stored: int | None = None
    to_run: int | None = None
    tasks: int | None = None
    tasks_to_run: int | None = None
    steps: int | None = None  # Σ over runs to run of optimiser steps × seeds
    values: int | None = None
    seconds: float | None = None
    flops: float | None = None  # XLA's count per seed-step of the calibrated run × steps
    workers: int = 1
    calibration: dict[str, Any] | None = None
    note: str = ""
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def memory_bytes(self) -> int | None:
        return None if self.values is None else self.values * 8

    def as_json(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "rows"}
        out["memory_bytes"] = self.memory_bytes
        out["rows"] = self.rows
        return out


def _no_seed(item: RunItem) -> str:
    return json.dumps({k: v for k, v in item.config.items() if k != "seed"}, sort_keys=True)


def _steps(item: RunItem) -> int:
    """The optimiser steps per seed of a family run (every family run has them)."""
    assert item.steps is not None, f"family run {item.run_id} has no step count"
    return item.steps


def _seeds(group: Group) -> list[int]:
    if group.seeds is not None:
        return list(group.seeds)
    cfg = group.runs[0].config
    return list(range(cfg["seed"], cfg["seed"] + cfg["seeds"]))


def estimate_sweep(
    spec: SweepSpec | str | os.PathLike,
    out=None,
    *,
    workers: int = 1,
    calibrated: bool = True,
    below: float | None = None,
    writing: bool = False,
) -> tuple[SweepEstimate, SweepPlan | None]:
    """Count and estimate ``spec`` (module doc); the plan when the grid was fully expanded.
    Reads the store, writes no results. ``below``: a time limit in seconds; the calibration
    stops early once the sweep is surely under it. ``writing``: the sweep will run, so a
    results folder it cannot write raises NotWritable (exit 2) before the calibration."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputError(f"invalid value for 'workers': must be >= 1 (got {workers})")
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    n_points = spec.size
    est = SweepEstimate(
        spec.sweep,
        spec.kind,
        spec.name,
        n_points,
        validated=0,
        sampled=n_points > FULL_LIMIT,
        workers=workers,
    )
    plan = None
    if est.sampled:
        items = spec.expand_sample(SAMPLE)
        est.validated = len(spec.sample(SAMPLE))
        todo = [Group((item,)) for item in items]
        scale = n_points / est.validated
        est.note = (
            f"{est.validated} evenly spaced points validated; totals are the sample's scaled "
            "to the grid (a full run validates every point first)"
        )
    else:
        plan = plan_sweep(spec, out)
        est.validated = n_points
        est.runs, est.stored = len(plan.items), len(plan.stored)
        est.to_run, est.tasks, est.tasks_to_run = plan.missing, len(plan.tasks), len(plan.todo)
        est.rows = plan.rows()
        todo = [g for t in plan.todo for g in t.groups]
        scale = 1.0
    if spec.kind != "family":
        est.note = (est.note + "; " if est.note else "") + "no time estimate for experiment sweeps"
        return est, plan
    stored = plan.stored if plan is not None else set()
    missing = [r for g in todo for r in g.runs if r.run_id not in stored]
    est.steps = round(scale * sum(r.steps * r.config["seeds"] for r in missing))
    if not todo or not calibrated:
        est.seconds = 0.0 if not todo else None
        return est, plan
    if writing:
        from attndyn.store import Store

        Store(plan.root if plan is not None else out).check_writable()
    heavy = max(reversed(todo), key=lambda g: _steps(g.runs[0]) * len(_seeds(g)))
    heavy_cost = _steps(heavy.runs[0]) * len(_seeds(heavy))
    work = sum(_steps(g.runs[0]) * len(_seeds(g)) for g in todo)
    n_tasks = len(todo) if plan is None else len(plan.todo)
    parallel = max(1, min(workers, round(scale * n_tasks)))
    run_below = None if below is None else below * parallel * heavy_cost / (2 * scale * work)
    run, error = try_calibrate(
        spec.name, _config(spec, heavy.runs[0]), heavy.seeds, below=run_below
    )
    if run is None:
        est.note = (est.note + "; " if est.note else "") + f"no time estimate: {error}"
        return est, plan
    est.calibration = {"run_id": heavy.runs[0].run_id, **run.as_json()}
    est.seconds = _wall(run, todo, missing, scale, parallel)
    per_value = run.values / (run.records * run.seeds)
    values = sum(r.config["seeds"] * r.config["records"] for r in missing)  # records: at most
    est.values = round(scale * per_value * values)
    if run.flops_per_step is not None:
        est.flops = run.flops_per_step / run.seeds * est.steps
    return est, plan


def _config(spec: SweepSpec, item: RunItem):
    from attndyn.runs import family_config

    return family_config(spec.name, item.config)


def _wall(
    run: RunEstimate, todo: list[Group], missing: list[RunItem], scale: float, parallel: int
) -> float:
    compute = sum(run.run_seconds(_steps(g.runs[0]), len(_seeds(g))) for g in todo)
    programs = len({_no_seed(r) for r in missing})
    return scale * (compute + run.compile_s * programs) / parallel


def guard_sweep(
    spec: SweepSpec | str | os.PathLike,
    out,
    *,
    executor: str,
    workers: int | None,
    address: str | None,
    max_hours: float,
    yes: bool,
) -> SweepPlan | None:
    """Before a full run: check the options, and refuse (InputError) a sweep estimated above
    ``max_hours`` unless ``yes``: :class:`~attndyn.runs.estimate.TooLong` carries the estimate
    (the command line asks the user). Returns the plan when it was built (so the sweep does not
    expand the grid twice)."""
    from attndyn.runs.estimate import check_max_hours, check_time
    from attndyn.sweep.executors import default_workers
    from attndyn.sweep.run import _check_executor

    _check_executor(executor, workers, address)
    check_max_hours(max_hours)
    if yes:
        return None
    est, plan = estimate_sweep(
        spec, out, workers=workers or default_workers(), below=max_hours * 3600, writing=True
    )
    if est.seconds is not None:
        runs = est.to_run if est.to_run is not None else est.points
        check_time(est.seconds, max_hours, f"sweep {est.sweep} ({runs} runs)", est)
    return plan


def summary_lines(est: SweepEstimate, root) -> list[str]:
    """The dry run's summary: counts, then steps, memory and time (``≈``: scaled from a
    sample)."""
    from attndyn.runs.estimate import duration, size

    approx = "≈ " if est.sampled else ""
    if est.sampled:
        lines = [f"{est.points} grid points; {est.note}"]
    else:
        lines = [
            f"{est.runs} runs in {est.tasks} tasks: {est.stored} stored, "
            f"{est.to_run} to run in {est.tasks_to_run} tasks (results: {root})"
        ]
    if est.steps is None:
        lines.append(est.note)
        return lines
    cost = [f"steps: {approx}{est.steps:.4g} (optimiser steps × seeds, to run)"]
    if est.flops is not None:
        cost.append(
            f"FLOPs: ≈ {est.flops:.3g} (XLA's count of the calibrated run, per step × seed)"
        )
    if est.memory_bytes is not None:
        cost.append(f"memory: {approx}{size(est.memory_bytes)} of recorded values (8 bytes each)")
    if est.seconds is not None:
        cal = est.calibration
        where = f"{est.workers} worker{'s' if est.workers != 1 else ''}"
        cost.append(f"time: {approx}{duration(est.seconds)} on {where}")
        if cal:
            cost.append(
                f"calibrated on run {cal['run_id']} ({cal['seeds']} seed(s), "
                f"{cal['calibration_steps']} of {cal['steps']} steps: "
                f"{cal['step_s']:.3g} s/step, compile {cal['compile_s']:.3g} s)"
            )
    if est.seconds is None and est.note and not est.sampled:
        cost.append(est.note)
    lines.append("; ".join(cost))
    return lines
