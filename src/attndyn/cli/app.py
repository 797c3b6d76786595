"""The ``attndyn`` command line: a thin layer over the Python API.

Bad input prints one line naming the field and what is allowed, and exits with code 2 before
anything is written.
"""

from __future__ import annotations

import functools
import json
import math
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from attndyn.cli.ui.machine_output import native_stdout_to_stderr
from attndyn.core.serial import json_safe
from attndyn.core.suggest import did_you_mean
from attndyn.errors import AttndynError, InputError, one_line

try:  # recent typer vendors click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer runs on the click package
    from click import exceptions as click_errors

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="attndyn: simulate, predict and query the learning dynamics of attention.",
    context_settings={"help_option_names": ["-h", "--help"]},
)
console = Console()


def _print_version(value: bool) -> None:
    if value:
        from attndyn.version import __version__

        print(f"attndyn {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="print the version"),
    ] = False,
) -> None:
    pass


OutOpt = Annotated[
    str | None,
    typer.Option("--out", help="results folder (default $ATTNDYN_RESULTS or ./attndyn-results)"),
]
SetOpt = Annotated[
    list[str] | None, typer.Option("--set", help="config field, key=value (repeatable)")
]
SeedsOpt = Annotated[int | None, typer.Option(help="number of seeds (same as --set seeds=N)")]
YesOpt = Annotated[
    bool, typer.Option("--yes", help="run even if the estimate is above --max-hours")
]
MaxHoursOpt = Annotated[
    float,
    typer.Option("--max-hours", help="ask for --yes above this estimated time (hours)"),
]
ProgressOpt = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress", help="progress bar on stderr (on a terminal, without --json)"
    ),
]
DevicesOpt = Annotated[
    int | None,
    typer.Option(
        "--devices",
        help="shard the seeds over N devices (default $ATTNDYN_DEVICES, else 1 on CPU, all on "
        "a GPU); not part of the run id",
    ),
]


def _on_devices(n: int | None):
    """The ``--devices`` setting as a context (checked now: InputError, exit 2)."""
    from attndyn.api import on_devices

    return on_devices(n)


def _values(set_: list[str] | None, seeds: int | None = None) -> dict:
    """Config values from ``--set key=value`` options, with ``--seeds N`` folded in."""
    from attndyn.core.config import parse_assignments

    values = parse_assignments(set_)
    if seeds is not None:
        values["seeds"] = seeds
    return values


def _final_summary(traj, names) -> dict[str, dict[str, float]]:
    """Mean and std over the finite seeds (diverged seeds are NaN) at the final time of the
    observables ``names`` that the run has (the family's or its theory's ``SUMMARY``); its first
    10 observables if it has none. NaN when no seed is finite."""
    from attndyn.cli.overview import final_values

    shown = [n for n in names if n in traj] or list(traj.data_vars)[:10]
    return {
        name: {k: math.nan if stats[k] is None else stats[k] for k in ("mean", "std")}
        for name, stats in final_values(traj, shown).items()
    }


@app.command()
def simulate(
    family: Annotated[str, typer.Argument(help="model family, e.g. aim")],
    set_: SetOpt = None,
    seeds: SeedsOpt = None,
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute a stored run")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON summary")] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="print steps, FLOPs, memory and estimated time; run nothing"
        ),
    ] = False,
    yes: YesOpt = False,
    max_hours: MaxHoursOpt = 1.0,
    progress: ProgressOpt = True,
    devices: DevicesOpt = None,
) -> None:
    """Simulate one configuration, store it, and print its final observables."""
    from attndyn import runs
    from attndyn.core.progress_bars import on_terminal, shown
    from attndyn.models import get_family
    from attndyn.runs import estimate
    from attndyn.store import Store

    estimate.check_max_hours(max_hours)
    on_devices = _on_devices(devices)
    config = runs.family_config(family, _values(set_, seeds))
    store = Store(out)
    rid = runs.run_id(family, config)
    if dry_run or (not yes and (force or not store.exists(rid))):
        if not dry_run:
            store.check_writable()  # NotWritable (exit 2) before calibrating or computing
        below = None if dry_run else max_hours * 3600
        est, error = estimate.try_calibrate(family, config, below=below)
        if dry_run:
            stored = store.exists(rid)
            payload = est.as_json() if est else {"steps": config.total_steps, "error": error}
            if as_json:
                print(json.dumps(json_safe({"run_id": rid, "stored": stored, **payload})))
            else:
                print(f"{family} run {rid} ({'stored' if stored else 'not stored'})")
                print(estimate.summary_line(est) if est else f"no estimate: {error}")
            return
        if est is not None:
            estimate.confirm(est.seconds, max_hours, yes, f"{family} run {rid}")
    with shown(on_terminal(progress, as_json)), on_devices:
        traj, reused = runs.simulation(family, config, store, force)
    rid = traj.attrs["run_id"]
    summary = _final_summary(traj, get_family(family).SUMMARY)
    diverged = [int(s) for s in traj["seed"].values[traj["diverged"].values]]
    if as_json:
        payload = {
            "run_id": rid,
            "path": str(store.path(rid)),
            "reused": reused,
            "time": float(traj["time"].values[-1]),
            "samples": int(traj["samples"].values[-1]),
            "diverged_seeds": diverged,
            "final": summary,
        }
        print(json.dumps(json_safe(payload)))
        return
    table = Table(title=f"{family} run {rid} at t = {float(traj['time'][-1]):.4g}")
    table.add_column("observable")
    table.add_column("mean over finite seeds", justify="right")
    table.add_column("std", justify="right")
    for name, stats in summary.items():
        table.add_row(name, f"{stats['mean']:.5g}", f"{stats['std']:.3g}")
    console.print(table)
    if diverged:
        n_seeds = traj.sizes["seed"]
        console.print(
            f"[red]{len(diverged)} of {n_seeds} seeds diverged, dropped from the means: "
            f"{diverged}[/red]"
        )
    state = "reused stored run" if reused else "stored"
    print(f"{state}: {store.path(rid)}")


@app.command()
def predict(
    family: Annotated[str, typer.Argument(help="model family, e.g. aim")],
    set_: SetOpt = None,
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute a stored theory run")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON summary")] = False,
    progress: ProgressOpt = True,
) -> None:
    """Integrate the theory for one configuration and store it (kind 'theory')."""
    from attndyn import runs
    from attndyn.core.progress_bars import on_terminal, shown
    from attndyn.models import get_theory
    from attndyn.store import Store

    config = runs.theory_config(family, _values(set_))
    store = Store(out)
    with shown(on_terminal(progress, as_json)):
        traj, reused = runs.theory(family, config, store, force)
    rid = traj.attrs["run_id"]
    summary = _final_summary(traj, get_theory(family).SUMMARY)
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
        print(json.dumps(json_safe(payload)))
        return
    table = Table(title=f"{family} theory {rid} at t = {float(traj['time'][-1]):.4g}")
    table.add_column("observable")
    table.add_column("value", justify="right")
    for name, stats in summary.items():
        table.add_row(name, f"{stats['mean']:.5g}")
    console.print(table)
    for key, value in notes.items():
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"{key}: {'none found' if value is None else text}")
    print(f"{'reused stored run' if reused else 'stored'}: {store.path(rid)}")


@app.command("list")
def list_() -> None:
    """List the installed model families and the registered experiments."""
    from attndyn.claims import list_experiments
    from attndyn.models import family_names, get_family

    families = Table(title="model families (attndyn simulate NAME, attndyn predict NAME)")
    for col in ("name", "theory", "benchmarks", "description"):
        families.add_column(col)
    for name in family_names():
        family = get_family(name)
        first = " ".join((family.__doc__ or "").strip().split("\n\n")[0].split())
        families.add_row(
            name,
            "yes" if family.THEORY else "no",
            ", ".join(b.name for b in family.BENCHMARKS) or "—",
            first.split(". ")[0].rstrip("."),
        )
    console.print(families)
    table = Table(title="experiments (attndyn run NAME)")
    table.add_column("name")
    table.add_column("description")
    for name, description in list_experiments():
        table.add_row(name, description)
    console.print(table)


@app.command()
def run(
    name: Annotated[str, typer.Argument(help="experiment name (attndyn list)")],
    preset: Annotated[str, typer.Option(help="tiny, small or paper")] = "small",
    set_: SetOpt = None,
    seeds: SeedsOpt = None,
    seed: Annotated[
        int | None, typer.Option(help="seed offset: seeds seed…seed+seeds−1 (--set seed=K)")
    ] = None,
    control: Annotated[
        str | None,
        typer.Option(help="run a negative control (a wrong model) whose claims must fail"),
    ] = None,
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute stored runs")] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="exit 1 unless every claim passes and the run is valid (with --control: "
            "unless the control's claims fail)",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
    progress: ProgressOpt = True,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run", help="list the runs with steps, FLOPs, memory and time; run nothing"
        ),
    ] = False,
    yes: YesOpt = False,
    max_hours: MaxHoursOpt = 1.0,
    devices: DevicesOpt = None,
) -> None:
    """Run an experiment: store its runs, check its claims, save its figure."""
    from attndyn.claims.runner import run_experiment
    from attndyn.core.progress_bars import on_terminal, shown

    on_devices = _on_devices(devices)
    values = _values(set_, seeds)
    if seed is not None:
        values["seed"] = seed
    # a tiny preset as declared runs in seconds (the test suite runs them all): not checked
    if dry_run or not (yes or (preset == "tiny" and not values)):
        _experiment_plan(name, preset, values, out, force, control, dry_run, max_hours, as_json)
        if dry_run:
            return
    with shown(on_terminal(progress, as_json), count="runs"), on_devices:
        outcome = run_experiment(name, preset, values, out=out, force=force, control=control)
    if as_json:
        print(json.dumps(json_safe(outcome.as_json())))
    else:
        title = f"{name} ({preset}{', control ' + control if control else ''}): claims"
        table = Table(title=title)
        for col in ("claim", "statement", "value [CI]", "seeds", "target", "verdict"):
            table.add_column(col)
        for c in outcome.claims:
            verdict = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"
            value = _fmt(c.value)
            if c.ci_low is not None:
                value += f" [{_fmt(c.ci_low)}, {_fmt(c.ci_high)}]"
            seeds_ = "" if c.n_seeds is None else str(c.n_seeds)
            table.add_row(c.name, c.statement, value, seeds_, c.target, verdict)
        console.print(table)
        for c in outcome.preconditions:
            if not c.passed:
                print(f"precondition not met: {c.text}")
        print(f"verdict: {outcome.verdict}")
        print(f"figure: {outcome.figure}")
        print(
            f"runs:   {len(outcome.run_ids)} stored in {Path(outcome.figure).parents[1] / 'runs'}"
        )
    if strict and not outcome.strict_ok:
        raise typer.Exit(1)


def _experiment_plan(name, preset, values, out, force, control, dry_run, max_hours, as_json):
    """``run --dry-run``: the runs and their estimate; otherwise the --max-hours check."""
    from attndyn.claims.dryrun import COLUMNS, plan_experiment, plan_rows, summary_lines
    from attndyn.runs.estimate import check_max_hours, confirm
    from attndyn.store import Store

    check_max_hours(max_hours)
    if not dry_run:
        Store(out).check_writable()  # NotWritable (exit 2) before calibrating
    limit = None if dry_run else max_hours * 3600
    plan = plan_experiment(name, preset, values, out, force, control, below=limit, limit=limit)
    if not dry_run:
        runs = f"{len(plan.runs)} runs" + ("" if plan.complete else " found so far")
        return confirm(plan.seconds, max_hours, False, f"experiment {name} ({preset}, {runs})")
    if as_json:
        print(json.dumps(json_safe(plan.as_json())))
        return
    title = f"{name} ({preset}{', control ' + control if control else ''}): dry run"
    _print_fitted(COLUMNS, plan_rows(plan), title, "every field: --json")
    for line in summary_lines(plan):
        print(line)


@app.command()
def demo(
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute stored runs")] = False,
    progress: ProgressOpt = True,
    devices: DevicesOpt = None,
) -> None:
    """The showcase run: see attndyn.cli.demo (the README's first command)."""
    from attndyn.cli.demo import show_demo
    from attndyn.core.progress_bars import on_terminal, shown

    with shown(on_terminal(progress), count="runs"), _on_devices(devices):
        show_demo(console, out, force)


def _emit_machine_readable(frame, as_json: bool, as_csv: bool) -> bool:
    """Print ``frame`` as a JSON list of row objects or as CSV; False if neither was asked."""
    if as_json:
        print(json.dumps(json.loads(frame.to_json(orient="records", date_format="iso"))))
    elif as_csv:
        sys.stdout.write(frame.to_csv(index=False))
    return as_json or as_csv


@app.command()
def query(
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL over the views: runs, runs_FAMILY, observables, … (docs/store.md)"
        ),
    ],
    out: OutOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON list, one object per row")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV")] = False,
) -> None:
    """Run SQL over the DuckDB views of a results folder and print the result."""
    import duckdb

    from attndyn.api import results

    if as_json and as_csv:
        raise InputError("choose one of --json and --csv")
    res = results(out)
    try:
        frame = res.query(sql)
    except duckdb.Error as exc:  # not reached for damaged files: Results.query skips them
        raise InputError(f"invalid SQL: {str(exc).splitlines()[0]}") from None
    if _emit_machine_readable(frame, as_json, as_csv):
        return
    _print_fitted(list(map(str, frame.columns)), frame.values.tolist(), None, "--json or --csv")


@app.command()
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
    out: OutOpt = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="list the runs, run nothing")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the summary as JSON")] = False,
    progress: Annotated[
        bool, typer.Option("--progress/--no-progress", help="progress bar on stderr")
    ] = True,
    yes: YesOpt = False,
    max_hours: MaxHoursOpt = 1.0,
    devices: DevicesOpt = None,
) -> None:
    """Run a sweep: expand SPEC, skip stored runs, run the rest; exit 1 if any run failed."""
    from attndyn.core.progress_bars import on_terminal
    from attndyn.runs.estimate import check_max_hours
    from attndyn.sweep import run_sweep
    from attndyn.sweep.estimate import estimate_sweep, guard_sweep, summary_lines
    from attndyn.sweep.executors import default_workers

    if dry_run:
        check_max_hours(max_hours)
        est, plan = estimate_sweep(spec, out, workers=workers or default_workers())
        if as_json:
            print(json.dumps(json_safe(est.as_json())))
            return
        if plan is not None:
            keys = list(plan.spec.grid)
            table = Table(title=f"sweep {plan.spec.sweep}: {plan.spec.kind} {plan.spec.name}")
            for col in ("run_id", "task", "state", *keys):
                table.add_column(col)
            for row in est.rows:
                state = "stored" if row["stored"] else "to run"
                table.add_row(row["run_id"], str(row["task"]), state, *[str(row[k]) for k in keys])
            console.print(table)
        for line in summary_lines(est, plan.root if plan is not None else None):
            print(line)
        return
    if executor == "local":  # a Dask worker checks its own devices
        _on_devices(devices)
    kwargs = {"executor": executor, "workers": workers, "address": address}
    plan = guard_sweep(spec, out, max_hours=max_hours, yes=yes, **kwargs)
    try:
        shown_ = on_terminal(progress, as_json)
        summary = run_sweep(plan or spec, out, progress=shown_, devices=devices, **kwargs)
    except KeyboardInterrupt:
        print("interrupted: stored runs are kept; run the same command to finish", file=sys.stderr)
        raise typer.Exit(130) from None
    if as_json:
        print(json.dumps(json_safe(summary.as_json())))
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


FamilyOpt = Annotated[
    str | None,
    typer.Option(
        "--family", help="one family's runs, with its config fields as typed columns (runs_NAME)"
    ),
]
ExperimentOpt = Annotated[str | None, typer.Option(help="only the runs this experiment used")]
FIXED = ["run_id", "family", "experiment", "status", "n_diverged", "wall_s", "created"]
HIDDEN = {"kind", "sweep", "version", "schema", "file"}


@app.command()
def runs(
    family: FamilyOpt = None,
    experiment: ExperimentOpt = None,
    where: Annotated[
        str | None,
        typer.Option(
            help="SQL condition on the listed view, e.g. \"status = 'ok'\"; with --family on its "
            'config fields too, e.g. "d >= 32"'
        ),
    ] = None,
    out: OutOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON list, every column")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV, every column")] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="list every damaged or foreign file instead (one line each; --json: a list of "
            "{file, problem}); exit 0 when there is none, 1 when there are problems; moves "
            "nothing (docs/store.md)",
        ),
    ] = False,
) -> None:
    """List stored runs (the runs view, or with --family that family's view); the table shows
    the config fields that vary. --check lists the problems of the results folder instead."""
    from attndyn.store import queries

    if as_json and as_csv:
        raise InputError("choose one of --json and --csv")
    if check:
        from attndyn.store.check import report

        raise typer.Exit(report(out, as_json))
    frame = queries.answer(out, lambda con: queries.runs(con, family, experiment, where))
    if as_json and "config" in frame.columns:
        frame["config"] = frame["config"].map(json.loads)
    if _emit_machine_readable(frame, as_json, as_csv):
        return
    frame = queries.flat_config(frame)
    fixed = [c for c in FIXED if c in frame.columns]
    config_cols = [
        c
        for c in frame.columns
        if c not in fixed and c not in HIDDEN and frame[c].astype(str).nunique(dropna=False) > 1
    ]
    how = "every column: --json or --csv" + ("" if family else "; typed config: --family F")
    rows = frame[fixed + config_cols].values.tolist()
    _print_fitted(fixed + config_cols, rows, f"{len(frame)} runs", how)


def _print_fitted(columns: list[str], rows: list, title: str | None, how: str) -> None:
    """A table that fits the terminal (:mod:`attndyn.cli.ui.tables`), naming what it left out."""
    from attndyn.cli.ui.tables import dropped_note, fit

    table, dropped = fit(columns, rows, console.width, title)
    console.print(table)
    if dropped:
        console.print(dropped_note(dropped, how), markup=False, highlight=False)


@app.command()
def export(
    format_: Annotated[str, typer.Option("--format", help="csv or parquet")] = "csv",
    output: Annotated[
        Path | None, typer.Option(help="file to write (default ./attndyn-export.<format>)")
    ] = None,
    family: FamilyOpt = None,
    experiment: ExperimentOpt = None,
    where: Annotated[
        str | None,
        typer.Option(help="SQL condition on the joined columns, e.g. \"name = 'loss'\""),
    ] = None,
    out: OutOpt = None,
) -> None:
    """Write runs × observables (one row per recorded value, with its run's columns; with
    --family, its config fields as typed columns)."""
    from attndyn.store import queries

    output = Path(output or f"attndyn-export.{format_}")
    n = queries.answer(
        out, lambda con: queries.export(con, output, format_, family, experiment, where)
    )
    print(f"wrote {n} rows to {output}")


@app.command()
def report(
    out: OutOpt = None,
    output: Annotated[
        Path | None, typer.Option(help="folder of the site (default <results>/report)")
    ] = None,
    open_: Annotated[bool, typer.Option("--open", help="open the index in a web browser")] = False,
) -> None:
    """Write a static HTML report of the results folder (opens from disk, no server; see
    docs/report.md), e.g. attndyn report --out res --open."""
    from attndyn.report.site import write_report

    index = write_report(out, output)
    print(f"report: {index}")
    if open_:
        import webbrowser

        webbrowser.open(index.resolve().as_uri())


@app.command()
def bench(
    as_json: Annotated[bool, typer.Option("--json", help="print rows as JSON")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="fewer repetitions (smoke run)")] = False,
    torch_reference: Annotated[
        bool, typer.Option("--torch/--no-torch", help="time the PyTorch eager reference")
    ] = True,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            help="a benchmark that a family declares, or all (without --name: list them)",
        ),
    ] = None,
    progress: ProgressOpt = True,
) -> None:
    """Benchmarks (BENCHMARKS.md) that the families declare: each simulator against matmul peak
    or a reference implementation timed in the same run. Every JSON row carries its
    ``benchmark`` and ``family``."""
    from attndyn.core.progress_bars import counted, on_terminal
    from attndyn.models import benchmarks

    found = benchmarks()
    if name is None:
        table = Table(title="benchmarks (attndyn bench --name NAME)")
        for col in ("name", "family", "description"):
            table.add_column(col)
        for bench_name, (family, b) in sorted(found.items()):
            table.add_row(bench_name, family, b.description)
        console.print(table)
        return
    if name != "all" and name not in found:
        allowed = ", ".join([*sorted(found), "all"])
        hint = did_you_mean(name, [*found, "all"])
        raise InputError(f"invalid value for 'name': must be one of {allowed} (got {name!r}){hint}")
    chosen = sorted(found) if name == "all" else [name]
    rows: list[dict] = []
    for bench_name in counted(chosen, "benchmarks", on_terminal(progress, as_json)):
        family, b = found[bench_name]
        produced = b.run(quick=quick, torch_reference=torch_reference, log=not as_json)
        rows += [{**row, "benchmark": bench_name, "family": family} for row in produced]
        if not as_json:
            cols = list(b.columns) or [k for k in produced[0] if k not in ("benchmark", "family")]
            table = Table(title=f"benchmark: {bench_name}")
            for col in cols:
                table.add_column(col, justify="right")
            for row in produced:
                table.add_row(*[_fmt(row.get(c)) for c in cols])
            console.print(table)
    if as_json:
        print(json.dumps(json_safe(rows)))


@app.command()
def describe(
    name: Annotated[str, typer.Argument(help="a family or an experiment (attndyn list)")],
    as_json: Annotated[bool, typer.Option("--json", help="print it as JSON")] = False,
) -> None:
    """What a family or an experiment is, before running it: config fields (type, default,
    allowed values, meaning); an experiment's paper, presets, controls and claims."""
    from attndyn.cli.describe import describe as describe_
    from attndyn.cli.describe import render

    info = describe_(name)
    if as_json:
        print(json.dumps(json_safe(info)))
    else:
        render(info, console)


@app.command()
def show(
    run_id: Annotated[str, typer.Argument(help="a stored run's id, or any unique prefix")],
    out: OutOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print it as JSON")] = False,
) -> None:
    """One stored run: family, kind, status, config, seeds, diverged seeds, wall time, file and
    final observables (mean ± std over finite seeds)."""
    from attndyn.cli.overview import show as show_
    from attndyn.cli.ui.tables import show_run

    info = show_(out, run_id)
    if as_json:
        print(json.dumps(json_safe(info)))
    else:
        show_run(info, console)


@app.command()
def summary(
    out: OutOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="print it as JSON")] = False,
) -> None:
    """A results folder at a glance: runs by family, kind and experiment, experiment verdicts,
    diverged runs, failures and damaged files."""
    from attndyn.cli.overview import summary as summary_
    from attndyn.cli.ui.tables import show_summary

    info = summary_(out)
    if as_json:
        print(json.dumps(json_safe(info)))
    else:
        show_summary(info, console)


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _clean_stdout(callback):
    """``callback`` run with native output to stdout sent to stderr when it is asked for --json
    or --csv, so that stdout carries only what the command prints (:mod:`attndyn.cli.ui.machine_output`)."""

    @functools.wraps(callback)
    def wrapper(*args, **kwargs):
        if not (kwargs.get("as_json") or kwargs.get("as_csv")):
            return callback(*args, **kwargs)
        with native_stdout_to_stderr():
            return callback(*args, **kwargs)

    return wrapper


def _interruptible(callback):
    """``callback`` that answers Ctrl-C with one line on stderr and exit code 130 (stored runs
    are complete files: the store writes atomically)."""

    @functools.wraps(callback)
    def wrapper(*args, **kwargs):
        try:
            return callback(*args, **kwargs)
        except KeyboardInterrupt:
            from attndyn.core.progress_bars import interrupted_message

            lead = "\n" if sys.stderr.isatty() else ""  # past the terminal's ^C
            print(f"{lead}{interrupted_message()}", file=sys.stderr)
            raise typer.Exit(130) from None

    return wrapper


def main(args: list[str] | None = None) -> None:
    """Entry point (``args`` defaults to ``sys.argv[1:]``): every error prints one line on stderr
    and exits with its code: 2 for bad input and usage errors (unknown option, missing argument),
    1 for storage and executor errors; ``--help`` (or no arguments) prints help and exits 0."""
    from attndyn.cli.ui.examples import epilog
    from attndyn.models import family_names

    command = typer.main.get_command(app)
    for name, sub in getattr(command, "commands", {}).items():
        sub.callback = _interruptible(_clean_stdout(sub.callback))
        families = family_names() if name in ("simulate", "predict") else None
        sub.epilog = epilog(name, families) or None
        if sub.help and not sub.short_help:  # the command list: first paragraph, one line
            sub.short_help = " ".join(sub.help.split("\n\n")[0].split())
    try:
        code = command.main(args=args, prog_name="attndyn", standalone_mode=False)
    except AttndynError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except click_errors.ClickException as exc:
        if isinstance(exc, getattr(click_errors, "NoArgsIsHelpError", ())):
            sys.exit(0)  # the help is printed already
        hint = f" (see '{exc.ctx.command_path} --help')" if getattr(exc, "ctx", None) else ""
        print(f"error: {one_line(exc.format_message() + hint)}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except typer.Abort:
        print("error: aborted", file=sys.stderr)
        sys.exit(1)
    if code == 130 and args is None:  # interrupted, the one line said: skip the slow teardown
        _exit_now(130)  # of JAX and of a sweep's pool (1-3 s on a busy machine)
    sys.exit(code if isinstance(code, int) else 0)


def _exit_now(code: int) -> None:
    """Exit at once (no atexit handlers): everything stored is complete, nothing is pending."""
    import os

    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
