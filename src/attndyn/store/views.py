"""DuckDB views over a results folder.

- ``runs``: one row per stored run: run_id, family, kind (simulation or theory), experiment (the
  experiments whose records list the run, comma-separated), sweep (the sweep spec that stored it),
  status, n_diverged, wall_s, version, schema, created, then one column per flattened config field
  (typed from the stored values: integers, floats, booleans, text; a field whose values mix
  integers and floats is DOUBLE, any other mix VARCHAR), then file;
- ``observables``: run_id, seed, time, samples, step, name, value (one row per recorded value);
- ``claims``: experiment, preset, key, claim, statement, value, target, passed, created, version;
- ``experiments``: one row per stored experiment run: key, experiment, preset, passed, n_claims,
  n_passed, wall_s, version, created, its config fields, file;
- ``experiment_runs``: experiment, preset, key, run_id (which runs each experiment run used);
- ``failures``: run_id, kind, name (family or experiment), sweep, error, traceback, config (JSON),
  host, created, version: runs whose last attempt failed.

``runs`` and ``experiments`` are snapshots taken when the connection opens (through the catalog,
see :mod:`attndyn.store.catalog`); ``observables``, ``claims`` and ``failures`` read the files at
query time.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from attndyn.core.config import flatten
from attndyn.store import catalog as catalog_mod
from attndyn.store.files import META_KEY, results_dir

RUN_FIELDS = {
    "run_id": "VARCHAR",
    "family": "VARCHAR",
    "kind": "VARCHAR",
    "status": "VARCHAR",
    "n_diverged": "BIGINT",
    "wall_s": "DOUBLE",
    "version": "VARCHAR",
    "schema": "BIGINT",
    "created": "VARCHAR",
}
OBS_COLUMNS = "run_id, seed, time, samples, step, name, value"
OBS_TYPES = {
    "run_id": "VARCHAR",
    "seed": "BIGINT",
    "time": "DOUBLE",
    "samples": "BIGINT",
    "step": "BIGINT",
    "name": "VARCHAR",
    "value": "DOUBLE",
}
CLAIM_COLUMNS = {
    "experiment": "VARCHAR",
    "preset": "VARCHAR",
    "key": "VARCHAR",
    "claim": "VARCHAR",
    "statement": "VARCHAR",
    "value": "DOUBLE",
    "target": "VARCHAR",
    "passed": "BOOLEAN",
    "created": "VARCHAR",
    "version": "VARCHAR",
}
FAILURE_COLUMNS = {
    "run_id": "VARCHAR",
    "kind": "VARCHAR",
    "name": "VARCHAR",
    "sweep": "VARCHAR",
    "error": "VARCHAR",
    "traceback": "VARCHAR",
    "config": "VARCHAR",
    "host": "VARCHAR",
    "created": "VARCHAR",
    "version": "VARCHAR",
}
EXPERIMENT_FIELDS = {
    "key": "VARCHAR",
    "experiment": "VARCHAR",
    "preset": "VARCHAR",
    "passed": "BOOLEAN",
    "n_claims": "BIGINT",
    "n_passed": "BIGINT",
    "wall_s": "DOUBLE",
    "version": "VARCHAR",
    "created": "VARCHAR",
}


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _empty(con: duckdb.DuckDBPyConnection, view: str, columns: dict[str, str]) -> None:
    cols = ", ".join(f"NULL::{t} AS {_quote(n)}" for n, t in columns.items())
    con.execute(f"CREATE VIEW {view} AS SELECT * FROM (SELECT {cols}) WHERE false")


def _glob_view(
    con: duckdb.DuckDBPyConnection, view: str, folder: Path, columns: dict[str, str]
) -> None:
    """``view`` over ``folder/*.parquet`` (an empty typed view when there are none)."""
    if folder.is_dir() and any(p for p in folder.glob("*.parquet")):
        glob = _lit(str(folder / "*.parquet"))
        cols = ", ".join(_quote(c) for c in columns)
        con.execute(f"CREATE VIEW {view} AS SELECT {cols} FROM read_parquet({glob})")
    else:
        _empty(con, view, columns)


def _observables_view(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    """``observables`` over ``runs/*.parquet``. ``run_id`` is read from the file name (which
    is the run id), so a filter on it prunes files instead of opening all of them."""
    if not (folder.is_dir() and any(folder.glob("*.parquet"))):
        _empty(con, "observables", OBS_TYPES)
        return
    glob = _lit(str(folder / "*.parquet"))
    cols = ", ".join(c for c in OBS_TYPES if c != "run_id")
    con.execute(
        f"CREATE VIEW observables AS SELECT parse_filename(filename, true) AS run_id, {cols} "
        f"FROM read_parquet({glob}, filename = true)"
    )


def _experiment_records(folder: Path) -> list[tuple[str, dict]]:
    out = []
    if not folder.is_dir():
        return out
    for path in sorted(folder.glob("*.parquet")):
        try:
            out.append((str(path), json.loads(pq.read_schema(path).metadata[META_KEY])))
        except Exception:  # damaged or foreign file: not an experiment record
            continue
    return out


def _experiment_views(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    records = _experiment_records(folder)
    links = {"experiment": [], "preset": [], "key": [], "run_id": []}
    rows: list[dict] = []
    types: dict[str, str] = {}
    for path, rec in records:
        key = rec.get("key") or Path(path).stem
        for rid in rec.get("run_ids", []):
            links["experiment"].append(rec.get("experiment"))
            links["preset"].append(rec.get("preset"))
            links["key"].append(key)
            links["run_id"].append(rid)
        claims = rec.get("claims", [])
        flat = flatten(rec.get("config", {}))
        catalog_mod.merge_types(types, {"config_flat": flat})
        rows.append(
            {
                "key": key,
                "experiment": rec.get("experiment"),
                "preset": rec.get("preset"),
                "passed": all(c.get("passed") for c in claims),
                "n_claims": len(claims),
                "n_passed": sum(bool(c.get("passed")) for c in claims),
                "wall_s": rec.get("wall_s"),
                "version": rec.get("version"),
                "created": rec.get("created"),
                "config": flat,
                "file": path,
            }
        )
    con.register("_experiment_links", pa.table(links, schema=_string_schema(links)))
    con.execute("CREATE VIEW experiment_runs AS SELECT * FROM _experiment_links")
    if not rows:
        _empty(con, "experiments", EXPERIMENT_FIELDS | {"file": "VARCHAR"})
        return
    table = {name: [r[name] for r in rows] for name in EXPERIMENT_FIELDS if name != "passed"}
    table["passed"] = [r["passed"] for r in rows]
    table["file"] = [r["file"] for r in rows]
    table["config"] = [json.dumps(r["config"]) for r in rows]
    con.register("_experiment_rows", pa.table(table))
    exprs = [f"CAST({_quote(n)} AS {t}) AS {_quote(n)}" for n, t in EXPERIMENT_FIELDS.items()]
    exprs += _config_columns(
        types, "config", column_names(types, set(EXPERIMENT_FIELDS) | {"file"})
    )
    exprs.append("file")
    con.execute(f"CREATE VIEW experiments AS SELECT {', '.join(exprs)} FROM _experiment_rows")


def _string_schema(columns: dict) -> pa.Schema:
    return pa.schema([(name, pa.string()) for name in columns])


def column_names(keys, taken: set[str]) -> dict[str, str]:
    """A column name per config key, unique without regard to case (DuckDB matches column names
    and struct keys case-insensitively): a key whose lower case is already used, e.g. one
    family's ``M`` next to another's ``m``, becomes ``M_2`` (``M_3``, …)."""
    used = {t.lower() for t in taken}
    names = {}
    for key in keys:
        if key in taken:
            continue
        name, n = key, 1
        while name.lower() in used:
            n += 1
            name = f"{key}_{n}"
        used.add(name.lower())
        names[key] = name
    return names


def _config_columns(
    types: dict[str, str], json_col: str, names: dict[str, str], prefix: str = "$."
) -> list[str]:
    """SELECT expressions that pull each flattened config field in ``names`` (key → column)
    out of the JSON column."""
    exprs = []
    for key, name in names.items():
        sql_type = types[key] or "VARCHAR"
        path = _lit(prefix + json.dumps(key))  # quoted JSON path segment, safe for dotted keys
        exprs.append(f"TRY_CAST({json_col}::JSON ->> {path} AS {sql_type}) AS {_quote(name)}")
    return exprs


def _runs_view(con: duckdb.DuckDBPyConnection, root: Path, save: bool) -> None:
    cat = catalog_mod.load(root, save=save)
    if cat.table.num_rows == 0:
        _empty(
            con,
            "runs",
            RUN_FIELDS | {"experiment": "VARCHAR", "sweep": "VARCHAR", "file": "VARCHAR"},
        )
        return
    con.register("_catalog", cat.table)
    runs_dir = _lit(str(root / "runs") + "/")
    taken = set(RUN_FIELDS) | {"experiment", "sweep", "file"}
    names = column_names(cat.types, taken)
    # keys whose column name is their own go through one typed struct; the rest (case
    # collisions, which a DuckDB struct cannot hold) are read by JSON path
    config = {k: (cat.types[k] or "VARCHAR") for k, name in names.items() if name == k}
    renamed = {k: cat.types[k] for k, name in names.items() if name != k}
    structure = dict(RUN_FIELDS) | {"sweep": "VARCHAR", "config_flat": config or "JSON"}
    # one JSON parse per run into typed fields, materialised once per connection
    con.execute(
        "CREATE TEMP TABLE _runs AS SELECT json_transform(meta, "
        f"{_lit(json.dumps(structure))}) AS m, {runs_dir} || file AS file"
        + "".join(
            f", {e}"
            for e in _config_columns(
                renamed, "meta", {k: f"_c{i}" for i, k in enumerate(renamed)}, "$.config_flat."
            )
        )
        + " FROM _catalog"
    )
    exprs = []
    for name in RUN_FIELDS:
        exprs.append(f"m.{_quote(name)} AS {_quote(name)}")
        if name == "kind":
            exprs.append("l.experiment AS experiment")
            exprs.append("m.sweep AS sweep")
    exprs += [f"m.config_flat.{_quote(k)} AS {_quote(k)}" for k in config]
    exprs += [f"_c{i} AS {_quote(names[k])}" for i, k in enumerate(renamed)]
    exprs.append("file")
    con.execute(
        "CREATE TEMP TABLE _run_experiments AS SELECT run_id, "
        "string_agg(DISTINCT experiment, ',' ORDER BY experiment) AS experiment "
        "FROM experiment_runs GROUP BY run_id"
    )
    con.execute(
        f"CREATE VIEW runs AS SELECT {', '.join(exprs)} FROM _runs "
        "LEFT JOIN _run_experiments l ON l.run_id = m.run_id"
    )


def connect(root: str | Path | None = None, save_catalog: bool = True) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the views ``runs``, ``observables``, ``claims``,
    ``experiments``, ``experiment_runs`` and ``failures`` over ``root`` (see the module doc).

    Opening updates the run catalog (``catalog.parquet``) unless ``save_catalog`` is false."""
    root = results_dir(root)
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    _glob_view(con, "claims", root / "experiments", CLAIM_COLUMNS)
    _glob_view(con, "failures", root / "failures", FAILURE_COLUMNS)
    _experiment_views(con, root / "experiments")
    _observables_view(con, root / "runs")
    _runs_view(con, root, save_catalog)
    return con
