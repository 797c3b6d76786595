"""The AIM model: parameterisations, quadratic forms, output functions and the loss.

Every index k (student or teacher) is one of three kinds of matrix, kept in factored form:

- ``factor``  S = F Fᵀ, F ∈ R^{d×r}   (tied student W; Wishart and identity teachers)
- ``matrix``  S ∈ R^{d×d}             (direct student, not assumed symmetric; P1 App. E)
- ``product`` S = U Vᵀ, U, V ∈ R^{d×r} (untied student; product teacher)

and enters only through the quadratic forms (P1 Eqs. 7, 25, 396)

    G_ijk = (x_iᵀ S_k x_j − c · C_ij Tr S_k) / √d,

with c = 1 (centred) for tied and direct students and symmetric teachers, c = 0 for untied
students and the product teacher. The output is a function of the forms of one side (student or
teacher) and the loss is the squared error between the two outputs.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core import fastrandom
from attndyn.errors import InputError

SQRT2 = float(np.sqrt(2.0))
SQRT6 = float(np.sqrt(6.0))

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "h1": lambda x: x,
    "h2": lambda x: (x**2 - 1.0) / SQRT2,  # normalised Hermite, P1 Fig. 2
    "h3": lambda x: (x**3 - 3.0 * x) / SQRT6,
    "relu": jax.nn.relu,
    "tanh": jnp.tanh,
    "erf": jax.scipy.special.erf,
}


def register_activation(name: str, fn: Callable[[jax.Array], jax.Array]) -> None:
    """Make a jax-traceable elementwise function available as ``activation=name``.

    Stored run ids hash the name, not the function: give a new name to a changed function.
    """
    if not callable(fn):
        raise InputError(f"activation '{name}' must be callable")
    ACTIVATIONS[name] = fn


# --------------------------------------------------------------------------------------------
# Quadratic forms


def project(x: jax.Array, M: jax.Array) -> jax.Array:
    """Y[b, i, k, :] = x[b, i, :] M_k for x (B, L, d) and stacked M (K, d, r): (B, L, K, r).

    Written as one (B·L)×d by d×(K·r) GEMM: XLA's CPU dot then keeps x and M in their natural
    row-major layouts (a batched einsum over b made it transpose both on every step).
    """
    B, L, d = x.shape
    K, _, r = M.shape
    y = x.reshape(B * L, d) @ jnp.transpose(M, (1, 0, 2)).reshape(d, K * r)
    return y.reshape(B, L, K, r)


SMALL_L = 4
"""Up to this many tokens, the Gram forms of the projections are an elementwise product reduced
over r (one fused pass over Y); above it, a batched matmul."""


def gram(yu: jax.Array, yv: jax.Array) -> jax.Array:
    """raw[b, k, i, j] = Σ_r yu[b, i, k, r] yv[b, j, k, r] for projections of shape (B, L, K, r)
    (yv may have K = 1: broadcast over k).

    For L ≤ :data:`SMALL_L` the sum is written as a broadcast product reduced over r: XLA:CPU
    then fuses it (and its gradient) into single passes over Y, where the batched dot of B·K tiny
    L×r by r×L products made it copy Y into a transposed layout first (on the AIM benchmark step,
    d = 512, batch 64: 1.07–1.13× faster; BENCHMARKS.md, "Issue 16")."""
    if yu.shape[1] <= SMALL_L:
        return jnp.transpose(jnp.sum(yu[:, :, None] * yv[:, None, :], axis=-1), (0, 3, 1, 2))
    if yv.shape[2] == 1:
        return jnp.einsum("bikr,bjr->bkij", yu, yv[:, :, 0])
    return jnp.einsum("bikr,bjkr->bkij", yu, yv)


def forms(side: dict, x: jax.Array, cov: jax.Array, centred: bool) -> jax.Array:
    """Quadratic forms G[b, k, i, j] for a batch of token matrices x[b, i, :] ∈ R^{L×d}.

    ``side`` holds stacked matrices of one kind: {"F": (K, d, r)}, {"S": (K, d, d)} or
    {"U": (K, d, r), "V": (K, d, r)}. The traces are contractions (Tr F Fᵀ = Σ F⊙F as one dot,
    not a squared copy of F followed by a sum).
    """
    d = x.shape[-1]
    if "F" in side:
        y = project(x, side["F"])
        raw = gram(y, y)
        trace = jnp.einsum("kdr,kdr->k", side["F"], side["F"])
    elif "S" in side:
        y = project(x, side["S"])
        raw = gram(y, x[:, :, None, :])  # x broadcast over k
        trace = jnp.trace(side["S"], axis1=1, axis2=2)
    else:
        yu = project(x, side["U"])
        yv = project(x, side["V"])
        raw = gram(yu, yv)
        trace = jnp.einsum("kdr,kdr->k", side["U"], side["V"])
    if centred:
        raw = raw - trace[None, :, None, None] * cov[None, None, :, :]
    return raw / jnp.sqrt(jnp.asarray(d, x.dtype))


# --------------------------------------------------------------------------------------------
# Output functions: forms of one side, G[b, K, L, L] -> outputs y[b, ...]


def make_output(output: str, activation: str, beta: float, heads: int, layer_c: float) -> Callable:
    """The output map y(G) for one side with ``heads`` heads (indices are grouped per head).

    - index: y = Σ_h σ(G_h), entrywise over the L×L forms;
    - softmax: y = Σ_h softmax_j(β G_h) row-wise (2506.01582: y = softmax(β h));
    - two-layer (the multi-layer form of arXiv 2506.01582, Eqs. 4–5; docs/aim.md): per head h,
      indices (2h, 2h+1) are layers 1, 2; A = c·I + Σ_h softmax(β G_{1,h}),
      y = Σ_h softmax(β A G_{2,h} Aᵀ).
    """
    if output == "index":
        act = ACTIVATIONS[activation]
        return lambda g: jnp.sum(act(g), axis=1)
    if output == "softmax":
        return lambda g: jnp.sum(jax.nn.softmax(beta * g, axis=-1), axis=1)
    if output == "two-layer":

        def two_layer(g):
            g1, g2 = g[:, 0::2], g[:, 1::2]
            eye = jnp.eye(g.shape[-1], dtype=g.dtype)
            a = layer_c * eye + jnp.sum(jax.nn.softmax(beta * g1, axis=-1), axis=1)
            inner = jnp.einsum("bij,bhjk,blk->bhil", a, g2, a)
            return jnp.sum(jax.nn.softmax(beta * inner, axis=-1), axis=1)

        return two_layer
    raise InputError(
        f"invalid value for 'output': must be index, softmax or two-layer ({output!r})"
    )


def squared_error(y_student: jax.Array, y_teacher: jax.Array, loss_scale: str) -> jax.Array:
    """Per-sample loss: ½‖y − y*‖² (half) or ‖y − y*‖² (full), summed over output entries."""
    diff = (y_student - y_teacher).reshape(y_student.shape[0], -1)
    per_sample = jnp.sum(diff**2, axis=1)
    return 0.5 * per_sample if loss_scale == "half" else per_sample


# --------------------------------------------------------------------------------------------
# Token sampling


def covariance_root(C: list[list[float]] | None, L: int) -> np.ndarray | None:
    """A with A Aᵀ = C (symmetric square root, valid for semi-definite C); None for identity."""
    if C is None:
        return None
    c = np.asarray(C, dtype=np.float64)
    w, v = np.linalg.eigh(c)
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ v.T


def sample_tokens(key: jax.Array, n: int, L: int, d: int, root, dtype) -> jax.Array:
    """n token matrices X ∈ R^{L×d} with X ~ N(0, C ⊗ I_d) (the draws of ``jax.random.normal``,
    with the hash unrolled: :mod:`attndyn.core.fastrandom`)."""
    z = fastrandom.normal(key, (n, L, d), dtype=dtype)
    if root is None:
        return z
    return jnp.einsum("ij,bjd->bid", jnp.asarray(root, dtype), z)
