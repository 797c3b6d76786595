"""DuckDB views over a results folder (docs/store.md describes them with examples).

- ``runs``: one row per stored run: run_id, family, kind (simulation or theory), experiment (the
  experiments whose records list the run, comma-separated), sweep (the sweep spec that stored it),
  status, n_diverged, wall_s, version, schema, created, config (the nested config, JSON), file;
- ``runs_<family>``, one per family found in the stored runs: the columns of ``runs`` but
  ``config``, and one typed column per flattened config field under the family's own name (a
  family's field types come from its own runs only: integers, floats, booleans, text; a field
  mixing integers and floats is DOUBLE, any other mix VARCHAR);
- ``observables``: run_id, seed, time, samples, step, name, value (one row per recorded value);
- ``claims``: experiment, preset, key, claim, statement, value, ci_low, ci_high, n_seeds, target,
  passed, created, version;
- ``experiments``: one row per stored experiment run: key, experiment, preset, control (the
  negative control's name, or NULL), verdict (passed, failed, invalid, or a control's verdict),
  passed, n_claims, n_passed, wall_s, version, created, config (JSON), file;
  ``experiments_<experiment>`` as ``runs_<family>``;
- ``experiment_runs``: experiment, preset, key, run_id (which runs each experiment run used);
- ``failures``: run_id, kind, name (family or experiment), sweep, error, traceback, config (JSON),
  host, created, version: runs whose last attempt failed;
- ``config_views``: view, parent (runs or experiments), name (family or experiment): the typed
  views (see :func:`view_names` for how a name becomes a view name).

There is no rule across families on config field names: each family's fields live in its own
view. ``runs`` and ``experiments`` (and their typed views) are snapshots taken when the
connection opens (through the catalog, see :mod:`attndyn.store.catalog`); ``observables``,
``claims`` and ``failures`` read the files at query time.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import uuid
import weakref
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from attndyn.core.config import flatten
from attndyn.core.suggest import did_you_mean
from attndyn.errors import InputError, StoreError
from attndyn.store import catalog as catalog_mod
from attndyn.store.files import (  # the columns of the stored files: the file format
    CLAIM_COLUMNS,
    FAILURE_COLUMNS,
    META_KEY,
    OBS_TYPES,
    RESULT_FOLDERS,
    experiment_problem,
    failure_problem,
    folder_problem,
    results_dir,
)

RUN_COLUMNS = {
    "run_id": "VARCHAR",
    "family": "VARCHAR",
    "kind": "VARCHAR",
    "experiment": "VARCHAR",
    "sweep": "VARCHAR",
    "status": "VARCHAR",
    "n_diverged": "BIGINT",
    "wall_s": "DOUBLE",
    "version": "VARCHAR",
    "schema": "BIGINT",
    "created": "VARCHAR",
    "config": "JSON",
    "file": "VARCHAR",
}
EXPERIMENT_COLUMNS = {
    "key": "VARCHAR",
    "experiment": "VARCHAR",
    "preset": "VARCHAR",
    "control": "VARCHAR",
    "verdict": "VARCHAR",
    "passed": "BOOLEAN",
    "n_claims": "BIGINT",
    "n_passed": "BIGINT",
    "wall_s": "DOUBLE",
    "version": "VARCHAR",
    "created": "VARCHAR",
    "config": "JSON",
    "file": "VARCHAR",
}


TIMEOUT_S = 600.0  # default time limit of a query (seconds)
MEMORY_SHARE = 0.25  # default memory limit of a query: this share of the machine's memory
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}  # fmt: skip
MIN_MEMORY = 16 * 10**6


def machine_memory() -> int:
    """Physical memory of this machine in bytes (8 GB when it cannot be read)."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 8 * 10**9


def size_text(n: float) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


@dataclass(frozen=True)
class Limits:
    """What one query may take: ``time_s`` seconds of wall time (None: no limit; a timer
    interrupts it) and ``memory`` bytes (DuckDB's ``memory_limit``; its spill files may take
    four times as much disk; a result held in Python at most as much)."""

    time_s: float | None
    memory: int

    @classmethod
    def resolve(cls, timeout=None, memory=None) -> Limits:
        """The limits given, else ``$ATTNDYN_QUERY_TIMEOUT`` / ``$ATTNDYN_QUERY_MEMORY``, else the
        defaults (600 s; a quarter of this machine's memory). InputError naming the option (or
        the variable) for a value that is not a number of seconds >= 0 (0: no limit) or a size
        such as ``2GB``, ``512MB`` or ``25%``."""
        t_field, m_field = "timeout", "memory"
        if timeout is None and os.environ.get("ATTNDYN_QUERY_TIMEOUT"):
            timeout, t_field = os.environ["ATTNDYN_QUERY_TIMEOUT"], "ATTNDYN_QUERY_TIMEOUT"
        if memory is None and os.environ.get("ATTNDYN_QUERY_MEMORY"):
            memory, m_field = os.environ["ATTNDYN_QUERY_MEMORY"], "ATTNDYN_QUERY_MEMORY"
        try:
            seconds = TIMEOUT_S if timeout is None else float(timeout)
        except (TypeError, ValueError):
            seconds = float("nan")
        if not seconds >= 0 or seconds == float("inf"):
            raise InputError(
                f"invalid value for '{t_field}': must be a number of seconds >= 0 "
                f"(0: no limit; got {timeout!r})"
            )
        return cls(time_s=seconds or None, memory=_memory(memory, m_field))


def _memory(value, field: str) -> int:
    total = machine_memory()
    if value is None:
        return max(MIN_MEMORY, int(total * MEMORY_SHARE))
    text = str(value).strip().lower().replace(" ", "")
    match = re.fullmatch(r"(\d+(?:\.\d+)?)(%|[kmgt]i?b|b)?", text)
    n = None
    if match:
        number, unit = float(match.group(1)), match.group(2) or ""
        n = int(total * number / 100) if unit == "%" else int(number * _UNITS[unit])
    if n is None or n < MIN_MEMORY or n > total:
        raise InputError(
            f"invalid value for '{field}': must be a size from 16MB to this machine's "
            f"{size_text(total)}, e.g. 2GB, 512MB or 25% (got {value!r})"
        )
    return n


_LIMITS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def limits_of(con: duckdb.DuckDBPyConnection) -> Limits:
    """The limits ``con`` was opened with (:func:`connect`), else the defaults."""
    return _LIMITS.get(con) or Limits.resolve()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _empty(con: duckdb.DuckDBPyConnection, view: str, columns: dict[str, str]) -> None:
    cols = ", ".join(f"NULL::{t} AS {_quote(n)}" for n, t in columns.items())
    con.execute(f"CREATE VIEW {view} AS SELECT * FROM (SELECT {cols}) WHERE false")


def _readable(folder: Path, problem) -> list[Path]:
    """The ``*.parquet`` files of ``folder`` that pass ``problem`` (a check of
    :mod:`attndyn.store.files`); each other one gets a warning line on stderr and is left out,
    so one damaged file cannot break a view."""
    good = []
    for path in sorted(folder.glob("*.parquet")) if folder.is_dir() else ():
        try:
            why = problem(path)
        except FileNotFoundError:
            continue
        if why is not None:
            print(f"warning: skipping file {path}: {why}", file=sys.stderr)
            continue
        good.append(path)
    return good


def _glob_view(
    con: duckdb.DuckDBPyConnection, view: str, files: list[Path], columns: dict[str, str]
) -> None:
    """``view`` over the sound ``files`` (an empty typed view when there are none)."""
    if files:
        paths = "[" + ", ".join(_lit(str(p)) for p in files) + "]"
        source = f"read_parquet({paths}, union_by_name = true)"
        present = {r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {source}").fetchall()}
        cols = ", ".join(  # an optional column no file has (a claim's interval) reads NULL
            _quote(c) if c in present else f"NULL::{t} AS {_quote(c)}" for c, t in columns.items()
        )
        con.execute(f"CREATE VIEW {view} AS SELECT {cols} FROM {source}")
    else:
        _empty(con, view, columns)


def _observables_view(con: duckdb.DuckDBPyConnection, folder: Path, files: list[str]) -> None:
    """``observables`` over the catalogued run files ``files`` (names in ``folder``; a damaged
    or foreign file is not catalogued, so it never enters). ``run_id`` is read from the file
    name (which is the run id), so a filter on it prunes files instead of opening all of them."""
    if not files:
        _empty(con, "observables", OBS_TYPES)
        return
    paths = "[" + ", ".join(_lit(str(folder / f)) for f in sorted(files)) + "]"
    cols = ", ".join(c for c in OBS_TYPES if c != "run_id")
    con.execute(
        f"CREATE VIEW observables AS SELECT parse_filename(filename, true) AS run_id, {cols} "
        f"FROM read_parquet({paths}, filename = true)"
    )


def _experiment_records(files: list[Path]) -> list[tuple[str, dict]]:
    return [(str(p), json.loads(pq.read_schema(p).metadata[META_KEY])) for p in files]


def view_names(parent: str, names) -> dict[str, str]:
    """The typed view of each family (``parent`` runs) or experiment (``parent`` experiments):
    ``<parent>_<name>``, the name lower-cased and every run of characters outside ``a-z0-9_``
    replaced by ``_`` (``aim-untied`` -> ``experiments_aim_untied``). Names that this makes
    equal get ``_2``, ``_3``, … in sorted order of the original names."""
    out: dict[str, str] = {}
    used: set[str] = set()
    for name in sorted(names):
        base = f"{parent}_" + re.sub(r"[^a-z0-9_]+", "_", name.lower())
        view, n = base, 1
        while view in used:
            n += 1
            view = f"{base}_{n}"
        used.add(view)
        out[name] = view
    return out


def _config_view(
    con: duckdb.DuckDBPyConnection,
    view: str,
    parent: str,
    group: tuple[str, str],
    types: dict[str, str | None],
    key: str,
) -> None:
    """``view``: the rows of ``parent`` whose ``group`` column equals the group's name, with
    the columns of ``parent`` but ``config``, and one typed column per flattened config field
    of that group, under the field's own name.

    A config field shadows a column of ``parent`` with its name (ignoring case, as DuckDB
    does), except the identity column ``key``: a field so named stays in the JSON only. Each
    row's JSON is parsed once, when the connection opens (a temporary table)."""
    column, name = group
    fields = [f for f in types if f.lower() != key.lower()]
    taken = {f.lower() for f in fields}
    parent_cols = [r[0] for r in con.execute(f"DESCRIBE {parent}").fetchall()]
    shown = [c for c in parent_cols if c != "config" and (c == key or c.lower() not in taken)]
    # one struct for the fields; a second field equal to an earlier one but for case (which a
    # struct cannot hold) is read by JSON path
    struct: dict[str, str] = {}
    by_path: list[str] = []
    seen: set[str] = set()
    for field in fields:
        if field.lower() in seen:
            by_path.append(field)
        else:
            struct[field] = types[field] or "VARCHAR"
        seen.add(field.lower())
    table = f"_{view}"
    extract = [f"json_transform(config_flat, {_lit(json.dumps(struct))}) AS c"] if struct else []
    for i, field in enumerate(by_path):
        path = _lit("$." + json.dumps(field))  # a quoted JSON path segment, safe for dotted keys
        extract.append(f"TRY_CAST(config_flat ->> {path} AS {types[field] or 'VARCHAR'}) AS _p{i}")
    con.execute(
        f"CREATE TEMP TABLE {_quote(table)} AS SELECT {', '.join(['file AS _file', *extract])} "
        f"FROM _{parent}_source WHERE {column} = {_lit(name)}"
    )
    config = [f"t.c.{_quote(f)} AS {_quote(f)}" for f in struct]
    config += [f"t._p{i} AS {_quote(f)}" for i, f in enumerate(by_path)]
    cols = [f"p.{_quote(c)}" for c in shown if c != "file"] + config
    if "file" in shown:
        cols.append("p.file")
    con.execute(
        f"CREATE VIEW {view} AS SELECT {', '.join(cols)} FROM {parent} p "
        f"JOIN {_quote(table)} t ON t._file = p.file"
    )


def _config_views(
    con: duckdb.DuckDBPyConnection,
    parent: str,
    column: str,
    types: dict[str, dict[str, str | None]],
    key: str,
) -> list[tuple[str, str, str]]:
    """One typed view per group (family or experiment); rows (view, parent, name)."""
    rows = []
    for name, view in view_names(parent, types).items():
        _config_view(con, view, parent, (column, name), types[name], key)
        rows.append((view, parent, name))
    return rows


def _experiment_views(
    con: duckdb.DuckDBPyConnection, files: list[Path]
) -> list[tuple[str, str, str]]:
    records = _experiment_records(files)
    links: dict[str, list[str | None]] = {"experiment": [], "preset": [], "key": [], "run_id": []}
    rows: list[dict] = []
    types: dict[str, dict[str, str | None]] = {}
    for path, rec in records:
        key = rec.get("key") or Path(path).stem
        for rid in rec.get("run_ids", []):
            links["experiment"].append(rec.get("experiment"))
            links["preset"].append(rec.get("preset"))
            links["key"].append(key)
            links["run_id"].append(rid)
        claims = rec.get("claims", [])
        config = rec.get("config", {})
        flat = flatten(config)
        catalog_mod.merge_types(types.setdefault(rec.get("experiment") or "", {}), flat)
        rows.append(
            {
                "key": key,
                "experiment": rec.get("experiment") or "",
                "preset": rec.get("preset"),
                "control": rec.get("control"),
                "verdict": rec.get("verdict"),
                "passed": rec.get("verdict", "passed") == "passed"
                and bool(claims)
                and all(c.get("passed") for c in claims),
                "n_claims": len(claims),
                "n_passed": sum(bool(c.get("passed")) for c in claims),
                "wall_s": rec.get("wall_s"),
                "version": rec.get("version"),
                "created": rec.get("created"),
                "config": json.dumps(config, default=str),
                "config_flat": json.dumps(flat, default=str),
                "file": path,
            }
        )
    con.register("_experiment_links", pa.table(links, schema=_string_schema(links)))
    con.execute("CREATE VIEW experiment_runs AS SELECT * FROM _experiment_links")
    if not rows:
        _empty(con, "experiments", EXPERIMENT_COLUMNS)
        return []
    con.register("_experiments_source", pa.Table.from_pylist(rows))
    exprs = [f"CAST({_quote(n)} AS {t}) AS {_quote(n)}" for n, t in EXPERIMENT_COLUMNS.items()]
    con.execute(f"CREATE VIEW experiments AS SELECT {', '.join(exprs)} FROM _experiments_source")
    return _config_views(con, "experiments", "experiment", types, "key")


def _string_schema(columns: dict) -> pa.Schema:
    return pa.schema([(name, pa.string()) for name in columns])


def _runs_view(
    con: duckdb.DuckDBPyConnection, root: Path, cat: catalog_mod.Catalog
) -> list[tuple[str, str, str]]:
    if cat.table.num_rows == 0:
        _empty(con, "runs", RUN_COLUMNS)
        return []
    con.register("_catalog", cat.table)
    runs_dir = _lit(str(root / "runs") + "/")
    record = [c for c in RUN_COLUMNS if c not in ("experiment", "file")]
    structure = {c: RUN_COLUMNS[c] for c in record} | {"config_flat": "JSON"}
    # one JSON parse per run record, materialised once per connection
    con.execute(
        "CREATE TEMP TABLE _runs_source AS SELECT "
        + ", ".join(f"m.{_quote(c)} AS {_quote(c)}" for c in [*record, "config_flat"])
        + f", {runs_dir} || file AS file FROM (SELECT json_transform(meta, "
        f"{_lit(json.dumps(structure))}) AS m, file FROM _catalog)"
    )
    con.execute(
        "CREATE TEMP TABLE _run_experiments AS SELECT run_id, "
        "string_agg(DISTINCT experiment, ',' ORDER BY experiment) AS experiment "
        "FROM experiment_runs GROUP BY run_id"
    )
    cols = ["l.experiment" if c == "experiment" else f"r.{_quote(c)}" for c in RUN_COLUMNS]
    con.execute(
        f"CREATE VIEW runs AS SELECT {', '.join(cols)} FROM _runs_source r "
        "LEFT JOIN _run_experiments l ON l.run_id = r.run_id"
    )
    return _config_views(con, "runs", "family", cat.types, "run_id")


def connect(
    root: str | Path | None = None,
    save_catalog: bool = True,
    exclude=frozenset(),
    limits: Limits | None = None,
) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the views ``runs``, ``observables``, ``claims``,
    ``experiments``, ``experiment_runs``, ``failures``, ``config_views`` and one typed view per
    stored family and experiment over ``root`` (see the module doc); InputError (exit code 2)
    when ``root`` is not a folder. Damaged experiment and failure records are left out with
    one warning line each (:mod:`attndyn.store.check`), as damaged runs are by the catalog.

    Opening updates the run catalog (``catalog.parquet``) unless ``save_catalog`` is false;
    the run files named in ``exclude`` are left out. ``limits`` (default
    :meth:`Limits.resolve`) bound each query's memory (and, through
    :func:`attndyn.store.queries.stoppable`, its time)."""
    limits = limits or Limits.resolve()
    root = results_dir(root)
    if not root.is_dir():
        near = [p.name for p in root.parent.glob("*") if p.is_dir()] if root.parent.is_dir() else []
        raise InputError(
            f"no results folder {root}{did_you_mean(root.name, near)} (give --out, set "
            "ATTNDYN_RESULTS, or store runs first)"
        )
    for name in RESULT_FOLDERS:
        why = folder_problem(root / name)
        if why is not None:
            raise StoreError(f"cannot read the results: {root / name} is {why}")
    con = _configured(limits)
    experiments = _readable(root / "experiments", experiment_problem)
    _glob_view(con, "claims", experiments, CLAIM_COLUMNS)
    _glob_view(con, "failures", _readable(root / "failures", failure_problem), FAILURE_COLUMNS)
    typed = _experiment_views(con, experiments)
    cat = catalog_mod.load(root, save=save_catalog)
    if exclude:  # run files found damaged (attndyn.store.queries.answer)
        keep = [f not in exclude for f in cat.table.column("file").to_pylist()]
        cat = catalog_mod.Catalog(cat.table.filter(pa.array(keep, pa.bool_())), cat.types)
    _observables_view(con, root / "runs", cat.table.column("file").to_pylist())
    typed = _runs_view(con, root, cat) + typed
    listing: dict[str, list[str]] = {"view": [], "parent": [], "name": []}
    for view, parent, name in typed:
        listing["view"].append(view)
        listing["parent"].append(parent)
        listing["name"].append(name)
    con.register("_config_views", pa.table(listing, schema=_string_schema(listing)))
    con.execute("CREATE VIEW config_views AS SELECT * FROM _config_views")
    lock(con, root)
    return con


def _configured(limits: Limits) -> duckdb.DuckDBPyConnection:
    """A new in-memory connection within ``limits``, spilling into a private temporary folder
    (DuckDB lets a query read its temporary folder, by default ``./.tmp``) of an unguessable
    name, removed with the connection."""
    con = duckdb.connect()
    catalog_mod.no_progress_bar(con)
    # created by DuckDB only when a query spills, and removed when the connection closes
    spill = os.path.join(tempfile.gettempdir(), f"attndyn-duckdb-{uuid.uuid4().hex}")
    weakref.finalize(con, shutil.rmtree, spill, ignore_errors=True)
    con.execute(f"SET temp_directory = {_lit(spill)}")
    con.execute(f"SET memory_limit = '{limits.memory}B'")
    con.execute(f"SET max_temp_directory_size = '{4 * limits.memory}B'")
    _LIMITS[con] = limits
    return con


def lock(con: duckdb.DuckDBPyConnection, root: Path) -> None:
    """Confine ``con`` to reading ``root``: file access outside it is off (DuckDB's temporary
    folder, which it also lets queries read, is a private one, :func:`_configured`) and the
    configuration is locked, so no query can read other files, load extensions, raise its
    limits or turn access back on. Writing inside ``root`` is prevented by admitting only read
    statements (:func:`attndyn.store.queries.read_only`)."""
    con.execute(f"SET allowed_directories = [{_lit(str(Path(root).resolve()) + os.sep)}]")
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")
