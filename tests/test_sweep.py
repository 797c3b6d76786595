"""Sweeps that run: stored values, provenance, failures that do not stop a sweep, storage errors,
and the local Dask cluster path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow.parquet as pq
import pytest

import attndyn
from attndyn.models import aim
from attndyn.runs import family_config as make_config
from attndyn.store import Store, connect
from attndyn.sweep import load_spec, run_sweep

TINY = """
family = "aim"
{extra}
[base]
d = 8
t_max = 0.05
records = 4
batch = 4
test_size = 8
seeds = 2
[grid]
{grid}
"""
OBS = ["run_id", "seed", "time", "samples", "step", "name", "value"]


def spec_file(tmp_path, grid: str, extra: str = "", name: str = "tiny.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(TINY.format(grid=grid, extra=extra)))
    return path


def values(root):
    return {
        p.stem: pq.read_table(p).select(OBS).replace_schema_metadata(None)
        for p in sorted((root / "runs").glob("*.parquet"))
    }


@pytest.fixture(scope="module")
def zipped(tmp_path_factory):
    """A local sweep (2 workers) of 4 runs (2 seeds each) in 2 tasks: lr 0.02 with seed = 0, 2,
    4 (one vmapped group over seeds 0-5) and lr 0.03 with seed 6 (alone)."""
    folder = tmp_path_factory.mktemp("zipped")
    path = spec_file(folder, "lr = [0.02, 0.02, 0.02, 0.03]\nseed = [0, 2, 4, 6]", "zip = true")
    out = folder / "results"
    summary = run_sweep(path, out, workers=2, progress=False)
    return path, out, summary


def test_grouped_runs_are_slices_of_one_vmapped_simulation(zipped):
    """Each stored run of a group is exactly its slice of the group's one simulation, with its
    own config and the group recorded; a config alone in its group runs exactly as
    ``attndyn.simulate``."""
    path, out, summary = zipped
    assert (summary.total, summary.done, summary.failed, summary.tasks) == (4, 4, 0, 2)
    base = dict(d=8, t_max=0.05, records=4, batch=4, test_size=8, seeds=2)
    whole = aim.simulate(make_config("aim", base | {"lr": 0.02}), seeds=list(range(6)))
    alone = attndyn.simulate("aim", **base, lr=0.03, seed=6)
    store = Store(out)
    for item in load_spec(path).expand():
        first = item.config["seed"]
        stored = store.read(item.run_id)
        assert stored["seed"].values.tolist() == [first, first + 1]
        grouped = item.config["lr"] == 0.02
        expected = whole.sel(seed=[first, first + 1]) if grouped else alone
        for name in expected.data_vars:
            # the sweep's worker processes and this one may split a float32 reduction over a
            # different number of XLA threads: equal to float32 rounding (measured: 6e-8 on values
            # of order 0.01–1), not bit for bit
            np.testing.assert_allclose(
                stored[name].values, expected[name].values, rtol=1e-6, atol=1e-6
            )
        meta = store.metadata(item.run_id)
        assert meta["config"] == item.config and meta["sweep"] == "tiny"
        assert meta["vmap_seeds"] == (list(range(6)) if grouped else None)
    rows = connect(out).execute("SELECT DISTINCT sweep FROM runs").fetchall()
    assert rows == [("tiny",)]
    again = run_sweep(path, out, workers=2, progress=False)
    assert (again.skipped, again.done, again.tasks) == (4, 0, 0)


SITECUSTOMIZE = """
from attndyn.models.aim.model import register_activation


def boom(g):
    raise RuntimeError("boom: this activation always fails")


register_activation("boom", boom)
"""


@pytest.mark.slow  # 11 CPU s
def test_failed_runs_are_recorded_and_the_sweep_goes_on(tmp_path):
    """An activation that raises (registered in every process through sitecustomize): its runs
    are recorded in the failures view with the error and the config, the other runs are stored,
    and the sweep exits 1 after finishing."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    path = spec_file(tmp_path, 'activation = ["h2", "boom"]\nseed = [0, 2]')
    out = tmp_path / "results"
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])
    )
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "sweep", str(path), "--out", str(out), "--json"]
        + ["--workers", "2", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 1, proc.stderr
    summary = json.loads(proc.stdout)
    assert (summary["runs"], summary["ran"], summary["failed"]) == (4, 2, 2)
    con = connect(out)
    failures = con.execute(
        "SELECT run_id, kind, name, sweep, error, config FROM failures ORDER BY run_id"
    ).fetchall()
    assert len(failures) == 2
    for rid, kind, name, sweep, error, config in failures:
        assert (kind, name, sweep) == ("family", "aim", "tiny")
        assert "RuntimeError: boom: this activation always fails" in error
        assert json.loads(config)["activation"] == "boom"
        assert rid in {f["run_id"] for f in summary["failures"]}
    stored = con.execute("SELECT activation, count(*) FROM runs_aim GROUP BY 1").fetchall()
    assert stored == [("h2", 2)]


def test_results_folder_that_is_a_file_is_a_clear_error(tmp_path):
    path = spec_file(tmp_path, "seed = [0, 2]")
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("keep me")
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "sweep", str(path), "--out", str(blocker)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2  # an unwritable --out is found before anything runs
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: cannot write results to")
    assert blocker.read_text() == "keep me"
    assert set(tmp_path.iterdir()) == {path, blocker}


DISK_FULL = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # ignored dispositions survive exec and spawn
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
os.execv(sys.executable, [sys.executable, "-m", "attndyn", *sys.argv[1:]])
"""


@pytest.mark.slow  # 16 CPU s
@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="needs POSIX file-size limits")
def test_disk_full_mid_sweep_stops_with_a_clear_error_and_no_partial_files(tmp_path):
    """Writes past 4 KiB fail with EFBIG in the sweep and its workers, as on a full disk; every
    run file is larger: the first write fails, the sweep stops with one error line and exit 1,
    and nothing is left behind."""
    path = spec_file(tmp_path, "lr = [0.02, 0.04]\nseed = [0, 2]")
    out = tmp_path / "results"
    env = dict(os.environ, ATTNDYN_JAX_CACHE="off")
    proc = subprocess.run(
        [sys.executable, "-c", DISK_FULL, "sweep", str(path), "--out", str(out)]
        + ["--workers", "1", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: cannot write results to") and "File too large" in lines[0]
    # lock files (empty, docs/store.md "Locks") stay by design; nothing else may
    leftovers = [p for p in out.rglob("*") if p.is_file() and p.parent.name != "locks"]
    assert leftovers == [], leftovers


@pytest.mark.slow  # 6 CPU s
def test_dask_local_cluster_gives_the_local_executors_values(zipped, tmp_path):
    """``--executor dask`` without an address starts a local Dask cluster (here one worker);
    same stored values as the local process pool with two workers."""
    path, local_out, _ = zipped
    dask = run_sweep(path, tmp_path / "dask", executor="dask", workers=1, progress=False)
    assert (dask.done, dask.failed, dask.workers) == (4, 0, 1)
    a, b = values(local_out), values(tmp_path / "dask")
    assert a.keys() == b.keys() and len(a) == 4
    assert all(a[k].equals(b[k]) for k in a)


EXPERIMENT_SPEC = """
experiment = "aim-parameterization"
[base]
d = [8, 12]
d_h3 = [8, 12]
"base.t_max" = 0.05
t_max_h3 = 0.05
"base.records" = 4
"base.batch" = 4
[grid]
seeds = [2]
"""


@pytest.mark.long
def test_experiment_sweep_stores_experiment_runs_and_skips_them(tmp_path):
    """Each grid point of an experiment spec is one experiment run (tiny overrides: the claims
    need not pass); its record and its simulations are linked in the views (1–2 minutes with a
    cold compilation cache)."""
    path = tmp_path / "exp.toml"
    path.write_text(EXPERIMENT_SPEC)
    out = tmp_path / "results"
    summary = run_sweep(path, out, workers=1, progress=False)
    assert (summary.total, summary.done, summary.failed) == (1, 1, 0)
    (item,) = load_spec(path).expand()
    con = connect(out)
    rows = con.execute(
        "SELECT key, experiment, preset, seeds, wall_s FROM experiments_aim_parameterization"
    ).fetchall()
    assert len(rows) == 1 and rows[0][:4] == (item.run_id, "aim-parameterization", "small", 2)
    assert rows[0][4] > 0
    linked = con.execute(
        "SELECT count(*), count(*) FILTER (experiment = 'aim-parameterization') FROM runs "
        "WHERE run_id IN (SELECT run_id FROM experiment_runs)"
    ).fetchone()
    assert linked[0] > 0 and linked[0] == linked[1]
    again = run_sweep(path, out, workers=1, progress=False)
    assert (again.skipped, again.done) == (1, 0)


@pytest.mark.slow  # 4 CPU s
def test_unreachable_dask_scheduler_is_one_line_exit_1(tmp_path):
    pytest.importorskip("distributed")
    import socket

    with socket.socket() as sock:  # a loopback port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    path = spec_file(tmp_path, "seed = [0]")
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s")
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "sweep", str(path), "--out", str(tmp_path / "r")]
        + ["--executor", "dask", "--address", f"tcp://127.0.0.1:{port}", "--no-progress"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach the Dask scheduler" in lines[0], proc.stderr
