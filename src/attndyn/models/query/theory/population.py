"""Population objective of single-query softmax attention, reduced to two scalars per token.

Model (our reconstruction of arXiv 2606.22406, docs/query.md, "Model"):
latent unit u ∈ S^{d−1}; per sample n_I informative tokens x_i = θ ξ_i u + z_i and n_N nuisance
tokens x_j = z_j, z ~ N(0, σ² I_d), ξ Rademacher per sequence or per token (or ξ = 1 for
``sign_mode = none``); a(q; X) = Σ_i w_i x_i with w = softmax(β⟨q, x_i⟩); the objective is
J(q) = E‖a(q; X)‖² (maximised).

Reduction (docs/query-theory.md §1). Write q = α u + b e with e ⊥ u a unit vector,
α = ⟨q, u⟩, b = ‖P_⊥ q‖. For every token let U_i = ⟨u, x_i⟩, E_i = ⟨e, x_i⟩ and
z_i^⊥ = the component of x_i orthogonal to span{u, e}. Then
    U_i = θ ξ_i 1[i informative] + σ g_i,   E_i = σ h_i,   g, h ~ N(0, 1) i.i.d.,
the scores are s_i = β(α U_i + b E_i), so w depends on (U, E) only, z^⊥ is independent of
(U, E, ξ), and
    ‖a‖² = (Σ w_i U_i)² + (Σ w_i E_i)² + ‖Σ w_i z_i^⊥‖².
Given (U, E), Σ w_i z_i^⊥ ~ N(0, σ² Σ w_i² I_{d−2}), so its squared norm is σ² Σ w_i² χ²_{d−2}
with conditional mean σ² (d − 2) Σ w_i². Hence, exactly,
    F(α, b) := J(α u + b e) = E[(Σ w U)² + (Σ w E)² + σ²(d − 2) Σ w²]            (R)
an expectation over 2n scalars that costs O(n) per sample whatever d is. On the sphere
Φ(m) = F(m, √(1 − m²)).

Monte Carlo with common random numbers (CRN): the same draws (ξ, g, h) serve every (α, b), so
the estimator F̂ is a smooth (analytic) function of (α, b) and can be differentiated exactly
(autodiff). Antithetic variants make F̂ carry the model's exact symmetries: (U, −E) always (the
law is invariant under e → −e), and (−U, ·) when ξ is a symmetric sign (``sign_mode`` ≠
``none``: ξ → −ξ, g → −g preserves the law). With the E flip, F̂ is even in b, so
Φ̂(m) = F̂(m, √(1 − m²)) is an analytic function of m on [−1, 1] and a Chebyshev series in m
converges geometrically (``PhiFit``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np
from numpy.polynomial import chebyshev as C

SIGN_MODES = ("sequence", "token", "none")


@dataclass(frozen=True)
class TokenLaw:
    """The token distribution and attention temperature in *effective* units: ``sigma`` is the
    standard deviation of each noise coordinate and ``beta`` multiplies ⟨q, x⟩ in the softmax
    (the simulator's conventions are resolved into these by ``law_of`` in theory/__init__)."""

    d: int
    n_informative: int
    n_nuisance: int
    theta: float
    sigma: float
    beta: float
    sign_mode: str = "sequence"

    def __post_init__(self):
        if self.d < 2:
            raise ValueError("d must be >= 2")
        if self.sign_mode not in SIGN_MODES:
            raise ValueError(f"sign_mode must be one of {', '.join(SIGN_MODES)}")
        if self.n_informative < 0 or self.n_nuisance < 0 or self.n_tokens < 1:
            raise ValueError("token counts must be >= 0 with at least one token")

    @property
    def n_tokens(self) -> int:
        return self.n_informative + self.n_nuisance

    @property
    def sign_symmetric(self) -> bool:
        return self.sign_mode != "none"


def draw_scalars(key: jax.Array, law: TokenLaw, count: int) -> tuple[jax.Array, jax.Array]:
    """(U, E), each (count, n): the tokens' coordinates along u and along a unit e ⊥ u (Eq. R).
    Informative tokens come first."""
    kx, kg, kh = jax.random.split(key, 3)
    n, n_i = law.n_tokens, law.n_informative
    g = jax.random.normal(kg, (count, n), jnp.float64)
    h = jax.random.normal(kh, (count, n), jnp.float64)
    if law.sign_mode == "sequence":
        xi = jax.random.rademacher(kx, (count, 1), jnp.float64) * jnp.ones((1, n_i))
    elif law.sign_mode == "token":
        xi = jax.random.rademacher(kx, (count, n_i), jnp.float64)
    else:
        xi = jnp.ones((count, n_i), jnp.float64)
    shift = jnp.concatenate([law.theta * xi, jnp.zeros((count, n - n_i))], axis=1)
    return shift + law.sigma * g, law.sigma * h


def sample_objective(alpha, b, U, E, law: TokenLaw):
    """Conditional expectation of ‖a‖² given one sample's (U, E) (Eq. R), for query
    q = α u + b e."""
    s = law.beta * (alpha * U + b * E)
    w = jax.nn.softmax(s)
    au, ae = jnp.dot(w, U), jnp.dot(w, E)
    return au**2 + ae**2 + law.sigma**2 * (law.d - 2) * jnp.sum(w**2)


def _variants(U, E, law: TokenLaw):
    """Antithetic variants of one sample that leave the token law invariant."""
    signs_u = (1.0, -1.0) if law.sign_symmetric else (1.0,)
    return [(su * U, se * E) for su in signs_u for se in (1.0, -1.0)]


class Population:
    """Monte Carlo estimator of F(α, b) = E‖a‖² (Eq. R) with common random numbers.

    ``samples`` draws of (ξ, g, h) are regenerated from ``seed`` in chunks on every call (no
    memory held), so every evaluation sees the same draws. Each draw is averaged over its
    antithetic variants (``antithetic=True``); standard errors are over draws.
    """

    def __init__(
        self,
        law: TokenLaw,
        samples: int = 4096,
        seed: int = 0,
        antithetic: bool = True,
        chunk_elements: int = 1 << 17,
    ):
        self.law = law
        self.samples = int(samples)
        self.seed = int(seed)
        self.antithetic = antithetic
        chunk = max(1, chunk_elements // law.n_tokens)
        self.chunk = int(min(self.samples, chunk))
        self.n_chunks = -(-self.samples // self.chunk)
        self.group = 16
        self._compiled: dict[int, object] = {}

    # --- per-draw functions -------------------------------------------------------------------
    def _per_draw(self, alpha, b, U, E):
        law = self.law
        variants = _variants(U, E, law) if self.antithetic else [(U, E)]
        return sum(sample_objective(alpha, b, u_, e_, law) for u_, e_ in variants) / len(variants)

    def _chunk_fn(self, order: int):
        """jit: (points α, b of shape (p,), chunk index, valid draws) -> sums and sums of squares
        over the chunk's draws of the per-draw value (order 0), with its gradient in (α, b)
        (order 1) and Hessian (order 2): columns F, Fa, Fb, Faa, Fab, Fbb (absent ones 0)."""
        if order in self._compiled:
            return self._compiled[order]
        law, chunk, seed = self.law, self.chunk, self.seed
        f = self._per_draw
        grad = jax.grad(f, argnums=(0, 1))
        hess = jax.hessian(f, argnums=(0, 1))

        def per(alpha, b, u_, e_):
            out = [f(alpha, b, u_, e_)]
            if order >= 1:
                out += list(grad(alpha, b, u_, e_))
            else:
                out += [0.0 * alpha, 0.0 * alpha]
            if order >= 2:
                (haa, hab), (_, hbb) = hess(alpha, b, u_, e_)
                out += [haa, hab, hbb]
            else:
                out += [0.0 * alpha] * 3
            return jnp.stack(out)

        def one_point(alpha, b, U, E):
            return jax.vmap(per, in_axes=(None, None, 0, 0))(alpha, b, U, E)  # (chunk, 6)

        def run(alphas, bs, index, valid):
            key = jax.random.fold_in(jax.random.PRNGKey(seed), index)
            U, E = draw_scalars(key, law, chunk)
            vals = jax.lax.map(lambda ab: one_point(ab[0], ab[1], U, E), (alphas, bs))
            mask = (jnp.arange(chunk) < valid)[None, :, None]
            vals = jnp.where(mask, vals, 0.0)
            return vals.sum(axis=1), (vals**2).sum(axis=1)

        self._compiled[order] = jax.jit(run)
        return self._compiled[order]

    def evaluate(self, alpha, b, order: int = 2) -> dict[str, np.ndarray]:
        """F̂ and its derivatives at the points (α_k, b_k): keys ``F``, ``Fa``, ``Fb`` (order ≥ 1),
        ``Faa``, ``Fab``, ``Fbb`` (order 2), arrays shaped like α, and ``se_<key>`` (standard
        errors over draws)."""
        alpha = np.atleast_1d(np.asarray(alpha, np.float64))
        b = np.broadcast_to(np.asarray(b, np.float64), alpha.shape)
        shape = alpha.shape
        flat_a, flat_b = alpha.reshape(-1), b.reshape(-1)
        group = self.group
        names = ("F", "Fa", "Fb", "Faa", "Fab", "Fbb")[: (1, 3, 6)[order]]
        sums = np.zeros((flat_a.size, 6))
        sqs = np.zeros((flat_a.size, 6))
        with jax.enable_x64(True):
            fn = self._chunk_fn(order)
            for start in range(0, flat_a.size, group):
                pa = np.zeros(group)
                pb = np.zeros(group)
                k = min(group, flat_a.size - start)
                pa[:k], pb[:k] = flat_a[start : start + k], flat_b[start : start + k]
                s_acc = np.zeros((group, 6))
                q_acc = np.zeros((group, 6))
                for c in range(self.n_chunks):
                    valid = min(self.chunk, self.samples - c * self.chunk)
                    s, q = fn(jnp.asarray(pa), jnp.asarray(pb), c, valid)
                    s_acc += np.asarray(s)
                    q_acc += np.asarray(q)
                sums[start : start + k] = s_acc[:k]
                sqs[start : start + k] = q_acc[:k]
        n = self.samples
        mean = sums / n
        var = np.maximum(sqs / n - mean**2, 0.0) * n / max(n - 1, 1)
        se = np.sqrt(var / n)
        out = {name: mean[:, i].reshape(shape) for i, name in enumerate(names)}
        out.update({f"se_{name}": se[:, i].reshape(shape) for i, name in enumerate(names)})
        return out

    # --- on the sphere --------------------------------------------------------------------------
    def phi(self, m, derivatives: bool = True) -> dict[str, np.ndarray]:
        """Φ̂(m) = F̂(m, √(1 − m²)), its derivative Φ̂'(m) = F_a − m F_b / b (for |m| < 1) and
        the ODE right-hand side (1 − m²)Φ̂'(m) = b² F_a − m b F_b (smooth up to |m| = 1);
        standard errors of Φ̂ and of the right-hand side (a conservative sum of the two parts)."""
        m = np.clip(np.atleast_1d(np.asarray(m, np.float64)), -1.0, 1.0)
        b = np.sqrt(1.0 - m**2)
        if not derivatives:
            r = self.evaluate(m, b, order=0)
            return {"phi": r["F"], "se_phi": r["se_F"]}
        r = self.evaluate(m, b, order=2 if np.any(b == 0) else 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            dphi = np.where(b > 0, r["Fa"] - m * r["Fb"] / np.where(b > 0, b, 1.0), np.nan)
        # at |m| = 1: Φ'(±1) = ±(F_a − F_bb) since F_b(α, 0) = 0 and F_b/b → F_bb
        if "Fbb" in r:
            dphi = np.where(b > 0, dphi, np.sign(m) * (np.sign(m) * r["Fa"] - r["Fbb"]))
        rhs = b**2 * r["Fa"] - m * b * r["Fb"]
        se_rhs = b**2 * r["se_Fa"] + np.abs(m) * b * r["se_Fb"]
        return {"phi": r["F"], "se_phi": r["se_F"], "dphi": dphi, "rhs": rhs, "se_rhs": se_rhs}

    def fit(self, degree: int | None = None, tol: float = 1e-10, max_degree: int = 256) -> PhiFit:
        """Chebyshev interpolant of the CRN estimator Φ̂ on [−1, 1]. With ``degree=None`` the
        degree doubles from 16 until the last quarter of the coefficients is below
        ``tol``·max|c| (or ``max_degree``); the interpolation error against Φ̂ itself is then
        measured at points between the nodes (``PhiFit.fit_error`` for Φ, ``rhs_error`` for the
        ODE right-hand side against the exact CRN derivative)."""
        deg = degree or 16
        while True:
            nodes = C.chebpts1(deg + 1)
            values = self.phi(nodes, derivatives=False)["phi"]
            coef = C.chebfit(nodes, values, deg)
            tail = np.max(np.abs(coef[-max(2, (deg + 1) // 4) :]))
            if degree is not None or tail <= tol * np.max(np.abs(coef)) or deg >= max_degree:
                break
            deg *= 2
        if self.law.sign_symmetric and self.antithetic:
            coef[1::2] = 0.0  # exactly even: Φ̂(−m) = Φ̂(m) with the (−U) variants
        check = np.cos(np.pi * (np.arange(deg) + 1.0) / (deg + 1))  # between first-kind nodes
        direct = self.phi(check)
        series = C.Chebyshev(coef)
        fit_error = float(np.max(np.abs(series(check) - direct["phi"])))
        rhs_fit = (1 - check**2) * series.deriv()(check)
        rhs_error = float(np.max(np.abs(rhs_fit - direct["rhs"])))
        return PhiFit(
            coef=coef,
            fit_error=fit_error,
            rhs_error=rhs_error,
            mc_se=float(np.max(direct["se_phi"])),
            mc_se_rhs=float(np.max(direct["se_rhs"])),
            tail=float(tail),
        )


@dataclass(frozen=True)
class PhiFit:
    """Φ̂ as a Chebyshev series in m (an even/odd polynomial): ``coef`` in the Chebyshev basis.

    ``fit_error``: max |series − Φ̂| between the nodes; ``rhs_error``: max |(1 − m²)series' −
    (1 − m²)Φ̂'| there (Φ̂' exact by autodiff of the CRN estimator); ``mc_se``/``mc_se_rhs``: the
    largest Monte Carlo standard error of Φ̂ and of the right-hand side at those points (the
    statistical error of the estimator itself, which the fit does not remove)."""

    coef: np.ndarray
    fit_error: float
    rhs_error: float
    mc_se: float
    mc_se_rhs: float
    tail: float

    @cached_property
    def series(self) -> C.Chebyshev:
        return C.Chebyshev(self.coef)

    @cached_property
    def derivative(self) -> C.Chebyshev:
        return self.series.deriv()

    @cached_property
    def second_derivative(self) -> C.Chebyshev:
        return self.series.deriv(2)

    def phi(self, m):
        return self.series(np.asarray(m, np.float64))

    def dphi(self, m):
        return self.derivative(np.asarray(m, np.float64))

    def d2phi(self, m):
        return self.second_derivative(np.asarray(m, np.float64))

    def rhs(self, m):
        """ṁ = (1 − m²) Φ'(m) (docs/query-theory.md §2)."""
        m = np.asarray(m, np.float64)
        return (1.0 - m**2) * self.dphi(m)

    def rhs_slope(self, m):
        """d/dm [(1 − m²) Φ'(m)] = −2m Φ'(m) + (1 − m²) Φ''(m): the linearisation at a fixed
        point (negative = stable)."""
        m = np.asarray(m, np.float64)
        return -2.0 * m * self.dphi(m) + (1.0 - m**2) * self.d2phi(m)


def full_objective(
    law: TokenLaw, q: np.ndarray, u: np.ndarray, samples: int, seed: int = 0, chunk: int = 256
) -> tuple[float, float]:
    """Plain d-dimensional Monte Carlo of E‖a(q; X)‖² (no reduction): (mean, standard error).
    The reference the reduction (Eq. R) is tested against."""
    rng = np.random.default_rng(seed)
    d, n, n_i = law.d, law.n_tokens, law.n_informative
    vals = []
    for start in range(0, samples, chunk):
        c = min(chunk, samples - start)
        z = law.sigma * rng.standard_normal((c, n, d))
        if law.sign_mode == "sequence":
            xi = rng.choice([-1.0, 1.0], size=(c, 1)) * np.ones((1, n_i))
        elif law.sign_mode == "token":
            xi = rng.choice([-1.0, 1.0], size=(c, n_i))
        else:
            xi = np.ones((c, n_i))
        z[:, :n_i, :] += law.theta * xi[:, :, None] * u[None, None, :]
        s = law.beta * z @ q
        s -= s.max(axis=1, keepdims=True)
        w = np.exp(s)
        w /= w.sum(axis=1, keepdims=True)
        a = np.einsum("cn,cnd->cd", w, z)
        vals.append(np.sum(a**2, axis=1))
    v = np.concatenate(vals)
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(len(v)))
