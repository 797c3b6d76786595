"""The Slurm route for real (slow; docs/sweeps.md "On a Slurm cluster with dask-jobqueue").

A single-node Slurm (slurmctld, slurmd, munge from Debian's packages, on 127.0.0.1) is started by
scripts/slurm-local.sh; dask-jobqueue's SLURMCluster submits two one-core Dask worker jobs; a sweep
of 16 tiny AIM runs runs on them through ``run_sweep(executor="dask", address=...)``; one worker
job is cancelled with ``scancel`` once the first runs are stored. The sweep must complete with
every run stored exactly once and the results folder sound. Bounded: 240 s for the sweep.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask_jobqueue
import pytest

from attndyn.store.check import problems
from attndyn.sweep import load_spec, run_sweep

pytestmark = pytest.mark.long

ROOT = Path(__file__).resolve().parents[1]
SPEC = """
family = "aim"
max_group_seeds = 2
[base]
d = 8
t_max = 0.05
records = 4
batch = 4
test_size = 8
[grid]
lr = [0.02, 0.05]
seed = [0, 1, 2, 3, 4, 5, 6, 7]
"""
N_RUNS = 16
SWEEP_LIMIT_S = 240


@pytest.fixture(scope="module")
def slurm(tmp_path_factory) -> dict[str, str]:
    """Start the local cluster (installs the Debian packages when they are missing: root)."""
    if os.geteuid() != 0:
        pytest.fail("the local Slurm needs root (daemons and jobs run as root)")
    state = tmp_path_factory.mktemp("slurm")
    env = dict(os.environ, SLURM_LOCAL=str(state))
    subprocess.run(["bash", str(ROOT / "scripts" / "slurm-local.sh"), "start"], env=env, check=True)
    os.environ["SLURM_CONF"] = str(state / "slurm.conf")
    yield env
    subprocess.run(["bash", str(ROOT / "scripts" / "slurm-local.sh"), "stop"], env=env)
    os.environ.pop("SLURM_CONF", None)


def test_sweep_on_slurm_survives_a_cancelled_job(slurm, tmp_path):
    spec = tmp_path / "slurm.toml"
    spec.write_text(SPEC)
    expected = {r.run_id for r in load_spec(spec).expand()}
    results = tmp_path / "results"
    logs = tmp_path / "jobs"
    logs.mkdir()
    cluster = dask_jobqueue.SLURMCluster(
        cores=1,
        processes=1,
        memory="3GB",
        walltime="00:10:00",
        interface="lo",
        python=sys.executable,
        log_directory=str(logs),
        job_script_prologue=["export OMP_NUM_THREADS=1"],
    )
    summary: dict = {}
    try:
        cluster.scale(jobs=2)
        job_ids = wait_for_jobs(cluster, 2)
        thread = threading.Thread(
            target=lambda: summary.update(
                s=run_sweep(
                    spec,
                    results,
                    executor="dask",
                    address=cluster.scheduler_address,
                    progress=False,
                )
            ),
            daemon=True,
        )
        start = time.monotonic()
        thread.start()
        while len(stored(results)) < 2 and time.monotonic() - start < SWEEP_LIMIT_S:
            time.sleep(0.2)
        assert len(stored(results)) >= 2, "no run stored on the Slurm workers"
        subprocess.run([shutil.which("scancel") or "scancel", job_ids[0]], check=True)
        cancelled_at = len(stored(results))
        fewest_workers = 2
        while thread.is_alive() and time.monotonic() - start < SWEEP_LIMIT_S:
            fewest_workers = min(fewest_workers, len(cluster.scheduler_info.get("workers", {})))
            time.sleep(0.2)
        thread.join(1)
        assert not thread.is_alive(), f"the sweep did not finish in {SWEEP_LIMIT_S} s"
    finally:
        cluster.close()
    s = summary["s"]
    assert cancelled_at < N_RUNS, "the job was cancelled after the sweep had finished"
    assert fewest_workers < 2, "the cancelled job's worker never left the scheduler"
    assert s.total == N_RUNS and s.done + s.failed == N_RUNS and s.failed == 0, s.as_json()
    files = stored(results)
    assert sorted(p.stem for p in files) == sorted(expected)  # each run exactly once
    assert not list((results / "runs").glob(".*.tmp"))  # no temporary left behind
    assert problems(results) == []
    print(
        f"cancelled job {job_ids[0]} after {cancelled_at} of {N_RUNS} runs; "
        f"{fewest_workers} worker(s) left; sweep: {s.as_json()}"
    )


def wait_for_jobs(cluster, n: int, limit_s: float = 60) -> list[str]:
    """The Slurm job ids of ``n`` running worker jobs (after their workers joined)."""
    start = time.monotonic()
    while time.monotonic() - start < limit_s:
        ids = [job.job_id for job in cluster.workers.values() if getattr(job, "job_id", None)]
        if len(ids) >= n and len(cluster.scheduler_info.get("workers", {})) >= n:
            return ids
        time.sleep(0.5)
    out = subprocess.run(["squeue"], capture_output=True, text=True).stdout
    pytest.fail(f"{n} Slurm worker jobs did not start in {limit_s} s; squeue:\n{out}")


def stored(results: Path) -> list[Path]:
    return sorted((results / "runs").glob("*.parquet"))
