"""``attndyn simulate`` and ``attndyn predict``: one configuration of a family, simulated or
integrated by its theory, stored, and its final observables printed."""

import math
from typing import Annotated

import typer
from rich.table import Table

from attndyn.cli import options as opt
from attndyn.cli.ui import terminal
from attndyn.cli.ui.machine_output import print_json


def final_summary(traj, names) -> dict[str, dict[str, float]]:
    """Mean and std over the finite seeds (diverged seeds are NaN) at the final time of the
    observables ``names`` that the run has (the family's or its theory's ``SUMMARY``); its first
    10 observables if it has none. NaN when no seed is finite."""
    from attndyn.cli.ui.overview import final_values

    shown = [n for n in names if n in traj] or list(traj.data_vars)[:10]
    return {
        name: {k: math.nan if (v := stats[k]) is None else v for k in ("mean", "std")}
        for name, stats in final_values(traj, shown).items()
    }


def simulate(
    family: Annotated[str, typer.Argument(help="model family, e.g. aim")],
    set_: opt.Set = None,
    seeds: opt.Seeds = None,
    out: opt.Out = None,
    force: Annotated[bool, opt.force_flag("recompute a stored run")] = False,
    as_json: Annotated[bool, opt.json_flag("print a JSON summary")] = False,
    dry_run: Annotated[
        bool, opt.dry_run_flag("print steps, FLOPs, memory and estimated time; run nothing")
    ] = False,
    yes: opt.Yes = False,
    max_hours: opt.MaxHours = 1.0,
    progress: opt.Progress = True,
    devices: opt.Devices = None,
) -> None:
    """Simulate one configuration, store it, and print its final observables."""
    from attndyn import runs
    from attndyn.cli.ui.prompts import allow
    from attndyn.core.progress_bars import on_terminal, shown
    from attndyn.models import get_family
    from attndyn.runs import estimate, memory
    from attndyn.store import Store

    estimate.check_max_hours(max_hours)
    on_devices = opt.on_devices(devices)
    config = runs.family_config(family, opt.config_values(set_, seeds))
    store = Store(out)
    rid = runs.run_id(family, config)
    if dry_run:
        _dry_run(family, config, rid, store, as_json)
        return
    if force or not store.exists(rid):
        memory.check(family, config)  # TooLarge (exit 2) before anything is allocated
    if not yes and (force or not store.exists(rid)):
        store.check_writable()  # NotWritable (exit 2) before calibrating or computing
        floor = estimate.floor_seconds(family, config)  # no run can beat it: seconds to know
        if floor > max_hours * 3600:
            what = f"{family} run {rid} (at least: its FLOPs over the measured matmul peak)"
            allow(lambda: estimate.check_time(floor, max_hours, what))
        else:
            est, _ = estimate.try_calibrate(family, config, below=max_hours * 3600)
            if est is not None:
                what = f"{family} run {rid}"
                allow(lambda: estimate.check_time(est.seconds, max_hours, what, est))
    with shown(on_terminal(progress, as_json)), on_devices:
        traj, reused = runs.simulation(family, config, store, force)
    rid = traj.attrs["run_id"]
    summary = final_summary(traj, get_family(family).SUMMARY)
    diverged = [int(s) for s in traj["seed"].values[traj["diverged"].values]]
    if as_json:
        print_json(
            {
                "run_id": rid,
                "path": str(store.path(rid)),
                "reused": reused,
                "time": float(traj["time"].values[-1]),
                "samples": int(traj["samples"].values[-1]),
                "diverged_seeds": diverged,
                "final": summary,
            }
        )
        return
    table = Table(title=f"{family} run {rid} at t = {float(traj['time'][-1]):.4g}")
    table.add_column("observable")
    table.add_column("mean over finite seeds", justify="right")
    table.add_column("std", justify="right")
    for name, stats in summary.items():
        table.add_row(name, f"{stats['mean']:.5g}", f"{stats['std']:.3g}")
    terminal.console.print(table)
    if diverged:
        n_seeds = traj.sizes["seed"]
        terminal.console.print(
            f"[red]{len(diverged)} of {n_seeds} seeds diverged, dropped from the means: "
            f"{diverged}[/red]"
        )
    state = "reused stored run" if reused else "stored"
    print(f"{state}: {store.path(rid)}")


def _dry_run(family, config, rid, store, as_json) -> None:
    """``simulate --dry-run``: the memory formula, the time floor, and a calibrated time where
    the run fits in memory (a config that does not fit is not calibrated: its short runs would not
    fit either) and its first short run takes seconds by its floor."""
    from attndyn.runs import estimate, memory

    stored = store.exists(rid)
    needs = memory.estimate(family, config)  # a formula: nothing is allocated
    floor = estimate.floor_seconds(family, config)
    first = estimate.calibration_floor(family, config)
    if memory.fits(needs) and first <= estimate.DRY_RUN_CALIBRATION_S:
        est, error = estimate.try_calibrate(family, config)
    elif memory.fits(needs):
        est, error = (
            None,
            "not calibrated: its first short run alone would take at least "
            f"{estimate.duration(first)}"
            f"; the run at least {estimate.duration(floor)} (its FLOPs over the measured matmul "
            "peak)",
        )
    else:
        available, source = memory.available_bytes()
        est, error = (
            None,
            (
                f"not calibrated: needs an estimated {estimate.size(needs.total)} of memory, above "
                f"the {estimate.size(available)} {source}"
            ),
        )
    payload = est.as_json() if est else {"steps": config.total_steps, "error": error}
    if as_json:
        print_json(
            {
                "run_id": rid,
                "stored": stored,
                **payload,
                "floor_seconds": floor,
                "peak": needs.as_json(),
            }
        )
        return
    print(f"{family} run {rid} ({'stored' if stored else 'not stored'})")
    print(estimate.summary_line(est) if est else f"no time estimate: {error}")
    if needs.known:
        terms = "; ".join(f"{name} {estimate.size(b)}" for name, b in needs.largest(3))
        print(f"peak memory: about {estimate.size(needs.total)} ({terms})")


def predict(
    family: Annotated[str, typer.Argument(help="model family, e.g. aim")],
    set_: opt.Set = None,
    out: opt.Out = None,
    force: Annotated[bool, opt.force_flag("recompute a stored theory run")] = False,
    as_json: Annotated[bool, opt.json_flag("print a JSON summary")] = False,
    progress: opt.Progress = True,
) -> None:
    """Integrate the theory for one configuration and store it (kind 'theory')."""
    from attndyn import runs
    from attndyn.core.progress_bars import on_terminal, shown
    from attndyn.models import get_theory
    from attndyn.store import Store

    config = runs.theory_config(family, opt.config_values(set_))
    store = Store(out)
    with shown(on_terminal(progress, as_json)):
        traj, reused = runs.theory(family, config, store, force)
    rid = traj.attrs["run_id"]
    summary = final_summary(traj, get_theory(family).SUMMARY)
    # what the theory says about itself (e.g. the method it chose and why, a truncation's
    # radius estimate, why and when it stopped)
    notes = {k: v for k, v in traj.attrs.items() if k not in ("family", "config", "run_id")}
    if as_json:
        payload = {
            "run_id": rid,
            "path": str(store.path(rid)),
            "reused": reused,
            "time": float(traj["time"].values[-1]),
            "final": summary,
        }
        if notes:
            payload["theory"] = notes
        print_json(payload)
        return
    table = Table(title=f"{family} theory {rid} at t = {float(traj['time'][-1]):.4g}")
    table.add_column("observable")
    table.add_column("value", justify="right")
    for name, stats in summary.items():
        table.add_row(name, f"{stats['mean']:.5g}")
    terminal.console.print(table)
    for key, value in notes.items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"{key}: {'none found' if value is None else text}")
    print(f"{'reused stored run' if reused else 'stored'}: {store.path(rid)}")
