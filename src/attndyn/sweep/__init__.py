"""Sweeps: a TOML spec expanded to many runs, grouped into tasks, run by an executor.

``attndyn sweep SPEC.toml`` (or :func:`run_sweep`) expands the spec's grid (see
:mod:`attndyn.sweep.spec`), skips the runs already stored, groups the rest into tasks
(:mod:`attndyn.sweep.tasks`: configs that differ only in ``seed`` become one vmapped simulation)
and runs them with the ``local`` process pool or on Dask (:mod:`attndyn.sweep.executors`).
Every run is written atomically as its own file; failures are recorded and the sweep goes on.
"""

from attndyn.sweep.run import SweepPlan, SweepSummary, plan_sweep, run_sweep
from attndyn.sweep.spec import RunItem, SweepSpec, load_spec, parse_spec
from attndyn.sweep.tasks import Group, Task, make_tasks, run_task

__all__ = [
    "Group",
    "RunItem",
    "SweepPlan",
    "SweepSpec",
    "SweepSummary",
    "Task",
    "load_spec",
    "make_tasks",
    "parse_spec",
    "plan_sweep",
    "run_sweep",
    "run_task",
]
