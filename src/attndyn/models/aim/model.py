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


def side_forms(side: dict | list[dict], x: jax.Array, cov: jax.Array, centred: bool) -> jax.Array:
    """:func:`forms` of one side; a list (one block per head, ``head_params``) gives each block's
    forms in index order, centred per block by the rule of the module docstring (c = 0 for a
    product {"U", "V"}, else 1; ``centred`` is then unused)."""
    if not isinstance(side, list):
        return forms(side, x, cov, centred)
    return jnp.concatenate([forms(b, x, cov, "U" not in b) for b in side], axis=1)


# --------------------------------------------------------------------------------------------
# Output functions: forms of one side, G[b, K, L, L] -> outputs y[b, ...]


def make_output(
    output: str, activation: str, beta: float, heads: int, layer_c: float, layers: int = 0
) -> Callable:
    """The output map y(G) of one side with ``heads`` heads and ``layers`` = M residual layers,
    as a function of the base forms G[b, k] of the input tokens X₀ (value matrices V = I).

    Index k = h·(M + 1) + m is head h's matrix S_m^(h) at layer m (m = M: the readout). P1 Eqs.
    1–2 and App. B.1 (Eqs. 50–53) with V = I give X_m = A_m X₀, A₀ = I,

        A_{m+1} = (c·I + Σ_h softmax(β A_m G_{h,m} A_mᵀ)) A_m,    y = Σ_h σ(A_M G_{h,M} A_Mᵀ),

    since X_m S X_mᵀ/√d = A_m (X₀ S X₀ᵀ/√d) A_mᵀ; a centred form is centred on X₀ (docs/aim.md).
    σ is the activation entrywise (``index``) or the row-wise softmax(β ·) (``softmax``, the
    2506.01582 form y = softmax(β h)); c = ``layer_c`` (P1's residual: c = 1). M = 0 is the
    single-layer AIM, y = Σ_h σ(G_h).
    """
    if output == "index":
        act = ACTIVATIONS[activation]
        readout: Callable = act
    elif output == "softmax":
        readout = lambda z: jax.nn.softmax(beta * z, axis=-1)  # noqa: E731
    else:
        raise InputError(f"invalid value for 'output': must be index or softmax ({output!r})")
    if layers == 0:
        return lambda g: jnp.sum(readout(g), axis=1)

    def network(g):
        B, _, L, _ = g.shape
        g = g.reshape(B, heads, layers + 1, L, L)
        eye = jnp.eye(L, dtype=g.dtype)
        a = jnp.broadcast_to(eye, (B, L, L))
        for m in range(layers + 1):
            inner = g[:, :, m] if m == 0 else jnp.einsum("bij,bhjk,blk->bhil", a, g[:, :, m], a)
            if m == layers:
                return jnp.sum(readout(inner), axis=1)
            attention = jnp.sum(jax.nn.softmax(beta * inner, axis=-1), axis=1)
            a = layer_c * eye + attention if m == 0 else (layer_c * eye + attention) @ a

    return network


def network_output(
    side: dict,
    x: jax.Array,
    values: jax.Array,
    output: Callable,
    heads: int,
    layers: int,
    beta: float,
    layer_c: float,
) -> jax.Array:
    """The output of P1's network (Eqs. 1–2, App. B.1) computed on the tokens themselves, for
    value matrices ``values`` (heads·layers, d, d) (index h·M + m): X₀ = x,

        X_{m+1} = c·X_m + Σ_h softmax(β G(X_m; S_m^(h))) X_m V_m^(h),   y = Σ_h σ(G(X_M; S_M^(h))),

    G(X; S) = X S Xᵀ/√d uncentred (P1 App. B.1 centres nothing). ``output`` is
    :func:`make_output` at M = 0 (the readout summed over heads); ``side`` is uncentred
    ({"U", "V"}). With V = I it equals :func:`make_output` at M layers on the base forms."""
    B, L, d = x.shape
    per = layers + 1

    def layer(m: int) -> dict:
        return {k: v.reshape(heads, per, *v.shape[1:])[:, m] for k, v in side.items()}

    X = x
    for m in range(layers):
        g = forms(layer(m), X, jnp.eye(L, dtype=x.dtype), centred=False)  # (B, H, L, L)
        attention = jax.nn.softmax(beta * g, axis=-1)
        v = values.reshape(heads, layers, d, d)[:, m]
        X = layer_c * X + jnp.einsum("bhij,bjd,hde->bie", attention, X, v)
    return output(forms(layer(layers), X, jnp.eye(L, dtype=x.dtype), centred=False))


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
