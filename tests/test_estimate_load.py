"""Estimates hold on a busy machine (issue 27, item 5): a calibration taken beside a CPU-bound
process is within :data:`FACTOR` of the run it estimates, taken beside the same process."""

import subprocess
import sys
import time

import pytest

from attndyn import runs
from attndyn.runs import estimate
from attndyn.store import Store

FACTOR = 4.0
"""The stated bound on estimate/actual either way (a wall-clock calibration under load was
46× too high: 69 min estimated, 1.5 min run, issue 27)."""

# a small aim run: about a second of steps on two cores (compile aside)
CONFIG = {"d": 16, "t_max": 4.0, "lr": 0.05, "records": 8, "seeds": 2}


@pytest.mark.slow  # ~7 s: a run beside a CPU-bound background process
def test_estimate_beside_a_cpu_bound_process_is_within_a_factor_of_the_run(tmp_path):
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        config = runs.family_config("aim", CONFIG)
        est = estimate.calibrate("aim", config)
        start = time.perf_counter()
        runs.simulation("aim", config, Store(tmp_path))
        actual = time.perf_counter() - start
    finally:
        hog.kill()
        hog.wait()
    assert est.load is not None and est.load >= 0
    assert "at load" in estimate.summary_line(est) or est.exact
    # the run pays a recompile, not the calibration's first compile
    predicted = est.recompile_s + est.run_seconds(config.total_steps, config.seeds)
    ratio = predicted / actual
    assert 1 / FACTOR <= ratio <= FACTOR, (predicted, actual, est.load)
