"""Smoke test of the query benchmark (no timing assertions) and of its NumPy reference."""

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.models.query import model, token_spec
from attndyn.models.query.bench import bench_config, run_query_benchmark
from attndyn_bench.query import numpy_gradient


@pytest.mark.slow  # 12 CPU s
def test_quick_benchmark_rows():
    rows = run_query_benchmark(quick=True, log=False, d=16, n_nuisance=300)
    labels = [r["sampler"] for r in rows]
    assert labels[:2] == ["full/whole", "full/chunked"]
    for row in rows:
        for field in ("steps_per_s", "step_over_draw", "draw_share", "speedup_vs_numpy",
                      "draw_s", "numpy_steps_per_s", "numpy_draw_s"):  # fmt: skip
            assert math.isfinite(row[field]) and row[field] > 0, field
        assert row["d"] == 16 and row["n_nuisance"] == 300
        json.dumps(row)  # the CLI prints rows as JSON
    assert rows[0]["target"] == "step_over_draw <= 1.5"
    assert isinstance(rows[0]["target_met"], bool)


def test_numpy_reference_gradient_matches_model():
    """The NumPy loop's gradient is the simulator's analytic gradient on the same tokens."""
    config = bench_config(12, 200, beta=0.7)
    spec = token_spec(config, n_seeds=1)
    u = jnp.eye(12, dtype=jnp.float32)[0]
    q = jnp.ones(12, jnp.float32) / np.sqrt(12)
    x, valid = model.all_tokens(jax.random.PRNGKey(0), u, spec)
    _, g = model.objective_and_grad_tokens(q, x, valid, spec.beta)
    x_np = np.asarray(x)[np.asarray(valid)].astype(np.float64)
    ref = numpy_gradient(np.asarray(q, np.float64), x_np, 0.7)
    np.testing.assert_allclose(np.asarray(g), ref, rtol=1e-4, atol=1e-5 * np.abs(ref).max())
