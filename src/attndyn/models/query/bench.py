"""Benchmark: projected SGA of the single-query softmax attention model (family ``query``).

At n_N = 10,000 nuisance tokens and d = 256 one SGA step draws n·d ≈ 2.6 M Gaussian values and
then does O(n·d) arithmetic, so the draw is the floor of the step's cost. Timed in one run, for
one seed and batch 1 (float32):

- ``steps_per_s``: the simulator's jitted ``advance`` (the trainer's inner loop: draw, gradient,
  update, projection, finiteness check; no observation), calibrated to run ≥ ``min_seconds``,
  best of ``repeats``.
- ``draw_s``: the same token draw alone in JAX (``model.all_tokens`` of the row's spec, jitted,
  summed so nothing is skipped), per step; ``step_over_draw`` = (1/steps_per_s)/draw_s — target
  ≤ 1.5 for the full simulation step (``target_met``). For the streamed two-pass route the draw is
  done twice, so its ratio is ≈ 2 by construction (reported, not targeted).
- ``numpy_steps_per_s``: a plain NumPy loop (:mod:`attndyn_bench.query`, imported only when
  the benchmark runs) doing the same step the way one writes it
  (``rng.standard_normal((n, d), float32)``, add θξu to the informative rows, four
  matrix–vector products for the gradient, update, normalise); ``numpy_draw_s`` its draw alone,
  ``numpy_step_over_draw``; ``speedup_vs_numpy`` = steps_per_s / numpy_steps_per_s.
- ``draw_share`` = draw_s · steps_per_s: the share of the simulator's step spent drawing.
- reduced-sampler rows (``sampler = reduced``): the exact O(n)-scalar sampler of
  docs/query-reduced-sampler.md; ``speedup_vs_full`` = its steps/s over the full sampler's.

``cpus_used`` (process CPU seconds per wall second) and ``load_average_1min`` say how much of the
machine the run had; on a shared machine every number is noisy.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.config import validate
from attndyn.core.progress import notes
from attndyn.core.timing import AdvanceRunner, calibrated_best, cpu_model
from attndyn.models.base import Benchmark
from attndyn.models.query import model
from attndyn.models.query.config import QueryConfig as Config
from attndyn.models.query.simulation import build, token_spec

BENCHMARKS = (
    Benchmark(
        "query",
        "attndyn.models.query.bench:run_query_benchmark",
        "SGA steps/s: the full and the reduced sampler, against the token draw and NumPy",
        (
            "sampler",
            "d",
            "n_nuisance",
            "steps_per_s",
            "step_over_draw",
            "speedup_vs_numpy",
            "speedup_vs_full",
            "target_met",
        ),
    ),
)
"""The family's benchmark (``attndyn bench --name query``)."""

TARGET_STEP_OVER_DRAW = 1.5


def bench_config(d: int, n_nuisance: int, **overrides):
    """The benchmarked configuration: one seed, batch 1, float32, sphere, default tokens."""
    values = dict(d=d, n_nuisance=n_nuisance, seeds=1, batch=1, eval_samples=0)
    values.update(overrides)
    return validate(Config, values)


def time_simulator(config, min_seconds: float, repeats: int) -> dict:
    """Steady-state SGA steps per second of the trainer's jitted advance (one seed)."""
    run = AdvanceRunner(build(config, n_seeds=1), np.arange(1))
    steps, seconds, cpu = calibrated_best(run, min_seconds, repeats)
    return {"steps_per_s": steps / seconds, "steps_timed": steps, "cpus_used": cpu / seconds}


def time_jax_draw(config, min_seconds: float, repeats: int) -> float:
    """Seconds per draw of one sample's tokens in JAX, as the whole route draws them."""
    spec = token_spec(config, n_seeds=1)
    u = jnp.zeros((config.d,), jnp.float32).at[0].set(1.0)

    @jax.jit
    def draws(key, n):
        def body(i, acc):
            x, _ = model.all_tokens(jax.random.fold_in(key, i), u, spec)
            return acc + jnp.sum(x)

        return jax.lax.fori_loop(0, n, body, jnp.zeros((), jnp.float32))

    key = jax.random.PRNGKey(0)

    def run(n: int) -> None:
        jax.block_until_ready(draws(key, n))

    run(1)
    steps, seconds, _ = calibrated_best(run, min_seconds, repeats)
    return seconds / steps


def _row_label(config) -> str:
    sampler = getattr(config, "sampler", "full")
    if sampler != "full":
        return sampler
    return "full/whole" if token_spec(config, n_seeds=1).chunk_tokens is None else "full/chunked"


def run_query_benchmark(
    quick: bool = False,
    torch_reference: bool = True,
    log: bool = True,
    d: int = 256,
    n_nuisance: int = 10_000,
) -> list[dict]:
    """Rows for the full sampler (whole and streamed routes) and, when available, the reduced
    sampler, at (d, n_nuisance) (default 256, 10,000). ``quick``: ≈0.2 s per timing, one
    repetition; otherwise ≥ 1 s, best of 3. The reference is NumPy, so ``torch_reference`` is
    unused."""
    min_seconds, repeats = (0.2, 1) if quick else (1.0, 3)

    say = notes(log)

    configs = [
        bench_config(d, n_nuisance, stream="whole"),
        bench_config(d, n_nuisance, stream="chunked", chunk=2048),
    ]
    if "sampler" in Config.model_fields:
        configs.append(bench_config(d, n_nuisance, sampler="reduced"))

    say(f"query d = {d}, n_N = {n_nuisance}: JAX draw alone ...")
    draw_s = time_jax_draw(configs[0], min_seconds, repeats)
    say(f"  {draw_s * 1e3:.3g} ms per draw; NumPy loop ...")
    from attndyn_bench.query import time_numpy

    ref = time_numpy(configs[0], min_seconds, repeats)
    say(f"  NumPy {ref['numpy_steps_per_s']:.3g} steps/s, draw {ref['numpy_draw_s'] * 1e3:.3g} ms")
    common = {
        "d": d,
        "n_informative": configs[0].n_informative,
        "n_nuisance": n_nuisance,
        "seeds": 1,
        "batch": 1,
        "dtype": "float32",
        "draw_s": draw_s,
        "numpy_steps_per_s": ref["numpy_steps_per_s"],
        "numpy_draw_s": ref["numpy_draw_s"],
        "numpy_step_over_draw": 1.0 / (ref["numpy_steps_per_s"] * ref["numpy_draw_s"]),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "jax_version": jax.__version__,
        "numpy_version": np.__version__,
        "quick": quick,
    }
    rows = []
    full_rate = None
    for config in configs:
        label = _row_label(config)
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        say(f"  simulator {label} ...")
        sim = time_simulator(config, min_seconds, repeats)
        rate = sim["steps_per_s"]
        if label == "full/whole":
            full_rate = rate
        row = {
            "family": "query",
            "sampler": label,
            "steps_per_s": rate,
            "step_over_draw": 1.0 / (rate * draw_s),
            "draw_share": draw_s * rate,
            "speedup_vs_numpy": rate / ref["numpy_steps_per_s"],
            "speedup_vs_full": None if full_rate is None else rate / full_rate,
            "steps_timed": sim["steps_timed"],
            "cpus_used": sim["cpus_used"],
            "load_average_1min": load,
            "target": None,
            "target_met": None,
            **common,
        }
        if label == "full/whole":
            row["target"] = f"step_over_draw <= {TARGET_STEP_OVER_DRAW:g}"
            row["target_met"] = bool(row["step_over_draw"] <= TARGET_STEP_OVER_DRAW)
        say(
            f"    {rate:.3g} steps/s, step/draw {row['step_over_draw']:.3g}, "
            f"vs NumPy {row['speedup_vs_numpy']:.3g}x"
        )
        rows.append(row)
    return rows
