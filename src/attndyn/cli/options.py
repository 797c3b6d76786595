"""The options that several commands share, declared once as ``Annotated`` aliases (and, where
the help text names what the command prints or recomputes, a function that returns the
``typer.Option`` to annotate with: ``Annotated[bool, json_flag("...")]``).

No ``from __future__ import annotations`` here or in :mod:`attndyn.cli.commands`: typer reads
the aliases as objects when a command is defined.
"""

from typing import Annotated

import typer

Out = Annotated[
    str | None,
    typer.Option("--out", help="results folder (default $ATTNDYN_RESULTS or ./attndyn-results)"),
]
Set = Annotated[
    list[str] | None, typer.Option("--set", help="config field, key=value (repeatable)")
]
Seeds = Annotated[int | None, typer.Option(help="number of seeds (same as --set seeds=N)")]
Seed = Annotated[
    int | None, typer.Option(help="seed offset: seeds seed…seed+seeds−1 (--set seed=K)")
]
Yes = Annotated[bool, typer.Option("--yes", help="run even if the estimate is above --max-hours")]
MaxHours = Annotated[
    float, typer.Option("--max-hours", help="ask for --yes above this estimated time (hours)")
]
Progress = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress", help="progress bar on stderr (on a terminal, without --json)"
    ),
]
Devices = Annotated[
    int | None,
    typer.Option(
        "--devices",
        help="shard the seeds over N devices (default $ATTNDYN_DEVICES, else 1 on CPU, all on "
        "a GPU); not part of the run id",
    ),
]
Family = Annotated[
    str | None,
    typer.Option(
        "--family", help="one family's runs, with its config fields as typed columns (runs_NAME)"
    ),
]
Experiment = Annotated[str | None, typer.Option(help="only the runs this experiment used")]
Csv = Annotated[bool, typer.Option("--csv", help="CSV, every column")]
Timeout = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="stop the query after SECONDS (default $ATTNDYN_QUERY_TIMEOUT, else 600; 0: none)",
    ),
]
Memory = Annotated[
    str | None,
    typer.Option(
        "--memory",
        help="memory the query may use, e.g. 2GB or 25% (default $ATTNDYN_QUERY_MEMORY, else "
        "25% of this machine's)",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="print it as JSON")]


def json_flag(help: str):
    """``--json``, with ``help`` saying what it prints."""
    return typer.Option("--json", help=help)


def force_flag(help: str):
    """``--force``, with ``help`` saying what it recomputes."""
    return typer.Option("--force", help=help)


def dry_run_flag(help: str):
    """``--dry-run``, with ``help`` saying what it lists."""
    return typer.Option("--dry-run", help=help)


def config_values(
    set_: list[str] | None, seeds: int | None = None, seed: int | None = None
) -> dict:
    """Config values from ``--set key=value`` options, with ``--seeds N`` and ``--seed K``
    folded in."""
    from attndyn.core.config import parse_assignments

    values = parse_assignments(set_)
    if seeds is not None:
        values["seeds"] = seeds
    if seed is not None:
        values["seed"] = seed
    return values


def on_devices(n: int | None):
    """The ``--devices`` setting as a context (checked now: InputError, exit 2)."""
    from attndyn.api import on_devices as context

    return context(n)
