"""The run catalog: one small Parquet file indexing every run file's record.

Listing runs needs each run's record (the JSON in its Parquet footer). Reading 10,000 footers
takes seconds; the catalog ``<root>/catalog.parquet`` keeps them, one row per run file
(``file, mtime_ns, size, digest, meta``), plus in its own metadata the SQL type of every
flattened config field of every family (``{family: {field: type}}``: a family's field types
never depend on another family's runs) and its seal (a hash of its rows and types). On open, the
``runs/`` folder is listed (one ``scandir``) and every run file hashed (:func:`digest`, its
content: an edit that keeps size and modification time is seen); only new or changed files are
read and checked whole, vanished ones dropped, and the catalog is rewritten atomically
(temporary file, rename) when anything changed. Hidden temporary files of writers in progress
are never listed. The catalog is a cache: deleting it is safe, a read-only results folder simply
skips saving it, and a damaged, older or edited one (its seal not matching) is rebuilt."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from attndyn.store.files import META_KEY, run_record, special
from attndyn.store.locks import temp_path

CATALOG = "catalog.parquet"
CATALOG_VERSION = 3  # 2: config types per family; 3: content digests, the catalog sealed
BULK = 200  # more new files than this: read their footers with DuckDB (in parallel)

SCHEMA = pa.schema(
    [
        ("file", pa.string()),
        ("mtime_ns", pa.int64()),
        ("size", pa.int64()),
        ("digest", pa.string()),
        ("meta", pa.string()),
    ]
)


@dataclass
class Catalog:
    """Run records of a results folder: ``table`` (file, mtime_ns, size, meta) and ``types``
    (family -> flattened config field -> SQL type)."""

    table: pa.Table
    types: dict[str, dict[str, str | None]]


def sql_type(value) -> str:
    if isinstance(value, bool):
        return "BOOLEAN"
    if isinstance(value, int):
        return "BIGINT"
    if isinstance(value, float):
        return "DOUBLE"
    return "VARCHAR"


def merge_type(old: str | None, new: str) -> str:
    """Column type when values of types ``old`` and ``new`` meet: integers widen to DOUBLE,
    any other mix is VARCHAR."""
    if old is None or old == new:
        return new
    if {old, new} == {"BIGINT", "DOUBLE"}:
        return "DOUBLE"
    return "VARCHAR"


def merge_types(types: dict[str, str | None], flat: dict) -> None:
    """Widen ``types`` (field -> SQL type, None while only nulls were seen) by the values of one
    flattened config."""
    for key, value in flat.items():
        if value is None:
            types.setdefault(key, None)
        else:
            types[key] = merge_type(types.get(key), sql_type(value))


def _merge_record(types: dict[str, dict[str, str | None]], meta: dict) -> None:
    """Widen the types of the record's family by its flattened config."""
    merge_types(types.setdefault(meta.get("family", ""), {}), meta.get("config_flat", {}))


def _listing(runs: Path) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    if not runs.is_dir():
        return out
    with os.scandir(runs) as entries:
        for entry in entries:
            name = entry.name
            if name.startswith(".") or not name.endswith(".parquet"):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            why = special(st.st_mode) or ("a folder" if stat.S_ISDIR(st.st_mode) else None)
            if why is not None:  # a link, a FIFO (opening it would block), a device: not a run
                print(f"warning: skipping run file {runs / name}: {why}", file=sys.stderr)
                continue
            out[name] = (st.st_mtime_ns, st.st_size)
    return out


def digest(path: Path) -> str:
    """SHA-256 (first 32 hex digits) of the bytes of ``path``: what decides whether a catalogued
    file is the one that was checked (an edit that keeps size and modification time changes
    it). About 0.1 ms for a small run file."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()[:32]


def _digests(runs: Path, names) -> dict[str, str]:
    """name -> :func:`digest` of each run file ``names`` (files gone since the listing are left
    out)."""
    out = {}
    for name in names:
        with contextlib.suppress(FileNotFoundError):
            out[name] = digest(runs / name)
    return out


def _seal(table: pa.Table, types: dict) -> str:
    """The catalog's own seal: the checksum of its rows and its types."""
    from attndyn.store.files import checksum

    body = json.dumps(types, sort_keys=True)
    return hashlib.sha256(f"{checksum(table)}\0{body}".encode()).hexdigest()[:32]


def _read_saved(path: Path) -> tuple[pa.Table, dict[str, dict[str, str | None]]] | None:
    """The saved catalog, or None when it is missing, of an older version, damaged, or its
    rows or types do not match its seal (an edited catalog): it is then rebuilt from the
    checked run files."""
    try:
        pf = pq.ParquetFile(path)
        meta = json.loads((pf.schema_arrow.metadata or {})[META_KEY])
        if meta.get("catalog") != CATALOG_VERSION:
            return None
        table = pf.read().replace_schema_metadata(None)
        if not table.schema.equals(SCHEMA) or meta.get("seal") != _seal(table, meta["types"]):
            return None
        return table, meta["types"]
    except Exception:  # a damaged or foreign catalog is rebuilt
        return None


def no_progress_bar(con) -> None:
    """Switch DuckDB's progress bar off on ``con``. In a Jupyter kernel without ipywidgets DuckDB
    refuses the setting (its bar needs ipywidgets there and is off already), which must not stop
    a query (docs/notebooks/)."""
    import duckdb

    try:
        con.execute("SET enable_progress_bar = false")
    except duckdb.InvalidInputException:
        pass


def _read_footers(runs: Path, names: list[str]) -> dict[str, str]:
    """name -> record JSON of each run file in ``names`` (files that vanished are left out)."""
    out: dict[str, str] = {}
    if len(names) > BULK:
        import duckdb

        con = duckdb.connect()
        no_progress_bar(con)
        glob = str(runs / "*.parquet").replace("'", "''")
        wanted = set(names)
        with contextlib.suppress(duckdb.Error):
            rows = con.execute(
                f"SELECT file_name, decode(value) FROM parquet_kv_metadata('{glob}') "
                f"WHERE decode(key) = '{META_KEY.decode()}'"
            ).fetchall()
            for file, text in rows:
                name = os.path.basename(file)
                if name in wanted:
                    out[name] = text
            return out
    for name in names:
        try:
            out[name] = pq.read_schema(runs / name).metadata[META_KEY].decode()
        except FileNotFoundError:  # vanished (e.g. quarantined) since the listing
            continue
        except Exception as exc:  # foreign or damaged: not a run
            print(
                f"warning: skipping unreadable run file {runs / name} ({type(exc).__name__})",
                file=sys.stderr,
            )
    return out


def _sound(runs: Path, footers: dict[str, str]) -> dict[str, str]:
    """The footers that are run records naming their own file
    (:func:`attndyn.store.files.run_record`); each other file gets one warning line on stderr
    and stays out of the catalog (``simulate`` and ``sweep`` quarantine and redo it,
    :meth:`attndyn.store.files.Store.stored`)."""
    out = {}
    for name, text in footers.items():
        _, reason = run_record(text, name[: -len(".parquet")])
        if reason is None:
            out[name] = text
        else:
            print(f"warning: skipping run file {runs / name}: {reason}", file=sys.stderr)
    return out


def _verified(runs: Path, footers: dict[str, str]) -> dict[str, str]:
    """The files of ``footers`` whose whole content passes the readers' check (data and record
    checksums, :func:`attndyn.store.files.damaged_files`, each other one named on stderr), so a
    view never serves a damaged file's rows. A file is checked once per change: the catalog
    keeps it while its content (its digest) stays."""
    from attndyn.store.files import Store, damaged_files

    bad = damaged_files(Store(runs.parent), list(footers))
    return {name: text for name, text in footers.items() if name not in bad}


def load(root: Path, save: bool = True) -> Catalog:
    """The up-to-date catalog of ``root`` (updated and saved if the runs folder changed).

    A file's content decides: every run file is hashed (:func:`digest`) on each load, and a
    catalogued file whose bytes changed since it was checked, whatever its size and time, is
    checked again whole before its record is served."""
    runs = root / "runs"
    listing = _listing(runs)
    if not listing:
        return Catalog(table=SCHEMA.empty_table(), types={})
    digests = _digests(runs, listing)
    listing = {name: listing[name] for name in digests}
    saved = _read_saved(root / CATALOG)
    if saved is not None:
        table, types = saved
        files = table.column("file").to_pylist()
        known = table.column("digest").to_pylist()
        current = [digests.get(f) == d for f, d in zip(files, known, strict=True)]
        if all(current) and len(files) == len(listing):  # nothing changed: the common case
            return Catalog(table=table, types=types)
        table = table.filter(pa.array(current, pa.bool_()))
        if not all(current):  # files vanished or were rewritten: recompute the types
            types = {}
            for meta in table.column("meta").to_pylist():
                _merge_record(types, json.loads(meta))
    else:
        table, types = SCHEMA.empty_table(), {}
    have = set(table.column("file").to_pylist())
    new = sorted(f for f in listing if f not in have)
    found = _verified(runs, _sound(runs, _read_footers(runs, new)))
    for text in found.values():
        _merge_record(types, json.loads(text))
    names = sorted(found)
    added = pa.Table.from_pydict(
        {
            "file": names,
            "mtime_ns": [listing[n][0] for n in names],
            "size": [listing[n][1] for n in names],
            "digest": [digests[n] for n in names],
            "meta": [found[n] for n in names],
        },
        schema=SCHEMA,
    )
    table = pa.concat_tables([table.replace_schema_metadata(None), added])
    if save:
        _save(root, table, types)
    return Catalog(table=table, types=types)


def _save(root: Path, table: pa.Table, types: dict[str, dict[str, str | None]]) -> None:
    """Atomic rewrite; a folder that cannot be written is left alone (the catalog is a cache)."""
    table = table.replace_schema_metadata(None)
    seal = _seal(table, types)
    meta = json.dumps({"catalog": CATALOG_VERSION, "types": types, "seal": seal}).encode()
    table = table.replace_schema_metadata({META_KEY: meta})
    final = root / CATALOG
    tmp = temp_path(root, CATALOG)
    try:
        with open(tmp, "wb") as fh:
            pq.write_table(table, fh, compression="zstd")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
