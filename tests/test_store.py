"""Store: atomic writes, read-back, DuckDB views, skip-existing."""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import xarray as xr

import attndyn
from attndyn.core.config import run_id
from attndyn.core.trajectory import make_trajectory
from attndyn.runs import family_config as make_config
from attndyn.runs import simulation as run_config
from attndyn.store import Store, StoreError, connect


@pytest.fixture(scope="module")
def stored(tmp_path_factory):
    root = tmp_path_factory.mktemp("results")
    config = make_config(
        "aim", dict(d=10, seeds=2, t_max=0.05, records=4, batch=4, test_size=8, param="untied")
    )
    traj, reused = run_config("aim", config, Store(root))
    return root, config, traj, reused


@pytest.mark.slow  # 5 CPU s
def test_roundtrip_restores_the_trajectory(stored):
    root, config, traj, reused = stored
    assert not reused
    back = Store(root).read(run_id("aim", config))
    xr.testing.assert_allclose(traj.drop_attrs(), back.drop_attrs())
    assert back.attrs["run_id"] == run_id("aim", config)
    assert "time_fast" in back.coords


def test_views_list_runs_and_observables(stored):
    root, config, traj, _ = stored
    con = connect(root)
    runs = con.execute("SELECT run_id, family, param, d, seeds, status FROM runs_aim").fetchall()
    assert runs == [(run_id("aim", config), "aim", "untied", 10, 2, "ok")]
    d = con.execute("SELECT (config->>'d')::INTEGER, config->>'param' FROM runs").fetchall()
    assert d == [(10, "untied")]
    n = con.execute("SELECT count(*) FROM observables").fetchone()[0]
    assert n == traj.sizes["seed"] * traj.sizes["time"] * len(traj.data_vars)
    q12 = con.execute(
        "SELECT value FROM observables WHERE name = 'q_12' AND seed = 1 ORDER BY time"
    ).fetchnumpy()["value"]
    np.testing.assert_allclose(q12, traj["q_12"].sel(seed=1).values)


def test_rerun_skips_existing_and_force_recomputes(stored):
    root, config, traj, _ = stored
    again, reused = run_config("aim", config, Store(root))
    assert reused
    forced, reused = run_config("aim", config, Store(root), force=True)
    assert not reused
    np.testing.assert_allclose(forced["q_12"].values, traj["q_12"].values, rtol=1e-6)


def test_a_run_recorded_by_older_observables_is_recomputed(tmp_path, monkeypatch):
    """Run ids hash the config, not the code: a stored run whose ``observables_version`` is not
    the family's OBSERVABLES_VERSION (models/base.py) is computed again, then reused."""
    from attndyn.models import get_family

    config = make_config("markov", dict(m=4, t_max=2.0, lr=0.1, records=3, seeds=1))
    traj, reused = run_config("markov", config, Store(tmp_path))
    family = get_family("markov")
    assert not reused and traj.attrs["observables_version"] == family.OBSERVABLES_VERSION
    assert run_config("markov", config, Store(tmp_path))[1]  # same version: reused
    monkeypatch.setattr(family, "OBSERVABLES_VERSION", family.OBSERVABLES_VERSION + 1)
    monkeypatch.setattr(
        "attndyn.models.markov.simulation.OBSERVABLES_VERSION", family.OBSERVABLES_VERSION
    )
    again, reused = run_config("markov", config, Store(tmp_path))
    assert not reused and again.attrs["observables_version"] == family.OBSERVABLES_VERSION
    assert run_config("markov", config, Store(tmp_path))[1]


def test_python_api_results_and_simulate_with_out(stored, tmp_path):
    root, config, _, _ = stored
    res = attndyn.results(root)
    assert len(res.runs()) == 1
    assert set(res.observables()["name"]) >= {"q_12", "m_1"}
    traj = attndyn.simulate("aim", out=tmp_path, d=8, seeds=1, t_max=0.02, records=3, test_size=0)
    assert (tmp_path / "runs" / f"{traj.attrs['run_id']}.parquet").is_file()


def test_empty_results_folder_has_empty_views(tmp_path):
    (tmp_path / "empty").mkdir()
    con = connect(tmp_path / "empty")
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert con.execute("SELECT count(*) FROM observables").fetchone()[0] == 0


def test_writer_killed_mid_write_leaves_no_visible_run(stored, tmp_path):
    """A child process writes half of a run file and dies (os._exit, no cleanup): the results
    folder shows no run, and the next write of the same run succeeds."""
    root, config, traj, _ = stored
    rid = run_id("aim", config)
    out = tmp_path / "crash"
    Store(out).runs.mkdir(parents=True)
    child = textwrap.dedent(f"""
        import os, pyarrow.parquet as pq
        from attndyn.store import Store
        src = Store({str(root)!r})
        traj = src.read({rid!r})
        def dying_write(table, fh, **kw):
            fh.write(b"PAR1" + b"x" * 4096)  # a partial file
            fh.flush()
            os._exit(9)
        pq.write_table = dying_write
        Store({str(out)!r}).write(traj, {rid!r})
    """)
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=120)
    assert proc.returncode == 9
    leftovers = list((out / "runs").iterdir())
    assert leftovers and all(p.suffix == ".tmp" for p in leftovers)  # the half-file is hidden
    store = Store(out)
    assert not store.exists(rid) and store.run_ids() == []
    assert connect(out).execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    store.write(Store(root).read(rid), rid)
    assert store.exists(rid)


def test_unwritable_results_folder_is_a_clear_error(stored, tmp_path):
    root, config, traj, _ = stored
    blocker = tmp_path / "file-not-folder"
    blocker.write_text("x")
    with pytest.raises(StoreError, match="cannot write results"):
        Store(blocker).write(traj, "abc")
    assert blocker.read_text() == "x"


def write_fake(store, rid, family, config, seeds=True):
    """Store a run of ``family`` with ``config`` (one observable, no simulation)."""
    time = np.array([0.0, 1.0])
    loss = np.ones((2, 2)) if seeds else np.ones(2)
    traj = make_trajectory(
        {"loss": loss},
        time=time,
        samples=np.array([0, 10]),
        step=np.array([0, 10]),
        seeds=np.arange(2) if seeds else None,
        family=family,
        config=config,
    )
    store.write(traj, rid)


def column_types(con, view):
    return dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {view})").fetchall())


def test_families_keep_their_own_config_names_and_types(tmp_path):
    """One family's ``m`` (an integer) next to another's ``M`` (text): each is a column of its
    own family's view, under its own name and type; the JSON column reaches both."""
    store = Store(tmp_path / "results")
    write_fake(store, "lower-1", "small", {"m": 5, "d": 10})
    write_fake(store, "lower-2", "small", {"m": 7, "d": 12}, seeds=False)
    write_fake(store, "upper-1", "large", {"M": "big", "status": "draft"})
    con = connect(store.root)
    small, large = column_types(con, "runs_small"), column_types(con, "runs_large")
    assert (small["m"], small["d"]) == ("BIGINT", "BIGINT") and "M" not in small
    assert large["M"] == "VARCHAR" and "m" not in large
    rows = con.execute("SELECT run_id, kind, m FROM runs_small ORDER BY run_id").fetchall()
    assert rows == [("lower-1", "simulation", 5), ("lower-2", "theory", 7)]
    # a config field shadows the common column of its name, in its family's view only
    assert con.execute("SELECT M, status FROM runs_large").fetchall() == [("big", "draft")]
    assert con.execute("SELECT DISTINCT status FROM runs").fetchall() == [("ok",)]
    across = con.execute(
        "SELECT family, config->>'m', config->>'M' FROM runs ORDER BY run_id"
    ).fetchall()
    assert across == [("small", "5", None), ("small", "7", None), ("large", None, "big")]
    assert "m" not in column_types(con, "runs")  # no config columns in the common view


def test_plugin_family_names_become_view_names(tmp_path):
    store = Store(tmp_path / "results")
    write_fake(store, "a", "Toy.Plugin-2", {"w": 0.5, "nested": {"C": [1, 2]}})
    write_fake(store, "b", "toy_plugin_2", {"w": 1})
    con = connect(store.root)
    views = con.execute("SELECT name, view FROM config_views ORDER BY name").fetchall()
    assert views == [("Toy.Plugin-2", "runs_toy_plugin_2"), ("toy_plugin_2", "runs_toy_plugin_2_2")]
    rows = con.execute('SELECT w, "nested.C" FROM runs_toy_plugin_2').fetchall()
    assert rows == [(0.5, "[1, 2]")]
    assert column_types(con, "runs_toy_plugin_2_2")["w"] == "BIGINT"


def test_fields_of_one_family_differing_in_case_are_both_columns(tmp_path):
    store = Store(tmp_path / "results")
    write_fake(store, "both", "cased", {"m": 3, "M": "x"})
    con = connect(store.root)
    types = column_types(con, "runs_cased")
    assert (types["M"], types["m_1"]) == ("VARCHAR", "BIGINT")  # stored order: M, m
    assert con.execute('SELECT "M", m_1 FROM runs_cased').fetchall() == [("x", 3)]


def test_catalog_of_an_older_version_is_rebuilt(tmp_path):
    import pyarrow.parquet as pq

    from attndyn.store.catalog import CATALOG

    store = Store(tmp_path / "results")
    write_fake(store, "one", "fam", {"d": 4})
    connect(store.root)
    path = store.root / CATALOG
    table = pq.read_table(path)
    old = json.dumps({"catalog": 1, "types": {"d": "BIGINT"}}).encode()
    pq.write_table(table.replace_schema_metadata({b"attndyn": old}), path)
    assert connect(store.root).execute("SELECT d FROM runs_fam").fetchall() == [(4,)]
