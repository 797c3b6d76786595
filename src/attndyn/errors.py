"""Errors that the CLI turns into one line on stderr and an exit code.

Every error meant for the user derives from :class:`AttndynError` and carries its exit code, so
``attndyn.cli.main`` maps all of them the same way.
"""


class AttndynError(Exception):
    """An error the user should read as one line; ``exit_code`` is the CLI's exit status."""

    exit_code = 1


class InputError(AttndynError, ValueError):
    """Bad user input: an unknown key, a wrong type, a value out of range (exit code 2).

    The message is one line that names the field and what is allowed.
    """

    exit_code = 2


class StoreError(AttndynError, OSError):
    """The results folder cannot be written or read (exit code 1); the message is one line."""


class ExecutorError(AttndynError, RuntimeError):
    """A sweep executor cannot run tasks at all, e.g. no scheduler at the address (exit 1)."""


def one_line(text: str) -> str:
    """``text`` with control characters (newlines, ANSI escapes, …) written as escapes, so an
    error is always one line and never drives the terminal."""
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )
