"""The run database at sweep scale: the catalog, the runs / failures / experiments views, and
the ``attndyn runs`` and ``attndyn export`` commands (synthetic runs, no simulation)."""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from helpers import cli

from attndyn.core.config import canonical, run_id
from attndyn.core.trajectory import make_trajectory
from attndyn.models.aim import AIMConfig
from attndyn.store import Store, connect
from attndyn.store.catalog import CATALOG, merge_type

TIMES = np.array([0.0, 0.5, 1.0])


def fake_run(store: Store, **values) -> str:
    """Store a synthetic 2-seed run of an AIM config (observables: the config's d, lr and the
    seed, so that values can be checked)."""
    config = AIMConfig(**values)
    seeds = np.arange(config.seed, config.seed + config.seeds)
    loss = np.outer(seeds + 1.0, 1.0 - TIMES) * config.lr
    traj = make_trajectory(
        {"loss": loss, "q_12": np.full_like(loss, float(config.d))},
        time=TIMES,
        samples=np.array([0, 10, 20]),
        step=np.array([0, 10, 20]),
        seeds=seeds,
        family="aim",
        config=canonical(config),
    )
    rid = run_id("aim", config)
    store.write(traj, rid, wall_s=0.5)
    return rid


@pytest.fixture
def folder(tmp_path):
    store = Store(tmp_path / "results")
    ids = [
        fake_run(store, d=d, lr=lr, seed=s, seeds=2)
        for d in (8, 16)
        for lr in (0.01, 0.02)
        for s in (0, 2)
    ]
    return store, ids


def test_catalog_follows_added_rewritten_and_deleted_runs(folder):
    store, ids = folder
    con = connect(store.root)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (8,)
    catalog = store.root / CATALOG
    assert catalog.is_file()
    first = catalog.stat().st_mtime_ns

    # nothing changed: the catalog is read, not rewritten
    assert connect(store.root).execute("SELECT count(*) FROM runs").fetchone() == (8,)
    assert catalog.stat().st_mtime_ns == first

    new = fake_run(store, d=32, lr=0.01, seed=0, seeds=2)
    rows = connect(store.root).execute("SELECT run_id, d FROM runs_aim WHERE d = 32").fetchall()
    assert rows == [(new, 32)]

    # a rewritten run (same id) shows its new record
    meta = store.metadata(ids[0])
    store.write(store.read(ids[0]), ids[0], wall_s=7.25)
    assert store.metadata(ids[0])["wall_s"] == 7.25 != meta["wall_s"]
    wall = connect(store.root).execute("SELECT wall_s FROM runs WHERE run_id = ?", [ids[0]])
    assert wall.fetchone() == (7.25,)

    store.path(ids[1]).unlink()
    con = connect(store.root)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (8,)
    assert con.execute("SELECT count(*) FROM runs WHERE run_id = ?", [ids[1]]).fetchone() == (0,)


def test_damaged_or_missing_catalog_is_rebuilt(folder):
    store, ids = folder
    connect(store.root)
    catalog = store.root / CATALOG
    catalog.write_bytes(b"PAR1 not a parquet file")
    con = connect(store.root)
    assert sorted(r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()) == sorted(ids)
    assert pq.ParquetFile(catalog).metadata.num_rows == 8
    catalog.unlink()
    assert connect(store.root).execute("SELECT count(*) FROM runs").fetchone() == (8,)


def test_catalog_is_a_cache_on_a_read_only_view(folder):
    store, _ = folder
    con = connect(store.root, save_catalog=False)
    assert con.execute("SELECT count(*) FROM runs").fetchone() == (8,)
    assert not (store.root / CATALOG).exists()


def test_runs_view_columns_types_and_the_observables_join(folder):
    store, ids = folder
    con = connect(store.root)
    cols = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE runs)").fetchall())
    for name in ("run_id", "family", "experiment", "sweep", "status", "wall_s", "version"):
        assert name in cols
    assert "created" in cols and "file" in cols and cols["config"] == "JSON"
    cols = dict(con.execute("SELECT column_name, column_type FROM (DESCRIBE runs_aim)").fetchall())
    assert (cols["d"], cols["lr"], cols["param"], cols["wall_s"]) == (
        "BIGINT",
        "DOUBLE",
        "VARCHAR",
        "DOUBLE",
    )
    # the seed-mean loss at t = 0 is lr·(mean seed + 1): checks the join and the values
    rows = con.execute(
        "SELECT r.lr, r.seed, avg(o.value) FROM runs_aim r JOIN observables o USING (run_id) "
        "WHERE o.name = 'loss' AND o.time = 0 AND r.d = 8 GROUP BY 1, 2 ORDER BY 1, 2"
    ).fetchall()
    expected = [(0.01, 0, 0.015), (0.01, 2, 0.035), (0.02, 0, 0.03), (0.02, 2, 0.07)]
    assert [r[:2] for r in rows] == [e[:2] for e in expected]
    np.testing.assert_allclose([r[2] for r in rows], [e[2] for e in expected], rtol=1e-12)
    # run_id from the file name (prunes files) equals the stored column
    stored = pq.read_table(store.path(ids[3])).column("run_id").unique().to_pylist()
    one = con.execute("SELECT DISTINCT run_id FROM observables WHERE run_id = ?", [ids[3]])
    assert one.fetchall() == [(stored[0],)]


def test_mixed_value_types_widen():
    assert merge_type(None, "BIGINT") == "BIGINT"
    assert merge_type("BIGINT", "DOUBLE") == "DOUBLE"
    assert merge_type("DOUBLE", "BIGINT") == "DOUBLE"
    assert merge_type("BIGINT", "VARCHAR") == "VARCHAR"
    assert merge_type("BOOLEAN", "BIGINT") == "VARCHAR"


def test_failures_view_and_clearing(folder):
    store, _ = folder
    config = {"d": 8, "activation": "boom"}
    store.write_failure(
        "abc123", kind="family", name="aim", config=config, error=RuntimeError("it\nbroke")
    )
    rows = connect(store.root).execute("SELECT run_id, name, error, config FROM failures")
    (rid, name, error, cfg), *rest = rows.fetchall()
    assert not rest and (rid, name) == ("abc123", "aim")
    assert error == "RuntimeError: it broke" and json.loads(cfg) == config
    store.clear_failure("abc123")
    assert connect(store.root).execute("SELECT count(*) FROM failures").fetchone() == (0,)


def experiment_record(name, run_ids, passed=True):
    return {
        "experiment": name,
        "preset": "small",
        "run_ids": run_ids,
        "claims": [{"name": "c1", "statement": "s", "value": 1.0, "target": "t", "passed": passed}],
        "summary": {},
        "figure": "f.png",
        "config": {"d": [8, 16], "seeds": 2},
    }


def test_experiment_links_and_runs_experiment_filter(folder, monkeypatch, capsys):
    store, ids = folder
    store.write_experiment(experiment_record("exp-a", ids[:3]), "exp-a-small-1", wall_s=2.5)
    store.write_experiment(experiment_record("exp-b", ids[2:4], False), "exp-b-small-2")
    con = connect(store.root)
    rows = dict(con.execute("SELECT run_id, experiment FROM runs").fetchall())
    assert [rows[i] for i in ids[:5]] == ["exp-a", "exp-a", "exp-a,exp-b", "exp-b", None]
    exps = con.execute(
        "SELECT key, experiment, passed, n_claims, wall_s, config->>'seeds', config->'d' "
        "FROM experiments ORDER BY key"
    ).fetchall()
    assert exps == [
        ("exp-a-small-1", "exp-a", True, 1, 2.5, "2", "[8,16]"),
        ("exp-b-small-2", "exp-b", False, 1, None, "2", "[8,16]"),
    ]
    typed = con.execute("SELECT key, seeds, d FROM experiments_exp_a").fetchall()
    assert typed == [("exp-a-small-1", 2, "[8, 16]")]
    code, out, _ = cli(
        monkeypatch, capsys, "runs", "--out", str(store.root), "--experiment", "exp-b", "--json"
    )
    assert code == 0
    assert sorted(r["run_id"] for r in json.loads(out)) == sorted(ids[2:4])


def test_runs_command_family_where_json_csv_and_table(folder, monkeypatch, capsys):
    store, ids = folder
    root = str(store.root)
    args = ("runs", "--out", root, "--family", "aim")
    code, out, _ = cli(monkeypatch, capsys, *args, "--where", "d = 16", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 4 and {r["d"] for r in rows} == {16}
    assert {"run_id", "family", "status", "wall_s", "version", "created", "lr"} <= set(rows[0])
    code, out, _ = cli(monkeypatch, capsys, *args, "--where", "lr > 0.015 AND seed = 2", "--csv")
    frame = pd.read_csv(pd.io.common.StringIO(out))
    assert code == 0 and len(frame) == 2 and set(frame["lr"]) == {0.02}
    code, out, _ = cli(monkeypatch, capsys, "runs", "--out", root, "--where", "n_diverged = 0")
    assert code == 0 and "8 runs" in out
    # without --family: the common columns and the nested config as JSON
    code, out, _ = cli(monkeypatch, capsys, "runs", "--out", root, "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) == 8 and "d" not in rows[0]
    assert {r["config"]["d"] for r in rows} == {8, 16}
    code, _, err = cli(monkeypatch, capsys, *args, "--where", "nope = 1")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'where'" in err


def test_runs_table_at_80_columns_keeps_kind_and_the_varying_fields(folder, monkeypatch, capsys):
    """The table puts run_id, family, kind and the config fields that vary first, and keeps
    status and n_diverged at any width (issue 51); a narrow terminal drops the other columns on
    the right, and names them."""
    from rich.console import Console

    from attndyn.cli.ui import terminal

    store, _ = folder
    monkeypatch.setattr(terminal, "console", Console(width=80))
    code, out, _ = cli(monkeypatch, capsys, "runs", "--out", str(store.root), "--family", "aim")
    header = next(line for line in out.splitlines() if "run_id" in line)
    assert code == 0
    for column in ("family", "kind", "d", "lr", "status", "n_diverged"):
        assert f" {column} " in header, (column, header)
    assert "not shown" in out
    hidden = out.split("not shown")[1]
    assert "created" in hidden
    assert " seed " in header or "seed" in hidden  # a varying field is shown or named


def test_runs_command_bad_family_lists_the_stored_ones(folder, monkeypatch, capsys):
    store, _ = folder
    code, out, err = cli(monkeypatch, capsys, "runs", "--out", str(store.root), "--family", "x")
    assert code == 2 and not out
    assert err.strip().splitlines() == [
        "error: invalid value for 'family': must be one of aim (got 'x')"
    ]
    # a registered family with no runs here is not called unknown
    code, out, err = cli(
        monkeypatch, capsys, "runs", "--out", str(store.root), "--family", "markov"
    )
    assert code == 2 and not out
    assert err.strip().splitlines() == [
        "error: invalid value for 'family': no markov runs in this results folder "
        "(families stored: aim)"
    ]


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_export_writes_runs_joined_with_observables(folder, monkeypatch, capsys, tmp_path, fmt):
    store, ids = folder
    output = tmp_path / "exports" / f"table.{fmt}"
    base = ("export", "--format", fmt, "--out", str(store.root), "--output", str(output))

    def read():
        return pd.read_csv(output) if fmt == "csv" else pd.read_parquet(output)

    code, out, err = cli(monkeypatch, capsys, *base, "--family", "aim")
    assert code == 0, err
    frame = read()
    n_obs = connect(store.root).execute("SELECT count(*) FROM observables").fetchone()[0]
    assert len(frame) == n_obs == 8 * 2 * 3 * 2  # runs × seeds × times × observables
    assert f"wrote {n_obs} rows" in out
    # the config's first seed and the observation's seed are both kept
    assert {"config_seed", "seed", "d", "lr", "name", "value", "time"} <= set(frame.columns)
    q = frame[(frame["name"] == "q_12")]
    assert (q["value"] == q["d"]).all()
    assert [p.name for p in output.parent.iterdir()] == [output.name]  # no temporary left

    where = ("--where", "name = 'loss' AND d = 8")
    code, _, _ = cli(monkeypatch, capsys, *base, "--family", "aim", *where)
    frame = read()
    assert code == 0 and len(frame) == 4 * 2 * 3 and set(frame["name"]) == {"loss"}

    # without --family: the common columns and the config as JSON text
    code, _, _ = cli(monkeypatch, capsys, *base, "--where", "(config->>'d')::INT = 8")
    frame = read()
    assert code == 0 and len(frame) == 4 * 2 * 3 * 2 and "d" not in frame.columns
    assert {json.loads(c)["d"] for c in frame["config"]} == {8}


def test_export_bad_input(folder, monkeypatch, capsys, tmp_path):
    store, _ = folder
    output = tmp_path / "x.csv"
    code, _, err = cli(monkeypatch, capsys, "export", "--format", "xlsx", "--out", str(store.root))
    assert code == 2 and "'format'" in err
    code, _, err = cli(
        monkeypatch,
        capsys,
        "export",
        "--out",
        str(store.root),
        "--output",
        str(output),
        "--where",
        "bogus > 1",
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and not output.exists()
    assert os.listdir(tmp_path) == ["results"]
    nested = tmp_path / "new" / "x.csv"
    code, _, err = cli(
        monkeypatch,
        capsys,
        "export",
        "--out",
        str(store.root),
        "--output",
        str(nested),
        "--family",
        "nope",
    )
    assert code == 2 and "must be one of aim" in err
    assert os.listdir(tmp_path) == ["results"]


def test_claims_view_reads_records_with_and_without_intervals(folder):
    """Records written before claims had intervals (no ci_low/ci_high/n_seeds columns) and new
    ones share the claims view; the old ones read NULL there, also when no record has them.
    A record without its seals is foreign (issue 48): it is left out."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attndyn.store.files import checksum, record_checksum

    store, ids = folder
    old = {"experiment": "exp-b", "preset": "small", "key": "exp-b-small-2", "claim": "c0"}
    old |= {"statement": "s", "value": 2.0, "target": "t", "passed": True}
    old |= {"created": "2026-01-01T00:00:00Z", "version": "0.0"}
    record = {"experiment": "exp-b", "preset": "small", "key": "exp-b-small-2", "claims": [old]}
    table = pa.Table.from_pylist([old])  # as written then: no interval columns
    path = store.root / "experiments" / "exp-b-small-2.parquet"
    path.parent.mkdir()
    pq.write_table(table.replace_schema_metadata({"attndyn": json.dumps(record)}), path)
    assert connect(store.root).execute("SELECT count(*) FROM claims").fetchone() == (0,)
    record["checksum"] = checksum(table)
    record["record_checksum"] = record_checksum(record)
    pq.write_table(table.replace_schema_metadata({"attndyn": json.dumps(record)}), path)
    query = "SELECT claim, value, ci_low, ci_high, n_seeds FROM claims ORDER BY claim"
    assert connect(store.root).execute(query).fetchall() == [("c0", 2.0, None, None, None)]
    new = experiment_record("exp-a", ids[:1])
    new["claims"][0] |= {"ci_low": 0.5, "ci_high": 1.5, "n_seeds": 8}
    store.write_experiment(new, "exp-a-small-1")
    rows = connect(store.root).execute(query).fetchall()
    assert rows == [("c0", 2.0, None, None, None), ("c1", 1.0, 0.5, 1.5, 8)]


def _files(root):
    """Every stored file with its size and time (the run catalog, an index that opening the folder
    refreshes, aside)."""
    return sorted(
        (str(p.relative_to(root)), p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file() and p.name != CATALOG
    )


INJECTIONS = [
    # issue 14's probes: statements smuggled through --where, and reads outside the folder
    "1=1); COPY (SELECT 1 AS x) TO 'RUN' (FORMAT parquet); SELECT * FROM runs WHERE (1=1",
    "1=1; DROP VIEW runs",
    "1=1 -- trailing comment",
    "1=1) OR (1=1",
    "CAST((SELECT * FROM read_csv('/etc/passwd')) AS INT) = 1",
]


@pytest.mark.parametrize("where", INJECTIONS)
def test_where_is_one_read_only_expression(folder, monkeypatch, capsys, tmp_path, where):
    store, ids = folder
    where = where.replace("RUN", str(store.root / "runs" / f"{ids[0]}.parquet"))
    before = _files(store.root)
    output = tmp_path / "x.csv"
    for command in (("runs",), ("export", "--output", str(output))):
        code, out, err = cli(
            monkeypatch, capsys, *command, "--out", str(store.root), "--where", where
        )
        assert code == 2, (command, out, err)
        assert len(err.strip().splitlines()) == 1 and "'where'" in err
        assert "root:" not in err  # nothing of /etc/passwd is echoed
    assert _files(store.root) == before and not output.exists()


@pytest.mark.parametrize(
    "sql",
    [
        "COPY (SELECT 1 AS x) TO 'RUN' (FORMAT parquet)",
        "ATTACH 'ROOT/evil.db'",
        "CREATE TABLE t AS SELECT 1",
        "SET enable_external_access = true",
        "SELECT 1; COPY (SELECT 1) TO 'RUN'",
        "SELECT * FROM read_csv('/etc/passwd')",
        "INSTALL httpfs",
        # EXPLAIN ANALYZE executes its statement (issue 33)
        "EXPLAIN ANALYZE COPY (SELECT * FROM observables) TO 'RUN' (FORMAT parquet)",
        "EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO 'ROOT/runs/evil.parquet' (FORMAT parquet)",
        "EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO 'ROOT/notes.csv'",
        "EXPLAIN ANALYZE CREATE TABLE t AS SELECT 1",
        "EXPLAIN DROP VIEW runs",
        "explain analyse insert into t values (1)",
        "/* c */ EXPLAIN ANALYZE COPY (SELECT 1) TO 'ROOT/x.csv'",
        "EXPLAIN ANALYZE SELECT 1; EXPLAIN ANALYZE COPY (SELECT 1) TO 'ROOT/y.csv'",
    ],
)
def test_query_cannot_write_or_read_outside_the_folder(folder, monkeypatch, capsys, sql):
    store, ids = folder
    sql = sql.replace("RUN", str(store.root / "runs" / f"{ids[0]}.parquet"))
    sql = sql.replace("ROOT", str(store.root))
    before = _files(store.root)
    code, out, err = cli(monkeypatch, capsys, "query", sql, "--out", str(store.root))
    assert code == 2 and len(err.strip().splitlines()) == 1, (out, err)
    assert "root:" not in err
    assert _files(store.root) == before


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) AS n FROM runs",
        "WITH r AS (SELECT run_id FROM runs) SELECT count(*) AS n FROM r",
        "EXPLAIN SELECT count(*) AS n FROM runs",
        "EXPLAIN ANALYZE SELECT count(*) AS n FROM runs",
    ],
)
def test_read_statements_run(folder, monkeypatch, capsys, sql):
    store, _ = folder
    before = _files(store.root)
    code, out, err = cli(monkeypatch, capsys, "query", sql, "--out", str(store.root), "--json")
    assert code == 0, err
    assert json.loads(out) and _files(store.root) == before


def test_read_queries_still_work_after_the_lock(folder, monkeypatch, capsys):
    store, ids = folder
    code, out, err = cli(
        monkeypatch,
        capsys,
        "query",
        "SELECT count(*) AS n FROM runs WHERE run_id IN (SELECT run_id FROM observables)",
        "--out",
        str(store.root),
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)[0]["n"] == len(ids)
    code, out, err = cli(
        monkeypatch, capsys, "runs", "--out", str(store.root), "--where", "family = 'aim'"
    )
    assert code == 0, err


# --- damaged, foreign and misnamed run files (issue 14, items 2–4) --------------------------


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _with_footer(path, text: bytes):
    table = pq.read_table(path)
    pq.write_table(table.replace_schema_metadata({b"attndyn": text}), path)


def _with_altered_value(path):
    table = pq.read_table(path)
    meta = table.schema.metadata
    frame = table.to_pandas()
    frame.loc[0, "value"] += 1.0
    import pyarrow as pa

    pq.write_table(
        pa.Table.from_pandas(frame, preserve_index=False).replace_schema_metadata(meta), path
    )


@pytest.mark.parametrize("damage", ["truncate", "bad-json", "altered", "copied"])
def test_a_damaged_run_file_is_reported_quarantined_and_redone(folder, monkeypatch, capsys, damage):
    store, ids = folder
    victim = store.path(ids[1])
    if damage == "truncate":
        _truncate(victim)
    elif damage == "bad-json":
        _with_footer(victim, b"{not json")
    elif damage == "altered":
        _with_altered_value(victim)
    else:  # run 0's file under run 1's name
        victim.write_bytes(store.path(ids[0]).read_bytes())
    assert store.problem(ids[1]) is not None
    # read commands answer, without a traceback, and never blame the user's query
    for args in (
        ("runs",),
        ("runs", "--where", "family = 'aim'"),
        ("query", "SELECT count(*) FROM observables"),
    ):
        code, out, err = cli(monkeypatch, capsys, *args, "--out", str(store.root))
        assert code == 0, (args, err)
        assert "invalid" not in err and "Traceback" not in err
    # a run that is stored once is listed once
    code, out, _ = cli(monkeypatch, capsys, "runs", "--out", str(store.root), "--json")
    listed = [r["run_id"] for r in json.loads(out)]
    assert len(listed) == len(set(listed))
    # load-or-compute: the damaged run is moved aside and counted as missing
    assert store.load(ids[1]) is None
    assert not victim.exists()
    quarantined = list((store.root / "quarantine").iterdir())
    assert len(quarantined) == 1 and quarantined[0].name.startswith(ids[1])
    assert "damaged run file" in capsys.readouterr().err
    assert store.load(ids[0]) is not None  # the sound ones are untouched


def test_a_foreign_file_adds_no_rows_and_sweeps_redo_only_damaged_runs(folder, monkeypatch, capsys):
    store, ids = folder
    (store.runs / "notarun.parquet").write_bytes(store.path(ids[0]).read_bytes())
    n = connect(store.root).execute("SELECT count(*) FROM observables").fetchone()[0]
    assert n == len(ids) * 2 * 3 * 2  # the copy under a foreign name adds nothing
    _truncate(store.path(ids[2]))
    assert [store.stored(r) for r in ids] == [r != ids[2] for r in ids]
    assert not store.stored(ids[2])  # quarantined, so still missing: a sweep redoes it


@pytest.mark.parametrize("sub", ["experiments", "failures"])
def test_an_empty_parquet_in_experiments_or_failures_breaks_no_read_command(
    folder, monkeypatch, capsys, sub
):
    store, ids = folder
    (store.root / sub).mkdir(exist_ok=True)
    (store.root / sub / "empty.parquet").write_bytes(b"")
    for args in (("runs",), ("query", "SELECT count(*) AS n FROM claims")):
        code, out, err = cli(monkeypatch, capsys, *args, "--out", str(store.root))
        assert code == 0, (args, err)
        assert "skipping file" in err and "unreadable" in err and "Traceback" not in err


def test_a_table_shows_at_most_a_thousand_rows(folder, monkeypatch, capsys):
    """Issue 33 item 5: 10⁶ rows as a table took 215 s and 1.1 GB; a table shows the first
    1,000 and says how to get all (--csv and --json print every row)."""
    store, _ = folder
    sql = "SELECT range AS i FROM range(5000)"
    code, out, err = cli(monkeypatch, capsys, "query", sql, "--out", str(store.root))
    assert code == 0 and "showing the first 1,000 of 5,000 rows" in err
    assert " 999 " in out and " 1000 " not in out
    code, out, err = cli(monkeypatch, capsys, "query", sql, "--csv", "--out", str(store.root))
    assert code == 0 and len(out.strip().splitlines()) == 5001
