"""The ``attndyn`` command line: a thin layer over the Python API.

Bad input prints one line naming the field and what is allowed, and exits with code 2 before
anything is written.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Annotated

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from attndyn.errors import InputError
from attndyn.store import StoreError

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="attndyn: simulate, predict and query the learning dynamics of attention.",
)
console = Console()

OutOpt = Annotated[
    str | None,
    typer.Option("--out", help="results folder (default $ATTNDYN_RESULTS or ./attndyn-results)"),
]
SUMMARY = ("loss", "t_1", "q_11", "q_12", "p_12", "pplus_12", "pminus_12", "m_1", "tA_1", "tB_1")


def _final_summary(traj) -> dict[str, dict[str, float]]:
    out = {}
    for name in SUMMARY:
        if name in traj:
            final = np.asarray(traj[name].isel(time=-1).values, dtype=float)
            out[name] = {"mean": float(np.mean(final)), "std": float(np.std(final))}
    return out


def _json_safe(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


@app.command()
def simulate(
    family: Annotated[str, typer.Argument(help="model family, e.g. aim")],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="config field, key=value (repeatable)")
    ] = None,
    seeds: Annotated[
        int | None, typer.Option(help="number of seeds (same as --set seeds=N)")
    ] = None,
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute a stored run")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON summary")] = False,
) -> None:
    """Simulate one configuration, store it, and print its final observables."""
    from attndyn.api import make_config, run_config
    from attndyn.core.config import parse_assignments
    from attndyn.store import Store

    values = parse_assignments(set_)
    if seeds is not None:
        values["seeds"] = seeds
    config = make_config(family, values)
    store = Store(out)
    traj, reused = run_config(family, config, store, force)
    rid = traj.attrs["run_id"]
    summary = _final_summary(traj)
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
        print(json.dumps(_json_safe(payload)))
        return
    table = Table(title=f"{family} run {rid} at t = {float(traj['time'][-1]):.4g}")
    table.add_column("observable")
    table.add_column("mean over seeds", justify="right")
    table.add_column("std", justify="right")
    for name, stats in summary.items():
        table.add_row(name, f"{stats['mean']:.5g}", f"{stats['std']:.3g}")
    console.print(table)
    if diverged:
        console.print(f"[red]diverged seeds (frozen): {diverged}[/red]")
    state = "reused stored run" if reused else "stored"
    print(f"{state}: {store.path(rid)}")


@app.command()
def predict(
    family: Annotated[str, typer.Argument(help="model family, e.g. aim")],
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="config field, key=value (repeatable)")
    ] = None,
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute a stored theory run")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print a JSON summary")] = False,
) -> None:
    """Integrate the theory for one configuration and store it (kind 'theory')."""
    from attndyn.api import make_theory_config, run_theory_config
    from attndyn.core.config import parse_assignments
    from attndyn.store import Store

    config = make_theory_config(family, parse_assignments(set_))
    store = Store(out)
    traj, reused = run_theory_config(family, config, store, force)
    rid = traj.attrs["run_id"]
    summary = _final_summary(traj)
    if as_json:
        payload = {
            "run_id": rid,
            "path": str(store.path(rid)),
            "reused": reused,
            "time": float(traj["time"].values[-1]),
            "final": summary,
        }
        print(json.dumps(_json_safe(payload)))
        return
    table = Table(title=f"{family} theory {rid} at t = {float(traj['time'][-1]):.4g}")
    table.add_column("observable")
    table.add_column("value", justify="right")
    for name, stats in summary.items():
        table.add_row(name, f"{stats['mean']:.5g}")
    console.print(table)
    print(f"{'reused stored run' if reused else 'stored'}: {store.path(rid)}")


@app.command("list")
def list_() -> None:
    """List the registered experiments."""
    from attndyn.experiments import list_experiments

    table = Table(title="experiments (attndyn run NAME)")
    table.add_column("name")
    table.add_column("description")
    for name, description in list_experiments():
        table.add_row(name, description)
    console.print(table)


@app.command()
def run(
    name: Annotated[str, typer.Argument(help="experiment name (attndyn list)")],
    preset: Annotated[str, typer.Option(help="small or paper")] = "small",
    set_: Annotated[
        list[str] | None, typer.Option("--set", help="config field, key=value (repeatable)")
    ] = None,
    seeds: Annotated[
        int | None, typer.Option(help="number of seeds (same as --set seeds=N)")
    ] = None,
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute stored runs")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="exit 1 if any claim fails")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
) -> None:
    """Run an experiment: store its runs, check its claims, save its figure."""
    from attndyn.core.config import parse_assignments
    from attndyn.experiments.runner import run_experiment

    overrides = parse_assignments(set_)
    if seeds is not None:
        overrides["seeds"] = seeds
    outcome = run_experiment(name, preset, overrides, out=out, force=force)
    if as_json:
        print(json.dumps(_json_safe(outcome.as_json())))
    else:
        table = Table(title=f"{name} ({preset}): claims")
        for col in ("claim", "statement", "value", "target", "verdict"):
            table.add_column(col)
        for c in outcome.claims:
            verdict = "[green]pass[/green]" if c.passed else "[red]FAIL[/red]"
            table.add_row(c.name, c.statement, _fmt(c.value), c.target, verdict)
        console.print(table)
        print(f"figure: {outcome.figure}")
        print(
            f"runs:   {len(outcome.run_ids)} stored in {Path(outcome.figure).parents[1] / 'runs'}"
        )
    if strict and not outcome.passed:
        raise typer.Exit(1)


@app.command()
def demo(
    out: OutOpt = None,
    force: Annotated[bool, typer.Option("--force", help="recompute stored runs")] = False,
) -> None:
    """Tied vs direct AIM with the h2 activation: tied recovers, direct S is trapped."""
    from attndyn.demo import run_demo

    console.print("attndyn demo: AIM, h2 activation, L = 1; tied S = WWᵀ vs direct S (P1 Fig. 2)")
    result = run_demo(out, force)
    table = Table(title="final structural overlap p₁₂ = q₁₂ − t₁t₂ (same sample budget)")
    for col in ("parameterisation", "samples", "p_12 mean", "|p_12| max over seeds", "test loss"):
        table.add_column(col, justify="right")
    for label, traj in (("tied", result.tied), ("direct", result.direct)):
        p = traj["p_12"].isel(time=-1).values
        table.add_row(
            label,
            f"{int(traj['samples'][-1]):,}",
            f"{np.mean(p):.4f}",
            f"{np.max(np.abs(p)):.4f}",
            f"{float(traj['loss'].isel(time=-1).mean()):.4f}",
        )
    console.print(table)
    # plain print: paths must not be wrapped at the terminal width
    print(f"runs stored in: {result.root / 'runs'}")
    print(f"figure:         {result.figure}")
    print(f'query them:     attndyn query --out {result.root} "SELECT * FROM runs"')


@app.command()
def query(
    sql: Annotated[str, typer.Argument(help="SQL over the views runs and observables")],
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
    except duckdb.Error as exc:
        raise InputError(f"invalid SQL: {str(exc).splitlines()[0]}") from None
    if as_json:
        rows = json.loads(frame.to_json(orient="records", date_format="iso"))
        print(json.dumps(rows))
    elif as_csv:
        sys.stdout.write(frame.to_csv(index=False))
    else:
        table = Table()
        for col in frame.columns:
            table.add_column(str(col))
        for row in frame.itertuples(index=False):
            table.add_row(*[str(v) for v in row])
        console.print(table)


@app.command()
def bench(
    as_json: Annotated[bool, typer.Option("--json", help="print rows as JSON")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="fewer repetitions (smoke run)")] = False,
    torch_reference: Annotated[
        bool, typer.Option("--torch/--no-torch", help="time the PyTorch eager reference")
    ] = True,
) -> None:
    """Benchmark tied AIM online SGD against matmul peak and a PyTorch eager loop."""
    from attndyn.bench.aim import run_benchmark

    rows = run_benchmark(quick=quick, torch_reference=torch_reference, log=not as_json)
    if as_json:
        print(json.dumps(_json_safe(rows)))
        return
    table = Table(title="tied AIM online SGD, softmax output, L = 2, 8 seeds")
    cols = [
        "d",
        "batch",
        "samples_per_s",
        "gflops",
        "fraction_of_matmul_peak",
        "speedup_vs_torch_eager",
    ]
    for col in cols:
        table.add_column(col, justify="right")
    for row in rows:
        table.add_row(*[_fmt(row.get(c)) for c in cols])
    console.print(table)
    console.print(
        f"matmul peak: {rows[0]['matmul_peak_gflops']:.1f} GFLOP/s ({rows[0]['peak_source']})"
    )


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def main() -> None:
    """Entry point: exit 2 with one line on bad input, 1 on storage errors."""
    try:
        app()  # usage errors (unknown option, missing argument) exit 2 from typer itself
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
