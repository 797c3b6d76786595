"""Smoke test of the markov benchmark (no timing assertions) and of its PyTorch references."""

import json
import math

import numpy as np
import pytest

from attndyn.models.markov.bench import (
    adam_config,
    gd_config,
    run_markov_benchmark,
    step_flops,
)

SIZES = {
    "m": 8,
    "t_flow": 50.0,
    "n_sequences": 500,
    "batch": 32,
    "peak_n": 256,
    "bs3_t_stop": 20.0,
}


@pytest.mark.slow  # 8 CPU s
def test_quick_benchmark_rows():
    rows = run_markov_benchmark(quick=True, torch_reference=False, log=False, seeds=2, sizes=SIZES)
    assert [r["row"] for r in rows] == ["flow/ros2", "flow/bs3", "adam", "adam"]
    for flow in rows[:2]:
        for field in ("flow_wall_s", "flow_steps_per_s", "gd_steps_per_s", "gd_wall_s_projected",
                      "flow_speedup_vs_gd", "gd_fraction_of_matmul_peak",
                      "flow_wall_s_projected"):  # fmt: skip
            assert math.isfinite(flow[field]) and flow[field] > 0, field
        assert flow["flow_steps"] > 0 and flow["flow_diverged"] == 0
        assert flow["t_flow"] == 50.0 and flow["m"] == 8
    assert rows[0]["flow_t_reached"] == 50.0 and rows[1]["flow_t_reached"] == 20.0
    # ROS2 reached the horizon, so its projection is its wall time
    assert rows[0]["flow_wall_s_projected"] == rows[0]["flow_wall_s"]
    assert rows[1]["flow_wall_s_projected"] > rows[1]["flow_wall_s"]
    for flow in rows[:2]:
        assert flow["torch_steps_per_s"] is None and flow["gd_speedup_vs_torch"] is None
    assert [r["seeds"] for r in rows[2:]] == [1, 2]
    for row in rows[2:]:
        for field in ("steps_per_s", "seed_steps_per_s", "seed_throughput_ratio", "sample_s"):
            assert math.isfinite(row[field]) and row[field] > 0, field
        assert row["n_sequences"] == 500 and row["batch"] == 32
    assert rows[2]["seed_throughput_ratio"] == 1.0
    json.dumps(rows)  # the CLI prints rows as JSON


def test_step_flops_formula():
    d, m = 4, 256
    forward = 2 * d * m * m * 2 + 2 * d * d * m * 2  # W0WQ, W0WK, then Φ and M
    assert step_flops(d, m) == 3 * forward


def _torch_params_to_jax(p):
    import jax.numpy as jnp

    return {k: jnp.asarray(v.detach().numpy()) for k, v in p.items()}


def test_torch_population_gradient_matches_simulator():
    """The PyTorch reference computes Prop. 2.3's loss and the simulator's gradient."""
    torch = pytest.importorskip("torch")
    import jax

    from attndyn.models.markov import data_law, model
    from attndyn_bench.markov import torch_population_step

    config = gd_config(6, init_scale=0.3)
    _, p, loss = torch_population_step(config)
    value = loss()
    grads = torch.autograd.grad(value, list(p.values()))
    law = data_law(config)
    params = _torch_params_to_jax(p)
    ref_value, ref_grads = jax.value_and_grad(model.population_loss)(
        params, np.asarray(law.pi, np.float32), np.asarray(law.P, np.float32)
    )
    assert float(value.detach()) == pytest.approx(float(ref_value), rel=1e-5)
    for name, g in zip(p, grads, strict=True):
        np.testing.assert_allclose(g.numpy(), np.asarray(ref_grads[name]), rtol=1e-3, atol=1e-6)


def test_torch_adam_batch_loss_matches_simulator():
    """The PyTorch reference's batch loss is the simulator's last-position cross-entropy."""
    torch = pytest.importorskip("torch")

    import jax
    import jax.numpy as jnp

    from attndyn.models.markov import data, data_law, model
    from attndyn_bench.markov import torch_adam_step

    config = adam_config(6, 200, 16, 1, init_scale=0.3)
    _, p, batch_loss = torch_adam_step(config)

    law = data_law(config)
    seqs = data.sample_sequences(jax.random.PRNGKey(3), jnp.asarray(law.P, jnp.float32), 16, 21)
    ours = batch_loss(torch.from_numpy(np.array(seqs, dtype=np.int64)))
    ref = model.sequence_loss(_torch_params_to_jax(p), seqs)
    assert float(ours.detach()) == pytest.approx(float(ref), rel=1e-5)
