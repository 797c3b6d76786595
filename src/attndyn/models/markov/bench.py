"""Benchmark of the focus–dilution family (arXiv 2605.01199): the population gradient flow and
Adam on the paper's fixed data set, each against a reference timed in the same run.

Rows ``flow/ros2`` and ``flow/bs3`` (d = 4, m = 256, π = Section 4.1's, ε = 1/m, float32, one
seed, the family's rtol): the population gradient flow θ̇ = −∇L(θ) of Prop. 2.3 towards
``t_flow`` time units (10⁶) with each solver of :mod:`attndyn.core.flow` (ROS2, the family's
default, and the explicit Bogacki–Shampine pair), with the advance ``markov.simulate`` runs, on
40 log-spaced records (lr = 1):

- ``flow_t_reached``, ``flow_wall_s`` and ``flow_steps`` (steps taken; ``markov.simulate``'s
  ``step`` axis): ROS2 runs to t_flow; the explicit pair, whose step is bound by stability, to
  ``bs3_t_stop`` (2,000; 200 quick), and ``flow_wall_s_projected`` extends its wall time to
  t_flow at the last record segment's steps per time unit (``flow_steps_per_time_last``) and the
  run's steps per second;
- ``gd_steps_per_s``: fixed-step GD on the same loss (the trainer's jitted advance, no
  observation); ``gd_wall_s_projected`` = (t_flow/lr_gd)/gd_steps_per_s, the wall time GD at the
  stable step ``lr_gd`` would need for the same horizon; ``flow_speedup_vs_gd`` = its ratio to
  ``flow_wall_s_projected``;
- ``torch_steps_per_s``: one population GD step in PyTorch eager (the same loss, autograd,
  ``p -= lr·p.grad``); ``gd_speedup_vs_torch`` = gd_steps_per_s/torch_steps_per_s;
- ``gd_fraction_of_matmul_peak``: the step's matmul flops, 3 × 2·(2dm² + 2d²m) (forward of
  W₀W_Q, W₀W_K, Φ, M and twice that backward), times gd_steps_per_s over the machine's float32
  2048² GEMM rate (:func:`attndyn.core.timing.matmul_peak`): d = 4 rows make every GEMM
  skinny, so this is a small number by construction, reported for scale.

Rows ``adam`` (S = 1 and S = ``seeds`` seeds vmapped): Adam (lr 1.5e-4, Appendix E.1) on
``data='fixed'`` (100,000 sequences of length 20 drawn on the device per seed, batch ``batch``,
m = 256): ``steps_per_s`` of the trainer's jitted advance; ``seed_throughput_ratio`` =
S·steps_per_s(S)/steps_per_s(1); ``torch_steps_per_s`` the same step in PyTorch eager (one seed,
``torch.optim.Adam``, index gather on a fixed int64 tensor); ``speedup_vs_torch`` per seed-step;
``sample_s`` the device draw of one seed's 100,000 sequences (jitted, after compilation).

``quick``: m = 32, a 10³ horizon, 10,000 sequences, ≈0.2 s per timing. ``cpus_used`` and the
load average say how much of the (shared) machine the run had. The PyTorch steps live in
:mod:`attndyn_bench.markov`, imported only when the reference is timed.
"""

from __future__ import annotations

import os
import time

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.config import validate
from attndyn.core.progress import notes
from attndyn.core.timing import AdvanceRunner, calibrated_best, cpu_model, torch_reference_status
from attndyn.models.base import Benchmark
from attndyn.models.markov import data
from attndyn.models.markov.config import MarkovConfig as Config
from attndyn.models.markov.data import data_law
from attndyn.models.markov.simulation import build, simulate

BENCHMARKS = (
    Benchmark(
        "markov",
        "attndyn.models.markov.bench:run_markov_benchmark",
        "population flow through 10⁶ time units vs fixed-step GD and a PyTorch step; Adam on "
        "100,000 sequences, seeds vmapped, vs PyTorch eager",
        (
            "row",
            "m",
            "seeds",
            "flow_t_reached",
            "flow_wall_s",
            "flow_steps",
            "flow_wall_s_projected",
            "flow_speedup_vs_gd",
            "gd_steps_per_s",
            "gd_speedup_vs_torch",
            "steps_per_s",
            "seed_throughput_ratio",
            "speedup_vs_torch",
        ),
    ),
)
"""The family's benchmark (``attndyn bench --name markov``)."""

__all__ = ["BENCHMARKS", "run_markov_benchmark"]

LR_GD = 0.05
"""The fixed GD step (the family's default ``lr``); GD stays finite with it over the benchmark's
short runs, its stability over the whole 10⁶ horizon is not checked (the bs3 row's step,
≈ 0.02 late in the run, suggests the stable step shrinks as the loss sharpens, which would make
the GD projection optimistic)."""


def flow_config(m: int, t_max: float, **overrides):
    values = dict(
        data="population", optimizer="flow", m=m, t_max=t_max, lr=1.0, records=40, seeds=1
    )
    values.update(overrides)
    return validate(Config, values)


def gd_config(m: int, **overrides):
    values = dict(data="population", optimizer="gd", m=m, lr=LR_GD, seeds=1, t_max=1.0)
    values.update(overrides)
    return validate(Config, values)


def adam_config(m: int, n_sequences: int, batch: int, seeds: int, **overrides):
    values = dict(
        data="fixed",
        optimizer="adam",
        lr=1.5e-4,
        m=m,
        n_sequences=n_sequences,
        batch=batch,
        seq_len=20,
        seeds=seeds,
        t_max=1.0,
    )
    values.update(overrides)
    return validate(Config, values)


def step_flops(d: int, m: int) -> float:
    """Matmul flops of one population gradient step: forward W₀W_Q, W₀W_K (2dm² each), Φ and
    M = W₀W₁ (2d²m each), backward twice the forward."""
    return 3.0 * (2 * 2 * d * m * m + 2 * 2 * d * d * m)


def time_flow(config, t_flow: float) -> dict:
    """``markov.simulate(config)`` (one seed, ``config.solver``) up to ``config.t_max``, timed
    after a warm-up run that compiles it; the wall time to ``t_flow`` is projected from the last
    record segment's steps per time unit and the run's steps per second (equal to the measured
    wall when t_max = t_flow)."""
    simulate(config.model_copy(update={"t_max": 2.0 * config.lr, "records": 3}))
    c0, t0 = time.process_time(), time.perf_counter()
    tr = simulate(config)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    t, steps = tr["time"].values, tr["step"].values
    per_time = (steps[-1] - steps[-2]) / (t[-1] - t[-2])
    per_s = steps[-1] / wall
    remaining = max(t_flow - float(t[-1]), 0.0)
    return {
        "flow_t_reached": float(t[-1]),
        "flow_wall_s": wall,
        "flow_steps": int(steps[-1]),
        "flow_cpus_used": cpu / wall,
        "flow_final_loss_gap": float(tr["loss_gap"].values[0, -1]),
        "flow_diverged": int((tr["diverged_step"].values >= 0).sum()),
        "flow_steps_per_time_last": float(per_time),
        "flow_wall_s_projected": wall + remaining * per_time / per_s,
    }


def time_advance(config, seeds: int, min_seconds: float, repeats: int) -> dict:
    run = AdvanceRunner(build(config), np.arange(seeds))
    steps, seconds, cpu = calibrated_best(run, min_seconds, repeats)
    return {"steps_per_s": steps / seconds, "steps_timed": steps, "cpus_used": cpu / seconds}


def time_sampling(config, repeats: int) -> float:
    """Seconds to draw one seed's ``n_sequences`` sequences on the device (jitted)."""
    P = jnp.asarray(data_law(config).P, jnp.float32)
    draw = jax.jit(lambda k: data.sample_sequences(k, P, config.n_sequences, config.seq_len + 1))
    jax.block_until_ready(draw(jax.random.PRNGKey(0)))
    best = float("inf")
    for r in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(draw(jax.random.PRNGKey(r + 1)))
        best = min(best, time.perf_counter() - t0)
    return best


def run_markov_benchmark(
    quick: bool = False,
    torch_reference: bool = True,
    log: bool = True,
    seeds: int = 4,
    sizes: dict | None = None,
) -> list[dict]:
    """The ``flow`` row and two ``adam`` rows (1 and ``seeds`` seeds); see the module
    docstring. ``quick`` shrinks every size; ``sizes`` overrides m, t_flow, n_sequences, batch
    (the tests use it for a run of a few seconds)."""
    from attndyn.core.timing import matmul_peak

    say = notes(log)
    use_torch, why_not = torch_reference_status(torch_reference)
    if use_torch:
        from attndyn_bench.markov import time_torch, torch_adam_step, torch_population_step

    min_seconds, repeats = (0.2, 1) if quick else (1.0, 3)
    m = 32 if quick else 256
    t_flow = 1e3 if quick else 1e6
    n_seq = 10_000 if quick else 100_000
    batch = 512
    size = {"m": m, "t_flow": t_flow, "n_sequences": n_seq, "batch": batch, "peak_n": 2048,
            "bs3_t_stop": 200.0 if quick else 2000.0, **(sizes or {})}  # fmt: skip
    m, t_flow, n_seq, batch = size["m"], size["t_flow"], size["n_sequences"], size["batch"]
    common = {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "jax_version": jax.__version__,
        "numpy_version": np.__version__,
        "quick": quick,
        "torch_reference": why_not or "timed",
    }
    rows: list[dict] = []

    # (a) fixed-step GD and a PyTorch population GD step, then the flow with each solver
    say(f"markov population GD: d = 4, m = {m} ...")
    gcfg = gd_config(m)
    gd = time_advance(gcfg, 1, min_seconds, repeats)
    gd_rate = gd["steps_per_s"]
    projected = t_flow / LR_GD / gd_rate
    torch_rate, torch_threads_used = None, None
    if use_torch:
        step, _, _ = torch_population_step(gcfg)
        ref = time_torch(step, min_seconds, repeats)
        torch_rate, torch_threads_used = ref["rate"], ref["threads"]
    peak = matmul_peak(n=size["peak_n"], repeats=2 if quick else 5)
    gflops = step_flops(4, m) * gd_rate / 1e9
    say(
        f"  GD {gd_rate:.4g} steps/s (t = {t_flow:g} would take {projected:.3g} s); "
        f"torch {torch_rate}"
    )
    for solver, t_stop in (("ros2", t_flow), ("bs3", min(t_flow, size["bs3_t_stop"]))):
        # the explicit pair is stability-bound (steps ∝ t): run to t_stop and project
        say(f"markov flow ({solver}): t = {t_stop:g} of {t_flow:g} ...")
        flow = time_flow(flow_config(m, t_stop, solver=solver), t_flow)
        rows.append(
            {
                "row": f"flow/{solver}",
                "solver": solver,
                "d": 4,
                "m": m,
                "t_flow": t_flow,
                "rtol": flow_config(m, t_stop, solver=solver).rtol,
                "lr_gd": LR_GD,
                **flow,
                "flow_steps_per_s": flow["flow_steps"] / flow["flow_wall_s"],
                "gd_steps_per_s": gd_rate,
                "gd_cpus_used": gd["cpus_used"],
                "gd_wall_s_projected": projected,
                "flow_speedup_vs_gd": projected / flow["flow_wall_s_projected"],
                "torch_steps_per_s": torch_rate,
                "torch_threads": torch_threads_used,
                "gd_speedup_vs_torch": None if torch_rate is None else gd_rate / torch_rate,
                "gd_gflops": gflops,
                "gd_fraction_of_matmul_peak": gflops / peak["matmul_peak_gflops"],
                "matmul_peak_gflops": peak["matmul_peak_gflops"],
                "load_average_1min": os.getloadavg()[0],
                **common,
            }
        )
        say(
            f"  reached t = {flow['flow_t_reached']:.3g} in {flow['flow_wall_s']:.3g} s, "
            f"{flow['flow_steps']} steps; projected {flow['flow_wall_s_projected']:.3g} s; "
            f"speedup vs GD {rows[-1]['flow_speedup_vs_gd']:.3g}x"
        )

    # (b) Adam on the fixed data set, 1 and `seeds` seeds vmapped, vs PyTorch eager
    say(f"markov adam: {n_seq} sequences of length 20, batch {batch}, m = {m} ...")
    sample_s = time_sampling(adam_config(m, n_seq, batch, 1), repeats)
    torch_adam, torch_adam_threads = None, None
    if use_torch:
        step, _, _ = torch_adam_step(adam_config(m, n_seq, batch, 1))
        ref = time_torch(step, min_seconds, repeats)
        torch_adam, torch_adam_threads = ref["rate"], ref["threads"]
    one = None
    for s in (1, seeds):
        cfg = adam_config(m, n_seq, batch, s)
        res = time_advance(cfg, s, min_seconds, repeats)
        rate = res["steps_per_s"]
        one = rate if s == 1 else one
        rows.append(
            {
                "row": "adam",
                "d": 4,
                "m": m,
                "seeds": s,
                "batch": batch,
                "n_sequences": n_seq,
                "seq_len": 20,
                "steps_per_s": rate,
                "seed_steps_per_s": s * rate,
                "seed_throughput_ratio": s * rate / one,
                "torch_steps_per_s": torch_adam,
                "torch_threads": torch_adam_threads,
                "speedup_vs_torch": None if torch_adam is None else s * rate / torch_adam,
                "sample_s": sample_s,
                "steps_timed": res["steps_timed"],
                "cpus_used": res["cpus_used"],
                "load_average_1min": os.getloadavg()[0],
                **common,
            }
        )
        say(f"  S = {s}: {rate:.4g} steps/s, seed throughput ×{s * rate / one:.3g}")
    return rows
