"""``attndyn list``, ``attndyn run``, ``attndyn describe`` and ``attndyn cite``: the families and
experiments installed, an experiment's run with its claims checked, what a family or experiment
is, and how to cite attndyn and the paper an experiment reproduces."""

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from attndyn.cli import options as opt
from attndyn.cli.ui import terminal
from attndyn.cli.ui.machine_output import print_json


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
    terminal.console.print(families)
    table = Table(title="experiments (attndyn run NAME)")
    table.add_column("name")
    table.add_column("description")
    for name, description in list_experiments():
        table.add_row(name, description)
    terminal.console.print(table)


def run(
    name: Annotated[str, typer.Argument(help="experiment name (attndyn list)")],
    preset: Annotated[str, typer.Option(help="tiny, small or paper")] = "small",
    set_: opt.Set = None,
    seeds: opt.Seeds = None,
    seed: opt.Seed = None,
    control: Annotated[
        str | None,
        typer.Option(help="run a negative control (a wrong model) whose claims must fail"),
    ] = None,
    out: opt.Out = None,
    force: Annotated[bool, opt.force_flag("recompute stored runs")] = False,
    strict: Annotated[
        bool,
        typer.Option(
            "--strict",
            help="exit 1 unless every claim passes and the run is valid (with --control: "
            "unless the control's claims fail)",
        ),
    ] = False,
    as_json: Annotated[bool, opt.json_flag("print the outcome as JSON")] = False,
    progress: opt.Progress = True,
    dry_run: Annotated[
        bool, opt.dry_run_flag("list the runs with steps, FLOPs, memory and time; run nothing")
    ] = False,
    yes: opt.Yes = False,
    max_hours: opt.MaxHours = 1.0,
    devices: opt.Devices = None,
) -> None:
    """Run an experiment: store its runs, check its claims, save its figure."""
    from attndyn.claims.runner import SHORT_PRESETS, run_experiment
    from attndyn.core.progress_bars import on_terminal, shown

    on_devices = opt.on_devices(devices)
    values = opt.config_values(set_, seeds, seed)
    # a tiny or small preset as declared (a seed offset aside) is short: never refused
    declared_short = preset in SHORT_PRESETS and set(values) <= {"seed"}
    if dry_run or not (yes or declared_short):
        _plan(name, preset, values, out, force, control, dry_run, max_hours, as_json)
        if dry_run:
            return
    with shown(on_terminal(progress, as_json), count="runs"), on_devices:
        outcome = run_experiment(name, preset, values, out=out, force=force, control=control)
    if as_json:
        print_json(outcome.as_json())
    else:
        from rich.text import Text

        from attndyn.claims.pages import EXACT
        from attndyn.cli.ui.tables import print_fitted

        title = f"{name} ({preset}{', control ' + control if control else ''}): claims"
        rows = []
        for c in outcome.claims:
            verdict = Text("pass", "green") if c.passed else Text("FAIL", "red")
            value = terminal.fmt(c.value)
            if c.ci_low is not None and c.ci_low == c.value == c.ci_high:
                value += f" ({EXACT})"
            elif c.ci_low is not None:
                value += f" [{terminal.fmt(c.ci_low)}, {terminal.fmt(c.ci_high)}]"
            seeds_ = "" if c.n_seeds is None else str(c.n_seeds)
            rows.append([c.name, c.statement, value, seeds_, c.target, verdict])
        # a narrow terminal drops the statement and the seeds, never a value or a verdict
        columns = ["claim", "statement", "value [CI]", "seeds", "target", "verdict"]
        how = f"attndyn run {name} --json, or attndyn describe {name}"
        print_fitted(columns, rows, title, how, keep=("value [CI]", "target", "verdict"))
        for check in outcome.preconditions:
            if not check.passed:
                print(f"precondition not met: {check.text}")
        print(f"verdict: {outcome.verdict}")
        print(f"figure: {outcome.figure}")
        print(
            f"runs:   {len(outcome.run_ids)} stored in {Path(outcome.figure).parents[1] / 'runs'}"
        )
    if strict and not outcome.strict_ok:
        raise typer.Exit(1)


def _plan(name, preset, values, out, force, control, dry_run, max_hours, as_json):
    """``run --dry-run``: the runs and their estimate; otherwise the --max-hours check."""
    from attndyn.claims.dryrun import COLUMNS, plan_experiment, plan_rows, summary_lines
    from attndyn.cli.ui.prompts import allow
    from attndyn.runs.estimate import check_max_hours, check_time
    from attndyn.store import Store

    check_max_hours(max_hours)
    if not dry_run:
        Store(out).check_writable()  # NotWritable (exit 2) before calibrating
    limit = None if dry_run else max_hours * 3600
    plan = plan_experiment(name, preset, values, out, force, control, below=limit, limit=limit)
    if not dry_run:
        runs = f"{len(plan.runs)} runs" + ("" if plan.complete else " found so far")
        what = f"experiment {name} ({preset}, {runs})"
        allow(lambda: check_time(plan.seconds, max_hours, what, plan))
        return
    if as_json:
        print_json(plan.as_json())
        return
    title = f"{name} ({preset}{', control ' + control if control else ''}): dry run"
    from attndyn.cli.ui.tables import print_fitted

    print_fitted(COLUMNS, plan_rows(plan), title, "every field: --json")
    for line in summary_lines(plan):
        print(line)


def describe(
    name: Annotated[str, typer.Argument(help="a family or an experiment (attndyn list)")],
    as_json: opt.Json = False,
) -> None:
    """What a family or an experiment is, before running it: config fields (type, default,
    allowed values, meaning); an experiment's paper, presets, controls and claims."""
    from attndyn.cli.ui.describe import describe as describe_
    from attndyn.cli.ui.describe import render

    info = describe_(name)
    if as_json:
        print_json(info)
    else:
        render(info, terminal.console)


def cite(
    experiment: Annotated[
        str | None,
        typer.Argument(help="an experiment (attndyn list): add the papers it reproduces"),
    ] = None,
) -> None:
    """BibTeX for attndyn and JAX, and with EXPERIMENT for the papers it reproduces (the arXiv
    ids of its "paper:" line in attndyn describe, from attndyn's references, docs/references.md).
    """
    from attndyn.claims.papers import cite as cite_

    print(cite_(experiment), end="")
