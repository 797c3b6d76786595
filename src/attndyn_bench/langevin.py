"""NumPy and PyTorch eager references of the Langevin benchmark
(:mod:`attndyn.models.langevin.bench`): the Euler–Maruyama step θ − h∇F(θ) + √(s h) ξ of all
chains at once, one Python iteration per step, with hand-written NumPy gradients (double well,
LoRA, attention) or torch autograd (attention); docs/langevin.md, "Dynamics"."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

# --- NumPy gradients (chain axis first; the frozen part has none) -------------------------------


def double_well_gradients(c, params: dict, frozen: dict) -> dict:
    """∇F = 4θ(θ² − 1) + λθ."""
    x = params["theta"]
    return {"theta": 4 * x * (x * x - 1) + c.lam * x}


# (σ(z), σ'(z) from z and s = σ(z))
Activation = tuple[
    Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray, np.ndarray], np.ndarray]
]
_SIGMA: dict[str, Activation] = {
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
    (model.attention_forward): with S = qkᵀ/√d_k, a = softmax(S), ∂S = a ∘ (∂a − Σ_s ∂a ∘ a)."""
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
    model.attention_forward; arrays in and out are NumPy."""
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
