"""DuckDB views over a results folder.

- ``observables``: run_id, seed, time, samples, step, name, value (one row per recorded value);
- ``runs``: one row per run: run_id, family, kind, status, n_diverged, wall_s, version, schema,
  created, file, then one column per flattened config field (typed from the stored JSON);
- ``claims``: experiment, preset, key, claim, statement, value, target, passed, created, version.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

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


def _sql_type(value) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    return "VARCHAR"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


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


def _claims_view(con: duckdb.DuckDBPyConnection, folder: Path) -> None:
    if folder.is_dir() and any(folder.glob("*.parquet")):
        glob = str(folder / "*.parquet").replace("'", "''")
        con.execute(
            f"CREATE VIEW claims AS SELECT {', '.join(CLAIM_COLUMNS)} FROM read_parquet('{glob}')"
        )
    else:
        cols = ", ".join(f"NULL::{t} {n}" for n, t in CLAIM_COLUMNS.items())
        con.execute(f"CREATE VIEW claims AS SELECT * FROM (SELECT {cols}) WHERE false")


def connect(root: str | Path | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with the views ``runs``, ``observables`` and ``claims``
    (one row per claim of every stored experiment run) over ``root``."""
    runs_dir = results_dir(root) / "runs"
    con = duckdb.connect()
    _claims_view(con, results_dir(root) / "experiments")
    files = sorted(runs_dir.glob("*.parquet")) if runs_dir.is_dir() else []
    if not files:
        con.execute(
            "CREATE VIEW observables AS SELECT * FROM (SELECT NULL::VARCHAR run_id, "
            "NULL::BIGINT seed, NULL::DOUBLE time, NULL::BIGINT samples, NULL::BIGINT step, "
            "NULL::VARCHAR name, NULL::DOUBLE value) WHERE false"
        )
        cols = ", ".join(f"NULL::{t} {n}" for n, t in RUN_FIELDS.items())
        con.execute(
            f"CREATE VIEW runs AS SELECT * FROM (SELECT {cols}, NULL::VARCHAR file) WHERE false"
        )
        return con
    glob = str(runs_dir / "*.parquet").replace("'", "''")
    con.execute(f"CREATE VIEW observables AS SELECT {OBS_COLUMNS} FROM read_parquet('{glob}')")
    meta_sql = (
        f"SELECT file_name AS file, decode(value) AS meta FROM parquet_kv_metadata('{glob}') "
        f"WHERE decode(key) = '{META_KEY.decode()}'"
    )
    config_types: dict[str, str] = {}
    for (text,) in con.execute(f"SELECT meta FROM ({meta_sql})").fetchall():
        for key, value in json.loads(text)["config_flat"].items():
            if value is not None:
                config_types.setdefault(key, _sql_type(value))
            else:
                config_types.setdefault(key, "VARCHAR")
    exprs = [f"CAST(meta::JSON ->> '$.{n}' AS {t}) AS {n}" for n, t in RUN_FIELDS.items()]
    for key, sql_type in config_types.items():
        if key in RUN_FIELDS or key == "file":
            continue
        path = json.dumps(key)  # quoted JSON path segment, safe for dotted keys
        exprs.append(
            f"TRY_CAST(meta::JSON -> '$.config_flat' ->> '$.{path}' AS {sql_type}) AS {_quote(key)}"
        )
    exprs.append("file")
    con.execute(f"CREATE VIEW runs AS SELECT {', '.join(exprs)} FROM ({meta_sql})")
    return con
