"""Benchmark: Euler–Maruyama chains of the Langevin family (``attndyn bench --name langevin``).

The trainer's step θ ← θ − h∇F(θ) + √(s h) ξ (docs/langevin.md, "Dynamics"), many chains vmapped
in one jitted ``fori_loop`` (:class:`attndyn.core.timing.AdvanceRunner`, no observation), on three
workloads: the 1-D double well F = (x² − 1)² + (λ/2)x² (many chains), LoRA regression and
attention regression (float32, sde). Each is timed against a reference loop in the same run
that does the same update for all chains at once, one Python iteration per step:

- NumPy (batched matmuls, so BLAS does the products) with hand-written gradients:
  4x(x² − 1) + λx for the double well; the closed-form
  backward of f(x) = Σ_j a_j σ(⟨(W₀ + BA)_j, x⟩) for LoRA (``lora_gradients``); the
  softmax-attention backward for attention (``attention_gradients``);
- for attention also PyTorch eager (autograd of Σ_chains F), with its default threads and with
  one thread, when torch is importable; ``reference`` names the faster reference.

The references live in :mod:`attndyn_bench.langevin`, imported only when a benchmark runs.

Row fields: ``chain_steps_per_s`` (chains × steps per second), ``reference_chain_steps_per_s``,
``speedup_vs_reference`` and ``speedup_vs_numpy``; for LoRA and attention ``gflops``: matmul
flops per chain-step (:func:`flops_per_chain_step`) × rate, and
``fraction_of_matmul_peak`` against the 2048² float32 GEMM
(:func:`attndyn.core.timing.matmul_peak`). ``cpus_used`` (CPU seconds per wall second)
and ``load_average_1min`` say how much of the machine the run had.
"""

from __future__ import annotations

import os

import jax
import numpy as np

from attndyn.core.config import validate
from attndyn.core.progress import notes
from attndyn.core.timing import (
    AdvanceRunner,
    calibrated_best,
    cpu_model,
    torch_reference_status,
    torch_threads,
)
from attndyn.models.base import Benchmark
from attndyn.models.langevin.config import LangevinConfig
from attndyn.models.langevin.simulation import build

BENCHMARKS = (
    Benchmark(
        "langevin",
        "attndyn.models.langevin.bench:run_langevin_benchmark",
        "Euler–Maruyama chains × steps/s (double well, LoRA, attention) against NumPy and "
        "PyTorch eager loops",
        (
            "workload",
            "chains",
            "chain_steps_per_s",
            "numpy_chain_steps_per_s",
            "speedup_vs_numpy",
            "reference",
            "speedup_vs_reference",
            "fraction_of_matmul_peak",
        ),
    ),
)
"""The family's benchmark (``attndyn bench --name langevin``)."""

WORKLOADS = ("double-well", "lora", "attention")
SIZES = {
    "double-well": dict(seeds=4096),  # the most SimulationConfig allows
    "lora": dict(seeds=32, n=256, d=32, width=64, rank=4),
    "attention": dict(seeds=16, n=64, tokens=8, d=8, heads=2, d_k=4),
}
QUICK_SIZES = {
    "double-well": dict(seeds=256),
    "lora": dict(seeds=4, n=16, d=6, width=8, rank=2),
    "attention": dict(seeds=3, n=8, tokens=4, d=4, heads=2, d_k=2),
}
COMMON = dict(dynamics="sde", s=0.1, h=0.01, lam=0.1, t_max=1.0, records=2)


def bench_config(workload: str, sizes: dict | None = None, **overrides):
    """The benchmarked LangevinConfig of ``workload`` (``seeds`` = the number of chains)."""
    values = {**COMMON, "model": workload, **(sizes or SIZES)[workload], **overrides}
    return validate(LangevinConfig, values)


# --- the trainer's noise, for checking the references -------------------------------------------


def trainer_noise(problem, carry, data_keys, steps) -> dict:
    """The √(s h) ξ that the trainer adds at each step k in ``steps`` to every chain: the update
    rule applied to zero gradients with the chain's key and its update count set to k (the
    rule's integer state leaves; attndyn.core.trainer.make_step). Returns
    {group: (len(steps), chains, ...)}."""
    import jax.numpy as jnp
    import optax

    rule = optax.with_extra_args_support(problem.update)

    def one(params, opt_state, data_key, k):
        at_k = jax.tree.map(
            lambda x: jnp.full_like(x, k) if jnp.issubdtype(x.dtype, jnp.integer) else x, opt_state
        )
        zeros = jax.tree.map(jnp.zeros_like, params)
        return rule.update(zeros, at_k, params, key=data_key)[0]

    one = jax.jit(one)  # one chain and step at a time: a small program, compiled once
    host = jax.tree.map(np.asarray, (carry.params, carry.opt_state, data_keys))
    draws = [
        [one(*jax.tree.map(lambda x, i=i: x[i], host), k) for i in range(len(data_keys))]
        for k in steps
    ]
    return {
        g: np.array([[np.asarray(d[g]) for d in per_step] for per_step in draws])
        for g in carry.params
    }


# --- timing -------------------------------------------------------------------------------------


def flops_per_chain_step(c) -> int:
    """Matmul flops of one chain's step that depend on the trained weights. LoRA, exactly:
    forward XAᵀ and (XAᵀ)Bᵀ, backward ∇_B = δᵀu, δB and ∇_A = (δB)ᵀX, i.e. 2n(2rd + 3pr); the
    loop-invariant XW₀ᵀ (2npd, which XLA may hoist) is not counted. Attention: 3 × the forward
    (backward ≈ 2 × forward), per head 2nT(2d d_k + d d_v) + 2nT²(d_k + d_v) (+ 2nT d_v d_out
    with W_O). 0 for the double well."""
    if c.model == "lora":
        return 2 * c.n * (2 * c.rank * c.d + 3 * c.width * c.rank)
    if c.model == "attention":
        dv = c.d_v if c.output else c.d_out
        per_head = 2 * c.n * c.tokens * (2 * c.d * c.d_k + c.d * dv)
        per_head += 2 * c.n * c.tokens**2 * (c.d_k + dv)
        if c.output:
            per_head += 2 * c.n * c.tokens * c.d_v * c.d_out
        return 3 * c.heads * per_head
    return 0


def _host(tree) -> dict:
    return {g: np.asarray(w) for g, w in tree.items()}


class ChainRunner(AdvanceRunner):
    """:class:`AdvanceRunner` whose set-up (init of every chain and its data) is one jitted
    call instead of op-by-op dispatch (seconds of compilation per op on a small config);
    ``state`` is the frozen part, with a leading chain axis."""

    def __init__(self, problem, seeds) -> None:
        from attndyn.core.trainer import init_seeds, make_advance

        self._block = jax.block_until_ready
        self.carry, self.state, self._keys = jax.jit(lambda: init_seeds(problem, seeds))()
        self._state = self.state
        self._advance = make_advance(problem)
        self.k = 0
        self(1)


def time_workload(c, min_seconds: float, repeats: int, torch_ok: bool, say) -> dict:
    """chain-steps/s of the trainer and of the references for one config."""
    from attndyn_bench.langevin import numpy_loop, torch_loop

    chains = c.seeds
    runner = ChainRunner(build(c), np.arange(chains))
    params = _host(runner.carry.params)  # the chains after the runner's first step
    frozen = jax.tree.map(lambda x: np.asarray(x[0]), runner.state)
    steps, seconds, cpu = calibrated_best(runner, min_seconds, repeats)
    row = {
        "chain_steps_per_s": steps * chains / seconds,
        "steps_per_s": steps / seconds,
        "steps_timed": steps,
        "cpus_used": cpu / seconds,
        "diverged_chains": int(np.sum(np.asarray(runner.carry.diverged_step) >= 0)),
    }
    say(f"  attndyn {row['chain_steps_per_s']:.3g} chain-steps/s; NumPy loop ...")
    run = numpy_loop(c, params, frozen)
    run(1)
    n_np, t_np, _ = calibrated_best(run, min_seconds, repeats, start=1)
    row["numpy_chain_steps_per_s"] = n_np * chains / t_np
    row["speedup_vs_numpy"] = row["chain_steps_per_s"] / row["numpy_chain_steps_per_s"]
    row["reference"] = "numpy"
    row["reference_chain_steps_per_s"] = row["numpy_chain_steps_per_s"]
    row["torch_chain_steps_per_s"] = row["torch_1thread_chain_steps_per_s"] = None
    if c.model == "attention" and torch_ok:
        for field, threads in (("torch_chain_steps_per_s", None),
                               ("torch_1thread_chain_steps_per_s", 1)):  # fmt: skip
            say(f"  PyTorch eager ({threads or 'default'} threads) ...")
            with torch_threads(threads):
                run = torch_loop(c, params, frozen)
                run(1)
                n_t, t_t, _ = calibrated_best(run, min_seconds, repeats, start=1)
            row[field] = n_t * chains / t_t
        best = max(row["torch_chain_steps_per_s"], row["torch_1thread_chain_steps_per_s"])
        row["reference"] = "torch eager (faster thread setting)"
        row["reference_chain_steps_per_s"] = best
    row["speedup_vs_reference"] = row["chain_steps_per_s"] / row["reference_chain_steps_per_s"]
    say(
        f"  NumPy {row['numpy_chain_steps_per_s']:.3g}; reference ({row['reference']}) "
        f"{row['reference_chain_steps_per_s']:.3g}: speedup {row['speedup_vs_reference']:.3g}x"
    )
    return row


def run_langevin_benchmark(
    quick: bool = False,
    torch_reference: bool = True,
    log: bool = True,
    sizes: dict | None = None,
    workloads: tuple[str, ...] = WORKLOADS,
) -> list[dict]:
    """One row per workload (default: double-well, lora, attention) at SIZES (QUICK_SIZES with
    ``quick``: ≈ 0.1 s per timing, one repetition, a 512² matmul; otherwise ≥ 1 s, best of 3,
    2048²)."""
    from attndyn.core.timing import matmul_peak

    say = notes(log)
    sizes = sizes or (QUICK_SIZES if quick else SIZES)
    min_seconds, repeats = (0.1, 1) if quick else (1.0, 3)
    torch_ok, torch_why = torch_reference_status(torch_reference)
    say("langevin: matmul peak ...")
    peak = matmul_peak(n=512 if quick else 2048, repeats=2 if quick else 5)
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    rows = []
    for workload in workloads:
        c = bench_config(workload, sizes)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        say(f"langevin {workload}, {c.seeds} chains ...")
        timed = time_workload(c, min_seconds, repeats, torch_ok, say)
        flops = flops_per_chain_step(c)
        gflops = flops * timed["chain_steps_per_s"] / 1e9 if flops else None
        rows.append(
            {
                "family": "langevin",
                "workload": workload,
                "chains": c.seeds,
                "sizes": {k: v for k, v in sizes[workload].items() if k != "seeds"},
                "dynamics": c.dynamics,
                "s": c.s,
                "h": c.step,
                "lam": c.lam,
                "dtype": c.dtype,
                **timed,
                "flops_per_chain_step": flops or None,
                "gflops": gflops,
                "fraction_of_matmul_peak": None
                if gflops is None
                else gflops / peak["matmul_peak_gflops"],
                "matmul_peak_gflops": peak["matmul_peak_gflops"],
                "peak_source": peak["peak_source"],
                "torch_reference_skipped": None if torch_ok else torch_why,
                "load_average_1min": load,
                "cpu": cpu_model(),
                "cpu_count": os.cpu_count(),
                "jax_version": jax.__version__,
                "numpy_version": np.__version__,
                "torch_version": torch_version,
                "quick": quick,
            }
        )
    return rows
