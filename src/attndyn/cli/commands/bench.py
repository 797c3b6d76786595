"""``attndyn bench``: the benchmarks that the families declare (BENCHMARKS.md)."""

from typing import Annotated

import typer
from rich.table import Table

from attndyn.cli import options as opt
from attndyn.cli.ui import terminal
from attndyn.cli.ui.machine_output import print_json
from attndyn.core.suggest import did_you_mean
from attndyn.errors import InputError


def bench(
    as_json: Annotated[bool, opt.json_flag("print rows as JSON")] = False,
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
    progress: opt.Progress = True,
) -> None:
    """Benchmarks (BENCHMARKS.md) that the families declare: each simulator against matmul peak
    or a reference implementation timed in the same run. Every JSON row carries its
    ``benchmark`` and ``family``."""
    from attndyn.core.progress_bars import counted, on_terminal
    from attndyn.models import benchmarks

    found = benchmarks()
    if name is None:
        listed = [
            {"name": bench_name, "family": family, "description": b.description}
            for bench_name, (family, b) in sorted(found.items())
        ]
        if as_json:
            print_json(listed)
            return
        table = Table(title="benchmarks (attndyn bench --name NAME)")
        for col in ("name", "family", "description"):
            table.add_column(col)
        for row in listed:
            table.add_row(row["name"], row["family"], row["description"])
        terminal.console.print(table)
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
                table.add_row(*[terminal.fmt(row.get(c)) for c in cols])
            terminal.console.print(table)
    if as_json:
        print_json(rows)
