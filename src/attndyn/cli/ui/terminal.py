"""The terminal the commands print to, and how a value shows in a claims or benchmark table."""

from __future__ import annotations

from typing import Any

from rich.console import Console

console = Console()
"""Every command's tables go here (tests swap it for a console of a set width)."""


def fmt(value: Any) -> str:
    """``—`` for None, floats to 3 significant digits."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.3g}"
    return str(value)
