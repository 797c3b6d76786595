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

from attndyn.errors import InputError
from attndyn.store.files import (
    Store,
    experiment_problem,
    failure_problem,
    folder_problem,
    results_dir,
    special,
)


@dataclass(frozen=True)
class Problem:
    """A file (path relative to the results folder) and what is wrong with it."""

    file: str
    problem: str


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
