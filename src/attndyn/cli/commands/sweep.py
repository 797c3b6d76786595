"""``attndyn sweep SPEC``: expand a sweep spec, skip stored runs, run the rest (docs/sweeps.md)."""

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from attndyn.cli import options as opt
from attndyn.cli.ui import terminal
from attndyn.cli.ui.machine_output import print_json


def sweep(
    spec: Annotated[Path, typer.Argument(help="sweep spec (TOML), see docs/sweeps.md")],
    executor: Annotated[str, typer.Option(help="local (process pool) or dask")] = "local",
    workers: Annotated[
        int | None,
        typer.Option(help="local processes / local Dask workers (default: the core count)"),
    ] = None,
    address: Annotated[
        str | None,
        typer.Option(help="Dask scheduler, e.g. tcp://HOST:8786 (default: a local cluster)"),
    ] = None,
    out: opt.Out = None,
    dry_run: Annotated[bool, opt.dry_run_flag("list the runs, run nothing")] = False,
    as_json: Annotated[bool, opt.json_flag("print the summary as JSON")] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="progress bar on stderr")
    ] = True,
    yes: opt.Yes = False,
    max_hours: opt.MaxHours = 1.0,
    devices: opt.Devices = None,
) -> None:
    """Run a sweep: expand SPEC, skip stored runs, run the rest; exit 1 if any run failed."""
    from attndyn.cli.ui.prompts import allow
    from attndyn.core.progress_bars import on_terminal
    from attndyn.runs.estimate import check_max_hours
    from attndyn.sweep import run_sweep
    from attndyn.sweep.estimate import estimate_sweep, guard_sweep, summary_lines
    from attndyn.sweep.executors import default_workers

    if dry_run:
        check_max_hours(max_hours)
        est, plan = estimate_sweep(
            spec, out, workers=default_workers() if workers is None else workers
        )
        if as_json:
            print_json(est.as_json())
            return
        if plan is not None:
            keys = list(plan.spec.grid)
            table = Table(title=f"sweep {plan.spec.sweep}: {plan.spec.kind} {plan.spec.name}")
            for col in ("run_id", "task", "state", *keys):
                table.add_column(col)
            for row in est.rows:
                state = "stored" if row["stored"] else "to run"
                table.add_row(row["run_id"], str(row["task"]), state, *[str(row[k]) for k in keys])
            terminal.console.print(table)
        for line in summary_lines(est, plan.root if plan is not None else None):
            print(line)
        return
    if executor == "local":  # a Dask worker checks its own devices
        opt.on_devices(devices)
    plan = allow(
        lambda: guard_sweep(
            spec,
            out,
            executor=executor,
            workers=workers,
            address=address,
            max_hours=max_hours,
            yes=yes,
        )
    )
    try:
        shown_ = on_terminal(progress, as_json)
        summary = run_sweep(
            plan or spec,
            out,
            executor=executor,
            workers=workers,
            address=address,
            progress=shown_,
            devices=devices,
        )
    except KeyboardInterrupt:
        print("interrupted: stored runs are kept; run the same command to finish", file=sys.stderr)
        raise typer.Exit(130) from None
    if as_json:
        print_json(summary.as_json())
    else:
        where = f"{summary.executor}, {summary.workers or 'remote'} workers"
        print(
            f"sweep {summary.sweep}: {summary.total} runs: {summary.done} ran, "
            f"{summary.skipped} skipped (stored), {summary.failed} failed; "
            f"{summary.tasks} tasks in {summary.wall_s:.1f} s ({where}); "
            f"{summary.diverged_runs} runs with diverged seeds ({summary.diverged_seeds} seeds)"
        )
        for failure in summary.failures[:10]:
            print(f"failed {failure['run_id']}: {failure['error']}", file=sys.stderr)
        if summary.failed:
            print(
                f"failures are recorded: attndyn query --out {summary.root} "
                '"SELECT * FROM failures"',
                file=sys.stderr,
            )
    if not summary.ok:
        raise typer.Exit(1)
