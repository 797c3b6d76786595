"""The langevin benchmark: its rows' fields (no timing assertions), and its NumPy (and PyTorch)
references compute the trainer's Euler–Maruyama trajectory for a few steps with the same noise."""

import importlib.util
import json
import math

import jax
import numpy as np
import pytest

from attndyn.core.trainer import Carry, make_advance, seed_keys
from attndyn.models import langevin as L
from attndyn.models.langevin import bench
from attndyn_bench import langevin as reference

TINY = {
    "double-well": dict(seeds=64),
    "lora": dict(seeds=2, n=8, d=4, width=5, rank=2),
    "attention": dict(seeds=2, n=4, tokens=3, d=3, heads=2, d_k=2),
}


def test_quick_benchmark_rows():
    """The double well only: each workload costs seconds of compilation (the LoRA and attention
    rows' flops are checked below, and every reference's trajectory)."""
    workloads = ("double-well",)
    rows = bench.run_langevin_benchmark(
        quick=True, torch_reference=False, log=False, sizes=TINY, workloads=workloads
    )
    assert tuple(r["workload"] for r in rows) == workloads
    for row in rows:
        for field in ("chain_steps_per_s", "numpy_chain_steps_per_s", "speedup_vs_numpy",
                      "reference_chain_steps_per_s", "speedup_vs_reference",
                      "matmul_peak_gflops", "cpus_used"):  # fmt: skip
            assert math.isfinite(row[field]) and row[field] > 0, field
        assert row["reference"] == "numpy" and row["torch_chain_steps_per_s"] is None
        assert row["chains"] == TINY[row["workload"]]["seeds"] and row["diverged_chains"] == 0
        assert row["speedup_vs_numpy"] == pytest.approx(
            row["chain_steps_per_s"] / row["numpy_chain_steps_per_s"]
        )
    assert rows[0]["gflops"] is None and rows[0]["flops_per_chain_step"] is None
    json.dumps(rows)  # the CLI prints rows as JSON


def test_flops_per_chain_step():
    """LoRA's exact trained-weight matmuls; attention 3 × its forward (bench's docstring)."""
    lora = bench.bench_config("lora")  # n 256, d 32, p 64, r 4
    forward = 2 * 256 * 4 * 32 + 2 * 256 * 64 * 4  # XAᵀ, (XAᵀ)Bᵀ
    backward = 2 * 256 * 64 * 4 * 2 + 2 * 256 * 4 * 32  # δᵀu, δB, (δB)ᵀX
    assert bench.flops_per_chain_step(lora) == forward + backward
    att = bench.bench_config("attention")  # n 64, T 8, d 8, H 2, d_k 4, W_V to d_out = 1
    head = 2 * 64 * 8 * (2 * 8 * 4 + 8 * 1) + 2 * 64 * 8**2 * (4 + 1)
    assert bench.flops_per_chain_step(att) == 3 * 2 * head
    assert bench.flops_per_chain_step(bench.bench_config("double-well")) == 0


def _generic_point(c, chains, seed=0):
    """Trained groups (chain axis first) and the frozen part at a random float64 point: the
    same structure as build(c).init, from NumPy (this skips compiling the model's draws)."""
    rng = np.random.default_rng(seed)
    if c.model == "double-well":
        return {"theta": rng.standard_normal((chains, c.dim))}, {}
    if c.model == "lora":
        frozen = {
            "X": rng.standard_normal((c.n, c.d)),
            "Y": rng.standard_normal(c.n),
            "W0": rng.standard_normal((c.width, c.d)) / np.sqrt(c.d),
            "a": rng.standard_normal(c.width) / np.sqrt(c.width),
        }
        params = {"A": rng.standard_normal((chains, c.rank, c.d)),
                  "B": rng.standard_normal((chains, c.width, c.rank))}  # fmt: skip
        if c.train_outer:
            params["a"] = rng.standard_normal((chains, c.width))
        return params, frozen
    shapes = L.model.attention_shapes(c)
    trained = L.model.attention_trained(c)
    y_shape = (c.n, c.tokens, c.d_out) if c.pooling == "none" else (c.n, c.d_out)
    frozen = {
        "X": rng.standard_normal((c.n, c.tokens, c.d)),
        "Y": rng.standard_normal(y_shape),
        "fixed": {g: rng.standard_normal(shape) for g, (shape, _) in shapes.items()
                  if g not in trained},
    }  # fmt: skip
    params = {g: rng.standard_normal((chains, *shapes[g][0])) for g in trained}
    return params, frozen


@pytest.mark.parametrize("workload", bench.WORKLOADS)
def test_references_follow_the_trainer_with_the_same_noise(workload):
    """On the benchmarked configs (float64): θ_k+1 = θ_k − h∇F + √(sh)ξ_k with the NumPy (and,
    for attention, PyTorch) gradients and ξ_k the trainer's own draws equals the trainer's θ
    after 4 steps."""
    steps = 4
    with jax.enable_x64(True):
        c = bench.bench_config(workload, TINY, dtype="float64", s=0.5)
        chains = min(c.seeds, 3)
        problem = L.build(c)
        params, frozen = _generic_point(c, chains)
        # set up in one jitted call: eager JAX ops compile one by one (seconds on a loaded CPU)
        state = jax.tree.map(lambda x: np.stack([x] * chains), frozen)
        opt, keys = jax.jit(
            lambda: (jax.vmap(problem.update.init)(params), seed_keys(np.arange(chains))[1])
        )()
        carry = Carry(params, opt, np.full(chains, -1, np.int32))
        after = make_advance(problem)(carry, state, keys, 0, steps)
        noise = bench.trainer_noise(problem, carry, keys, np.arange(steps))
        references = [None]
        if workload == "attention" and importlib.util.find_spec("torch") is not None:
            references.append(reference.torch_attention_gradients)
        for gradients in references:
            theta = {g: np.asarray(w) for g, w in params.items()}
            for k in range(steps):
                theta = reference.em_step(c, theta, frozen, {g: w[k] for g, w in noise.items()},
                                          gradients)  # fmt: skip
            for g in theta:
                assert np.std(noise[g]) > 0
                np.testing.assert_allclose(
                    theta[g], np.asarray(after.params[g]), rtol=1e-10, atol=1e-12
                )


@pytest.mark.parametrize(
    "workload, extra",
    [
        ("lora", {"activation": "sigmoid"}),
        ("lora", {"activation": "softplus", "train_outer": True}),
        ("attention", {"output": True, "pooling": "last", "d_v": 3}),
        ("attention", {"pooling": "none", "d_out": 2, "train_k": False}),
    ],
)
def test_numpy_gradients_are_jax_gradients(workload, extra):
    """The hand-written gradients on the other model options, at a random float64 point."""
    with jax.enable_x64(True):
        c = bench.bench_config(workload, TINY, dtype="float64", **extra)
        pot = L.potential(c)
        params, frozen = _generic_point(c, 2)
        ref = jax.jit(jax.vmap(jax.grad(pot.F), in_axes=(0, None)))(params, frozen)
        ours = reference.NUMPY_GRADIENTS[workload](c, params, frozen)
        assert sorted(ours) == sorted(ref)
        for g in ref:
            assert np.max(np.abs(ref[g])) > 1e-6
            np.testing.assert_allclose(ours[g], np.asarray(ref[g]), rtol=1e-10, atol=1e-12)
