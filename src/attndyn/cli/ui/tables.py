"""Tables that fit the terminal: run ids and claim names in full, long text wrapped, the columns
that do not fit dropped (and named), and one mark (—) for every missing value."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from attndyn.cli.ui import terminal

MISSING = "—"
KEYS = ("run_id", "key", "claim")
"""Columns never wrapped, cut or dropped: ids are copied into other commands, and a claim name
cut or folded reads as another claim."""
WIDEST = 24
"""The width a column asks for before it wraps."""


def cell(value: Any) -> str:
    """A value as a table shows it: ``—`` when missing (None, NaN, empty), floats to 4
    significant digits."""
    try:
        missing = value is None or value == "" or bool(pd.isna(value))
    except (TypeError, ValueError):  # a list or an array: a value
        missing = False
    if missing:
        return MISSING
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def fit(
    columns: list[str],
    rows: list[list[Any]],
    width: int,
    title: str | None = None,
    keep: tuple[str, ...] = (),
) -> tuple[Table, list[str]]:
    """A table of ``rows`` within ``width`` characters and the columns it dropped. Ids
    (``KEYS``) are never wrapped or dropped, the columns named in ``keep`` never dropped; the
    others are kept in order (the first ones matter most) while their widths fit in what is
    left. Cells other than ids wrap at word boundaries or fold; a :class:`rich.text.Text` cell
    keeps its style."""
    texts = [[v if isinstance(v, Text) else cell(v) for v in row] for row in rows]

    def need(i: int, name: str) -> int:
        longest = max([len(r[i]) for r in texts] + [len(name)])
        if name in KEYS:
            return longest
        return max(min(longest, WIDEST), min(len(name), WIDEST // 2), 1)

    fixed = [i for i, name in enumerate(columns) if name in KEYS or name in keep]
    shown = set(fixed)
    used = 1 + sum(need(i, columns[i]) + 3 for i in fixed)  # left border; padding and border
    for i, name in enumerate(columns):
        extra = need(i, name) + 3
        if i not in shown and used + extra <= width:
            shown.add(i)
            used += extra
    dropped = [c for i, c in enumerate(columns) if i not in shown]
    order = sorted(shown)
    table = Table(title=title)
    for i in order:
        name = columns[i]
        if name in KEYS:
            table.add_column(name, no_wrap=True, min_width=need(i, name))
        else:
            table.add_column(escape(name), overflow="fold")
    for row in texts:
        table.add_row(*[_shown(row[i]) for i in order])
    return table, dropped


def _shown(text: str | Text) -> str | Text:
    return text if isinstance(text, Text) else escape(text)


def print_fitted(
    columns: list[str], rows: list, title: str | None, how: str, keep: tuple[str, ...] = ()
) -> None:
    """A table that fits the terminal (:func:`fit`), naming what it left out and ``how`` to see
    it."""
    console = terminal.console
    table, dropped = fit(columns, rows, console.width, title, keep)
    console.print(table)
    if dropped:
        console.print(dropped_note(dropped, how), markup=False, highlight=False)


def dropped_note(dropped: list[str], how: str) -> str:
    """One line naming the columns left out for the width and how to see them."""
    what = "1 column" if len(dropped) == 1 else f"{len(dropped)} columns"
    return f"not shown ({what}, too wide for the terminal): {', '.join(dropped)}; {how}"


def show_run(info: dict[str, Any], console) -> None:
    """Print :func:`attndyn.cli.ui.overview.show`."""

    def say(text: str) -> None:
        console.print(escape(text), highlight=False, soft_wrap=False)

    say(f"run {info['run_id']}: {info['family']} {info['kind']}, status {cell(info['status'])}")
    say(f"file: {info['file']}")
    wall = info["wall_s"]
    say(f"created {cell(info['created'])}, attndyn {cell(info['version'])}, wall time "
        f"{MISSING if wall is None else f'{wall:.3g} s'}")  # fmt: skip
    seeds = info["seeds"]
    if seeds:
        say(
            f"seeds: {len(seeds)} ({seeds[0]}…{seeds[-1]})" if len(seeds) > 8 else f"seeds: {seeds}"
        )
        bad = info["diverged"]
        text = ", ".join(f"seed {d['seed']} at step {d['step']}" for d in bad) or "none"
        say(f"diverged: {text}")
    config = Table(title="config")
    config.add_column("field", no_wrap=True)
    config.add_column("value", overflow="fold")
    for key, value in (info["config"] or {}).items():
        config.add_row(escape(key), escape(cell(value)))
    console.print(config)
    finals = Table(title=f"final observables at t = {info['time']:.4g} (over finite seeds)")
    for col in ("observable", "mean", "std", "finite seeds"):
        finals.add_column(col, justify="left" if col == "observable" else "right")
    for name, stats in info["final"].items():
        finals.add_row(escape(name), cell(stats["mean"]), cell(stats["std"]),
                       str(stats["finite_seeds"]))  # fmt: skip
    console.print(finals)


def show_summary(info: dict[str, Any], console) -> None:
    """Print :func:`attndyn.cli.ui.overview.summary`."""
    width = console.width
    console.print(escape(f"{info['folder']}: {info['runs']} runs"), highlight=False)
    sections = (
        ("runs by family and kind", "by_family"),
        ("runs by experiment", "by_experiment"),
        ("experiment runs and verdicts", "experiments"),
        ("runs with diverged seeds", "diverged"),
        ('failures (attndyn query "SELECT * FROM failures")', "failures"),
        ("damaged or foreign files (attndyn runs --check)", "damaged"),
    )
    for title, key in sections:
        rows = info[key]
        if not rows:
            console.print(escape(f"{title}: none"), highlight=False)
            continue
        columns = list(rows[0])
        table, dropped = fit(columns, [[r[c] for c in columns] for r in rows], width, title)
        console.print(table)
        if dropped:
            console.print(escape(dropped_note(dropped, "attndyn summary --json")), highlight=False)
