"""Plan and run a sweep: expand, skip what is stored, run the rest, summarise."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from attndyn.core.progress import run_finished, runs_planned
from attndyn.core.progress_bars import shown
from attndyn.errors import InputError
from attndyn.store import Store
from attndyn.sweep.executors import EXECUTORS, default_workers, run_dask, run_local
from attndyn.sweep.spec import RunItem, SweepSpec, load_spec
from attndyn.sweep.tasks import Task, TaskResult, make_tasks


@dataclass
class SweepPlan:
    """A validated sweep: every run, the tasks, and which runs are already stored."""

    spec: SweepSpec
    items: list[RunItem]
    tasks: list[Task]
    stored: set[str]
    root: Path

    @property
    def todo(self) -> list[Task]:
        """Tasks with at least one run not stored yet."""
        return [t for t in self.tasks if any(r.run_id not in self.stored for r in t.runs)]

    @property
    def missing(self) -> int:
        return sum(r.run_id not in self.stored for r in self.items)

    def rows(self) -> list[dict[str, Any]]:
        """One row per run: run id, task, whether it is stored, its grid values."""
        task_of = {r.run_id: t.index for t in self.tasks for r in t.runs}
        return [
            {
                "run_id": r.run_id,
                "task": task_of[r.run_id],
                "stored": r.run_id in self.stored,
                **r.point,
            }
            for r in self.items
        ]


@dataclass
class SweepSummary:
    sweep: str
    root: str
    executor: str
    workers: int | None
    total: int
    skipped: int
    done: int = 0
    failed: int = 0
    tasks: int = 0
    wall_s: float = 0.0
    failures: list[dict[str, str]] = field(default_factory=list)
    diverged_runs: int = 0  # stored runs of the sweep with at least one diverged seed
    diverged_seeds: int = 0  # their diverged seeds, in all

    @property
    def ok(self) -> bool:
        return self.failed == 0

    def as_json(self) -> dict[str, Any]:
        return {
            "sweep": self.sweep,
            "results": self.root,
            "executor": self.executor,
            "workers": self.workers,
            "runs": self.total,
            "skipped": self.skipped,
            "ran": self.done,
            "failed": self.failed,
            "tasks": self.tasks,
            "wall_s": round(self.wall_s, 3),
            "failures": self.failures,
            "diverged_runs": self.diverged_runs,
            "diverged_seeds": self.diverged_seeds,
        }


def plan_sweep(spec: SweepSpec | str | os.PathLike, out=None) -> SweepPlan:
    """Expand and validate ``spec`` (a SweepSpec or a TOML path); reads the store, writes
    nothing."""
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    items = spec.expand()
    tasks = make_tasks(spec, items)
    store = Store(out)
    if spec.kind == "family":
        present = set(store.run_ids())
        stored = {r.run_id for r in items if r.run_id in present}
    else:
        stored = {r.run_id for r in items if store.experiment_exists(r.run_id)}
    return SweepPlan(spec, items, tasks, stored, store.root)


def _check_executor(executor: str, workers: int | None, address: str | None) -> None:
    if executor not in EXECUTORS:
        raise InputError(
            f"invalid value for 'executor': must be one of {', '.join(EXECUTORS)} "
            f"(got {executor!r})"
        )
    if workers is not None and workers < 1:
        raise InputError(f"invalid value for 'workers': must be >= 1 (got {workers})")
    if address and executor != "dask":
        raise InputError("--address needs --executor dask")
    if executor == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise InputError(
                "the dask executor needs dask.distributed: pip install 'attndyn[dask]'"
            ) from None


def run_sweep(
    spec: SweepSpec | SweepPlan | str | os.PathLike,
    out=None,
    *,
    executor: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
    devices: int | None = None,
) -> SweepSummary:
    """Run every run of ``spec`` (or of a plan from :func:`plan_sweep`) that is not stored yet
    in ``out`` and return the summary.

    Everything is validated before anything runs or is written (InputError). A failing run is
    recorded (``failures`` view) and the sweep goes on; a results folder that cannot be written
    raises NotWritable (exit code 2) before any run starts, or StoreError when it happens
    mid-way. Stored runs are checked first (:meth:`Store.sound`): a damaged one is quarantined
    and run again. ``devices``: each simulation's seeds sharded over this many devices
    (:func:`attndyn.api.on_devices`; checked here for the local executor, by each worker for
    Dask).
    """
    _check_executor(executor, workers, address)
    if devices is not None and executor == "local":
        from attndyn.core.devices import check

        check(devices)
    plan = spec if isinstance(spec, SweepPlan) else plan_sweep(spec, out)
    store = Store(plan.root)
    if plan.spec.kind == "family":
        plan.stored = store.sound(plan.stored)  # damaged runs: quarantined, so run again
    n_workers = workers or default_workers()
    summary = SweepSummary(
        sweep=plan.spec.sweep,
        root=str(plan.root),
        executor=executor,
        workers=None if executor == "dask" and address else n_workers,
        total=len(plan.items),
        skipped=len(plan.stored),
    )
    token = uuid.uuid4().hex[:16]  # marks the runs this invocation stores (tasks._present)
    todo = [replace(t, devices=devices, token=token) for t in plan.todo]
    summary.tasks = len(todo)
    if not todo:
        _count_diverged(summary, plan)
        return summary
    store.check_writable()  # NotWritable (exit 2) before anything runs
    store.clean_temporary()
    start = time.perf_counter()

    def on_result(task: Task, result: TaskResult) -> None:
        done = failed = present = 0
        for r in task.runs:
            if r.run_id in plan.stored:
                continue
            status = result.status.get(r.run_id, "failed")
            if status == "failed":
                failed += 1
                error = result.errors.get(r.run_id, "no result")
                summary.failures.append({"run_id": r.run_id, "error": error})
            elif status == "present":  # stored meanwhile by another process: not run here
                present += 1
            else:
                done += 1
        summary.done += done
        summary.failed += failed
        summary.skipped += present
        _report(done, failed, present)

    def on_error(task: Task, exc: BaseException) -> None:
        done = failed = 0
        for r in task.runs:
            if r.run_id in plan.stored:
                continue
            if _stored(store, r):  # stored before the task was lost
                done += 1
                continue
            store.write_failure(
                r.run_id, kind=r.kind, name=r.name, config=r.config, error=exc, sweep=task.sweep
            )
            summary.failures.append(
                {"run_id": r.run_id, "error": " ".join(f"{type(exc).__name__}: {exc}".split())}
            )
            failed += 1
        summary.done += done
        summary.failed += failed
        _report(done, failed)

    with shown(progress, count=f"sweep {plan.spec.sweep}: runs", transient=False):
        runs_planned(plan.missing, len(plan.stored))
        if executor == "local":
            run_local(todo, str(plan.root), n_workers, on_result, on_error)
        else:
            run_dask(todo, str(plan.root), address, n_workers, on_result, on_error)
    summary.wall_s = time.perf_counter() - start
    _count_diverged(summary, plan)
    return summary


def _report(done: int, failed: int, present: int = 0) -> None:
    """A task's runs, finished, failed or found stored, to the progress hook (the one display
    counts them)."""
    for _ in range(present):
        run_finished(True)
    for _ in range(done):
        run_finished(False)
    for _ in range(failed):
        run_finished(False, failed=True)


def _count_diverged(summary: SweepSummary, plan: SweepPlan) -> None:
    """Runs of the sweep (stored now or before) with diverged seeds, from their run records."""
    store = Store(plan.root)
    for r in plan.items:
        if r.kind == "experiment" or not store.exists(r.run_id):
            continue
        try:
            n = int(store.metadata(r.run_id).get("n_diverged") or 0)
        except Exception:  # a damaged record: the next read quarantines it
            continue
        summary.diverged_runs += n > 0
        summary.diverged_seeds += n


def _stored(store: Store, item: RunItem) -> bool:
    if item.kind == "experiment":
        return store.experiment_exists(item.run_id)
    return store.stored(item.run_id)  # a damaged file is quarantined and redone
