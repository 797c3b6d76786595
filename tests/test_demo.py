"""`attndyn demo`: the README's main job, and the physics it shows (P1 Fig. 2, h2)."""

import subprocess
import sys

import numpy as np


def test_demo_runs_stores_and_shows_tied_recovering_direct_trapped(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [sys.executable, "-m", "attndyn", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "expected time: about " in proc.stdout.splitlines()[1]  # said before it runs
    assert (out / "figures" / "demo-p12.png").stat().st_size > 10_000
    assert "demo-p12.png" in proc.stdout
    from attndyn import results

    res = results(out)
    runs = res.runs("aim").set_index("param")
    assert set(runs.index) == {"tied", "direct"}
    tied = res.trajectory(runs.loc["tied", "run_id"])
    direct = res.trajectory(runs.loc["direct", "run_id"])
    assert int(tied["samples"][-1]) == int(direct["samples"][-1])  # the same sample budget
    p_tied = tied["p_12"].isel(time=-1).values
    p_direct = direct["p_12"].isel(time=-1).values
    # measured at d = 128, 4 seeds: tied mean 0.49 (min 0.46); direct mean −0.004, max |p| 0.067
    assert p_tied.min() > 0.3
    assert abs(p_direct.mean()) < 0.03 and np.abs(p_direct).max() < 0.15
    # a second run reuses the stored runs
    again = subprocess.run(
        [sys.executable, "-m", "attndyn", "demo", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0 and len(res.runs()) == 2
    assert "expected time: a few seconds (stored runs are reused)" in again.stdout
