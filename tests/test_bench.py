"""Smoke test of the benchmark (no timing assertions)."""

import json
import math

import numpy as np
import pytest

from attndyn.models.aim.bench import bench_config, flops_per_sample, run_benchmark, widths

FIELDS = (
    "d",
    "batch",
    "samples_per_s",
    "gflops",
    "fraction_of_matmul_peak",
    "speedup_vs_torch_eager",
    "matmul_peak_gflops",
    "peak_source",
    "torch_samples_per_s",
    "steps_timed",
    "jax_version",
    "numpy_version",
)


@pytest.mark.slow  # 6 CPU s
def test_quick_benchmark_rows():
    rows = run_benchmark(quick=True, torch_reference=False, log=False, sizes=[(16, 2)], seeds=2)
    assert len(rows) == 1
    row = rows[0]
    for field in FIELDS:
        assert field in row
    assert (row["d"], row["batch"]) == (16, 2)
    for field in ("samples_per_s", "gflops", "fraction_of_matmul_peak", "matmul_peak_gflops"):
        assert math.isfinite(row[field]) and row[field] > 0, field
    assert row["steps_timed"] > 0
    assert row["speedup_vs_torch_eager"] is None and row["torch_samples_per_s"] is None
    assert row["dtype"] == "float32"
    json.dumps(row)  # the CLI prints rows as JSON


def test_flop_count_formula():
    config = bench_config(512, 64)
    r, r_star = widths(config)
    assert (r, r_star) == (256, 256)
    L, d = 2, 512
    by_term = 2 * L * d * r + 2 * L * d * r_star + 2 * L * d * r + 2 * L * L * (2 * r + r_star)
    assert flops_per_sample(d, L, r, r_star) == by_term


def test_torch_reference_matches_simulator_gradient():
    """The PyTorch eager loop computes the same loss gradient as the simulator."""
    torch = pytest.importorskip("torch")
    import jax
    import jax.numpy as jnp

    from attndyn.models.aim import build

    config = bench_config(16, 3)
    problem = build(config)
    params, state = problem.init(jax.random.PRNGKey(0))
    x = np.random.default_rng(0).standard_normal((3, 2, 16)).astype(np.float32)
    batch = {"x": jnp.asarray(x), "noise_key": jax.random.PRNGKey(1)}
    grad = np.asarray(jax.grad(problem.loss)(params, state, batch)["W"][0])

    from attndyn_bench.aim import torch_loss

    W = torch.tensor(np.asarray(params["W"][0]), requires_grad=True)
    F = torch.tensor(np.asarray(state["teacher"]["F"][0]))
    torch_loss(W, F, torch.tensor(x), config).backward()
    np.testing.assert_allclose(W.grad.numpy(), grad, rtol=1e-4, atol=1e-6)
