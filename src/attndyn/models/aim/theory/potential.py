"""The population potential Φ and its gradients (P1 Theorem 1, Eq. 91, App. E.1.2, Eqs. 571–572).

By Theorem 1 the forms G_ijk converge to a Gaussian vector with

    E G_ijk = C_ij m_k,   Cov(G_ijk, G_i'j'l) = C_ii' C_jj' Ω_kl + C_ij' C_ji' Ψ_kl,

with m_k = Tr S_k/√d (0 for centred forms), Ω_kl = Tr(S_k S_lᵀ)/d, Ψ_kl = Tr(S_k S_l)/d. So the
population loss is Φ(m, Ω, Ψ) = E L(G). Tied S is the case Ω = Ψ = q, m = 0; untied uses
(m, q⁽¹⁾ = Ω, q⁽²⁾ = Ψ).

Gradients follow the paper's convention: derivatives with respect to the K×K matrices taken with
*independent* entries, i.e. Price's theorem ∂E f/∂Σ_ab = ½ E ∂_a∂_b f, so an off-diagonal entry is
half the derivative with respect to the symmetric scalar:

    [∇_Ω Φ]_kl = ½ Σ C_ii' C_jj' E ∂²L/∂G_ijk ∂G_i'j'l        (Eq. 458)
    [∇_Ψ Φ]_kl = ½ Σ C_ij' C_ji' E ∂²L/∂G_ijk ∂G_i'j'l        (Eq. 459)
    Γ_kl(q)    = [∇_Ω Φ + ∇_Ψ Φ]_kl at Ω = Ψ = q             (Eq. 91)
    ∂Φ/∂m_k    = Σ_ij C_ij E ∂L/∂G_ijk                       (untied b_k, Eq. 566)

``gradients`` obtains them by reverse-mode automatic differentiation of the quadrature estimate of
Φ (through the Cholesky factor). The tied Γ used by the hierarchy and the matrix flow
(``gamma_tied``) is instead Eq. 91 itself: the quadrature average of the autodiff Hessian of L
(``gamma_price``). Both agree in the interior of the cone; near a singular q (e.g. the student
aligning with the teacher, q11 q22 − q12² → 0) the derivative of the Cholesky factor grows like
1/√(smallest eigenvalue) and amplifies the quadrature error, while the Price form stays bounded
and is defined on the boundary (measured errors: BENCHMARKS.md, "Quadrature of Γ").

Reduced coordinates: when the loss is invariant along some directions of the distinct entries
(a row-wise softmax ignores a constant added to a row), Φ is an expectation over the r directions
it depends on (:func:`loss_basis`). For the tied softmax model with L = 2 and two indices that is
4 dimensions instead of 6, where a tensor Gauss–Hermite rule fits (order 11 in the default 2^14
budget). Its cost and accuracy against Sobol QMC in the full 6 dimensions are in BENCHMARKS.md,
"Quadrature of Γ".
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.core.gaussian import Rule, rule_for
from attndyn.models.aim import model
from attndyn.models.aim.config import AIMConfig

PRICE_GAP = 1e-3
"""Relative eigenvalue gap of q below which ``gamma_tied`` uses the Price form."""
PRICE_QMC_NODES = 1 << 12
"""Node budget of the Price form (a Hessian per node costs ~dim gradients): Gauss–Hermite if ≥ 8
nodes per axis fit (dim 4: order 8), else the first 2^12 Sobol points (Γ to ~1e-4 for softmax
L = 2)."""
PRICE_CHUNK = 1 << 22
"""Hessian entries per chunk of nodes in the Price form (bounds its memory)."""


def hermite_cubic(kappa, chol, xi):
    """Σ_abc κ_abc h_abc at the rule's nodes, h_abc the third multivariate Hermite polynomial of
    N(0, Σ = chol cholᵀ) at G = chol ξ: h_abc = z_a z_b z_c − Λ_ab z_c − Λ_ac z_b − Λ_bc z_a with
    z = Λ G = chol^−ᵀ ξ and Λ = Σ^−1. Gaussian integration by parts gives
    E ∂_a∂_b∂_c f(G) = E f(G) h_abc(G), so E f(G)(1 + Σκh/6) is the first Edgeworth term of a
    distribution with covariance Σ and third cumulants κ (McCullagh 1987, ch. 5;
    docs/references.md)."""
    z = jax.scipy.linalg.solve_triangular(chol, xi.T, lower=True, trans=1).T  # chol^−ᵀ ξ
    eye = jnp.eye(chol.shape[0], dtype=chol.dtype)
    inv_chol = jax.scipy.linalg.solve_triangular(chol, eye, lower=True)
    precision = inv_chol.T @ inv_chol
    cubic = jnp.einsum("abc,na,nb,nc->n", kappa, z, z, z)
    linear = jnp.einsum("abc,ab,nc->n", kappa, precision, z)
    return cubic - 3.0 * linear


@dataclass
class Potential:
    """Φ(m, Ω, Ψ) = E L(G) for a loss L of the full form tensor G[K, L, L] (one sample).

    The Gaussian vector is parameterised by its distinct entries: for an index with a symmetric
    matrix G_ijk = G_jik, so only i ≤ j is kept (``keep``); the covariance of the kept entries is
    positive definite for non-degenerate order parameters and is factored by Cholesky (with a
    relative jitter of 1e-12), so Φ is differentiable by reverse-mode autodiff.
    """

    loss: Callable[[jax.Array], jax.Array]  # the form tensor G -> L(G)
    C: np.ndarray
    keep: np.ndarray  # indices of the distinct entries in the flattened (k, i, j) order
    expand: np.ndarray  # (n_full, n_kept) 0/1 matrix: G_full = expand @ G_kept
    rule: Rule
    constant: float = 0.0  # label-noise contribution to Φ (no effect on gradients)
    basis: np.ndarray | None = None  # (r, n_kept) orthonormal rows: the directions L depends on
    price_rule: Rule | None = None  # nodes of the Price form (default: ``rule``, QMC capped)
    _jit: dict = field(default_factory=dict, repr=False)

    @property
    def L(self) -> int:
        return self.C.shape[0]

    @property
    def K(self) -> int:
        return self.expand.shape[0] // (self.L * self.L)

    def covariance(self, omega, psi, xp=np):
        """Cov of the flattened forms (order k, i, j): C_ii'C_jj'Ω_kl + C_ij'C_ji'Ψ_kl."""
        C = xp.asarray(self.C)
        a = xp.einsum("ac,bd,kl->kablcd", C, C, omega)
        b = xp.einsum("ad,bc,kl->kablcd", C, C, psi)
        n = self.K * self.L * self.L
        return (a + b).reshape(n, n)

    def mean(self, m, xp=np):
        """E G_ijk = C_ij m_k, flattened."""
        return (xp.asarray(m)[:, None, None] * xp.asarray(self.C)[None]).reshape(-1)

    def _phi(self, m, omega, psi, kappa=None):
        """E L(G) over the Gaussian rule; with ``kappa`` (the third joint cumulants of the kept
        entries, an (n, n, n) tensor) the first Edgeworth term as well (:meth:`value_edgeworth`)."""
        # symmetrise first: derivatives w.r.t. the unsymmetrised matrices then carry the ½
        # convention of Eqs. 91/458/459 on off-diagonal entries
        omega = 0.5 * (omega + omega.T)
        psi = 0.5 * (psi + psi.T)
        keep = jnp.asarray(self.keep)
        cov = self.covariance(omega, psi, jnp)[keep][:, keep]
        mean = self.mean(m, jnp)[keep]
        if self.basis is not None:  # G_kept = Bᵀ Y with Y = B G_kept ~ N(B mean, B Cov Bᵀ)
            basis = jnp.asarray(self.basis)
            cov, mean = basis @ cov @ basis.T, basis @ mean
            if kappa is not None:  # the cumulants of Y = B G_kept
                kappa = jnp.einsum("ai,bj,ck,ijk->abc", basis, basis, basis, kappa)
        jitter = 1e-12 * (jnp.trace(cov) / cov.shape[0] + 1e-300)
        chol = jnp.linalg.cholesky(cov + jitter * jnp.eye(cov.shape[0], dtype=cov.dtype))
        xi = jnp.asarray(self.rule.nodes)
        g_kept = mean + xi @ chol.T
        if self.basis is not None:
            g_kept = g_kept @ basis
        g_full = g_kept @ jnp.asarray(self.expand).T
        shape = (self.K, self.L, self.L)
        losses = jax.vmap(lambda g: self.loss(g.reshape(shape)))(g_full)
        weights = jnp.asarray(self.rule.weights)
        if kappa is not None:
            weights = weights * (1.0 + hermite_cubic(kappa, chol, xi) / 6.0)
        return jnp.sum(weights * losses)

    def value_edgeworth(self, m, omega, psi, kappa) -> float:
        """Φ(m, Ω, Ψ) + (1/6) Σ_abc κ_abc E ∂_a∂_b∂_c L(G): the finite-d population loss to
        O(1/d) when the forms have third joint cumulants κ (O(d^−½), P1 Lemma 10; the Edgeworth
        expansion of Theorem 1, docs/aim.md "Finite d"). ``kappa`` is over the kept entries."""
        with jax.enable_x64(True):
            args = [np.asarray(a, np.float64) for a in (m, omega, psi, kappa)]
            return float(self._compiled("edgeworth")(*args)) + self.constant

    def _compiled(self, name):
        if name not in self._jit:
            if name == "price":
                fn = self._gamma_price
            elif name == "value":
                fn = self._phi
            elif name == "edgeworth":
                fn = self._phi  # called with kappa
            else:
                fn = jax.grad(self._phi, argnums=(0, 1, 2))
            self._jit[name] = jax.jit(fn)
        return self._jit[name]

    def _call(self, name, m, omega, psi):
        # NumPy float64 arguments go to the compiled function as they are: converting each with
        # jnp.asarray first was an eager dispatch per argument, most of an ODE right-hand side's
        # time in the matrix flow (BENCHMARKS.md, "Claim runs in CI")
        with jax.enable_x64(True):
            args = [np.asarray(a, np.float64) for a in (m, omega, psi)]
            return self._compiled(name)(*args)

    def value(self, m, omega, psi) -> float:
        """Φ(m, Ω, Ψ)."""
        return float(self._call("value", m, omega, psi)) + self.constant

    def gradients(self, m, omega, psi) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(∂Φ/∂m, ∇_Ω Φ, ∇_Ψ Φ) with the ½ convention for off-diagonal entries."""
        dm, domega, dpsi = self._call("grads", m, omega, psi)
        return np.asarray(dm), np.asarray(domega), np.asarray(dpsi)

    # Tied / centred convenience (m = 0, Ω = Ψ = q)
    def phi_tied(self, q) -> float:
        """Φ(q) of the tied model (P1 §3)."""
        return self.value(np.zeros(self.K), q, q)

    def gamma_tied(self, q) -> np.ndarray:
        """Γ̃(q) = Γ(Π_{S+}((q + qᵀ)/2)) (Eqs. 91–93): Γ = ∇Φ = [∇_Ω Φ + ∇_Ψ Φ] at Ω = Ψ = q,
        extended outside the PSD cone through the projection Π_{S+} (eigenvalues clipped at 0).

        In the interior (smallest eigenvalue of q above ``PRICE_GAP`` times the largest) it is the
        autodiff gradient; closer to the boundary, or outside the cone, the Price form
        :meth:`gamma_price` at the projected q (the two differ by the quadrature error, ≲ 2e-3
        relative with 2^14 QMC nodes at the switch; see the module docstring)."""
        q = 0.5 * (np.asarray(q, dtype=np.float64) + np.asarray(q, dtype=np.float64).T)
        vals, vecs = np.linalg.eigh(q)
        if vals[0] > PRICE_GAP * max(vals[-1], 0.0):
            _, d_omega, d_psi = self.gradients(np.zeros(self.K), q, q)
            return d_omega + d_psi
        projected = (vecs * np.clip(vals, 0.0, None)) @ vecs.T
        return self.gamma_price(projected)

    def gamma_price(self, q) -> np.ndarray:
        """Γ_kl(q) = ½ Σ_{i,j,i',j'} (C_ii'C_jj' + C_ij'C_ji') E[∂²L/∂G_(ijk)∂G_(i'j'l)] (Eq. 91),
        the expectation over G ~ N(0, Cov(q)) on the rule's nodes, with the Hessian of L in the
        full form tensor (every entry G_ijk an argument; computed in the distinct entries, which
        gives the same sum since B is symmetric in i ↔ j). The covariance is factored by its
        symmetric square root (negative round-off eigenvalues clipped), so q on the boundary of the
        PSD cone is fine; q must be PSD (the hierarchy projects it first, Eqs. 92–93)."""
        with jax.enable_x64(True):
            q = jnp.asarray(q, jnp.float64)
            return np.asarray(self._compiled("price")(q))

    def _gamma_price(self, q):
        q = 0.5 * (q + q.T)
        keep = jnp.asarray(self.keep)
        cov = self.covariance(q, q, jnp)[keep][:, keep]
        basis = None if self.basis is None else jnp.asarray(self.basis)
        if basis is not None:
            cov = basis @ cov @ basis.T
        # the symmetric square root: unlike eigenvectors (arbitrary in degenerate eigenspaces) it
        # is a continuous function of the covariance, so Γ is smooth in q on the closed cone
        vals, vecs = jnp.linalg.eigh(cov)
        factor = (vecs * jnp.sqrt(jnp.clip(vals, 0.0, None))[None, :]) @ vecs.T
        rule = self.price_rule or self.rule
        nodes, w = rule.nodes, rule.weights
        if rule.kind == "qmc" and len(nodes) > PRICE_QMC_NODES:
            # the first 2^m points of a Sobol sequence are themselves a (0, m, s)-net
            nodes, w = nodes[:PRICE_QMC_NODES], w[:PRICE_QMC_NODES] / w[:PRICE_QMC_NODES].sum()
        g_kept = jnp.asarray(nodes) @ factor.T
        expand = jnp.asarray(self.expand)
        shape = (self.K, self.L, self.L)
        # Hessian in the distinct entries: B_(ij),(i'j') is invariant under i ↔ j and i' ↔ j', so
        # Σ_full B ∂²L = Σ_kept B ∂²L(expand(g)) — fewer tangents than the full Hessian
        if basis is None:
            hess = jax.hessian(lambda g: self.loss((expand @ g).reshape(shape)))
        else:  # Hessian in the reduced coordinates y, G_kept = Bᵀ y: ∇²_G = Bᵀ ∇²_y B
            hess = jax.hessian(lambda y: self.loss((expand @ (basis.T @ y)).reshape(shape)))
        w = jnp.asarray(w)

        def chunk_sum(acc, xs):
            g, wc = xs
            return acc + jnp.einsum("n,nab->ab", wc, jax.vmap(hess)(g)), None

        n, size = g_kept.shape
        per = max(1, min(n, PRICE_CHUNK // (size * size)))  # bounded memory
        pad = (-n) % per
        g_kept = jnp.concatenate([g_kept, jnp.zeros((pad, size), g_kept.dtype)])
        w = jnp.concatenate([w, jnp.zeros(pad, w.dtype)])
        mean_h, _ = jax.lax.scan(
            chunk_sum,
            jnp.zeros((size, size), g_kept.dtype),
            (g_kept.reshape(-1, per, size), w.reshape(-1, per)),
        )
        if basis is not None:
            mean_h = basis.T @ mean_h @ basis
        C = jnp.asarray(self.C)
        b = jnp.einsum("ac,bd->abcd", C, C) + jnp.einsum("ad,bc->abcd", C, C)
        K, L = self.K, self.L
        b_full = jnp.broadcast_to(b.transpose(0, 1, 2, 3)[None, :, :, None], (K, L, L, K, L, L))
        b_full = b_full.reshape(K * L * L, K * L * L)[keep][:, keep]
        block = jnp.asarray(self.keep // (L * L))  # the index k of each kept entry
        onehot = (block[:, None] == jnp.arange(K)[None, :]).astype(mean_h.dtype)
        return 0.5 * onehot.T @ (b_full * mean_h) @ onehot


def _distinct_entries(symmetric: list[bool], L: int) -> tuple[np.ndarray, np.ndarray]:
    """Kept entry indices and the expansion matrix for indices with symmetric forms."""
    full = {}
    keep = []
    for k, sym in enumerate(symmetric):
        for i in range(L):
            for j in range(L):
                flat = (k * L + i) * L + j
                if sym and j < i:
                    full[flat] = (k * L + j) * L + i  # copy of the (j, i) entry
                else:
                    keep.append(flat)
    position = {f: n for n, f in enumerate(keep)}
    n_full = len(symmetric) * L * L
    expand = np.zeros((n_full, len(keep)))
    for f in range(n_full):
        expand[f, position[full.get(f, f)]] = 1.0
    return np.asarray(keep), expand


POTENTIAL_FIELDS = (
    "output",
    "activation",
    "beta",
    "heads",
    "teacher_heads",
    "layer_c",
    "layers",
    "loss_scale",
    "label_noise",
    "L",
    "C",
    "param",
    "teacher",
    "head_params",
    "teacher_head_kinds",
)
_CACHE: dict = {}


def cached_potential(config: AIMConfig, log2_qmc: int) -> Potential:
    """:func:`potential_for` memoised on the fields it reads (``POTENTIAL_FIELDS``) and
    ``log2_qmc``: repeated theory runs of one model (other d, seeds, horizons, truncations) reuse
    its compiled quadrature instead of recompiling it."""
    key = (json.dumps([getattr(config, f) for f in POTENTIAL_FIELDS]), log2_qmc)
    if key not in _CACHE:
        if len(_CACHE) >= 16:
            _CACHE.clear()
        _CACHE[key] = potential_for(config, log2_qmc=log2_qmc)
    return _CACHE[key]


def symmetric_indices(config: AIMConfig) -> list[bool]:
    """Which indices (students then teachers) have symmetric matrices (per index: tied students,
    wishart and identity teachers)."""
    kinds = config.student_kinds + config.teacher_kinds
    return [k in ("tied", "wishart", "identity") for k in kinds]


def loss_basis(loss, expand: np.ndarray, shape: tuple, points: int = 96, seed: int = 0):
    """Orthonormal rows B (r × n_kept) spanning the directions the loss depends on, or None.

    If ∇L(g) ⊥ v for every g, then L(g + s v) = L(g): the loss is a function of B g alone and
    E L(G) = E L(Bᵀ Y) with Y = B G ~ N(B mean, B Cov Bᵀ), an r-dimensional expectation. The span
    of ∇L over random points (mixed scales) gives B; a row-wise softmax output is invariant under
    adding a constant to a row, so for L = 2 each index loses one of its three distinct entries and
    the tied Fig. 1 model (two indices) integrates over 4 dimensions instead of 6. Returns None when
    L depends on every entry, and checks L(g) = L(BᵀB g) before reducing."""
    n = expand.shape[1]
    with jax.enable_x64(True):
        f = jax.jit(jax.vmap(lambda g: loss((jnp.asarray(expand) @ g).reshape(shape))))
        grad = jax.jit(jax.vmap(jax.grad(lambda g: loss((jnp.asarray(expand) @ g).reshape(shape)))))
        rng = np.random.default_rng(seed)
        scales = np.geomspace(0.1, 10.0, points)[:, None]
        g = jnp.asarray(rng.standard_normal((points, n)) * scales)
        jac = np.asarray(grad(g))
        _, sing, vt = np.linalg.svd(jac, full_matrices=False)
        rank = int(np.sum(sing > 1e-9 * sing[0])) if sing[0] > 0 else n
        if rank >= n:
            return None
        basis = vt[:rank]
        projected = g @ jnp.asarray(basis.T @ basis)
        if not np.allclose(np.asarray(f(g)), np.asarray(f(projected)), rtol=1e-9, atol=1e-12):
            return None
    return basis


def potential_for(
    config: AIMConfig, max_nodes: int | None = None, log2_qmc: int = 15, reduce: bool = True
) -> Potential:
    """Φ for the loss the simulator trains on (same output functions and normalisation).

    With ``reduce`` the expectation runs over the r directions the loss depends on
    (:func:`loss_basis`); the rule is Gauss–Hermite when ≥ 8 nodes per axis fit in ``max_nodes``
    (default: the QMC budget 2^log2_qmc; r = 4 at 2^14: order 11, 14,641 nodes), else
    2^log2_qmc Sobol points."""
    n_student = config.n_student
    out_s, out_t = (
        model.make_output(
            config.output, config.activation, config.beta, h, config.layer_c, config.layers
        )
        for h in (config.heads, config.n_teacher_heads)
    )

    def loss(g):
        y = out_s(g[None, :n_student])
        y_star = out_t(g[None, n_student:])
        return model.squared_error(y, y_star, config.loss_scale)[0]

    L = config.L
    C = np.eye(L) if config.C is None else np.asarray(config.C, dtype=np.float64)
    keep, expand = _distinct_entries(symmetric_indices(config), L)
    shape = (len(symmetric_indices(config)), L, L)
    basis = loss_basis(loss, expand, shape) if reduce else None
    dim = len(keep) if basis is None else basis.shape[0]
    budget = max_nodes if max_nodes is not None else 1 << log2_qmc
    rule = rule_for(dim, max_nodes=budget, log2_n=log2_qmc)
    # a Hessian per node costs ~dim gradients: the Price form gets its own, smaller budget
    # (never more nodes than the rule of Φ itself: a coarse budget is coarse for both)
    price_rule = rule_for(dim, max_nodes=min(PRICE_QMC_NODES, budget), log2_n=log2_qmc)
    n_out = L * L  # every output has L×L entries
    scale = 0.5 if config.loss_scale == "half" else 1.0
    constant = scale * n_out * config.label_noise**2
    return Potential(
        loss=loss,
        C=C,
        keep=keep,
        expand=expand,
        rule=rule,
        constant=constant,
        basis=basis,
        price_rule=price_rule,
    )
