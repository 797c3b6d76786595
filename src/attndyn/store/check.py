"""``attndyn runs --check``: every problem of a results folder, one per file.

The checks are those the readers apply (docs/store.md, "Damaged files"): a run file is checked by
:meth:`attndyn.store.files.Store.problem` (readable, its footer a run record naming its file, its
data matching the record's checksum); an experiment record must read, name its own key and match
its checksum; a failure record must read and name its own run. Any other file in ``runs/``,
``experiments/`` or ``failures/`` is foreign. Hidden files (temporaries of writers) and the
folders ``locks/``, ``quarantine/``, ``figures/`` and ``report/`` (the HTML report) are not
results and are not checked. Checking moves nothing: quarantine happens when ``simulate``,
``run`` or ``sweep`` need the run.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from attndyn.errors import InputError
from attndyn.store.files import (
    CLAIM_COLUMNS,
    CLAIM_OPTIONAL,
    FAILURE_COLUMNS,
    META_KEY,
    Store,
    columns_problem,
    folder_problem,
    not_plain,
    results_dir,
    seal_problem,
    special,
    unreadable,
    unsealed,
)


@dataclass(frozen=True)
class Problem:
    """A file (path relative to the results folder) and what is wrong with it."""

    file: str
    problem: str


def experiment_problem(path: Path) -> str | None:
    """Why the experiment record ``path`` is damaged or foreign, or None when it is sound: it
    must read, hold the claims' columns, carry a footer record naming its own key with the
    fields the views read (:func:`record_problem`), and both seals matching."""
    why = not_plain(path)  # a FIFO is never opened
    if why is not None:
        return why
    try:
        table = pq.read_table(path)
    except Exception as exc:
        return unreadable(exc)
    text = (table.schema.metadata or {}).get(META_KEY)
    try:
        record = json.loads(text) if text is not None else None
    except ValueError:
        return "its experiment record is not valid JSON"
    if not isinstance(record, dict):
        return "no experiment record in its footer"
    if record.get("key") != path.stem:
        return f"its record names experiment run {record.get('key')!r}, not its file name"
    why = columns_problem(table.schema, CLAIM_COLUMNS, "an experiment record", CLAIM_OPTIONAL)
    return why or record_problem(record) or unsealed(record) or seal_problem(record, table)


def record_problem(record: dict) -> str | None:
    """Why an experiment ``record`` lacks what the views read (experiment and preset names, a
    list of claims, a list of run ids, a config), or None."""
    what = "not an experiment record"
    if not isinstance(record.get("experiment"), str) or not isinstance(record.get("preset"), str):
        return f"{what} (no experiment or preset name)"
    claims = record.get("claims")
    if not isinstance(claims, list) or not all(isinstance(c, dict) for c in claims):
        return f"{what} (its claims are not a list of claims)"
    ids = record.get("run_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        return f"{what} (its run_ids are not a list of run ids)"
    if not isinstance(record.get("config", {}), dict):
        return f"{what} (its config is not an object)"
    return None


def failure_problem(path: Path) -> str | None:
    """Why the failure record ``path`` is damaged or foreign, or None when it is sound: one row
    with every column of the ``failures`` view, naming its own run, sealed (since 2026-12-07:
    an older, unsealed failure record is foreign; the next run of it replaces or clears it)."""
    why = not_plain(path)  # a FIFO is never opened
    if why is not None:
        return why
    try:
        table = pq.read_table(path)
    except Exception as exc:
        return unreadable(exc)
    why = columns_problem(table.schema, FAILURE_COLUMNS, "a failure record")
    if why is not None:
        return why
    if table.num_rows != 1:
        return f"not a failure record ({table.num_rows} rows, not one)"
    if table.column("run_id")[0].as_py() != path.stem:
        return "its record names another run than its file name"
    try:
        seal = json.loads((table.schema.metadata or {}).get(META_KEY) or "{}")
    except ValueError:
        seal = None
    if not isinstance(seal, dict) or seal.get("run_id", path.stem) != path.stem:
        return "its footer is not the seal of a failure record"
    return unsealed(seal) or seal_problem(seal, table)


def _entries(folder: Path):
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if not p.name.startswith("."))


def problems(root: Path) -> list[Problem]:
    """Every problem of the results folder ``root``, in file order."""
    store = Store(root)
    out: list[Problem] = []

    def add(path: Path, why: str | None) -> None:
        if why is not None:
            out.append(Problem(str(path.relative_to(store.root)), why))

    checks = {
        store.runs: lambda p: store.problem(p.stem),
        store.experiments: experiment_problem,
        store.failures: failure_problem,
    }
    for folder, check in checks.items():
        why = folder_problem(folder)
        if why is not None:  # its entries (elsewhere, for a link) are not looked at
            add(folder, why)
            continue
        for path in _entries(folder):
            try:
                why = special(os.lstat(path).st_mode)
            except FileNotFoundError:  # removed since the listing
                continue
            if why is not None:  # a link, a FIFO, a device: never opened
                add(path, why)
                continue
            if path.is_dir() or path.suffix != ".parquet":
                add(path, "foreign file (not a .parquet file of this folder)")
                continue
            with contextlib.suppress(FileNotFoundError):  # removed since the listing
                add(path, check(path))
    return out


def report(out, as_json: bool = False) -> int:
    """Print the problems of the results folder ``out`` (one line each, or a JSON list of
    ``{file, problem}``) and a summary line on stderr; returns the exit code: 0 when there is
    none, 1 otherwise. InputError when ``out`` is not a folder."""
    root = results_dir(out)
    if not root.is_dir():
        raise InputError(f"no results folder {root} (give --out or set ATTNDYN_RESULTS)")
    found = problems(root)
    from attndyn.errors import one_line  # a hostile file name cannot break the one-line format

    if as_json:
        print(json.dumps([{"file": p.file, "problem": p.problem} for p in found]))
    else:
        for p in found:
            print(one_line(f"{p.file}: {p.problem}"))
    what = f"{len(found)} damaged or foreign files" if found else "no problems"
    print(f"{root}: {what}", file=sys.stderr)
    return 1 if found else 0
