"""Where the time of the AIM benchmark step goes (issue 16; BENCHMARKS.md, "Issue 16: the AIM
step").

  python scripts/aim_step_profile.py split [D BATCH]   # cumulative pieces of the step, in %
  python scripts/aim_step_profile.py prng  [D BATCH]   # the Gaussian draw under each PRNG
  python scripts/aim_step_profile.py devices [D BATCH] # seeds sharded over 2 XLA host devices
  python scripts/aim_step_profile.py draw-ab [DxB ...] # whole step, jax.random.normal vs fastrandom
  python scripts/aim_step_profile.py forms-ab [DxB ...] # whole step, Gram forms as dots vs fused
  python scripts/aim_step_profile.py gemm [ROUNDS]      # the step's GEMMs alone, in each layout

``split``: the tied softmax benchmark step of ``attndyn.models.aim.bench`` (8 seeds, vmapped,
default d = 512, batch 64), timed as cumulative pieces inside a jitted loop of N steps, interleaved
and best of 6: the draw of X (B, L, d) with ``jax.random.normal`` and with
:mod:`attndyn.core.fastrandom`; + the projection GEMM X·[W | F*]; + the gradient GEMM Xᵀ·Z;
+ the whole ``value_and_grad``; the trainer's full ``advance``. Each piece is a percentage of the
full step. ``prng``: normals/s of the same draw (per seed under vmap, key ``fold_in(data_key, k)``
per step, as the trainer derives it) under JAX's threefry2x32, rbg and unsafe_rbg and with the
unrolled hash, each in its own process (the implementation is a process-wide setting).
``devices``: the trainer's ``advance`` on one device and with the seed axis sharded over two XLA
host devices (``--xla_force_host_platform_device_count=2``, :func:`attndyn.core.devices.shard`,
as ``--devices 2`` places them), interleaved: ms
per step, CPUs used (process CPU s per wall s) and the largest parameter difference.
``draw-ab``: the trainer's ``advance`` with the token draw through ``jax.random.normal`` (old) and
through :mod:`attndyn.core.fastrandom` (new), interleaved, 15 rounds: old/new time per step (best
and median of paired ratios), and whether the parameters are bitwise equal afterwards.
``gemm``: the products of the d = 512, batch 64 step (8 seeds, L = 2, r = r* = 256) alone, each in
a jitted loop whose operands depend on the loop carry (so XLA cannot hoist the product) and whose
output is reduced by a max (so it cannot be simplified away): the projection against [W | F*]
(X·W, Wᵀ·Xᵀ, seed by seed), the gradient (Xᵀ·Ȳ as XLA's autodiff writes it, Ȳᵀ·X, a row-major
Xᵀ, an explicit transpose copy), and, for scale, the projection of all 8·128 rows against one
shared matrix. GFLOP/s (best of ROUNDS, default 7) and the fraction of the 2048² matmul peak.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

SEEDS, L = 8, 2


def _loop(fn, n):
    """jit(vmap over seeds) of n steps of ``fn(params, state, key_k)``, summing its leaves."""

    def one(params, state, key):
        def body(k, acc):
            out = fn(params, state, jax.random.fold_in(key, k))
            return acc + sum(jnp.sum(leaf) for leaf in jax.tree.leaves(out))

        return jax.lax.fori_loop(0, n, body, 0.0)

    return jax.jit(jax.vmap(one))


def split(d: int, batch: int) -> None:
    from attndyn.core.timing import AdvanceRunner
    from attndyn.core.trainer import init_seeds
    from attndyn.models.aim import build
    from attndyn.models.aim.bench import bench_config

    problem = build(bench_config(d, batch))
    carry, state, keys = init_seeds(problem, np.arange(SEEDS))
    n = max(10, 30 * 512 * 64 // (d * batch))

    def draw_jax(params, state, key):
        return jax.random.normal(key, (batch, L, d))

    def draw(params, state, key):
        return problem.sample(key)["x"]

    def projection(params, state, key):
        x = draw(params, state, key).reshape(batch * L, d)
        return x @ jnp.concatenate([params["W"][0], state["teacher"]["F"][0]], axis=1)

    def gemms(params, state, key):
        x = draw(params, state, key).reshape(batch * L, d)
        y = x @ jnp.concatenate([params["W"][0], state["teacher"]["F"][0]], axis=1)
        return x.T @ y[:, : params["W"].shape[-1]]

    def value_and_grad(params, state, key):
        return jax.value_and_grad(problem.loss)(params, state, problem.sample(key))

    pieces = {
        "draw, jax.random.normal": draw_jax,
        "draw, fastrandom (used)": draw,
        "draw + projection GEMM": projection,
        "draw + both GEMMs": gemms,
        "draw + value_and_grad": value_and_grad,
    }
    loops = {name: _loop(fn, n) for name, fn in pieces.items()}
    for fn in loops.values():
        jax.block_until_ready(fn(carry.params, state, keys))
    runner = AdvanceRunner(problem, np.arange(SEEDS))
    best = dict.fromkeys([*loops, "full step (trainer advance)"], np.inf)
    for _ in range(6):
        for name, fn in loops.items():
            t = time.perf_counter()
            jax.block_until_ready(fn(carry.params, state, keys))
            best[name] = min(best[name], (time.perf_counter() - t) / n)
        t = time.perf_counter()
        runner(n)
        best["full step (trainer advance)"] = min(
            best["full step (trainer advance)"], (time.perf_counter() - t) / n
        )
    full = best["full step (trainer advance)"]
    print(f"aim step d = {d}, batch = {batch}, {SEEDS} seeds: cumulative pieces, best of 6")
    for name, t in best.items():
        print(f"  {name:30s} {t * 1e3:8.3f} ms  {100 * t / full:5.1f} %")


def _draw_rate(impl: str, d: int, batch: int) -> float:
    """normals/s of the vmapped per-step draw under PRNG ``impl`` (``unrolled``: threefry2x32
    through attndyn.core.fastrandom)."""
    if impl != "unrolled":
        jax.config.update("jax_default_prng_impl", impl)
    from attndyn.core import fastrandom

    normal = fastrandom.normal if impl == "unrolled" else jax.random.normal
    keys = jax.vmap(lambda s: jax.random.split(jax.random.PRNGKey(s), 2)[1])(jnp.arange(SEEDS))
    n = 50
    loop = _loop(lambda p, s, key: normal(key, (batch, L, d)), n)
    jax.block_until_ready(loop(None, None, keys))
    best = np.inf
    for _ in range(5):
        t = time.perf_counter()
        jax.block_until_ready(loop(None, None, keys))
        best = min(best, time.perf_counter() - t)
    return n * SEEDS * batch * L * d / best


def prng(d: int, batch: int) -> None:
    impls = ("threefry2x32", "unrolled", "rbg", "unsafe_rbg")
    rates = {impl: [] for impl in impls}
    for _ in range(2):  # interleaved, best of two processes each
        for impl in impls:
            out = subprocess.run(
                [sys.executable, __file__, "_rate", impl, str(d), str(batch)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            rates[impl].append(float(out.stdout.split()[-1]))
    base = max(rates["threefry2x32"])
    print(f"Gaussian draw ({batch}, {L}, {d}) per seed, {SEEDS} seeds under vmap, fold_in per step")
    for impl in impls:
        r = max(rates[impl])
        print(f"  {impl:14s} {r:10.3g} normals/s  ratio {r / base:5.2f}")


def devices(d: int, batch: int) -> None:
    from attndyn.core.devices import shard
    from attndyn.core.trainer import init_seeds, make_advance
    from attndyn.models.aim import build
    from attndyn.models.aim.bench import bench_config

    problem = build(bench_config(d, batch))
    advance = make_advance(problem)
    one = init_seeds(problem, np.arange(SEEDS))
    two = shard(one, 2)
    n = max(10, 30 * 512 * 64 // (d * batch))
    a, b = (jax.block_until_ready(advance(*args, 0, n)) for args in (one, two))
    diff = float(jnp.max(jnp.abs(a.params["W"] - b.params["W"])))
    best = {1: (np.inf, 0.0), 2: (np.inf, 0.0)}
    for _ in range(6):
        for count, args in ((1, one), (2, two)):
            c, t = time.process_time(), time.perf_counter()
            jax.block_until_ready(advance(*args, 0, n))
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            if wall / n < best[count][0]:
                best[count] = (wall / n, cpu / wall)
    print(f"aim step d = {d}, batch = {batch}, {SEEDS} seeds; max |param difference| {diff:.2g}")
    for count, (t, cpus) in best.items():
        print(f"  {count} device(s): {t * 1e3:8.3f} ms/step, {cpus:.2f} CPUs used")
    print(f"  speedup of 2 devices: {best[1][0] / best[2][0]:.2f}")


def _interleaved(runners: dict, d: int, batch: int, rounds: int = 15) -> tuple[dict, list]:
    """Best seconds per step of each of two runners, timed in turn for ``rounds`` rounds, and
    the paired ratios first/second of every round."""
    n = max(10, 30 * 512 * 64 // (d * batch))
    best, ratios = dict.fromkeys(runners, np.inf), []
    for _ in range(rounds):
        took = {}
        for name, run in runners.items():
            t = time.perf_counter()
            run(n)
            took[name] = (time.perf_counter() - t) / n
            best[name] = min(best[name], took[name])
        first, second = took.values()
        ratios.append(first / second)
    return best, ratios


def draw_ab(sizes: list[tuple[int, int]]) -> None:
    from attndyn.core import fastrandom
    from attndyn.core.timing import AdvanceRunner
    from attndyn.models.aim import build
    from attndyn.models.aim.bench import bench_config

    fast = fastrandom.normal

    def old(key, shape, dtype=jnp.float32):
        return jax.random.normal(key, shape, dtype)

    for d, batch in sizes:
        runners = {}
        for name, normal in (("old", old), ("new", fast)):
            fastrandom.normal = normal  # read when build's sample is traced (first step)
            runners[name] = AdvanceRunner(build(bench_config(d, batch)), np.arange(SEEDS))
        fastrandom.normal = fast
        best, ratios = _interleaved(runners, d, batch)
        same = all(
            bool(jnp.array_equal(a, b))
            for a, b in zip(*(jax.tree.leaves(r.carry) for r in runners.values()), strict=True)
        )
        print(
            f"d = {d}, batch = {batch}: old {best['old'] * 1e3:.4f} ms, new {best['new'] * 1e3:.4f}"
            f" ms per step; old/new best {best['old'] / best['new']:.2f}, median paired "
            f"{np.median(ratios):.2f}; parameters bitwise equal: {same}"
        )


def forms_ab(sizes: list[tuple[int, int]]) -> None:
    """The step with the Gram forms as batched dots (``SMALL_L = 0``, as before issue 16's
    change) against the fused product-reduce (``model.SMALL_L``), interleaved, 15 rounds."""
    from attndyn.core.timing import AdvanceRunner
    from attndyn.models.aim import build, model
    from attndyn.models.aim.bench import bench_config

    small = model.SMALL_L
    for d, batch in sizes:
        runners = {}
        for name, limit in (("dots", 0), ("fused", small)):
            model.SMALL_L = limit  # read when the step is traced (its first step)
            runners[name] = AdvanceRunner(build(bench_config(d, batch)), np.arange(SEEDS))
        model.SMALL_L = small
        best, ratios = _interleaved(runners, d, batch)
        print(
            f"d = {d}, batch = {batch}: dots {best['dots'] * 1e3:.4f} ms, fused "
            f"{best['fused'] * 1e3:.4f} ms per step; dots/fused best "
            f"{best['dots'] / best['fused']:.2f}, median paired {np.median(ratios):.2f}"
        )


def gemm(rounds: int) -> None:
    from attndyn.core.timing import matmul_peak

    rows, d, r2, r, n = SEEDS * 64 * L, 512, 512, 256, 40
    ks = jax.random.split(jax.random.PRNGKey(0), 3)
    x = jax.random.normal(ks[0], (SEEDS, rows // SEEDS, d))
    w = jax.random.normal(ks[1], (SEEDS, d, r2)) / 30
    yb = jax.random.normal(ks[2], (SEEDS, rows // SEEDS, r))
    xt, wt, ybt = (jnp.swapaxes(a, 1, 2) for a in (x, w, yb))
    proj, grad = 2 * rows * d * r2, 2 * rows * d * r

    def per_seed(f):
        return lambda a, b: [f(a[i], b[i]) for i in range(SEEDS)]

    def ein(spec):
        return lambda a, b: jnp.einsum(spec, a, b)

    def copied(a, b):
        return jnp.einsum("sdb,sbr->sdr", jnp.swapaxes(a, 1, 2).copy(), b)

    cases = {
        "projection X·W (batched)": (ein("sbd,sdr->sbr"), x, w, proj),
        "projection Wᵀ·Xᵀ (batched)": (ein("srd,sbd->srb"), wt, x, proj),
        "projection X·W, seed by seed": (per_seed(jnp.matmul), x, w, proj),
        "gradient Xᵀ·Ȳ (autodiff's form)": (ein("sbd,sbr->sdr"), x, yb, grad),
        "gradient Ȳᵀ·X, Ȳ transposed": (ein("srb,sbd->srd"), ybt, x, grad),
        "gradient Xᵀ·Ȳ, Xᵀ row-major": (ein("sdb,sbr->sdr"), xt, yb, grad),
        "gradient, Xᵀ copied then NN": (copied, x, yb, grad),
        "projection 1024×512 by one shared 512×512": (
            lambda a, b: a.reshape(rows, d) @ b[0], x, w, proj),
    }  # fmt: skip

    def timed_loop(f):
        def run(s0, a, b):
            def body(k, s):
                out = f(a + s, b + s)
                outs = out if isinstance(out, list) else [out]
                return s + 1e-30 * sum(jnp.max(o) for o in outs)

            return jax.lax.fori_loop(0, n, body, s0)

        return jax.jit(run)

    loops = {name: timed_loop(f) for name, (f, *_) in cases.items()}
    s0 = jnp.float32(0)
    for name, fn in loops.items():
        jax.block_until_ready(fn(s0, *cases[name][1:3]))
    best = dict.fromkeys(loops, np.inf)
    for _ in range(rounds):
        for name, fn in loops.items():
            t = time.perf_counter()
            jax.block_until_ready(fn(s0, *cases[name][1:3]))
            best[name] = min(best[name], (time.perf_counter() - t) / n)
    peak = matmul_peak(repeats=10)["matmul_peak_gflops"]
    print(f"GEMMs of the aim step (d = 512, batch 64, {SEEDS} seeds); peak {peak:.0f} GFLOP/s")
    for name, t in best.items():
        gflops = cases[name][3] / t / 1e9
        print(f"  {name:44s} {t * 1e3:7.3f} ms {gflops:7.1f} GFLOP/s {gflops / peak:5.2f}")


if __name__ == "__main__":
    args = sys.argv[1:] or ["split"]
    if args[0] == "devices":
        flag = "--xla_force_host_platform_device_count=2"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()
    if args[0] == "_rate":
        print(_draw_rate(args[1], int(args[2]), int(args[3])))
    elif args[0] == "forms-ab":
        pairs = [tuple(int(v) for v in a.split("x")) for a in args[1:]]
        forms_ab(pairs or [(512, 64), (64, 1), (64, 64), (256, 64)])
    elif args[0] == "gemm":
        gemm(int(args[1]) if len(args) > 1 else 7)
    elif args[0] == "draw-ab":
        pairs = [tuple(int(v) for v in a.split("x")) for a in args[1:]]
        draw_ab(pairs or [(512, 64), (64, 1), (64, 64), (256, 64)])
    else:
        size = [int(a) for a in args[1:3]] or [512, 64]
        {"split": split, "prng": prng, "devices": devices}[args[0]](*size)
