"""Smoke test of the circuits benchmark (a quick run; no timing assertions)."""

import json
import math

import numpy as np
import pytest

from attndyn.models.circuits.bench import bench_config, run_circuits_benchmark
from attndyn_bench.circuits import torch_reference_loop


def test_quick_run_rows():
    rows = run_circuits_benchmark(quick=True, torch_reference=False, log=False, seeds=2)
    assert len(rows) == 1
    row = rows[0]
    assert (row["param"], row["batch"], row["seq_len"], row["seeds"]) == ("FAFO", 32, 64, 2)
    assert math.isfinite(row["seed_steps_per_s"]) and row["seed_steps_per_s"] > 0
    assert row["steps_timed"] > 0 and row["diverged_seeds"] == 0
    assert row["speedup_vs_torch_reference"] is None and row["torch_note"]
    json.dumps(row)


@pytest.mark.long
def test_torch_reference_learns_like_attndyn():
    """The reference loop is the same task and model: at η = 1 both leave the log 50 plateau of
    the eye·1e-6 OV init at the same time and sit on the log 4 plateau (the four label tokens
    learned, the class not yet) at step 400 (measured: 1.39–1.46 for both)."""
    torch = pytest.importorskip("torch")
    import attndyn

    config = bench_config().model_copy(update={"lr": 1.0})
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        step = torch_reference_loop(config)
        losses = [step() for _ in range(400)]
    finally:
        torch.set_num_threads(threads)
    traj = attndyn.simulate(
        "circuits", param="FAFO", lr=1.0, t_max=400, seeds=2, records=2, test_size=256
    )
    assert losses[0] == pytest.approx(np.log(50), rel=1e-3)
    assert abs(np.mean(losses[-20:]) - np.log(4)) < 0.25
    assert np.all(np.abs(traj["loss"].values[:, -1] - np.log(4)) < 0.25)


def test_fixed_attention_benchmark_rows():
    """``attndyn bench --name circuits-fixed-attention`` is declared by the circuits family and a
    short run gives one row per OV parameterisation (no timing assertions)."""
    from attndyn.models import benchmarks
    from attndyn.models.circuits.theory.bench import run_fixed_attention_benchmark

    family, declared = benchmarks()["circuits-fixed-attention"]
    assert family == "circuits"
    assert declared.target.endswith(":run_fixed_attention_benchmark")
    rows = run_fixed_attention_benchmark(quick=True, torch_reference=False, log=False, steps=5)
    assert [r["ov"] for r in rows] == ["collapsed", "factorised"]
    for row in rows:
        assert row["alphas"] == 5 and row["steps_timed"] == 5
        assert math.isfinite(row["ms_per_step"]) and row["ms_per_step"] > 0
        assert row["ms_per_model_step"] == pytest.approx(row["ms_per_step"] / 5)
        assert row["speedup_per_model_step"] is None and row["torch_note"]
        json.dumps(row)
