"""What a simulation will cost before it runs: steps, recorded memory and a calibrated time.

:func:`calibrate` runs the family's own ``simulate`` on the same config at a reduced horizon
(``t_max`` scaled so the run takes n optimiser steps, two linear record points), first n = 16,
then ×16 (at least ×2, less where the last call's pace says that would take over
``8·enough_s``) until the steps added since the first call take ``enough_s`` or n reaches the
config's ``total_steps``. JAX's compile events (tracing, lowering, XLA compile or cache retrieval)
are timed and taken out, so the per-step time is measured after compilation; the last two calls
give the per-step slope and the fixed overhead (build, init, recording). The estimate is

    compile + overhead + per-step time × total_steps

and ``recompile_s`` (a later call's compile events: tracing again and, with JAX's persistent
cache, reading the compiled program back) is what a run of the same program costs once the
calibration has compiled it (record points beyond two are not timed: each costs one observation,
usually far less than the steps between them). When the calibration reaches ``total_steps`` it
*is* the run, and the estimate is its measured time. docs/sweeps.md, "Estimates and the time
limit", describes how the CLI uses it (``--dry-run``, ``--max-hours``, ``--yes``).

Estimates hold on a busy machine (issue 27): each call's time is the smaller of its wall time
and its process CPU time (:func:`time.process_time`, all threads), times the share of its wall
time outside the compile events.
CPU time is not inflated when other processes share the cores; wall time is the smaller one when
the run's own threads work in parallel on free cores. The last call is taken ``REPEATS`` times
and the best kept, so a burst of load during one short call does not scale up to the whole run.
``load`` is the one-minute load average when the calibration started (:func:`os.getloadavg`).

This module is the one estimate path: ``attndyn simulate`` (:func:`calibrate`), an experiment's
dry run (:mod:`attndyn.claims.dryrun`), a sweep's (:mod:`attndyn.sweep.estimate`) and the demo
(:func:`expected_time`) all scale a :class:`RunEstimate` with :meth:`RunEstimate.run_seconds`,
and all check a limit with :func:`check_time`, which raises :class:`TooLong` (the command line
asks the user; library code never prompts).

Before any of that, :func:`floor_seconds` bounds the run from below at no cost: the family's
``flops_floor`` (FLOPs a step and a record point cannot skip) over :data:`PEAK_MARGIN` times the
machine's measured float32 matmul throughput (:func:`attndyn.core.timing.matmul_peak`, about
0.2 s once per process). A run above the time limit by its floor is refused without a
calibration, and a dry run whose first calibration call alone would take over
:data:`DRY_RUN_CALIBRATION_S` reports the floor instead (issue 48: ``simulate aim --set d=4096``
was refused only after a 222 s calibration).

``flops_per_step`` and ``bytes_per_step`` are XLA's operation count of the compiled loop the
calibration ran (:mod:`attndyn.core.cost`: the trainer's step, or the flow's Runge–Kutta steps
spread over the optimiser steps), for all the run's seeds; None where no loop reported one.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import cache, partial
from typing import Any

from attndyn.errors import InputError
from attndyn.runs.memory import check as check_memory
from attndyn.runs.memory import size

MAX_HOURS = 1.0
"""Default time limit (hours) above which ``attndyn simulate`` and ``sweep`` ask for ``--yes``."""

ENOUGH_S = 0.25
"""Seconds of steps (beyond the first call's) a calibration must time before its per-step time
is trusted."""

FIRST_STEPS = 16
PEAK_MARGIN = 4.0
"""The floor divides FLOPs by this multiple of the measured matmul throughput: the
measurement's own load, float32 against float64, and GEMM shapes faster than the probe's."""
DRY_RUN_CALIBRATION_S = 0.5
"""A dry run calibrates only if its first short run's floor is below this many seconds (a
calibration makes at least three such calls, each usually 3–20× its floor: aim at d = 2000 has a
1.4 s floor and took 37 s to calibrate)."""
GROWTH = 16
REPEATS = 2
"""Timings of the last calibration call; the best is kept (a burst of load inflates one)."""
COMPILE_EVENTS = (
    "/jax/core/compile/jaxpr_trace_duration",
    "/jax/core/compile/jaxpr_to_mlir_module_duration",
    "/jax/core/compile/backend_compile_duration",
)


@dataclass
class RunEstimate:
    """A run's cost: ``steps`` optimiser steps for each of ``seeds`` seeds, ``values`` recorded
    values (8 bytes each) and the estimated wall ``seconds`` (see the module doc)."""

    steps: int
    seeds: int
    records: int
    values: int
    seconds: float
    compile_s: float
    step_s: float
    overhead_s: float
    calibration_steps: int
    calibration_s: float
    exact: bool
    recompile_s: float | None = None  # a later call's compile events: the cost once cached
    flops_per_step: float | None = None  # XLA's count, all seeds (attndyn.core.cost)
    bytes_per_step: float | None = None
    iterations_per_step: float | None = None  # loop iterations (1 for the trainer)
    load: float | None = None  # one-minute load average when the calibration started

    def run_seconds(self, steps: int, seeds: int) -> float:
        """Seconds of a run of the same program with ``steps`` optimiser steps and ``seeds``
        seeds, compile not included: the measured time when the calibration was that run,
        else overhead + per-seed-step time × steps × seeds (the step is vmapped over seeds)."""
        if self.exact and steps == self.steps and seeds == self.seeds:
            return self.seconds - self.compile_s
        return self.overhead_s + self.step_s / self.seeds * seeds * steps

    @property
    def flops(self) -> float | None:
        """Floating-point operations of the whole run (XLA's count), if known."""
        return None if self.flops_per_step is None else self.flops_per_step * self.steps

    @property
    def seed_steps(self) -> int:
        return self.steps * self.seeds

    @property
    def memory_bytes(self) -> int:
        return self.values * 8

    def as_json(self) -> dict[str, Any]:
        return {
            **asdict(self),
            "seed_steps": self.seed_steps,
            "memory_bytes": self.memory_bytes,
            "flops": self.flops,
        }


class _CompileClock:
    """Total time inside JAX's compile events (overlapping spans counted once)."""

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []

    def _listen(self, event: str, start_time: float, end_time: float, **_: Any) -> None:
        if event in COMPILE_EVENTS:
            self.spans.append((start_time, end_time))

    def __enter__(self) -> _CompileClock:
        import jax.monitoring

        jax.monitoring.register_event_time_span_listener(self._listen)
        return self

    def __exit__(self, *exc: object) -> None:
        import jax.monitoring

        jax.monitoring.unregister_event_time_span_listener(self._listen)

    @property
    def seconds(self) -> float:
        total, reach = 0.0, float("-inf")
        for start, end in sorted(self.spans):
            if end > reach:
                total += end - max(start, reach)
                reach = end
        return total


def reduced(family: str, config: Any, steps: int) -> Any:
    """``config`` with ``t_max`` scaled so that it takes about ``steps`` optimiser steps, and
    two linear record points (for calibration)."""
    from attndyn.core.config import canonical
    from attndyn.runs import family_config

    values = canonical(config)
    if steps < config.total_steps:
        values["t_max"] = config.t_max * steps / config.total_steps
    values.update(records=2, grid="linear")
    return family_config(family, values)


def record_count(config: Any) -> int:
    """The number of record points of ``config``'s grid."""
    from attndyn.core.grids import record_grid

    return len(record_grid(config))


def calibrate(
    family: str,
    config: Any,
    seeds: Sequence[int] | None = None,
    *,
    enough_s: float = ENOUGH_S,
    below: float | None = None,
) -> RunEstimate:
    """Estimate ``config``'s run (vmapped over ``seeds``, default its own) from short runs of
    the family's ``simulate`` (module doc). With ``below``, stop as soon as the estimate is
    surely under ``below`` seconds (an upper bound then: the overhead counted per step).
    Raises :class:`attndyn.runs.memory.TooLarge`, before any short run, for a config above the
    machine's memory."""
    return calibrate_with_probe(family, config, seeds, enough_s=enough_s, below=below)[0]


def calibrate_with_probe(
    family: str,
    config: Any,
    seeds: Sequence[int] | None = None,
    *,
    enough_s: float = ENOUGH_S,
    below: float | None = None,
) -> tuple[RunEstimate, Any]:
    """:func:`calibrate` and the Trajectory of its last short run (the run's observables and
    coordinates on a two-point grid: an experiment's dry run builds its placeholders from it)."""
    from attndyn.core import cost
    from attndyn.models import get_family

    module = get_family(family)
    load = _load()
    total = config.total_steps
    n_seeds = config.seeds if seeds is None else len(seeds)
    check_memory(family, config, n_seeds)  # TooLarge: its short runs would not fit either
    points: list[tuple[int, float]] = []
    compile_s = spent = 0.0
    recompile: list[float] = []
    n, traj = min(total, FIRST_STEPS), None
    while True:
        cfg = reduced(family, config, n)
        with cost.recording() as reports:
            wall, comp, busy, traj = _timed(partial(module.simulate, cfg, seeds=seeds))
        counted = cost.per_step(reports, cfg.total_steps)
        spent += wall
        compile_s = compile_s or comp  # the first call compiles; later ones hit the cache
        recompile.append(comp)
        n_done = cfg.total_steps
        points.append((n_done, busy))
        if n_done >= total or points[-1][1] - points[0][1] >= enough_s:
            break
        if below is not None and compile_s + points[-1][1] / n_done * total < below:
            break
        n = min(total, _next_steps(n, points[-1][1], enough_s))
    for _ in range(REPEATS - 1):  # the best of the last call's timings (compiled by now)
        wall, _, busy, _ = _timed(partial(module.simulate, cfg, seeds=seeds))
        spent += wall
        points[-1] = (points[-1][0], min(points[-1][1], busy))
    exact = points[-1][0] >= total
    step_s, overhead_s = _fit(points)
    seconds = compile_s + (points[-1][1] if exact else overhead_s + step_s * total)
    per_record = sum(v.size for v in traj.data_vars.values()) / max(
        traj.sizes.get("seed", 1) * traj.sizes.get("time", 1), 1
    )
    records = record_count(config)
    est = RunEstimate(
        steps=total,
        seeds=n_seeds,
        records=records,
        values=round(per_record * records * n_seeds),
        seconds=seconds,
        compile_s=compile_s,
        step_s=step_s,
        overhead_s=overhead_s,
        calibration_steps=points[-1][0],
        calibration_s=spent,
        exact=exact,
        recompile_s=recompile[1] if len(recompile) > 1 else compile_s,
        flops_per_step=counted["flops"] if counted else None,
        bytes_per_step=counted["bytes"] if counted else None,
        iterations_per_step=counted["iterations"] if counted else None,
        load=load,
    )
    return est, traj


@cache
def peak_flops() -> float:
    """The machine's measured float32 matmul throughput (FLOP/s), once per process: a 1024² GEMM,
    best of 3 with numpy and with jitted ``jnp.dot`` on the default device."""
    from attndyn.core.timing import matmul_peak

    return matmul_peak(n=1024, repeats=3)["matmul_peak_gflops"] * 1e9


def floor_seconds(
    family: str,
    config: Any,
    seeds: int | None = None,
    steps: int | None = None,
    records: int | None = None,
) -> float:
    """A time no run of ``config`` can beat: the family's ``flops_floor`` for ``steps``
    optimiser steps and ``records`` record points (default the config's own) over
    :data:`PEAK_MARGIN` × :func:`peak_flops`; 0 for a family without a floor."""
    from attndyn.models import get_family

    n_seeds = config.seeds if seeds is None else seeds
    per_step, per_record = get_family(family).flops_floor(config, n_seeds)
    if per_step <= 0 and per_record <= 0:
        return 0.0
    n_steps = config.total_steps if steps is None else steps
    n_records = record_count(config) if records is None else records
    return (per_step * n_steps + per_record * n_records) / (PEAK_MARGIN * peak_flops())


def calibration_floor(family: str, config: Any) -> float:
    """:func:`floor_seconds` of the calibration's first short run (:data:`FIRST_STEPS` steps,
    two record points)."""
    return floor_seconds(family, config, steps=min(config.total_steps, FIRST_STEPS), records=2)


def try_calibrate(
    family: str, config: Any, seeds: Sequence[int] | None = None, **kwargs: Any
) -> tuple[RunEstimate | None, str | None]:
    """:func:`calibrate`, or (None, the error's one line) if the short run raised: the run
    itself would raise the same way, where it is reported as usual."""
    try:
        return calibrate(family, config, seeds, **kwargs), None
    except Exception as exc:  # noqa: BLE001 - any failure of the family's own code
        return None, " ".join(f"{type(exc).__name__}: {exc}".split())


def _next_steps(n: int, seconds: float, enough_s: float) -> int:
    """The next calibration length: ×``GROWTH``, but at least ×2 and no more than takes
    ``8·enough_s`` at the last call's pace (which counts its overhead as steps): a slow step (a
    large model) is not run 16 times longer than needed."""
    paced = math.ceil(n * 8 * enough_s / seconds) if seconds > 0 else n * GROWTH
    return max(2 * n, min(n * GROWTH, paced))


def _timed(fn: Callable[[], Any]) -> tuple[float, float, float, Any]:
    """(wall seconds, compile seconds, the call's cost, result). The cost is min(wall, process
    CPU seconds) times the fraction of the wall time spent outside compile events (JAX times
    those in wall seconds, which load inflates as much as the rest)."""
    with _CompileClock() as clock:
        start, cpu0 = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    comp = min(clock.seconds, wall)
    busy = min(wall, cpu) * (wall - comp) / wall if wall > 0 else 0.0
    return wall, comp, busy, out


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:  # not available on this platform
        return None


def _fit(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(seconds per step, fixed seconds) from the first and last calibration calls; one call: all
    its time per step (an upper bound)."""
    n2, t2 = points[-1]
    if len(points) >= 2:
        n1, t1 = points[0]
        slope = (t2 - t1) / (n2 - n1) if n2 > n1 else 0.0
        if slope > 0:
            return slope, max(t2 - slope * n2, 0.0)
    return t2 / n2, 0.0


def duration(seconds: float) -> str:
    """``seconds`` as a short human duration (e.g. ``3.2 s``, ``4.1 min``, ``2.5 h``)."""
    if seconds < 120:
        return f"{seconds:.3g} s"
    if seconds < 7200:
        return f"{seconds / 60:.3g} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


def check_max_hours(max_hours: float) -> None:
    if not max_hours > 0 or max_hours == float("inf"):
        raise InputError(
            f"invalid value for 'max-hours': must be a positive number (got {max_hours})"
        )


class TooLong(InputError):
    """A run, an experiment or a sweep estimated above the time limit (exit 2). Carries the
    estimate: ``seconds``, ``max_hours``, ``what`` was estimated and, where there is one, the
    ``estimate`` object (a RunEstimate, an ExperimentPlan, a SweepEstimate)."""

    def __init__(self, seconds: float, max_hours: float, what: str, estimate: Any = None):
        self.seconds, self.max_hours, self.what, self.estimate = seconds, max_hours, what, estimate
        super().__init__(
            f"{what} is estimated at {duration(seconds)}, above --max-hours {max_hours:g}; "
            "rerun with --yes to run it anyway (--dry-run shows the estimate)"
        )


def check_time(
    seconds: float, max_hours: float, what: str, estimate: Any = None, yes: bool = False
) -> None:
    """Raise :class:`TooLong` when ``seconds`` is above ``max_hours`` (unless ``yes``)."""
    if not yes and seconds > max_hours * 3600:
        raise TooLong(seconds, max_hours, what, estimate)


def summary_line(est: RunEstimate) -> str:
    """One line: steps × seeds, recorded memory, the time and how it was measured."""
    how = (
        "measured: the calibration ran the whole horizon"
        if est.exact
        else f"{est.step_s:.3g} s/step from {est.calibration_steps} calibration steps"
    )
    if est.load is not None:
        how += f", at load {est.load:.2g}"
    flops = "" if est.flops is None else f"FLOPs: {est.flops:.3g} (XLA's count); "
    return (
        f"steps: {est.steps} × {est.seeds} seeds = {est.seed_steps:.4g}; {flops}memory: "
        f"{size(est.memory_bytes)} of recorded values ({est.values} × 8 bytes); time: "
        f"{duration(est.seconds)} (compile {est.compile_s:.3g} s; {how})"
    )


DEMO_ENOUGH_S = 0.1
"""Seconds of steps a demo run's calibration times (it adds little to the wait it announces)."""


def expected_time(
    planned: Sequence[tuple[str, Any]], store: Any, force: bool = False
) -> tuple[float | None, str]:
    """(estimated seconds or None, one line saying it) for the simulations ``planned`` (family,
    validated config) with the results folder ``store`` (``attndyn demo``). Stored runs are read
    back and free; the others are calibrated (:func:`try_calibrate`) after a one-step run that
    takes the process's one-time start-up costs (JAX's backend, first dispatches), which the
    runs pay anyway and which would make the calibration's first call look slow (measured on
    the demo: 6.3 s → 1.0 s for its first run)."""
    from attndyn.core import progress
    from attndyn.core.config import run_id

    stored = [not force and store.exists(run_id(family, cfg)) for family, cfg in planned]
    if all(stored):
        return 0.0, "a few seconds (stored runs are reused)"
    progress.run_started("estimating the time")  # the calibration's steps are not the run's
    with progress.listening(None):
        total = _calibrated(
            [p for p, is_stored in zip(planned, stored, strict=True) if not is_stored]
        )
    if total is None:  # the run itself will report the failure
        return None, "time unknown (the calibration failed)"
    reused = sum(stored)
    note = f"; {reused} stored run reused" if reused == 1 else ""
    count = len(planned) - reused
    return total, (
        f"about {duration(total)} ({count} run{'s' if count > 1 else ''} to compute, "
        f"estimated from a short calibration{note})"
    )


def _calibrated(planned: Sequence[tuple[str, Any]]) -> float | None:
    """Total estimated seconds of ``planned``, after a one-step warm-up run; None on failure."""
    from attndyn.models import get_family

    family, cfg = planned[0]
    try:
        get_family(family).simulate(reduced(family, cfg, 1))
    except Exception:  # noqa: BLE001 - the calibration below reports it
        pass
    total = 0.0
    for family, cfg in planned:
        est, _ = try_calibrate(family, cfg, enough_s=DEMO_ENOUGH_S)
        if est is None:
            return None
        total += est.seconds
    return total
