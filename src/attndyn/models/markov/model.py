"""The one-layer transformer of arXiv 2605.01199, Def. 2.2, and its population loss (Prop. 2.3).

With one-hot inputs E_X (s×d), embedding W₀ (d×m), query/key W_Q, W_K (m×m_k) and output W₁
(m×d), Def. 2.2 reads Attn(Z) = softmax(Z W_Q W_Kᵀ Zᵀ) Z and f(X) = Attn(E_X W₀) W₁, with the
cross-entropy of the last position's output against the label (Eq. 3). In the shorthands

    M = W₀W₁ (d×d),   Φ = W₀ W_Q W_Kᵀ W₀ᵀ (d×d),

the last position's logits are z = Σ_t a_t M_{x_t,:} with a_t ∝ exp(Φ_{x_s, x_t}), so a batch
costs O(d m²) for (M, Φ) plus O(B s d) for the gathers. Options (off by default, docs/markov.md):
logits divided by √m_k, a residual path (z += (W₀W₁)_{x_s,:}), a value matrix
(M = W₀W_VW₁) and causal training of every position.

Population limit (Prop. 2.3, s → ∞, query x_s ~ π, context frequencies → π):

    𝔸_ij = π_j e^{Φ_ij} / Σ_k π_k e^{Φ_ik},   ℙ_i = softmax(𝔸_i M),
    L(θ) = −Σ_i π_i Σ_y P_iy log ℙ_iy.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from attndyn.core.flow import GaussNewton

Params = dict[str, jax.Array]


@dataclass(frozen=True)
class Arch:
    """Static architecture options (all False/1 reproduce Def. 2.2)."""

    logit_scale: float = 1.0
    residual: bool = False
    value: bool = False
    causal: bool = False

    @classmethod
    def of(cls, config) -> Arch:
        scale = 1.0 if config.logit_scale == "none" else config.key_width**-0.5
        return cls(scale, config.residual, config.value, config.causal)


def init_params(key: jax.Array, d: int, m: int, m_k: int, eps: float, arch: Arch, dtype) -> Params:
    """Every weight i.i.d. N(0, ε²) (Section 3; Appendix E.1 takes ε = 1/m)."""
    shapes = {"W0": (d, m), "WQ": (m, m_k), "WK": (m, m_k), "W1": (m, d)}
    if arch.value:
        shapes["WV"] = (m, m)
    keys = jax.random.split(key, len(shapes))
    return {
        name: eps * jax.random.normal(k, shape, dtype)
        for k, (name, shape) in zip(keys, sorted(shapes.items()), strict=True)
    }


def shorthands(params: Params, arch: Arch = Arch()) -> dict[str, jax.Array]:
    """M (value path), Φ (token–token logits, scale included), W_QK = W_QW_Kᵀ and, with a
    residual, R = W₀W₁ (the residual's logits per query token)."""
    W0, W1 = params["W0"], params["W1"]
    out_path = W0 @ params["WV"] if arch.value else W0
    qk = params["WQ"] @ params["WK"].T
    phi = arch.logit_scale * ((W0 @ params["WQ"]) @ (W0 @ params["WK"]).T)
    out = {"M": out_path @ W1, "Phi": phi, "WQK": qk}
    if arch.residual:
        out["R"] = W0 @ W1
    return out


def last_position_logits(params: Params, inputs: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Logits (B, d) of the last position for token sequences ``inputs`` (B, s)."""
    sh = shorthands(params, arch)
    query = inputs[:, -1]
    scores = jnp.take_along_axis(sh["Phi"][query], inputs, axis=1)  # Φ_{x_s, x_t}, (B, s)
    a = jax.nn.softmax(scores, axis=1)
    z = jnp.einsum("bt,btd->bd", a, sh["M"][inputs])
    if arch.residual:
        z = z + sh["R"][query]
    return z


def causal_logits(params: Params, inputs: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Logits (B, s, d) of every position j, attending to positions t ≤ j."""
    sh = shorthands(params, arch)
    s = inputs.shape[1]
    scores = sh["Phi"][inputs[:, :, None], inputs[:, None, :]]  # (B, s, s): Φ_{x_j, x_t}
    mask = jnp.tril(jnp.ones((s, s), bool))
    a = jax.nn.softmax(jnp.where(mask, scores, -jnp.inf), axis=-1)
    z = jnp.einsum("bjt,btd->bjd", a, sh["M"][inputs])
    if arch.residual:
        z = z + sh["R"][inputs]
    return z


def sequence_loss(params: Params, sequences: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Mean cross-entropy (Eq. 3) of sequences (B, s + 1): inputs x₁…x_s, label x_{s+1}; causal:
    mean over every position's next token."""
    inputs, labels = sequences[:, :-1], sequences[:, 1:]
    if arch.causal:
        logp = jax.nn.log_softmax(causal_logits(params, inputs, arch), axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, labels[..., None], axis=-1))
    logp = jax.nn.log_softmax(last_position_logits(params, inputs, arch), axis=-1)
    return -jnp.mean(jnp.take_along_axis(logp, labels[:, -1:], axis=1))


def population_attention(phi: jax.Array, pi: jax.Array) -> jax.Array:
    """Prop. 2.3: 𝔸_ij = π_j e^{Φ_ij} / Σ_k π_k e^{Φ_ik} (rows sum to 1)."""
    return jax.nn.softmax(jnp.log(pi)[None, :] + phi, axis=1)


def shorthand_logits(M: jax.Array, Phi: jax.Array, pi: jax.Array, R=None) -> jax.Array:
    """z_i = 𝔸_i M (+ R_i with a residual), one row of logits per query token i (d×d)."""
    z = population_attention(Phi, pi) @ M
    return z if R is None else z + R


def shorthand_loss(M: jax.Array, Phi: jax.Array, pi: jax.Array, P: jax.Array, R=None) -> jax.Array:
    """Prop. 2.3's L as a function of the shorthands: −Σ_i π_i Σ_y P_iy log softmax(z_i)_y."""
    logp = jax.nn.log_softmax(shorthand_logits(M, Phi, pi, R), axis=1)
    return -jnp.sum(pi[:, None] * P * logp)


def population_logits(params: Params, pi: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """:func:`shorthand_logits` at the parameters' (M, Φ, R)."""
    sh = shorthands(params, arch)
    return shorthand_logits(sh["M"], sh["Phi"], pi, sh.get("R"))


def population_loss(params: Params, pi: jax.Array, P: jax.Array, arch: Arch = Arch()) -> jax.Array:
    """Prop. 2.3: L = −Σ_i π_i Σ_y P_iy log ℙ_iy with ℙ_i = softmax(z_i)."""
    sh = shorthands(params, arch)
    return shorthand_loss(sh["M"], sh["Phi"], pi, P, sh.get("R"))


def population_curvature(z: jax.Array, pi: jax.Array) -> jax.Array:
    """∇²_z L of L = −Σ_i π_i Σ_y P_iy log softmax(z_i)_y for flattened logits z (d²): block
    diagonal, block i = π_i (diag(ℙ_i) − ℙ_iℙ_iᵀ) ⪰ 0 (independent of P since Σ_y P_iy = 1)."""
    d = pi.shape[0]
    prob = jax.nn.softmax(z.reshape(d, d), axis=1)
    blocks = pi[:, None, None] * (jax.vmap(jnp.diag)(prob) - prob[:, :, None] * prob[:, None, :])
    return jax.scipy.linalg.block_diag(*[blocks[i] for i in range(d)])


def shorthand_names(arch: Arch = Arch()) -> tuple[str, ...]:
    """The shorthands in the order :func:`shorthand_vector` stacks them: M, Φ[, R]."""
    return ("M", "Phi", "R") if arch.residual else ("M", "Phi")


def shorthand_vector(params: Params, arch: Arch = Arch()) -> jax.Array:
    """u = (M, Φ[, R]) flattened row-major: the P = 2d² (3d² with a residual) numbers through
    which the population logits depend on the weights."""
    sh = shorthands(params, arch)
    return jnp.concatenate([sh[k].reshape(-1) for k in shorthand_names(arch)])


def shorthand_gram(params: Params, arch: Arch = Arch(), frozen: tuple[str, ...] = ()) -> jax.Array:
    """LLᵀ (P×P) for u = :func:`shorthand_vector`, L = ∂u/∂θ over the groups not in ``frozen``,
    in closed form. Each shorthand changes to first order in group G by terms P·dG·S or their
    transposes (with A = W₀, s the logit scale: dM = dA·W₁ + A·dW₁ (A·W_V for A with a value
    matrix, plus A·dW_V·W₁); dΦ = s[A·dW_Q·(AW_K)ᵀ + (A·dW_K·(AW_Q)ᵀ)ᵀ + dA·W_Q(AW_K)ᵀ +
    (dA·W_K(AW_Q)ᵀ)ᵀ]; dR = dA·W₁ + A·dW₁), and two terms of one group have the inner product
    ⟨(P dG S)_ij, (P' dG S')_kl⟩ = (PP'ᵀ)_ik (SᵀS')_jl (indices swapped for a transpose):
    O(m·m_k·d) work against the O(P·N) of P vector–Jacobian products."""
    A, W1, Q, K = params["W0"], params["W1"], params["WQ"], params["WK"]
    eye = jnp.eye(A.shape[0], dtype=A.dtype)
    s = arch.logit_scale
    AQ, AK = A @ Q, A @ K
    out = A @ params["WV"] if arch.value else A
    value_w1 = params["WV"] @ W1 if arch.value else W1
    terms = {  # shorthand -> [(group, P, S, transposed)]
        "M": [("W1", out, eye, False), ("W0", eye, value_w1, False)]
        + ([("WV", A, W1, False)] if arch.value else []),
        "Phi": [
            ("WQ", s * A, AK.T, False),
            ("WK", s * A, AQ.T, True),
            ("W0", s * eye, Q @ AK.T, False),
            ("W0", s * eye, K @ AQ.T, True),
        ],
    }
    if arch.residual:
        terms["R"] = [("W1", A, eye, False), ("W0", eye, W1, False)]
    patterns = {  # (transposed X, transposed Y) -> einsum of (PP'ᵀ, SᵀS')
        (False, False): "ik,jl->ijkl",
        (True, False): "jk,il->ijkl",
        (False, True): "il,jk->ijkl",
        (True, True): "jl,ik->ijkl",
    }
    n = eye.shape[0] ** 2
    rows = []
    for x in terms.values():
        row = []
        for y in terms.values():
            block = jnp.zeros((n, n), A.dtype)
            for g, P, S, tx in x:
                for g2, P2, S2, ty in y:
                    if g == g2 and g not in frozen:
                        t = jnp.einsum(patterns[tx, ty], P @ P2.T, S.T @ S2)
                        block = block + t.reshape(n, n)
            row.append(block)
        rows.append(jnp.concatenate(row, axis=1))
    return jnp.concatenate(rows, axis=0)


SMALL_D = 8
"""Up to this many tokens d, a rank-d product aᵀb (m×n from d×m and d×n) is written as d
broadcast multiply-adds (:func:`outer`)."""


def outer(a: jax.Array, b: jax.Array) -> jax.Array:
    """aᵀb for a (d×m), b (d×n). For d ≤ :data:`SMALL_D` as Σ_i a_i b_iᵀ in broadcasts: XLA:CPU
    fuses them into one pass that writes the m×n result (or feeds its consumer), where its GEMM
    kernel took 40–70 µs per 256×256 product with inner dimension 4 (the ROS2 flow's solves,
    BENCHMARKS.md "Focus–dilution")."""
    if a.shape[0] > SMALL_D:
        return a.T @ b
    total = a[0][:, None] * b[0][None, :]
    for i in range(1, a.shape[0]):
        total = total + a[i][:, None] * b[i][None, :]
    return total


def shorthand_linearization(params: Params, arch: Arch = Arch(), frozen: tuple[str, ...] = ()):
    """``(u, jvp, vjp)`` of u = :func:`shorthand_vector` at ``params``, in closed form, over the
    groups not in ``frozen`` (their tangents are ignored and their cotangents zero). With A = W₀,
    s the logit scale and O = A (A·W_V with a value matrix):

        dM = dA·(W_V)W₁ + O·dW₁ (+ A·dW_V·W₁),   dR = dA·W₁ + A·dW₁,
        dΦ = s[dA·W_Q(AW_K)ᵀ + (dA·W_K(AW_Q)ᵀ)ᵀ + A·(dW_Q(AW_K)ᵀ) + (A·(dW_K(AW_Q)ᵀ))ᵀ];

    the m×d products W_Q(AW_K)ᵀ, W_K(AW_Q)ᵀ are formed once, so a product costs O(m·m_k·d) and
    returns each weight's cotangent in its own row-major layout (autodiff's transpose returned
    W_Q's and W_K's transposed, and every elementwise pass of the solver paid a strided copy)."""
    A, W1, Q, K = params["W0"], params["W1"], params["WQ"], params["WK"]
    s = arch.logit_scale
    AQ, AK = A @ Q, A @ K
    q_ak, k_aq = Q @ AK.T, K @ AQ.T  # (m, d)
    out, value_w1 = (A @ params["WV"], params["WV"] @ W1) if arch.value else (A, W1)
    trained = {g: g not in frozen for g in params}
    names = shorthand_names(arch)
    u = shorthand_vector(params, arch)  # under jit, XLA shares AQ and AK with the products here
    d = A.shape[0]

    def jvp(t):
        dA = t["W0"] if trained["W0"] else jnp.zeros_like(A)
        dW1 = t["W1"] if trained["W1"] else jnp.zeros_like(W1)
        dM = dA @ value_w1 + out @ dW1
        if arch.value and trained["WV"]:
            dM = dM + (A @ t["WV"]) @ W1
        dPhi = dA @ q_ak
        dPhi = dPhi + (dA @ k_aq).T
        if trained["WQ"]:
            dPhi = dPhi + A @ (t["WQ"] @ AK.T)
        if trained["WK"]:
            dPhi = dPhi + (A @ (t["WK"] @ AQ.T)).T
        parts = {"M": dM, "Phi": s * dPhi, "R": dA @ W1 + A @ dW1}
        return jnp.concatenate([parts[k].reshape(-1) for k in names])

    def vjp(w):
        blocks = dict(zip(names, w.reshape(len(names), d, d), strict=True))
        wM, wPhi = blocks["M"], s * blocks["Phi"]
        grads = {
            "W0": wM @ value_w1.T + wPhi @ q_ak.T + wPhi.T @ k_aq.T,
            "W1": out.T @ wM,
            "WQ": outer(A, wPhi @ AK),
            "WK": outer(A, wPhi.T @ AQ),
        }
        if arch.value:
            grads["WV"] = outer(wM.T @ A, W1.T)
        if arch.residual:
            grads["W0"] = grads["W0"] + blocks["R"] @ W1.T
            grads["W1"] = grads["W1"] + A.T @ blocks["R"]
        return {g: grads[g] if trained[g] else jnp.zeros_like(params[g]) for g in params}

    return u, jvp, vjp


def _split(u: jax.Array, d: int, arch: Arch) -> tuple[jax.Array, jax.Array, jax.Array | None]:
    """(M, Φ, R or None) from u = :func:`shorthand_vector`."""
    M, Phi = u[: d * d].reshape(d, d), u[d * d : 2 * d * d].reshape(d, d)
    return M, Phi, u[2 * d * d :].reshape(d, d) if arch.residual else None


def population_gradient(
    params: Params, pi: jax.Array, P: jax.Array, arch: Arch = Arch(), frozen: tuple[str, ...] = ()
) -> Params:
    """∇_θ L of :func:`population_loss` by the chain rule through u: Lᵀ∇_u L, with ∇_u L (2d²
    or 3d² numbers) by autodiff of :func:`shorthand_loss` and Lᵀ the closed form of
    :func:`shorthand_linearization` (groups in ``frozen`` get zeros); equal to ``jax.grad`` of
    the loss, with each weight's gradient in its own layout."""
    u, _, vjp = shorthand_linearization(params, arch, frozen)
    d = pi.shape[0]

    def loss(w):
        M, Phi, R = _split(w, d, arch)
        return shorthand_loss(M, Phi, pi, P, R)

    return vjp(jax.grad(loss)(u))


def gauss_newton(arch: Arch = Arch(), frozen: tuple[str, ...] = ()) -> GaussNewton:
    """:class:`attndyn.core.flow.GaussNewton` of the population loss for the ROS2 solver: u =
    :func:`shorthand_vector` with its closed-form :func:`shorthand_linearization` and
    :func:`shorthand_gram`, ``outputs`` the flattened logits :func:`shorthand_logits` of u
    (state holds ``pi``), ``curvature`` = ∇²_z L (:func:`population_curvature`). Groups in
    ``frozen`` are constants of u, so the solver's Jacobian has no columns for them and never
    moves them."""

    def outputs(u, st):
        M, Phi, R = _split(u, st["pi"].shape[0], arch)
        return shorthand_logits(M, Phi, st["pi"], R).reshape(-1)

    return GaussNewton(
        lambda p, st: shorthand_linearization(p, arch, frozen),
        outputs,
        lambda z, st: population_curvature(z, st["pi"]),
        lambda p, st: shorthand_gram(p, arch, frozen),
    )
