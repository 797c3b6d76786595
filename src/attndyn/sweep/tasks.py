"""Tasks: the units an executor schedules, and the function a worker runs.

Grouping is a function of the spec alone (never of the executor, the worker count or what is
already stored), so a sweep's stored values do not depend on how it was run:

- plain simulations: configs that differ only in ``seed`` form a group, run as ONE simulation
  vmapped over the union of their seeds (sorted, at most ``max_group_seeds`` of them; larger
  unions are split in seed order) and split per config afterwards. A config alone in its group
  runs exactly as ``attndyn simulate`` would run it. Vmapped lanes are NOT bit-identical to the
  same seed run in a narrower vmap (XLA vectorises differently per batch width; the measured
  size is in docs/sweeps.md, "Tasks and seed groups"), so a grouped run's values depend on its
  group; the group is recorded with the run (``vmap_seeds``) and is the same every time the spec
  is run. ``group_seeds = false`` runs each config on its own;
- experiments: one experiment run per task.

A task whose runs are all stored is not run. A task with some runs missing runs its whole group
(the same computation as before, hence the same values) and writes only the missing runs.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from typing import Any

from attndyn.sweep.spec import RunItem, SweepSpec


@dataclass(frozen=True)
class Group:
    """Runs computed together: ``seeds`` is the vmapped seed list (None: the run's own seeds)."""

    runs: tuple[RunItem, ...]
    seeds: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Task:
    index: int
    kind: str
    name: str
    sweep: str
    groups: tuple[Group, ...]
    preset: str | None = None
    devices: int | None = None  # seeds sharded over this many devices (None: the default)
    token: str | None = None  # this sweep invocation's, in its runs' records (``sweep_token``)

    @property
    def runs(self) -> list[RunItem]:
        return [r for g in self.groups for r in g.runs]


@dataclass
class TaskResult:
    """What a worker reports: per run, ``ok`` (stored now, or by an earlier attempt of this
    sweep), ``present`` (already stored by another process, not rewritten) or ``failed`` (with
    the error's one line)."""

    index: int
    status: dict[str, str] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0
    host: str = ""
    pid: int = 0


def _seed_range(config: dict[str, Any]) -> list[int]:
    return list(range(config["seed"], config["seed"] + config["seeds"]))


def make_tasks(spec: SweepSpec, items: list[RunItem]) -> list[Task]:
    """Deterministic tasks for the expanded runs ``items`` of ``spec`` (see the module doc)."""
    if spec.kind == "experiment":
        return [
            Task(i, "experiment", spec.name, spec.sweep, (Group((item,)),), item.preset)
            for i, item in enumerate(items)
        ]
    buckets: dict[str, list[RunItem]] = {}
    for item in items:
        key = {k: v for k, v in item.config.items() if k != "seed"}
        if not spec.group_seeds:
            key["seed"] = item.config["seed"]
        buckets.setdefault(json.dumps(key, sort_keys=True), []).append(item)
    groups: list[Group] = []
    for bucket in buckets.values():
        bucket = sorted(bucket, key=lambda r: r.config["seed"])
        current: list[RunItem] = []
        seeds: set[int] = set()
        for item in bucket:
            mine = set(_seed_range(item.config))
            if current and len(seeds | mine) > spec.max_group_seeds:
                groups.append(_group(current, seeds))
                current, seeds = [], set()
            current.append(item)
            seeds |= mine
        groups.append(_group(current, seeds))
    return [Task(i, "family", spec.name, spec.sweep, (group,)) for i, group in enumerate(groups)]


def _group(runs: list[RunItem], seeds: set[int]) -> Group:
    if len(runs) == 1:
        return Group(tuple(runs))
    return Group(tuple(runs), tuple(sorted(seeds)))


THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
)
XLA_ONE_THREAD = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def single_thread_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """Environment variables for a worker with one BLAS/XLA thread (added to ``environ``'s
    XLA_FLAGS, which are kept)."""
    environ = dict(os.environ if environ is None else environ)
    flags = environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        flags = f"{flags} {XLA_ONE_THREAD}".strip()
    return {"XLA_FLAGS": flags, **{v: "1" for v in THREAD_VARS}}


def configure_worker() -> None:
    """In a worker process before JAX starts its backend: one BLAS/XLA thread (a no-op for
    settings the process already has). With attndyn's persistent compilation cache on, cache
    every compiled program, however quick to compile: a sweep's tasks often share programs
    (seed groups of one config differ only in their input seeds), and a cache hit is far
    cheaper than a compile (timings in BENCHMARKS.md, "Sweep wall time per executor")."""
    for key, value in single_thread_env().items():
        if key == "XLA_FLAGS" or key not in os.environ:
            os.environ[key] = value
    import jax

    options: Any = jax.config  # JAX adds its option properties at run time; its stubs list none
    if options.jax_compilation_cache_dir:
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)


def run_task(task: Task, root: str) -> TaskResult:
    """Run ``task`` in a worker and store its runs under ``root``.

    A run already stored is not rewritten; the missing runs of a group are computed under their
    per-run locks (a run that another process stored meanwhile is not computed again). An
    exception in a group records a failure for each of its missing runs and the task goes on;
    a storage error (disk full, folder not writable) propagates, since nothing else could be
    stored either.
    """
    configure_worker()
    from attndyn.core.devices import using
    from attndyn.store import Store

    store = Store(root)
    result = TaskResult(index=task.index, host=os.uname().nodename, pid=os.getpid())
    start = time.perf_counter()
    for group in task.groups:
        missing = [r for r in group.runs if not _stored(store, r)]
        if missing:  # another process computing one of them: wait for it, then look again
            with store.lock(*[r.run_id for r in missing]), using(task.devices):
                missing = [r for r in missing if not _stored(store, r)]
                _run_missing(task, group, missing, store, result)
        for r in group.runs:
            if r.run_id not in result.status:
                result.status[r.run_id] = _present(store, task, r)
    result.wall_s = time.perf_counter() - start
    return result


def _present(store, task: Task, r: RunItem) -> str:
    """A run found stored: ``ok`` when this sweep invocation stored it (an earlier attempt of
    the task, whose worker was lost after writing), else ``present`` (another process did)."""
    if task.kind != "family" or task.token is None:
        return "present"
    try:
        mine = store.metadata(r.run_id).get("sweep_token") == task.token
    except Exception:  # noqa: BLE001 - unreadable now: not this sweep's to claim
        mine = False
    return "ok" if mine else "present"


def _run_missing(task: Task, group: Group, missing: list[RunItem], store, result) -> None:
    """Compute the group and store its ``missing`` runs; a failure is recorded per run."""
    from attndyn.store import StoreError

    if not missing:
        return
    try:
        _run_group(task, group, missing, store)
    except StoreError:
        raise
    except Exception as exc:
        for r in missing:
            store.write_failure(
                r.run_id, kind=r.kind, name=r.name, config=r.config, error=exc, sweep=task.sweep
            )
            result.status[r.run_id] = "failed"
            result.errors[r.run_id] = " ".join(f"{type(exc).__name__}: {exc}".split())
        return
    for r in missing:
        result.status[r.run_id] = "ok"


def _stored(store, item: RunItem) -> bool:
    if item.kind == "experiment":
        return store.experiment_exists(item.run_id)
    return store.stored(item.run_id)  # a damaged file is quarantined and redone


def _experiment_overrides(name: str, config: dict) -> dict:
    """A stored experiment config as overrides: the seed fields of its nested configs dropped,
    since the experiment's own ``seed`` and ``seeds`` set them (claims/config.py)."""
    from attndyn.claims import get_experiment
    from attndyn.claims.config import SEED_FIELDS, base_fields

    own = get_experiment(name).Config
    out = dict(config)
    for field_name in base_fields(own):
        if isinstance(out.get(field_name), dict):
            drop = {k for k in SEED_FIELDS if k in own.model_fields}
            out[field_name] = {k: v for k, v in out[field_name].items() if k not in drop}
    return out


def _run_group(task: Task, group: Group, missing: list[RunItem], store) -> None:
    if task.kind == "experiment":
        from attndyn.claims.runner import run_experiment

        (item,) = group.runs
        overrides = _experiment_overrides(task.name, item.config)
        run_experiment(task.name, item.preset or "small", overrides, out=store.root)
        store.clear_failure(item.run_id)
        return
    from attndyn.core.config import canonical, identity, input_hashes
    from attndyn.models import get_family
    from attndyn.runs import family_config

    module = get_family(task.name)
    configs = {r.run_id: family_config(task.name, r.config) for r in group.runs}
    start = time.perf_counter()
    if group.seeds is None:
        (item,) = group.runs
        traj = module.simulate(configs[item.run_id])
    else:
        traj = module.simulate(configs[group.runs[0].run_id], seeds=list(group.seeds))
    wall = (time.perf_counter() - start) / len(group.runs)
    extra = {
        "sweep": task.sweep,
        "sweep_token": task.token,
        "vmap_seeds": list(group.seeds) if group.seeds else None,
    }
    for r in missing:
        config = configs[r.run_id]
        part = traj.sel(seed=_seed_range(r.config)) if group.seeds is not None else traj.copy()
        part.attrs = dict(traj.attrs)
        part.attrs["config"] = json.dumps(canonical(config), sort_keys=True)
        part.attrs["run_id"] = r.run_id
        basis = (task.name, identity(config), input_hashes(config))  # what the id hashes
        store.write(part, r.run_id, wall_s=wall, extra=extra, basis=basis)
        store.clear_failure(r.run_id)
