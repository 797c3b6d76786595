"""The queries behind ``attndyn runs``, ``attndyn export`` and ``attndyn query``: stored runs
(all of them through ``runs``, or one family through its typed view) filtered by experiment and a
SQL condition, and the same joined with their observables.

Every query is read-only: the connection reads only the results folder
(:func:`attndyn.store.views.lock`), :func:`read_only` admits only SELECT (and EXPLAIN)
statements, and a ``--where`` condition must be one boolean expression (:func:`check_where`).
Exports stream the query's Arrow batches to the output file from Python, so the connection
itself never writes."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import threading
import uuid
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from attndyn.core.config import flatten
from attndyn.core.suggest import did_you_mean
from attndyn.errors import AttndynError, InputError, StoreError

FORMATS = ("csv", "parquet")
CHUNK_VECTORS = 100  # a result is fetched in chunks of 100 × 2,048 rows
OBSERVABLE_COLUMNS = ("seed", "time", "samples", "step", "name", "value")


def family_view(con: duckdb.DuckDBPyConnection, family: str) -> str:
    """The typed view of ``family`` (``runs_<family>``). InputError if it has no stored run:
    for a registered family, that this folder holds none of its runs; otherwise the stored
    families (with a "did you mean")."""
    from attndyn.core import registry

    views = dict(
        con.execute(
            "SELECT name, view FROM config_views WHERE parent = 'runs' ORDER BY name"
        ).fetchall()
    )
    if family in views:
        return views[family]
    stored = ", ".join(views) or "none"
    if family in registry.names(registry.FAMILIES):
        raise InputError(
            f"invalid value for 'family': no {family} runs in this results folder "
            f"(families stored: {stored})"
        )
    allowed = ", ".join(views) or "(no runs stored)"
    hint = did_you_mean(family, views)
    raise InputError(f"invalid value for 'family': must be one of {allowed} (got {family!r}){hint}")


def _selection(
    con: duckdb.DuckDBPyConnection, family: str | None, experiment: str | None
) -> tuple[str, str, list]:
    """The view to read (``runs`` or the family's) and the experiment filter on it."""
    view = family_view(con, family) if family is not None else "runs"
    if not experiment:
        return view, "", []
    known_experiment(con, experiment)
    cond = "run_id IN (SELECT run_id FROM experiment_runs WHERE experiment = ?)"
    return view, cond, [experiment]


def known_experiment(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """InputError (with a "did you mean") unless ``name`` is a registered experiment or one
    that stored runs in this folder: a typo must not read as "0 runs"."""
    from attndyn.core import registry

    stored = [
        r[0] for r in con.execute("SELECT DISTINCT experiment FROM experiment_runs").fetchall()
    ]
    known = sorted({*registry.names(registry.EXPERIMENTS), *stored})
    if name not in known:
        raise InputError(
            f"invalid value for 'experiment': unknown experiment {name!r}"
            f"{did_you_mean(name, known)}; known: {', '.join(known) or '(none)'}"
        )


class DataReadError(StoreError):
    """DuckDB planned the query but failed reading the stored data: a damaged file, never the
    user's SQL (:func:`answer` finds the file and asks again without it). ``field`` names the
    user's part of the query (``where`` or ``sql``), blamed when no file is damaged."""

    field: str | None = None


def blamed(exc: DataReadError) -> AttndynError:
    """``exc`` once every catalogued run file is sound: an InputError naming ``exc.field``
    (e.g. ``--where "'abc'"`` fails casting to BOOL only when it runs), or ``exc`` itself."""
    if exc.field is None:
        return exc
    detail = str(exc).removeprefix("cannot read the results: ")
    if exc.field == "sql":
        return InputError(f"invalid SQL: {detail}")
    return InputError(f"invalid value for '{exc.field}': {detail}")


def _limit_error(field: str | None, text: str) -> AttndynError:
    """A query stopped at a limit: bad input naming ``field`` (the user's SQL or condition),
    else a StoreError (exit 1) for a query attndyn built."""
    if field is None:
        return StoreError(f"the query {text}")
    return InputError(f"invalid value for '{field}': the query {text}")


def memory_error(con: duckdb.DuckDBPyConnection, field: str | None) -> AttndynError:
    from attndyn.store.views import limits_of, size_text

    limit = size_text(limits_of(con).memory)
    return _limit_error(
        field,
        f"needs more than its memory limit of {limit} (narrow it, or raise the limit: --memory "
        "SIZE or $ATTNDYN_QUERY_MEMORY, e.g. 8GB)",
    )


@contextlib.contextmanager
def stoppable(con: duckdb.DuckDBPyConnection, field: str | None = None):
    """Run queries on ``con`` that Ctrl-C and the time limit stop (:func:`limits_of`).

    A timer thread interrupts the query at the time limit (``con.interrupt()``); Ctrl-C does
    the same at once. DuckDB holds the main thread while a query runs, so Python's own SIGINT
    handler would run only when it returns: the signal also wakes a watcher thread (through
    :func:`signal.set_wakeup_fd`, written by the C-level handler), which interrupts the query.
    Ctrl-C then raises KeyboardInterrupt (the CLI's one line, exit 130); the time limit an
    InputError naming ``field`` (StoreError without one); DuckDB's memory limit likewise."""
    from attndyn.store.views import limits_of

    limit = limits_of(con).time_s
    why: list[str] = []

    def stop(reason: str) -> None:
        why.append(reason)
        con.interrupt()

    timer = threading.Timer(limit, stop, ("time",)) if limit else None
    if timer is not None:
        timer.daemon = True
        timer.start()
    watcher = _watch_sigint(lambda: stop("ctrl-c"))
    try:
        yield
    except duckdb.OutOfMemoryException:
        if not why:
            raise memory_error(con, field) from None
    except Exception:
        if not why:
            raise
    finally:
        if timer is not None:
            timer.cancel()
        watcher()
    if "ctrl-c" in why:
        raise KeyboardInterrupt
    if why:
        raise _limit_error(
            field,
            f"ran past its time limit of {limit:g} s and was stopped (raise the limit: "
            "--timeout SECONDS or $ATTNDYN_QUERY_TIMEOUT; 0: none)",
        )


def _watch_sigint(stop):
    """Call ``stop`` on SIGINT while a query runs (main thread only; elsewhere nothing is
    installed: Ctrl-C reaches the main thread). Returns the function that restores the
    previous handler and wakeup file."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    read, write = os.pipe()
    os.set_blocking(write, False)
    old_handler = signal.signal(signal.SIGINT, lambda *_: stop())
    try:
        old_fd = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # pragma: no cover - not the main interpreter
        signal.signal(signal.SIGINT, old_handler)
        os.close(read)
        os.close(write)
        return lambda: None

    def watch() -> None:
        while True:
            try:
                data = os.read(read, 64)
            except OSError:
                return
            if not data:  # the write end closed: the query is over
                return
            if signal.SIGINT in data:
                stop()

    thread = threading.Thread(target=watch, name="attndyn-query-sigint", daemon=True)
    thread.start()

    def restore() -> None:
        signal.set_wakeup_fd(old_fd)
        signal.signal(signal.SIGINT, old_handler)
        os.close(write)
        thread.join(timeout=1)
        os.close(read)

    return restore


def planned(con: duckdb.DuckDBPyConnection, sql: str, params=None, field: str = "where") -> None:
    """InputError when ``sql`` does not bind (EXPLAIN plans it without reading data)."""
    try:
        with stoppable(con, field):
            for st in con.extract_statements(sql):
                if st.type.name == "SELECT":
                    con.execute(f"EXPLAIN {st.query}", params or [])
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0]
        if field == "sql":
            raise InputError(f"invalid SQL: {first}") from None
        raise InputError(f"invalid value for '{field}': {first}") from None


def executed(
    con: duckdb.DuckDBPyConnection, sql: str, params=None, field: str | None = None
) -> pd.DataFrame:
    """The result of ``sql`` (already :func:`planned`); DataReadError when reading fails.
    Ctrl-C and the time and memory limits stop it (:func:`stoppable`); a result larger than
    the memory limit is refused while it is fetched, in chunks (10⁸ rows held 1.8 GB)."""
    from attndyn.store.views import limits_of

    budget = limits_of(con).memory
    try:
        with stoppable(con, field):
            result = con.execute(sql, params or [])
            parts: list[Any] = []
            held = 0
            while True:
                part = result.fetch_df_chunk(CHUNK_VECTORS)
                if parts and part.empty:
                    break
                parts.append(part)
                held += int(part.memory_usage(index=False, deep=True).sum())
                if held > budget:
                    raise memory_error(con, field)
                if part.empty:
                    break
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):  # pragma: no cover
        raise  # stoppable turns them into KeyboardInterrupt or a limit error
    except duckdb.Error as exc:
        err = DataReadError(f"cannot read the results: {str(exc).splitlines()[0]}")
        err.field = field
        raise err from None
    return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)


def answer(root, ask, limits=None):
    """``ask(con)`` on a connection to ``root`` (within ``limits``, default
    :meth:`attndyn.store.views.Limits.resolve`); when it fails reading stored data
    (DataReadError), the catalogued run files are checked (:meth:`Store.problem`), each damaged
    one is named in one warning line and left out, and ``ask`` runs once more. Nothing is
    moved (``simulate`` and ``sweep`` quarantine)."""
    from attndyn.store.views import connect, limits_of

    con = connect(root, limits=limits)
    try:
        return ask(con)
    except DataReadError as exc:
        bad = damaged_runs(con, root)
        if not bad:
            raise blamed(exc) from None
    return ask(reconnect(root, bad, limits_of(con)))


def reconnect(root, bad: set[str], limits=None) -> duckdb.DuckDBPyConnection:
    """A connection to ``root`` without the run files ``bad``; the warnings of the first
    connection are not printed twice."""
    import io

    from attndyn.store.views import connect

    with contextlib.redirect_stderr(io.StringIO()):
        return connect(root, exclude=bad, limits=limits)


def damaged_runs(con: duckdb.DuckDBPyConnection, root) -> set[str]:
    """File names of the catalogued runs that fail their checks, each named on stderr."""
    from attndyn.store.files import Store, damaged_files

    names = [Path(f).name for (f,) in con.execute("SELECT file FROM runs").fetchall()]
    return damaged_files(Store(root), names)


def _invalid_where(exc: duckdb.Error) -> InputError:
    return InputError(f"invalid value for 'where': {str(exc).splitlines()[0]}")


def utf8(value, field: str) -> str:
    """``value`` when it is text DuckDB can take (a str that encodes as UTF-8), else InputError
    naming ``field``: a shell's ``$'\\xff'`` reaches Python as a lone surrogate."""
    if not isinstance(value, str):
        raise InputError(f"invalid value for '{field}': must be text (got {type(value).__name__})")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        char = value[exc.start]
        what = (  # a byte the shell passed through (surrogateescape), or a lone surrogate
            f"byte {ord(char) - 0xDC00:02x}"
            if 0xDC80 <= ord(char) <= 0xDCFF
            else f"lone surrogate U+{ord(char):04X}"
        )
        raise InputError(
            f"invalid value for '{field}': not UTF-8 text ({what} at character {exc.start})"
        ) from None
    return value


READ_STATEMENTS = ("SELECT", "EXPLAIN")
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:ANALYZE\s+|ANALYSE\s+)?(?:\([^()]*\)\s*)?", re.I)


def read_only(con: duckdb.DuckDBPyConnection, sql: str, field: str = "sql") -> None:
    """InputError unless every statement of ``sql`` is a SELECT (WITH … SELECT included) or an
    EXPLAIN [ANALYZE] of one: no COPY, ATTACH, CREATE, SET, … and none of them under EXPLAIN
    (EXPLAIN ANALYZE executes its statement)."""
    allowed = "SELECT or EXPLAIN of a SELECT"
    utf8(sql, field)
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise InputError(f"invalid value for '{field}': {str(exc).splitlines()[0]}") from None
    if not statements:
        raise InputError(f"invalid value for '{field}': no statement")
    for st in statements:
        kind = st.type.name
        if kind == "EXPLAIN":
            inner = _EXPLAIN.sub("", st.query, count=1)
            try:
                explained = con.extract_statements(inner) if inner != st.query else []
            except duckdb.Error:
                explained = []
            kinds = [x.type.name for x in explained]
            if kinds != ["SELECT"]:
                raise InputError(
                    f"invalid value for '{field}': only {allowed} statements are allowed "
                    f"(got EXPLAIN of {'/'.join(kinds) or 'an unparsed statement'})"
                )
        elif kind != "SELECT":
            raise InputError(
                f"invalid value for '{field}': only {allowed} statements are allowed (got {kind})"
            )


def check_where(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """InputError unless ``where`` is one boolean expression: no ';', no comment, parentheses
    that never close more than they open, and one SELECT statement once wrapped."""
    depth = 0
    utf8(where, "where")
    try:
        tokens = duckdb.tokenize(where)
    except duckdb.Error as exc:
        raise _invalid_where(exc) from None
    for i, (start, kind) in enumerate(tokens):
        end = tokens[i + 1][0] if i + 1 < len(tokens) else len(where)
        text = where[start:end].strip()
        if kind == duckdb.token_type.comment:
            raise InputError("invalid value for 'where': comments are not allowed")
        if kind in (duckdb.token_type.string_const, duckdb.token_type.comment):
            continue
        depth += text.count("(") - text.count(")")
        if ";" in text:
            raise InputError("invalid value for 'where': one expression, no ';'")
        if depth < 0:
            raise InputError("invalid value for 'where': unbalanced ')'")
    if depth != 0:
        raise InputError("invalid value for 'where': unbalanced '('")
    try:
        statements = con.extract_statements(f"SELECT 1 WHERE ({where})")
    except duckdb.Error as exc:  # e.g. ':' tokenizes but does not parse
        raise _invalid_where(exc) from None
    if len(statements) != 1:
        raise InputError("invalid value for 'where': one expression only")
    read_only(con, f"SELECT 1 WHERE ({where})", "where")


def runs(
    con: duckdb.DuckDBPyConnection,
    family: str | None = None,
    experiment: str | None = None,
    where: str | None = None,
) -> pd.DataFrame:
    """Stored runs ordered by creation: every column of ``runs`` (config as JSON text), or,
    with ``family``, of that family's typed view, which ``where`` may then refer to."""
    if where:
        check_where(con, where)
    view, cond, params = _selection(con, family, experiment)
    clauses = [c for c in (cond, f"({where})" if where else "") if c]
    sql = f"SELECT * FROM {view}" + (f" WHERE {' AND '.join(clauses)}" if clauses else "")
    sql += " ORDER BY created, run_id"
    planned(con, sql, params)
    return executed(con, sql, params, "where" if where else None)


def flat_config(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its JSON ``config`` column (if any) replaced by one column per flattened
    config field; a field named like another column (ignoring case) becomes ``config.<field>``."""
    if "config" not in frame.columns:
        return frame
    flat = pd.DataFrame(
        [flatten(json.loads(c)) if isinstance(c, str) else {} for c in frame["config"]],
        index=frame.index,
    )
    taken = {c.lower() for c in frame.columns if c != "config"}
    flat.columns = [f"config.{c}" if c.lower() in taken else c for c in flat.columns]
    return pd.concat([frame.drop(columns="config"), flat], axis=1)


def export(
    con: duckdb.DuckDBPyConnection,
    output: Path,
    format_: str = "csv",
    family: str | None = None,
    experiment: str | None = None,
    where: str | None = None,
) -> int:
    """Write runs × observables to ``output`` (csv or parquet; temporary file, then rename):
    one row per recorded value with its run's columns, from ``runs`` or, with ``family``, from
    that family's typed view. A run column named like an observable column (``seed``, …)
    becomes ``config_<name>``. ``where`` filters on the joined columns. Returns the row count."""
    if format_ not in FORMATS:
        allowed = " or ".join(FORMATS)
        raise InputError(f"invalid value for 'format': must be {allowed} (got {format_!r})")
    if where:
        check_where(con, where)
    view, cond, params = _selection(con, family, experiment)
    run_cols = [r[0] for r in con.execute(f"DESCRIBE {view}").fetchall()]
    select = ["r.run_id"]
    for col in run_cols:
        if col in ("run_id", "file"):
            continue
        alias = f"config_{col}" if col.lower() in OBSERVABLE_COLUMNS else col
        select.append(f'r."{col}" AS "{alias}"')
    select += [f"o.{c}" for c in OBSERVABLE_COLUMNS]
    runs_sql = f"SELECT * FROM {view}" + (f" WHERE {cond}" if cond else "")
    joined = (
        f"SELECT {', '.join(select)} FROM ({runs_sql}) r JOIN observables o ON o.run_id = r.run_id"
    )
    sql = f"SELECT * FROM ({joined})" + (f" WHERE ({where})" if where else "")
    sql += " ORDER BY run_id, name, seed, time"
    if output.is_dir():
        raise InputError(f"invalid value for 'output': {output} is a folder; give a file name")
    planned(con, sql, params)  # bad SQL: nothing is written
    field = "where" if where else None
    with stoppable(con, field):  # Ctrl-C and the limits; an interrupted export writes nothing
        return _write(con, sql, params, output, format_, field)


def _write(con, sql: str, params, output: Path, format_: str, field: str | None) -> int:
    """Stream the rows of ``sql`` into ``output`` (a temporary file, then rename)."""
    tmp = output.with_name(f".{output.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        reader = con.sql(sql, params=params).to_arrow_reader()
    except (duckdb.InterruptException, duckdb.OutOfMemoryException):
        raise
    except duckdb.Error as exc:
        err = DataReadError(f"cannot read the results: {str(exc).splitlines()[0]}")
        err.field = field
        raise err from None
    written = 0
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:  # Python opens any file name (pyarrow: UTF-8 names only)
            if format_ == "parquet":
                writer = pq.ParquetWriter(fh, reader.schema, compression="zstd")
            else:
                writer = pacsv.CSVWriter(fh, reader.schema)
            with writer:
                for batch in reader:
                    writer.write_batch(batch)
                    written += batch.num_rows
        os.replace(tmp, output)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, duckdb.InterruptException | duckdb.OutOfMemoryException):
            raise  # stoppable turns them into KeyboardInterrupt or a limit error
        if isinstance(exc, duckdb.Error | pa.ArrowException):  # reading the stored data
            if "interrupt" in str(exc).lower():  # DuckDB's error surfaced through Arrow
                raise duckdb.InterruptException(str(exc)) from None
            err = DataReadError(f"cannot read the results: {str(exc).splitlines()[0]}")
            err.field = field
            raise err from None
        if isinstance(exc, OSError):
            raise StoreError(f"cannot write {output}: {exc.strerror or exc}") from None
        raise
    return written
