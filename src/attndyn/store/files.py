"""Atomic Parquet writing and reading of single runs.

A run file ``runs/<run_id>.parquet`` carries its record (JSON) in the Parquet footer under
``attndyn``, with its ``run_id``, a ``checksum`` of its data (:func:`checksum`) and a
``record_checksum`` of the record itself (:func:`record_checksum`). Readers check them
(:meth:`Store.problem`): a file that cannot be read, whose footer is not a run record, whose
record names another run, which lacks its seals, whose data or record do not match a checksum,
or whose run id is not derived from its config (:func:`id_problem`) is *damaged* (or foreign);
it is moved to ``quarantine/`` (never deleted) with a one-line warning on stderr, and
load-or-compute and sweeps treat the run as missing (docs/store.md, "Damaged files").
Experiment and failure records carry both checksums too. Writers hold a per-run lock and clean
up after dead writers (:mod:`attndyn.store.locks`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import sys
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import xarray as xr

from attndyn.core.config import SCHEMA_VERSION, flatten
from attndyn.core.serial import json_safe
from attndyn.core.trajectory import config_of, from_frame, to_frame
from attndyn.errors import InputError, StoreError
from attndyn.store import locks

META_KEY = b"attndyn"
DEFAULT_DIR = "attndyn-results"


def results_dir(out: str | os.PathLike | None = None) -> Path:
    """``out`` if given, else ``$ATTNDYN_RESULTS``, else ``./attndyn-results``."""
    return Path(out or os.environ.get("ATTNDYN_RESULTS") or DEFAULT_DIR)


RESULT_FOLDERS = ("runs", "experiments", "failures")
LINK = "a symbolic link (results are plain files; queries cannot read outside the folder)"


def special(mode: int) -> str | None:
    """Why a directory entry of ``mode`` (``lstat``'s, links not followed) is no file a reader
    may open, or None for a plain file or a folder: opening a FIFO would block a reader."""
    if stat.S_ISLNK(mode):
        return LINK
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    what = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket or device"
    return f"{what}, not a file (results are plain files)"


def not_plain(path: Path) -> str | None:
    """Why ``path`` is not a plain file (:func:`special`, or a folder), or None;
    FileNotFoundError when it is gone. Checked before a reader opens a stored file."""
    mode = os.lstat(path).st_mode
    return special(mode) or ("a folder, not a file" if stat.S_ISDIR(mode) else None)


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` (``runs/``, ``experiments/`` or ``failures/``) exists but is no plain
    folder (a symbolic link, a file, …), or None (a folder, or missing)."""
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link, not a folder (results are plain folders)"
    return None if stat.S_ISDIR(mode) else "not a folder"


# The columns of the stored files and their SQL types (the views read them under these types;
# :func:`columns_problem` checks a file has them). A claim's ``ci_low``, ``ci_high`` and
# ``n_seeds`` are optional (records written before claims had intervals lack them).
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
    "ci_low": "DOUBLE",
    "ci_high": "DOUBLE",
    "n_seeds": "BIGINT",
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
CLAIM_OPTIONAL = ("ci_low", "ci_high", "n_seeds")
_KINDS = {
    "VARCHAR": (pa.types.is_string, pa.types.is_large_string),
    "BIGINT": (pa.types.is_integer,),
    "DOUBLE": (pa.types.is_floating, pa.types.is_integer),
    "BOOLEAN": (pa.types.is_boolean,),
}


def columns_problem(
    schema: pa.Schema, columns: dict[str, str], what: str, optional=()
) -> str | None:
    """Why a file of ``schema`` is not ``what`` (e.g. "a failure record") with the ``columns``
    (name -> SQL type; ``optional`` ones may be absent), or None. A column of all nulls fits
    any type. One malformed file must not break the views of all the others."""
    names = schema.names
    missing = [c for c in columns if c not in names and c not in optional]
    if missing:
        return f"not {what} (no column {', '.join(missing)})"
    for name, sql in columns.items():
        if name not in names:
            continue
        if len([n for n in names if n == name]) > 1:
            return f"not {what} (two columns {name})"
        kind = schema.field(name).type
        if not pa.types.is_null(kind) and not any(ok(kind) for ok in _KINDS[sql]):
            return f"not {what} (column {name} is {kind}, not {sql})"
    return None


def outside_results(
    root: str | os.PathLike, path: str | os.PathLike, field: str = "output", whole: bool = True
) -> None:
    """InputError (exit code 2, one line naming ``field``) when ``path`` lies inside the results
    folder ``root`` (or, with ``whole`` false, inside its ``runs/``, ``experiments/`` or
    ``failures/``), symbolic links resolved: only ``simulate``, ``run``, ``sweep`` and
    ``report`` write there, so a read or export command can never overwrite a stored run or
    plant a foreign file."""
    base = Path(root).resolve()
    target = Path(path).resolve()
    for folder in [base] if whole else [base / f for f in RESULT_FOLDERS]:
        if target == folder or folder in target.parents:
            what = "the results folder" if whole else "a folder of stored results"
            raise InputError(
                f"invalid value for '{field}': {path} is inside {folder} ({what}); "
                "give a path outside it"
            )


class DamagedRun(StoreError):
    """A run file that is unreadable, foreign or altered (see the module docstring); ``reason``
    says how."""

    def __init__(self, path: Path, reason: str):
        super().__init__(f"damaged run file {path}: {reason}")
        self.reason = reason


class NotWritable(StoreError):
    """The results folder cannot be written, found before anything is computed (exit code 2:
    the ``--out`` given cannot take results)."""

    exit_code = 2


def run_record(text: str | bytes | None, run_id: str) -> tuple[dict[str, Any] | None, str | None]:
    """(record, None) when the footer text ``text`` is a run record naming ``run_id``, else
    (None, why not). The one check of a footer, shared by readers and the catalog."""
    if text is None:
        return None, "no run record in its footer"
    try:
        meta = json.loads(text)
    except ValueError:
        return None, "its run record is not valid JSON"
    if not isinstance(meta, dict):
        return None, "its footer is not a run record"
    if meta.get("run_id") != run_id:
        return None, f"its record names run {meta.get('run_id')!r}, not its file name"
    return meta, None


def checksum(table: pa.Table) -> str:
    """SHA-256 (first 32 hex digits) of the table's column names, types and values, independent
    of the Parquet encoding and of how a reader chunks the columns."""
    h = hashlib.sha256()
    for name, column in zip(table.column_names, table.columns, strict=True):
        h.update(f"{name}:{column.type}\0".encode())
        values = column.to_numpy(zero_copy_only=False)
        if values.dtype == object:
            h.update("\0".join(map(str, values)).encode())
        else:
            h.update(np.ascontiguousarray(values).tobytes())
    return h.hexdigest()[:32]


def record_checksum(record: dict[str, Any]) -> str:
    """SHA-256 (first 32 hex digits) of a footer record without its ``record_checksum`` key, as
    JSON with sorted keys after the footer's own JSON round trip: the record (and through its
    ``checksum``, the data) sealed, so an edited footer is damage."""
    body = json.loads(json.dumps({k: v for k, v in record.items() if k != "record_checksum"},
                                 default=str))  # fmt: skip
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:32]


def seal_problem(record: dict[str, Any], table: pa.Table) -> str | None:
    """Why a footer ``record`` and its ``table`` do not match their checksums, or None. A
    record without them is refused first (:func:`unsealed`)."""
    if "checksum" in record and record["checksum"] != checksum(table):
        return "its data do not match its checksum"
    if "record_checksum" in record and record["record_checksum"] != record_checksum(record):
        return "its footer record does not match its checksum (edited)"
    return None


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def id_problem(record: dict[str, Any], run_id: str) -> str | None:
    """Why the run id ``run_id`` is not derived from ``record`` (its kind, config, schema and
    input hashes, :func:`attndyn.core.config.id_of`), or None: a record sealed again over an
    edited config is foreign. Records written before the kind was recorded (``id_kind``,
    2026-12-07) are derived as the family's simulation or theory; one that is neither (an
    experiment's own model, a theory whose stored config adds its resolved method) is
    checked by its seals only."""
    from attndyn.core.config import id_of

    config = record.get("id_config", record.get("config"))
    if "id_config" in record and not _covers(record.get("config"), record["id_config"]):
        return "its run id is not derived from its config (it disagrees with id_config)"
    schema, inputs = record.get("schema"), record.get("inputs") or {}
    if "id_kind" in record:
        kinds = [record["id_kind"]]
    else:
        family = record.get("family", "")
        kinds = [family if record.get("kind") == "simulation" else f"{family}:theory"]
    try:
        if any(id_of(kind, config, schema, inputs) == run_id for kind in kinds):
            return None
    except (TypeError, ValueError):  # not JSON data
        pass
    if "id_kind" not in record:
        return None
    return "its run id is not derived from its config (a record of another config)"


def _covers(config: Any, hashed: Any) -> bool:
    """Whether ``config`` agrees with ``hashed`` (what the run id hashes: the config without the
    fields left out at their neutral values, :func:`attndyn.core.config.identity`) on every field
    both hold, in nested configs too. A record's ``config`` is its Trajectory's (a theory's adds
    its resolved method; an experiment's own computation may record none), so fields only one of
    them holds are not compared; nor are the neutral fields the id leaves out (the store cannot
    know their values: an edit of one changes what is shown, never which run is reused)."""
    if config is None:  # nothing recorded to compare
        return True
    if isinstance(hashed, dict) and isinstance(config, dict):
        return all(_covers(config[k], v) for k, v in hashed.items() if k in config)
    return _json(config) == _json(hashed)


def unsealed(record: dict[str, Any]) -> str | None:
    """Why a footer ``record`` lacks its seals (``checksum`` and ``record_checksum``), or None:
    an unsealed file is foreign (its values and its record could be anything), never served
    and never reused."""
    missing = [k for k in ("checksum", "record_checksum") if not isinstance(record.get(k), str)]
    if missing:
        return f"foreign file: no {' and no '.join(missing)} in its record (seals stripped?)"
    return None


def _table_or_problem(path: Path) -> pa.Table | str:
    """The Parquet table at ``path``, or why it cannot be read (a FIFO is never opened)."""
    why = not_plain(path)
    if why is not None:
        return why
    try:
        return pq.read_table(path)
    except Exception as exc:
        return unreadable(exc)


def experiment_problem(path: Path) -> str | None:
    """Why the experiment record ``path`` is damaged or foreign, or None when it is sound: it
    must read, hold the claims' columns, carry a footer record naming its own key with the
    fields the views read (:func:`record_problem`), and both seals matching."""
    table = _table_or_problem(path)
    if isinstance(table, str):
        return table
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
    table = _table_or_problem(path)
    if isinstance(table, str):
        return table
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


def damaged_files(store: Store, names: list[str]) -> set[str]:
    """The run files ``names`` (``<run_id>.parquet`` in ``store``'s runs/) that fail the
    readers' whole check (:meth:`Store.problem`), read in four threads (about 1 ms per small
    run); each is named in one warning line on stderr. A file gone since the listing is left
    out silently."""
    from concurrent.futures import ThreadPoolExecutor

    def problem(name: str) -> str | None:
        try:
            return store.problem(name[: -len(".parquet")])
        except FileNotFoundError:  # vanished (e.g. quarantined) since the listing
            return ""

    with ThreadPoolExecutor(max_workers=4) as pool:
        reasons = list(pool.map(problem, names))
    bad = set()
    for name, why in zip(names, reasons, strict=True):
        if why is not None:
            if why:
                print(f"warning: skipping run file {store.runs / name}: {why}", file=sys.stderr)
            bad.add(name)
    return bad


def unreadable(exc: BaseException) -> str:
    """The reason for a file that cannot be read, in one short line."""
    first = (str(exc).splitlines() or [""])[0][:120]
    return f"unreadable ({type(exc).__name__}: {first})"


class Store:
    """A results folder. ``write`` is atomic; ``exists`` only sees complete files."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = results_dir(root)
        self.runs = self.root / "runs"

    def path(self, run_id: str) -> Path:
        return self.runs / f"{run_id}.parquet"

    def exists(self, run_id: str) -> bool:
        return self.path(run_id).is_file()

    def write(
        self,
        traj: xr.Dataset,
        run_id: str,
        wall_s: float = float("nan"),
        extra: dict[str, Any] | None = None,
        basis: tuple[str, dict[str, Any], dict[str, str]] | None = None,
    ) -> Path:
        """Write a Trajectory as ``<run_id>.parquet`` (temporary file, fsync, rename).

        ``extra`` is merged into the stored run record (e.g. the sweep's provenance).
        ``basis``: what the run id hashes (kind, the config's identity, input hashes,
        :func:`attndyn.core.config.run_id`), recorded as ``id_kind``, ``inputs`` and, where it
        differs from the record's ``config``, ``id_config``, so that readers derive the id
        again from the record (:func:`id_problem`)."""
        from attndyn.version import __version__

        frame = to_frame(traj)
        frame.insert(0, "run_id", run_id)
        config = config_of(traj)
        div = traj["diverged_step"].values if "diverged_step" in traj.coords else np.array([])
        meta: dict[str, Any] = {
            "run_id": run_id,
            "family": traj.attrs.get("family", ""),
            "kind": "simulation" if "seed" in traj.dims else "theory",
            "config": config,
            "config_flat": flatten(config),
            "schema": SCHEMA_VERSION,
            "version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "wall_s": None if np.isnan(wall_s) else round(float(wall_s), 4),
            "status": "diverged" if (div >= 0).any() else "ok",  # with n_diverged seeds
            "n_diverged": int((div >= 0).sum()),
            "diverged_step": {str(s): int(v) for s, v in zip(traj["seed"].values, div, strict=True)}
            if "seed" in traj.dims
            else {},
            "extra_times": {
                str(c): traj[c].values.tolist()
                for c in traj.coords
                if traj[c].dims == ("time",) and c not in ("time", "samples", "step")
            },
        }
        # a theory's own attrs (e.g. the AIM hierarchy's radius and stop reason), JSON-safe
        own = {k: v for k, v in traj.attrs.items() if k not in ("family", "config", "run_id")}
        if own:
            meta["attrs"] = json_safe(own)
        meta.update(extra or {})
        if basis is not None:
            kind, hashed, inputs = basis
            meta["id_kind"] = kind
            if _json(hashed) != _json(config):  # e.g. a theory's resolved method added
                meta["id_config"] = hashed
            if inputs:
                meta["inputs"] = inputs
        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta["checksum"] = checksum(table)
        meta["record_checksum"] = record_checksum(meta)
        table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
        return self._atomic_write(table, self.runs, run_id)

    def write_experiment(
        self, record: dict[str, Any], key: str, wall_s: float | None = None
    ) -> Path:
        """Store an experiment's claims as ``experiments/<key>.parquet`` (one row per claim;
        the whole record, summary included, in the metadata, with ``key``, ``created``,
        ``version`` and ``wall_s`` added)."""
        from attndyn.version import __version__

        created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        rows = [
            {
                "experiment": record["experiment"],
                "preset": record["preset"],
                "key": key,
                "claim": c["name"],
                "statement": c["statement"],
                "value": c["value"],
                "ci_low": c.get("ci_low"),
                "ci_high": c.get("ci_high"),
                "n_seeds": c.get("n_seeds"),
                "target": c["target"],
                "passed": c["passed"],
                "created": created,
                "version": __version__,
            }
            for c in record["claims"]
        ]
        schema = pa.schema(
            [
                ("experiment", pa.string()),
                ("preset", pa.string()),
                ("key", pa.string()),
                ("claim", pa.string()),
                ("statement", pa.string()),
                ("value", pa.float64()),
                ("ci_low", pa.float64()),
                ("ci_high", pa.float64()),
                ("n_seeds", pa.int64()),
                ("target", pa.string()),
                ("passed", pa.bool_()),
                ("created", pa.string()),
                ("version", pa.string()),
            ]
        )
        table = pa.Table.from_pylist(rows, schema=schema)
        record = record | {
            "key": key,
            "created": created,
            "version": __version__,
            "wall_s": None if wall_s is None else round(float(wall_s), 4),
            "checksum": checksum(table),
        }
        record["record_checksum"] = record_checksum(record)
        table = table.replace_schema_metadata({META_KEY: json.dumps(record, default=str).encode()})
        return self._atomic_write(table, self.experiments, key)

    @property
    def experiments(self) -> Path:
        return self.root / "experiments"

    @property
    def failures(self) -> Path:
        return self.root / "failures"

    def experiment_exists(self, key: str) -> bool:
        """True when the experiment run ``key`` has a sound record (a damaged, unsealed or
        malformed one is not reused: the sweep runs the experiment again, which replaces it)."""
        path = self.experiments / f"{key}.parquet"
        try:
            return experiment_problem(path) is None
        except FileNotFoundError:
            return False

    def write_failure(
        self,
        run_id: str,
        *,
        kind: str,
        name: str,
        config: dict[str, Any],
        error: BaseException | str,
        sweep: str = "",
    ) -> Path:
        """Record that run ``run_id`` failed, as ``failures/<run_id>.parquet`` (one row: the
        error's one-line text, its traceback, the config as JSON; sealed like a run: a footer
        ``{run_id, checksum, record_checksum}``); atomic like a run."""
        from attndyn.version import __version__

        if isinstance(error, BaseException):
            text = f"{type(error).__name__}: {error}".strip()
            tb = "".join(traceback.format_exception(error))
        else:
            text, tb = str(error), ""
        row = {
            "run_id": run_id,
            "kind": kind,
            "name": name,
            "sweep": sweep,
            "error": " ".join(text.split()),
            "traceback": tb,
            "config": json.dumps(config, sort_keys=True),
            "host": os.uname().nodename,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "version": __version__,
        }
        table = pa.Table.from_pylist([row], schema=pa.schema([(k, pa.string()) for k in row]))
        seal: dict[str, Any] = {"run_id": run_id, "checksum": checksum(table)}
        seal["record_checksum"] = record_checksum(seal)
        table = table.replace_schema_metadata({META_KEY: json.dumps(seal).encode()})
        return self._atomic_write(table, self.failures, run_id)

    def clear_failure(self, run_id: str) -> None:
        """Forget an earlier failure of ``run_id`` (it has now been stored)."""
        with contextlib.suppress(FileNotFoundError):
            (self.failures / f"{run_id}.parquet").unlink()

    def check_writable(self) -> None:
        """Write, sync and remove a probe file in ``runs/`` (creating the folders it needs);
        :class:`NotWritable` (one line, exit code 2) if that fails. Leaves nothing behind: the
        folders it created are removed again (the first write creates them for good)."""
        probe = locks.temp_path(self.runs, "probe")
        created = [p for p in (self.runs, *self.runs.parents) if not p.exists()]
        try:
            self.runs.mkdir(parents=True, exist_ok=True)
            with open(probe, "wb") as fh:
                fh.write(b"attndyn")
                fh.flush()
                os.fsync(fh.fileno())
            probe.unlink()
        except OSError as exc:
            with contextlib.suppress(OSError):
                probe.unlink()
            raise NotWritable(
                f"cannot write results to {self.root}: {exc.strerror or exc}"
            ) from None
        finally:
            for folder in created:  # deepest first
                with contextlib.suppress(OSError):
                    folder.rmdir()

    def lock(self, *run_ids: str):
        """Context manager holding the per-run locks of ``run_ids`` (:func:`locks.locked`)."""
        return locks.locked(self.root, run_ids)

    def clean_temporary(self, older_than_s: float = 3600.0, pids: set[int] | None = None) -> int:
        """Remove temporary files that killed writers left (hidden ``.*.tmp``, never read as
        results): those of dead processes of this host, those older than ``older_than_s``, and,
        whatever their age, those of the (stopped) processes ``pids``; and lock files older than
        ``older_than_s`` that nobody holds. Returns how many temporaries were removed."""
        folders = (self.root, self.runs, self.experiments, self.failures)
        removed = locks.clean_temporary(folders, older_than_s, pids)
        locks.clean_locks(self.root, older_than_s)
        return removed

    def _atomic_write(self, table: pa.Table, folder: Path, key: str) -> Path:
        """Write ``folder/<key>.parquet``: a temporary hidden file (unique per writer, so threads
        and processes never share one), fsync, rename over the final name. The first write of
        this process into ``folder`` removes the temporaries of dead writers."""
        final = folder / f"{key}.parquet"
        tmp = locks.temp_path(folder, key)
        try:
            folder.mkdir(parents=True, exist_ok=True)
            locks.clean_once(folder)  # temporaries of dead writers
            with open(tmp, "wb") as fh:
                pq.write_table(table, fh, compression="zstd")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise StoreError(
                f"cannot write results to {self.root}: {exc.strerror or exc}"
            ) from None
        except BaseException:  # interrupted (e.g. SIGTERM turned into SystemExit): no leftovers
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return final

    def metadata(self, run_id: str) -> dict[str, Any]:
        """The run record stored with a run; :class:`DamagedRun` when the file cannot be read or
        its footer is not the run's record."""
        path = self.path(run_id)
        try:
            text = (pq.read_schema(path).metadata or {}).get(META_KEY)
        except FileNotFoundError:
            raise
        except Exception as exc:  # truncated, not Parquet, …
            raise DamagedRun(path, unreadable(exc)) from None
        meta, reason = run_record(text, run_id)
        if meta is None:
            assert reason is not None
            raise DamagedRun(path, reason)
        return meta

    def _checked(self, run_id: str) -> tuple[pa.Table, dict[str, Any]]:
        """The file's table and record; :class:`DamagedRun` (its reason) when it cannot be read,
        its footer is not a run record naming ``run_id``, or its data or its record miss their
        checksums (:func:`seal_problem`)."""
        path = self.path(run_id)
        why = not_plain(path)  # FileNotFoundError when it is gone; a FIFO is never opened
        if why is not None:
            raise DamagedRun(path, why)
        try:
            table = pq.read_table(path)
        except FileNotFoundError:
            raise
        except Exception as exc:  # truncated, not Parquet, …
            raise DamagedRun(path, unreadable(exc)) from None
        meta, reason = run_record((table.schema.metadata or {}).get(META_KEY), run_id)
        if meta is None:
            assert reason is not None  # run_record gives a reason with no record
            raise DamagedRun(path, reason)
        why = (
            columns_problem(table.schema, OBS_TYPES, "a run file")
            or unsealed(meta)
            or seal_problem(meta, table)
            or id_problem(meta, run_id)
        )
        if why is not None:
            raise DamagedRun(path, why)
        return table, meta

    def problem(self, run_id: str) -> str | None:
        """Why the stored file of ``run_id`` is damaged, or None when it is sound."""
        try:
            self._checked(run_id)
        except DamagedRun as exc:
            return exc.reason
        return None

    def quarantine(self, run_id: str, reason: str) -> Path:
        """Move the damaged file of ``run_id`` to ``quarantine/`` (a unique name; never deleted)
        and say so in one line on stderr. Returns the new path."""
        folder = self.root / "quarantine"
        folder.mkdir(parents=True, exist_ok=True)
        stamp = f"{time.strftime('%Y%m%dT%H%M%S')}.{uuid.uuid4().hex[:6]}"
        target = folder / f"{run_id}.{stamp}.parquet"
        os.replace(self.path(run_id), target)
        print(
            f"warning: damaged run file {self.path(run_id)} ({reason}); moved to {target}",
            file=sys.stderr,
        )
        return target

    def load(self, run_id: str) -> xr.Dataset | None:
        """The stored Trajectory of ``run_id``, or None when it is not stored or its file is
        damaged (then quarantined, :meth:`quarantine`), so the caller computes it anew."""
        if not self.exists(run_id):
            return None
        try:
            return self.read(run_id)
        except DamagedRun as exc:
            self._set_aside(run_id, exc.reason)
            return None

    def stored(self, run_id: str) -> bool:
        """True when ``run_id`` has a sound file; a damaged one is quarantined (False)."""
        if not self.exists(run_id):
            return False
        reason = self.problem(run_id)
        if reason is None:
            return True
        self._set_aside(run_id, reason)
        return False

    def _set_aside(self, run_id: str, reason: str) -> None:
        """Quarantine a damaged run file; a failure to move it leaves it (it stays unread)."""
        with contextlib.suppress(OSError):
            self.quarantine(run_id, reason)

    def sound(self, run_ids) -> set[str]:
        """The ids among ``run_ids`` whose files are sound (:meth:`stored`, a full read and
        checksum of each, in threads: about 1 ms per small run); damaged ones are quarantined."""
        from concurrent.futures import ThreadPoolExecutor

        ids = sorted(run_ids)
        with ThreadPoolExecutor(max_workers=4) as pool:
            ok = list(pool.map(self.stored, ids))
        return {rid for rid, good in zip(ids, ok, strict=True) if good}

    def read(self, run_id: str) -> xr.Dataset:
        """The stored Trajectory of ``run_id`` (extra time axes are restored from ``samples``);
        :class:`DamagedRun` (a StoreError naming the file and the reason) when it is damaged."""
        table, meta = self._checked(run_id)
        frame = table.to_pandas()
        div = {int(k): v for k, v in meta["diverged_step"].items()}
        traj = from_frame(
            frame.drop(columns="run_id"),
            diverged_step=div or None,
            extra_times={k: np.asarray(v) for k, v in meta["extra_times"].items()},
            family=meta["family"],
            config=meta["config"],
        )
        traj.attrs |= meta.get("attrs") or {}
        traj.attrs["run_id"] = run_id
        return traj

    def run_ids(self) -> list[str]:
        if not self.runs.is_dir():
            return []
        return sorted(p.stem for p in self.runs.glob("*.parquet"))
