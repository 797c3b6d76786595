"""The one question the command line asks: run something estimated above ``--max-hours``?

Library code never asks: it raises :class:`attndyn.runs.estimate.TooLong` carrying the
estimate, and the command passes that to :func:`allow`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from attndyn.runs.estimate import TooLong, duration

T = TypeVar("T")


def ask(too_long: TooLong) -> None:
    """Go on if the user answers yes on a terminal; else re-raise ``too_long`` (exit 2)."""
    if sys.stdin.isatty() and sys.stderr.isatty():
        what = f"{too_long.what} is estimated at {duration(too_long.seconds)}. Run it? [y/N] "
        print(what, end="", file=sys.stderr)
        if input().strip().lower() in ("y", "yes"):
            return
    raise too_long


def allow(check: Callable[[], T]) -> T | None:
    """``check()``, or None when it raised :class:`TooLong` and the user said yes (:func:`ask`)."""
    try:
        return check()
    except TooLong as exc:
        ask(exc)
        return None
