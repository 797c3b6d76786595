"""The potentials F of the Langevin family: models, data and the regularised loss.

Reconstruction of arXiv 2605.07959 (abstract only; docs/langevin.md, "Models"):

- ``attention``: f(X) = pool Σ_h softmax(X W_Q^h (W_K^h)ᵀ Xᵀ/√d_k) X W_V^h [W_O^h], X ∈ ℝ^{T×d}
  with N(0, 1) entries; pooling mean / last token / none;
- ``lora``: f(x) = Σ_j a_j σ(⟨(W₀ + BA)_j, x⟩), W₀ ∈ ℝ^{p×d} frozen, B ∈ ℝ^{p×r}, A ∈ ℝ^{r×d},
  x ~ N(0, I_d);
- L̂ = (1/2n) Σ_i ‖f(X_i) − Y_i‖², F = L̂ + (λ/2) Σ_g ‖W_g‖²_F over the trained groups;
- test potentials: ``quadratic`` F = (λ/2)‖θ‖², ``double-well`` F = Σ_i (θ_i² − 1)² + (λ/2)‖θ‖².

Weights are N(0, scale²/fan_in). A :class:`Potential` holds pure functions of (params, frozen):
the frozen part (data, teacher labels, frozen weights) is drawn from ``data_seed`` and is the same
for every chain, so the chains of a run sample one Gibbs measure.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.models.langevin.config import LangevinConfig

Params = dict[str, jax.Array]

ACTIVATIONS: dict[str, Callable[[jax.Array], jax.Array]] = {
    "sigmoid": jax.nn.sigmoid,
    "tanh": jnp.tanh,
    "softplus": jax.nn.softplus,
}


@dataclass(frozen=True)
class Potential:
    """F = L̂ + (λ/2)‖θ‖² as pure functions.

    ``init(key) -> params``: the trained groups at t = 0 (one chain). ``frozen(key) -> dict``:
    data, labels and frozen weights (same for every chain). ``empirical(params, frozen, idx)``:
    L̂ over the samples ``idx`` (None: all n). ``lam``: λ.
    """

    init: Callable[[jax.Array], Params]
    frozen: Callable[[jax.Array], dict[str, Any]]
    empirical: Callable[[Params, dict[str, Any], jax.Array | None], jax.Array]
    lam: float

    def regulariser(self, params: Params) -> jax.Array:
        """(λ/2) Σ_g ‖W_g‖²_F."""
        return 0.5 * self.lam * sum_sq(params)

    def F(self, params: Params, frozen: dict[str, Any], idx: jax.Array | None = None) -> jax.Array:
        """F = L̂ (over ``idx``, default all samples) + (λ/2)‖θ‖²."""
        return self.empirical(params, frozen, idx) + self.regulariser(params)


def sum_sq(params: Params) -> jax.Array:
    """Σ_g ‖W_g‖²_F."""
    return jnp.asarray(sum(jnp.sum(jnp.square(w)) for w in jax.tree.leaves(params)))


def _gauss(key, shape, fan_in, scale, dtype):
    return (scale / jnp.sqrt(fan_in)) * jax.random.normal(key, shape, dtype)


def _inputs(key, shape: tuple[int, ...], kind: str, dtype) -> jax.Array:
    """Training inputs of ``shape`` (n first) by the config's ``inputs`` (config.py): Gaussian,
    Student-t(3)·√(1/3) (unit variance, infinite fourth moment) or near-duplicate pairs."""
    if kind == "heavy-tailed":
        return jax.random.t(key, 3.0, shape, dtype) * jnp.sqrt(jnp.asarray(1 / 3, dtype))
    if kind == "near-duplicate":
        k_base, k_jitter = jax.random.split(key)
        base = jax.random.normal(k_base, ((shape[0] + 1) // 2, *shape[1:]), dtype)
        jitter = 0.01 * jax.random.normal(k_jitter, shape, dtype)
        return jnp.repeat(base, 2, axis=0)[: shape[0]] + jitter
    return jax.random.normal(key, shape, dtype)


def _squared_error(pred: jax.Array, y: jax.Array) -> jax.Array:
    """(1/2n) Σ_i ‖pred_i − y_i‖²."""
    return 0.5 * jnp.sum(jnp.square(pred - y)) / pred.shape[0]


def _take(x: jax.Array, idx: jax.Array | None) -> jax.Array:
    return x if idx is None else x[idx]


# --- attention regression -------------------------------------------------------------------

ATTENTION_GROUPS = ("Q", "K", "V", "O")


def attention_shapes(c: LangevinConfig) -> dict[str, tuple[tuple[int, ...], int]]:
    """Group → (shape, fan_in). W_V maps to d_v (with W_O) or straight to d_out."""
    dv = c.d_v if c.output else c.d_out
    shapes: dict[str, tuple[tuple[int, ...], int]] = {
        "Q": ((c.heads, c.d, c.d_k), c.d),
        "K": ((c.heads, c.d, c.d_k), c.d),
        "V": ((c.heads, c.d, dv), c.d),
    }
    if c.output:
        shapes["O"] = ((c.heads, c.d_v, c.d_out), c.d_v)
    return shapes


def attention_trained(c: LangevinConfig) -> tuple[str, ...]:
    """The trained groups, in ATTENTION_GROUPS order."""
    flags = {"Q": c.train_q, "K": c.train_k, "V": c.train_v, "O": c.output}
    return tuple(g for g in attention_shapes(c) if flags[g])


def attention_forward(W: Params, X: jax.Array, c: LangevinConfig) -> jax.Array:
    """f(X) for a batch X (n, T, d): Σ_h softmax(X Q_h K_hᵀ Xᵀ/√d_k) X V_h [O_h], pooled.

    Returns (n, d_out) (pooling mean or last) or (n, T, d_out) (none).
    """
    q = jnp.einsum("ntd,hde->nhte", X, W["Q"])
    k = jnp.einsum("ntd,hde->nhte", X, W["K"])
    scores = jnp.einsum("nhte,nhse->nhts", q, k) / jnp.sqrt(jnp.asarray(c.d_k, X.dtype))
    a = jax.nn.softmax(scores, axis=-1)
    v = jnp.einsum("ntd,hdv->nhtv", X, W["V"])
    heads = jnp.einsum("nhts,nhsv->nhtv", a, v)
    out = jnp.einsum("nhtv,hvo->nto", heads, W["O"]) if "O" in W else jnp.sum(heads, axis=1)
    if c.pooling == "mean":
        return jnp.mean(out, axis=1)
    if c.pooling == "last":
        return out[:, -1]
    return out


def attention_potential(c: LangevinConfig) -> Potential:
    dtype = jnp.dtype(c.dtype)
    shapes = attention_shapes(c)
    trained = attention_trained(c)

    def draw(key, scale):
        keys = jax.random.split(key, len(shapes))
        return {
            g: _gauss(k, shape, fan, scale, dtype)
            for k, (g, (shape, fan)) in zip(keys, shapes.items(), strict=True)
        }

    def frozen(key):
        k_x, k_t, k_y, k_n, k_w = jax.random.split(key, 5)
        X = _inputs(k_x, (c.n, c.tokens, c.d), c.inputs, dtype)
        teacher = draw(k_t, c.teacher_scale)
        y_shape = attention_forward(teacher, X[:1], c).shape[1:]
        if c.labels == "teacher":
            Y = attention_forward(teacher, X, c)
        else:
            Y = jax.random.normal(k_y, (c.n, *y_shape), dtype)
        Y = Y + c.label_noise * jax.random.normal(k_n, Y.shape, dtype)
        fixed = {g: w for g, w in draw(k_w, c.init_scale).items() if g not in trained}
        return {"X": X, "Y": Y, "fixed": fixed}

    def init(key):
        return {g: w for g, w in draw(key, c.init_scale).items() if g in trained}

    def empirical(params, fz, idx):
        W = {**fz["fixed"], **params}
        return _squared_error(attention_forward(W, _take(fz["X"], idx), c), _take(fz["Y"], idx))

    return Potential(init, frozen, empirical, c.lam)


# --- LoRA on a shallow net ------------------------------------------------------------------


def lora_forward(
    A: jax.Array, B: jax.Array, W0: jax.Array, a: jax.Array, x: jax.Array, activation: str
) -> jax.Array:
    """f(x) = Σ_j a_j σ(⟨(W₀ + BA)_j, x⟩) for a batch x (n, d); returns (n,)."""
    pre = x @ W0.T + (x @ A.T) @ B.T
    return ACTIVATIONS[activation](pre) @ a


def lora_potential(c: LangevinConfig) -> Potential:
    dtype = jnp.dtype(c.dtype)
    p, d, r = c.width, c.d, c.rank
    r_star = c.rank if c.teacher_rank is None else c.teacher_rank

    def frozen(key):
        k_w, k_a, k_x, k_ta, k_tb, k_y, k_n = jax.random.split(key, 7)
        W0 = _gauss(k_w, (p, d), d, 1.0, dtype)
        a = _gauss(k_a, (p,), p, 1.0, dtype)
        X = _inputs(k_x, (c.n, d), c.inputs, dtype)
        if c.labels == "teacher":
            A_t = _gauss(k_ta, (r_star, d), d, c.teacher_scale, dtype)
            B_t = _gauss(k_tb, (p, r_star), max(r_star, 1), 1.0, dtype)
            Y = lora_forward(A_t, B_t, W0, a, X, c.activation)
        else:
            Y = jax.random.normal(k_y, (c.n,), dtype)
        Y = Y + c.label_noise * jax.random.normal(k_n, Y.shape, dtype)
        return {"X": X, "Y": Y, "W0": W0, "a": a}

    def init(key):
        k_a, k_b, k_o = jax.random.split(key, 3)
        A = _gauss(k_a, (r, d), d, c.init_scale, dtype)
        if c.lora_init == "zero-b":
            B = jnp.zeros((p, r), dtype)
        else:
            B = _gauss(k_b, (p, r), r, c.init_scale, dtype)
        params = {"A": A, "B": B}
        if c.train_outer:
            params["a"] = _gauss(k_o, (p,), p, c.init_scale, dtype)
        return params

    def empirical(params, fz, idx):
        a = params.get("a", fz["a"])
        pred = lora_forward(
            params["A"], params["B"], fz["W0"], a, _take(fz["X"], idx), c.activation
        )
        return _squared_error(pred, _take(fz["Y"], idx))

    return Potential(init, frozen, empirical, c.lam)


# --- test potentials ------------------------------------------------------------------------


def test_potential(c: LangevinConfig) -> Potential:
    """quadratic: L̂ = 0; double-well: L̂ = Σ_i (θ_i² − 1)² (barrier 1 at θ_i = 0 when λ = 0)."""
    dtype = jnp.dtype(c.dtype)

    def frozen(key):
        return {}

    def init(key):
        return {"theta": c.x0 + c.init_scale * jax.random.normal(key, (c.dim,), dtype)}

    def empirical(params, fz, idx):
        if c.model == "quadratic":
            return jnp.zeros((), dtype)
        return jnp.sum(jnp.square(jnp.square(params["theta"]) - 1.0))

    return Potential(init, frozen, empirical, c.lam)


def potential(c: LangevinConfig) -> Potential:
    """The config's F."""
    if c.model == "attention":
        return attention_potential(c)
    if c.model == "lora":
        return lora_potential(c)
    return test_potential(c)


def n_params(c: LangevinConfig) -> int:
    """p: the number of trained scalars."""
    if c.model == "attention":
        shapes = attention_shapes(c)
        total = 0
        for g in attention_trained(c):
            size = 1
            for n in shapes[g][0]:
                size *= n
            total += size
        return total
    if c.model == "lora":
        return c.rank * (c.width + c.d) + (c.width if c.train_outer else 0)
    return c.dim


def _orbit_dim(k: int, frozen_vectors: int, all_vectors: int) -> int:
    """dim of the O(k)-orbit, in the trained coordinates, of generic weights whose k-vectors
    (rows of W_Q, W_K, W_V, B; columns of W_O, A) number ``all_vectors``, of which
    ``frozen_vectors`` belong to frozen groups: X ∈ o(k) is admissible iff it kills the frozen
    vectors (so frozen weights stay put), and acts trivially iff it kills them all; o(m) =
    m(m − 1)/2 on the orthogonal complement of m = k − #vectors generic vectors."""

    def o(m: int) -> int:
        return m * (m - 1) // 2

    return o(k - min(k, frozen_vectors)) - o(k - min(k, all_vectors))


def flat_directions(c: LangevinConfig) -> int:
    """dim of the continuous symmetry orbit of a generic point of F at λ > 0 [I]
    (docs/langevin.md, "p_eff"): O(r) for LoRA's (B, A) → (BR, RᵀA); per head O(d_k) for
    (W_Q, W_K) → (W_Q R, W_K R) and, with a trained output, O(d_v) for (W_V, W_O) →
    (W_V R, RᵀW_O). A frozen group allows only the R that fix it, and R that fix every group act
    trivially (:func:`_orbit_dim`); at d_k ≤ 2d and d_v ≤ d + d_out with Q, K, V trained this is
    H·d_k(d_k − 1)/2 (+ H·d_v(d_v − 1)/2). At λ = 0 the orbits are GL's (no Gibbs measure)."""
    if c.model == "lora":
        return _orbit_dim(c.rank, 0, c.width + c.d)
    if c.model == "attention":
        qk = _orbit_dim(c.d_k, c.d * ((not c.train_q) + (not c.train_k)), 2 * c.d)
        vo = _orbit_dim(c.d_v, 0 if c.train_v else c.d, c.d + c.d_out) if c.output else 0
        return c.heads * (qk + vo)
    return 0


def _span_rank(vectors: list, tol: float) -> int:
    """Dimension of the span of the rows of ``vectors`` (arrays of k-vectors): the singular
    values above ``tol``."""
    if not vectors:
        return 0
    M = np.concatenate([np.asarray(v, dtype=np.float64).reshape(-1, v.shape[-1]) for v in vectors])
    return int(np.sum(np.linalg.svd(M, compute_uv=False) > tol))


def orbit_dimension(c: LangevinConfig, params: Params, fixed: Params, tol: float) -> int:
    """dim of the symmetry orbit through the point ``params`` (frozen groups ``fixed``), the
    actions of :func:`flat_directions`: with f and m the dimensions of the spans of the frozen
    and of all the k-vectors there (singular values > ``tol``), o(k − f) − o(k − m)
    (:func:`_orbit_dim`). Equals :func:`flat_directions` at a generic point and is smaller at a
    rank-deficient one: LoRA at A = B = 0 (the adapter-free point) has a point as its orbit."""
    if c.model == "lora":
        m = _span_rank([params["B"], np.asarray(params["A"]).T], tol)
        return _orbit_dim(c.rank, 0, m)
    if c.model != "attention":
        return 0
    W = {**fixed, **params}
    trained = attention_trained(c)
    total = 0
    for h in range(c.heads):
        qk = [np.asarray(W[g][h]) for g in ("Q", "K")]
        frozen_qk = [v for g, v in zip(("Q", "K"), qk, strict=True) if g not in trained]
        total += _orbit_dim(c.d_k, _span_rank(frozen_qk, tol), _span_rank(qk, tol))
        if c.output:
            vo = [np.asarray(W["V"][h]), np.asarray(W["O"][h]).T]
            frozen_vo = vo[:1] if "V" not in trained else []
            total += _orbit_dim(c.d_v, _span_rank(frozen_vo, tol), _span_rank(vo, tol))
    return total


def orbit_generators(c: LangevinConfig) -> list[Callable[[Params], Params]]:
    """A basis of the Lie algebra of :func:`flat_directions`' group as linear maps on the
    trained parameters, X = E_ab − E_ba of o(k): LoRA (B, A) ↦ (BX, −XA); per head
    (W_Q, W_K) ↦ (W_Q X, W_K X) and, with a trained output, (W_V, W_O) ↦ (W_V X, −X W_O). F is
    constant along each (d/dt F(θ + tGθ) = 0 at t = 0). Pairs with a frozen group are not
    covered (their group is a stabiliser subgroup): ValueError."""
    pairs: list[tuple[str, str, int | None, int]]
    if c.model == "lora":
        pairs = [("B", "A", None, c.rank)]
    elif c.model == "attention":
        trained = attention_trained(c)
        if not {"Q", "K"} <= set(trained) or (c.output and "V" not in trained):
            raise ValueError("orbit_generators: every group of a symmetric pair must be trained")
        pairs = [("Q", "K", h, c.d_k) for h in range(c.heads)]
        pairs += [("V", "O", h, c.d_v) for h in range(c.heads)] if c.output else []
    else:
        return []

    def generator(right: str, left: str, head: int | None, a: int, b: int, k: int):
        X = np.zeros((k, k))
        X[a, b], X[b, a] = 1.0, -1.0

        def act(params: Params) -> Params:
            out = {g: jnp.zeros_like(w) for g, w in params.items()}
            Xc = jnp.asarray(X, params[right].dtype)
            if head is None:  # LoRA: B (p, r) on the right, A (r, d) on the left
                out[right] = params[right] @ Xc
                out[left] = -Xc @ params[left]
            elif left == "K":  # (W_Q, W_K)[h] (d, d_k): both on the right
                out[right] = out[right].at[head].set(params[right][head] @ Xc)
                out[left] = out[left].at[head].set(params[left][head] @ Xc)
            else:  # W_V[h] (d, d_v) on the right, W_O[h] (d_v, d_out) on the left
                out[right] = out[right].at[head].set(params[right][head] @ Xc)
                out[left] = out[left].at[head].set(-Xc @ params[left][head])
            return out

        return act

    return [
        generator(right, left, head, a, b, k)
        for right, left, head, k in pairs
        for a in range(k)
        for b in range(a + 1, k)
    ]


def effective_params(c: LangevinConfig) -> int:
    """p_eff = p − dim(orbit): the Laplace gap is E_μF − min F ≈ s·p_eff/4 [I]."""
    return n_params(c) - flat_directions(c)


DATA_STREAM = 0x64617461  # "data": folded into PRNGKey(data_seed) for the frozen part


def frozen_part(config: LangevinConfig, pot: Potential | None = None) -> dict:
    """Data, labels and frozen weights from ``data_seed`` (the same for every chain)."""
    pot = potential(config) if pot is None else pot
    return pot.frozen(jax.random.fold_in(jax.random.PRNGKey(config.data_seed), DATA_STREAM))
