"""Timing helpers shared by the families' benchmarks (``attndyn bench``): best-of-n wall time with
its CPU time, a step count calibrated to a minimum duration, torch's intra-op threads set for a
block, and the machine's CPU model."""

from __future__ import annotations

import importlib.util
import math
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


def best_time(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(best wall seconds over ``repeats`` calls, process CPU seconds of that call)."""
    best, cpu = math.inf, math.nan
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        if t < best:
            best, cpu = t, time.process_time() - c0
    return best, cpu


def calibrated_best(
    run: Callable[[int], None], min_seconds: float, repeats: int, start: int = 8
) -> tuple[int, float, float]:
    """Grow the step count n (from ``start``, ×4) until ``run(n)`` takes ≥ min_seconds/5, scale it
    to min_seconds, then return (n, best wall seconds over ``repeats`` runs, their CPU seconds)."""
    n = start
    while True:
        t0 = time.perf_counter()
        run(n)
        t = time.perf_counter() - t0
        if t >= min_seconds / 5:
            break
        n *= 4
    n = max(n, math.ceil(n * min_seconds / t))
    return n, *best_time(lambda: run(n), repeats)


PEAK_N = 2048
"""Side of the square float32 GEMM that measures the machine's matmul throughput."""


def matmul_peak(n: int = PEAK_N, repeats: int = 5) -> dict:
    """float32 n×n GEMM throughput in GFLOP/s with numpy and with jitted ``jnp.dot`` (best of
    ``repeats`` after one warm-up each); the peak is the larger of the two. Also GFLOP per
    process CPU second of the best runs (``matmul_peak_gflops_per_cpu_s``)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((n, n), dtype=np.float32)
    b = rng.standard_normal((n, n), dtype=np.float32)
    flops = 2.0 * n**3
    a @ b
    t_np, cpu_np = best_time(lambda: a @ b, repeats)
    dot = jax.jit(jnp.dot)
    ja, jb = jnp.asarray(a), jnp.asarray(b)
    jax.block_until_ready(dot(ja, jb))
    t_jax, cpu_jax = best_time(lambda: jax.block_until_ready(dot(ja, jb)), repeats)
    numpy_gflops, jax_gflops = flops / t_np / 1e9, flops / t_jax / 1e9
    source = "jax" if jax_gflops >= numpy_gflops else "numpy"
    return {
        "numpy_matmul_gflops": numpy_gflops,
        "jax_matmul_gflops": jax_gflops,
        "matmul_peak_gflops": max(numpy_gflops, jax_gflops),
        "peak_source": f"{source} float32 {n}x{n} matmul",
        "matmul_peak_gflops_per_cpu_s": flops / min(cpu_np, cpu_jax) / 1e9,
    }


@contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """torch's default intra-op threads (``None``) or ``torch.set_num_threads(threads)`` inside
    the block, restored after it."""
    import torch

    default = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(default)


def torch_reference_status(requested: bool) -> tuple[bool, str | None]:
    """(time the PyTorch reference?, why not): torch is optional (the ``bench`` extra)."""
    if not requested:
        return False, "not requested (--no-torch)"
    # found, not imported: importing torch starts its thread pools, which can slow what the
    # benchmark times before the reference (BENCHMARKS.md, "Issue 16: the AIM step")
    if importlib.util.find_spec("torch") is None:
        return False, "torch not installed (pip install 'attndyn[bench]')"
    return True, None


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (or platform's description)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class AdvanceRunner:
    """``runner(n)`` takes n more steps of the trainer's jitted, seed-vmapped advance of
    ``problem`` for ``seeds`` and waits for them (the timed unit of the simulator benchmarks);
    the first step, which compiles, is taken on construction. The step bounds are traced, so
    nothing recompiles later. ``carry`` is the current (params, optimiser state, diverged step)."""

    def __init__(self, problem, seeds) -> None:
        import jax
        import numpy as np

        from attndyn.core.trainer import init_seeds, make_advance

        self._block = jax.block_until_ready
        self.carry, self._state, self._keys = init_seeds(problem, np.asarray(seeds))
        self._advance = make_advance(problem)
        self.k = 0
        self(1)

    def __call__(self, n: int) -> None:
        self.carry = self._advance(self.carry, self._state, self._keys, self.k, self.k + n)
        self._block(self.carry)
        self.k += n
