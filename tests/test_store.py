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
    runs = con.execute("SELECT run_id, family, param, d, seeds, status FROM runs").fetchall()
    assert runs == [(run_id("aim", config), "aim", "untied", 10, 2, "ok")]
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


def test_python_api_results_and_simulate_with_out(stored, tmp_path):
    root, config, _, _ = stored
    res = attndyn.results(root)
    assert len(res.runs()) == 1
    assert set(res.observables()["name"]) >= {"q_12", "m_1"}
    traj = attndyn.simulate("aim", out=tmp_path, d=8, seeds=1, t_max=0.02, records=3, test_size=0)
    assert (tmp_path / "runs" / f"{traj.attrs['run_id']}.parquet").is_file()


def test_empty_results_folder_has_empty_views(tmp_path):
    con = connect(tmp_path / "nothing")
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


def test_config_keys_differing_only_in_case_get_distinct_columns(stored, tmp_path):
    """DuckDB matches struct keys and column names case-insensitively; a family with a field
    ``M`` next to another's ``m`` must still list both runs, each value in its own column."""
    _, _, traj, _ = stored
    store = Store(tmp_path / "results")
    for rid, extra in (("run-lower", {"m": 5}), ("run-upper", {"M": 20})):
        t = traj.copy()
        t.attrs = dict(traj.attrs, config=json.dumps({"d": 10, **extra}))
        store.write(t, rid)
    con = connect(tmp_path / "results")
    cols = [r[0] for r in con.execute("DESCRIBE runs").fetchall()]
    assert "m" in cols and "M_2" in cols
    rows = con.execute('SELECT run_id, m, "M_2" FROM runs ORDER BY run_id').fetchall()
    assert rows == [("run-lower", 5, None), ("run-upper", None, 20)]
