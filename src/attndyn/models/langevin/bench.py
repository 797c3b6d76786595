"""Benchmark: Euler–Maruyama chains of the Langevin family (``attndyn bench --name langevin``).

The trainer's step θ ← θ − h∇F(θ) + √(s h) ξ (docs/langevin.md, "Dynamics"), many chains vmapped
in one jitted ``fori_loop`` (:class:`attndyn.core.timing.AdvanceRunner`, no observation), on three
workloads: the 1-D double well F = (x² − 1)² + (λ/2)x² (many chains), LoRA regression and
attention regression (float32, sde). Each is timed against a reference loop in the same run
that does the same update for all chains at once, one Python iteration per step:

- NumPy (batched matmuls, so BLAS does the products) with hand-written gradients:
  4x(x² − 1) + λx for the double well; the closed-form
  backward of f(x) = Σ_j a_j σ(⟨(W₀ + BA)_j, x⟩) for LoRA (:func:`lora_gradients`); the
  softmax-attention backward for attention (:func:`attention_gradients`);
- for attention also PyTorch eager (autograd of Σ_chains F), with its default threads and with
  one thread, when torch is importable; ``reference`` names the faster reference.

Row fields: ``chain_steps_per_s`` (chains × steps per second), ``reference_chain_steps_per_s``,
``speedup_vs_reference`` and ``speedup_vs_numpy``; for LoRA and attention ``gflops``: matmul
flops per chain-step (:func:`flops_per_chain_step`) × rate, and
``fraction_of_matmul_peak`` against the 2048² float32 GEMM
(:func:`attndyn.core.timing.matmul_peak`). ``cpus_used`` (CPU seconds per wall second)
and ``load_average_1min`` say how much of the machine the run had.
"""

from __future__ import annotations

import math
import os

import jax
import numpy as np

from attndyn.core.config import validate
from attndyn.core.timing import (
    AdvanceRunner,
    calibrated_best,
    cpu_model,
    progress,
    torch_reference_status,
    torch_threads,
)

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
    from attndyn.models.langevin import Config

    values = {**COMMON, "model": workload, **(sizes or SIZES)[workload], **overrides}
    return validate(Config, values)


# --- NumPy gradients (chain axis first; the frozen part has none) -------------------------------


def double_well_gradients(c, params: dict, frozen: dict) -> dict:
    """∇F = 4θ(θ² − 1) + λθ."""
    x = params["theta"]
    return {"theta": 4 * x * (x * x - 1) + c.lam * x}


_SIGMA = {
    "tanh": (np.tanh, lambda z, s: 1 - s * s),
    "sigmoid": (lambda z: 1 / (1 + np.exp(-z)), lambda z, s: s * (1 - s)),
    "softplus": (lambda z: np.logaddexp(0, z), lambda z, s: 1 / (1 + np.exp(-z))),
}


def lora_gradients(c, params: dict, frozen: dict) -> dict:
    """Closed-form ∇F of F = (1/2n)Σ_i (f(x_i) − y_i)² + (λ/2)‖θ‖², f(x) = aᵀσ(W₀x + BAx):
    with u = Ax, z = W₀x + Bu, r = f − y and δ = (r/n) a ∘ σ'(z): ∇_B = Σ_i δ_i u_iᵀ,
    ∇_A = Σ_i (Bᵀδ_i) x_iᵀ, ∇_a = Σ_i (r_i/n) σ(z_i)."""
    X, Y, W0 = frozen["X"], frozen["Y"], frozen["W0"]
    A, B = params["A"], params["B"]
    a = params["a"] if "a" in params else np.broadcast_to(frozen["a"], (A.shape[0], W0.shape[0]))
    sigma, dsigma = _SIGMA[c.activation]
    u = X @ A.swapaxes(1, 2)  # batched matmuls (BLAS), chains first
    z = (X @ W0.T)[None] + u @ B.swapaxes(1, 2)
    hidden = sigma(z)
    r = ((hidden @ a[..., None])[..., 0] - Y[None]) / X.shape[0]
    delta = r[..., None] * a[:, None, :] * dsigma(z, hidden)
    grads = {
        "B": delta.swapaxes(1, 2) @ u + c.lam * B,
        "A": (delta @ B).swapaxes(1, 2) @ X + c.lam * A,
    }
    if "a" in params:
        grads["a"] = (hidden.swapaxes(1, 2) @ r[..., None])[..., 0] + c.lam * params["a"]
    return grads


def attention_gradients(c, params: dict, frozen: dict) -> dict:
    """Hand-written backward of f(X) = pool Σ_h softmax(X Q_h K_hᵀ Xᵀ/√d_k) X V_h [O_h]
    (potentials.attention_forward): with S = qkᵀ/√d_k, a = softmax(S), ∂S = a ∘ (∂a − Σ_s ∂a ∘ a)."""
    X, Y = frozen["X"], frozen["Y"]
    n, T = X.shape[0], X.shape[1]
    chains = next(iter(params.values())).shape[0]
    W = {g: np.broadcast_to(w, (chains, *w.shape)) for g, w in frozen["fixed"].items()}
    W.update(params)
    scale = 1 / np.sqrt(c.d_k)
    Xb = X[None, :, None]  # (1, n, 1, T, d): batched matmuls (BLAS) over chain, sample, head
    q, k, v = (Xb @ W[g][:, None] for g in "QKV")  # (c, n, h, T, ·)
    S = (q @ k.swapaxes(-1, -2)) * scale
    a = np.exp(S - S.max(axis=-1, keepdims=True))
    a /= a.sum(axis=-1, keepdims=True)
    heads = a @ v
    out = (heads @ W["O"][:, None]).sum(axis=2) if "O" in W else heads.sum(axis=2)
    if c.pooling == "mean":
        pred = out.mean(axis=2)
    elif c.pooling == "last":
        pred = out[:, :, -1]
    else:
        pred = out
    r = (pred - Y[None]) / n
    if c.pooling == "mean":
        d_out = np.broadcast_to(r[:, :, None] / T, out.shape)
    elif c.pooling == "last":
        d_out = np.zeros_like(out)
        d_out[:, :, -1] = r
    else:
        d_out = r
    d_out = d_out[:, :, None]  # (c, n, 1, T, o), the same for every head
    grads = {}
    if "O" in W:
        grads["O"] = (heads.swapaxes(-1, -2) @ d_out).sum(axis=1)
        d_heads = d_out @ W["O"].swapaxes(-1, -2)[:, None]
    else:
        d_heads = np.broadcast_to(d_out, heads.shape)
    d_a = d_heads @ v.swapaxes(-1, -2)
    d_v = a.swapaxes(-1, -2) @ d_heads
    d_S = a * (d_a - np.sum(d_a * a, axis=-1, keepdims=True)) * scale
    Xt = Xb.swapaxes(-1, -2)
    grads["V"] = (Xt @ d_v).sum(axis=1)
    grads["Q"] = (Xt @ (d_S @ k)).sum(axis=1)
    grads["K"] = (Xt @ (d_S.swapaxes(-1, -2) @ q)).sum(axis=1)
    return {g: grads[g] + c.lam * params[g] for g in params}


NUMPY_GRADIENTS = {
    "double-well": double_well_gradients,
    "lora": lora_gradients,
    "attention": attention_gradients,
}


def em_step(c, params: dict, frozen: dict, noise: dict, gradients=None) -> dict:
    """One Euler–Maruyama step θ − h∇F(θ) + noise (noise = √(s h) ξ) for every chain."""
    grads = (gradients or NUMPY_GRADIENTS[c.model])(c, params, frozen)
    return {g: params[g] - c.step * grads[g] + noise[g] for g in params}


# --- PyTorch eager reference (attention) ---------------------------------------------------------


def torch_attention_gradients(c, params: dict, frozen: dict) -> dict:
    """∇F by torch autograd of Σ_chains F (chains independent), the same forward as
    potentials.attention_forward; arrays in and out are NumPy."""
    import torch

    X, Y = torch.from_numpy(np.array(frozen["X"])), torch.from_numpy(np.array(frozen["Y"]))
    leaves = {g: torch.tensor(np.array(w), requires_grad=True) for g, w in params.items()}
    grads = _torch_grads(c, leaves, frozen, X, Y)
    return {g: w.numpy() for g, w in grads.items()}


def _torch_grads(c, leaves: dict, frozen: dict, X, Y) -> dict:
    import torch

    chains = next(iter(leaves.values())).shape[0]
    W = {
        g: torch.from_numpy(np.array(w)).expand(chains, *np.shape(w))
        for g, w in frozen["fixed"].items()
    }
    W.update(leaves)
    q = torch.einsum("ntd,chde->cnhte", X, W["Q"])
    k = torch.einsum("ntd,chde->cnhte", X, W["K"])
    a = torch.softmax(torch.einsum("cnhte,cnhse->cnhts", q, k) / math.sqrt(c.d_k), dim=-1)
    v = torch.einsum("ntd,chdv->cnhtv", X, W["V"])
    heads = torch.einsum("cnhts,cnhsv->cnhtv", a, v)
    out = torch.einsum("cnhtv,chvo->cnto", heads, W["O"]) if "O" in W else heads.sum(dim=2)
    pred = out.mean(dim=2) if c.pooling == "mean" else out[:, :, -1] if c.pooling == "last" else out
    loss = 0.5 * torch.sum((pred - Y) ** 2) / X.shape[0]
    loss = loss + 0.5 * c.lam * sum(torch.sum(w**2) for w in leaves.values())
    return dict(zip(leaves, torch.autograd.grad(loss, list(leaves.values())), strict=True))


def torch_loop(c, params: dict, frozen: dict, seed: int = 0):
    """``run(n)``: n EM steps of all chains in PyTorch eager (autograd, ``torch.randn`` noise,
    in-place update under ``no_grad``)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    X, Y = torch.from_numpy(np.array(frozen["X"])), torch.from_numpy(np.array(frozen["Y"]))
    leaves = {g: torch.tensor(np.array(w), requires_grad=True) for g, w in params.items()}
    h, std = c.step, math.sqrt(c.temperature * c.step)

    def run(n: int) -> None:
        for _ in range(n):
            grads = _torch_grads(c, leaves, frozen, X, Y)
            with torch.no_grad():
                for g, w in leaves.items():
                    w.add_(grads[g], alpha=-h).add_(torch.randn(w.shape, generator=gen), alpha=std)

    return run


def numpy_loop(c, params: dict, frozen: dict, seed: int = 0):
    """``run(n)``: n EM steps of all chains in NumPy (float32 ``standard_normal`` noise)."""
    rng = np.random.default_rng(seed)
    state = {g: np.array(w) for g, w in params.items()}
    std = np.float32(math.sqrt(c.temperature * c.step))

    def run(n: int) -> None:
        nonlocal state
        for _ in range(n):
            noise = {
                g: std * rng.standard_normal(w.shape, dtype=np.float32) for g, w in state.items()
            }
            state = em_step(c, state, frozen, noise)

    return run


# --- the trainer's noise, for checking the references -------------------------------------------


def trainer_noise(problem, carry, data_keys, steps) -> dict:
    """The √(s h) ξ that the trainer adds at each step k in ``steps`` to every chain: the update
    rule applied to zero gradients with the step's key (attndyn.core.trainer.make_step).
    Returns {group: (len(steps), chains, ...)}."""
    import jax.numpy as jnp
    import optax

    from attndyn.core.trainer import UPDATE_STREAM

    rule = optax.with_extra_args_support(problem.update)

    def one(params, opt_state, data_key, k):
        key = jax.random.fold_in(jax.random.fold_in(data_key, k), UPDATE_STREAM)
        zeros = jax.tree.map(jnp.zeros_like, params)
        return rule.update(zeros, opt_state, params, key=key)[0]

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
    from attndyn.models.langevin import build

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

    say = progress(log)
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
