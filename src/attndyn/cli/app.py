"""The ``attndyn`` command line: a thin layer over the Python API. This module holds the typer
app and registers the commands (one module per command or group in :mod:`attndyn.cli.commands`;
their shared options in :mod:`attndyn.cli.options`, tables, prompts and machine-readable output
in :mod:`attndyn.cli.ui`).

Bad input prints one line naming the field and what is allowed, and exits with code 2 before
anything is written.
"""

from __future__ import annotations

import functools
import sys
from typing import Annotated

import typer

from attndyn.cli.commands import bench, demo, experiments, results, simulate, sweep
from attndyn.cli.ui.machine_output import native_stdout_to_stderr
from attndyn.errors import AttndynError, one_line

try:  # recent typer vendors click
    from typer._click import exceptions as click_errors
except ImportError:  # pragma: no cover - older typer runs on the click package
    from click import exceptions as click_errors  # type: ignore[no-redef]  # same names

app = typer.Typer(
    add_completion=False,
    pretty_exceptions_enable=False,
    no_args_is_help=True,
    help="attndyn: simulate, predict and query the learning dynamics of attention.",
    context_settings={"help_option_names": ["-h", "--help"]},
)


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


# registered in this order: the order of ``attndyn --help``
app.command()(simulate.simulate)
app.command()(simulate.predict)
app.command("list")(experiments.list_)
app.command()(experiments.run)
app.command()(demo.demo)
app.command()(results.query)
app.command()(sweep.sweep)
app.command()(results.runs)
app.command()(results.export)
app.command()(results.report)
app.command()(bench.bench)
app.command()(experiments.describe)
app.command()(experiments.cite)
app.command()(results.show)
app.command()(results.summary)


def _clean_stdout(callback):
    """``callback`` run with native output to stdout sent to stderr when it is asked for --json
    or --csv, so that stdout carries only what the command prints
    (:mod:`attndyn.cli.ui.machine_output`)."""

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
    1 for storage and executor errors; ``--help`` (or no arguments) prints help and exits 0.
    Ctrl-C at any point (the imports of JAX and the families included) prints one line and
    exits 130."""
    from attndyn.core import interrupt

    try:
        with interrupt.handling():  # a Ctrl-C lost in a gc callback is still seen
            _main(args)
    except KeyboardInterrupt:  # outside a command's own handling (_interruptible)
        from attndyn.core.progress_bars import interrupted_message

        lead = "\n" if sys.stderr.isatty() else ""
        print(f"{lead}{interrupted_message()}", file=sys.stderr)
        if args is None:
            _exit_now(130)
        sys.exit(130)


def _main(args: list[str] | None) -> None:
    from attndyn.cli.ui.examples import epilog
    from attndyn.core import registry  # the names only: attndyn.models would load xarray

    command = typer.main.get_command(app)
    for name, sub in getattr(command, "commands", {}).items():
        sub.callback = _interruptible(_clean_stdout(sub.callback))
        families = registry.names(registry.FAMILIES) if name in ("simulate", "predict") else None
        sub.epilog = epilog(name, families) or None
        if sub.help and not sub.short_help:  # the command list: first paragraph, one line
            sub.short_help = " ".join(sub.help.split("\n\n")[0].split())
    try:
        code = command.main(args=args, prog_name="attndyn", standalone_mode=False)
    except AttndynError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except OSError as exc:  # the environment: a folder that cannot be read or written (exit 1)
        where = f": {exc.filename}" if exc.filename else ""
        print(f"error: {one_line(exc.strerror or str(exc))}{where}", file=sys.stderr)
        sys.exit(1)
    except click_errors.ClickException as exc:
        if isinstance(exc, getattr(click_errors, "NoArgsIsHelpError", ())):
            sys.exit(0)  # the help is printed already
        ctx = getattr(exc, "ctx", None)  # a UsageError's command context
        hint = f" (see '{ctx.command_path} --help')" if ctx else ""
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
