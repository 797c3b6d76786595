"""The commands that read a results folder: ``runs``, ``query``, ``export``, ``show``,
``summary`` and ``report`` (docs/store.md, docs/report.md)."""

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from attndyn.cli import options as opt
from attndyn.cli.ui import terminal
from attndyn.cli.ui.machine_output import print_frame, print_json
from attndyn.errors import InputError

FRONT = ["run_id", "family", "kind"]  # then the config fields that vary, then BACK
BACK = ["experiment", "status", "n_diverged", "wall_s", "created"]
HIDDEN = {"sweep", "version", "schema", "file"}
KEEP = ("status", "n_diverged")  # shown on any terminal: a diverged run must not pass unseen


TABLE_ROWS = 1000  # rows a table shows: rendering 10⁶ rows took minutes and a gigabyte


def query(
    sql: Annotated[
        str,
        typer.Argument(
            help="SQL over the views: runs, runs_FAMILY, observables, … (docs/store.md)"
        ),
    ],
    out: opt.Out = None,
    as_json: Annotated[bool, opt.json_flag("JSON list, one object per row")] = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV")] = False,
    timeout: opt.Timeout = None,
    memory: opt.Memory = None,
) -> None:
    """Run SQL over the DuckDB views of a results folder and print the result."""
    import duckdb

    from attndyn.api import results
    from attndyn.cli.ui.tables import print_fitted

    if as_json and as_csv:
        raise InputError("choose one of --json and --csv")
    res = results(out, timeout=timeout, memory=memory)
    try:
        frame = res.query(sql)
    except duckdb.Error as exc:  # not reached for damaged files: Results.query skips them
        raise InputError(f"invalid SQL: {str(exc).splitlines()[0]}") from None
    if print_frame(frame, as_json, as_csv):
        return
    shown = frame.head(TABLE_ROWS)
    print_fitted(list(map(str, shown.columns)), shown.values.tolist(), None, "--json or --csv")
    if len(frame) > TABLE_ROWS:
        print(
            f"showing the first {TABLE_ROWS:,} of {len(frame):,} rows; --csv or --json for all",
            file=sys.stderr,
        )


def runs(
    family: opt.Family = None,
    experiment: opt.Experiment = None,
    where: Annotated[
        str | None,
        typer.Option(
            help="SQL condition on the listed view, e.g. \"status = 'ok'\"; with --family on its "
            'config fields too, e.g. "d >= 32"'
        ),
    ] = None,
    out: opt.Out = None,
    as_json: Annotated[bool, opt.json_flag("JSON list, every column")] = False,
    as_csv: opt.Csv = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="list every damaged or foreign file instead (one line each; --json: a list of "
            "{file, problem}); exit 0 when there is none, 1 when there are problems; moves "
            "nothing (docs/store.md)",
        ),
    ] = False,
    timeout: opt.Timeout = None,
    memory: opt.Memory = None,
) -> None:
    """List stored runs (the runs view, or with --family that family's view); the table shows
    the config fields that vary. --check lists the problems of the results folder instead."""
    from attndyn.cli.ui.tables import print_fitted
    from attndyn.store import queries
    from attndyn.store.views import Limits

    if as_json and as_csv:
        raise InputError("choose one of --json and --csv")
    limits = Limits.resolve(timeout, memory)
    if check:
        from attndyn.store.check import report

        raise typer.Exit(report(out, as_json))
    frame = queries.answer(out, lambda con: queries.runs(con, family, experiment, where), limits)
    if as_json and "config" in frame.columns:
        frame["config"] = frame["config"].map(json.loads)
    if print_frame(frame, as_json, as_csv):
        return
    frame = queries.flat_config(frame)
    front = [c for c in FRONT if c in frame.columns]
    back = [c for c in BACK if c in frame.columns]
    varying = [
        c
        for c in frame.columns
        if c not in front + back
        and c not in HIDDEN
        and frame[c].astype(str).nunique(dropna=False) > 1
    ]
    columns = front + varying + back  # a narrow terminal drops from the right, but KEEP
    how = "every column: --json or --csv" + ("" if family else "; typed config: --family F")
    print_fitted(columns, frame[columns].values.tolist(), f"{len(frame)} runs", how, KEEP)


def export(
    format_: Annotated[str, typer.Option("--format", help="csv or parquet")] = "csv",
    output: Annotated[
        Path | None, typer.Option(help="file to write (default ./attndyn-export.<format>)")
    ] = None,
    family: opt.Family = None,
    experiment: opt.Experiment = None,
    where: Annotated[
        str | None,
        typer.Option(help="SQL condition on the joined columns, e.g. \"name = 'loss'\""),
    ] = None,
    out: opt.Out = None,
    timeout: opt.Timeout = None,
    memory: opt.Memory = None,
) -> None:
    """Write runs × observables (one row per recorded value, with its run's columns; with
    --family, its config fields as typed columns)."""
    from attndyn.store import queries
    from attndyn.store.files import outside_results, results_dir
    from attndyn.store.views import Limits

    output = Path(output or f"attndyn-export.{format_}")
    outside_results(results_dir(out), output)  # never over a stored run: exit 2, nothing read
    limits = Limits.resolve(timeout, memory)
    n = queries.answer(
        out, lambda con: queries.export(con, output, format_, family, experiment, where), limits
    )
    print(f"wrote {n} rows to {output}")


def report(
    out: opt.Out = None,
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


def show(
    run_id: Annotated[str, typer.Argument(help="a stored run's id, or any unique prefix")],
    out: opt.Out = None,
    as_json: opt.Json = False,
) -> None:
    """One stored run: family, kind, status, config, seeds, diverged seeds, wall time, file and
    final observables (mean ± std over finite seeds)."""
    from attndyn.cli.ui.overview import show as show_
    from attndyn.cli.ui.tables import show_run

    info = show_(out, run_id)
    if as_json:
        print_json(info)
    else:
        show_run(info, terminal.console)


def summary(
    out: opt.Out = None,
    as_json: opt.Json = False,
) -> None:
    """A results folder at a glance: runs by family, kind and experiment, experiment verdicts,
    diverged runs, failures and damaged files."""
    from attndyn.cli.ui.overview import summary as summary_
    from attndyn.cli.ui.tables import show_summary

    info = summary_(out)
    if as_json:
        print_json(info)
    else:
        show_summary(info, terminal.console)
