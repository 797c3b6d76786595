"""Untied AIM, S_k = U_k V_kᵀ: the fast–slow theory of P1 §4.1 (Eqs. 27–32, Theorem 3, App. F).

Notation (P1 §4.1): M_k = U_k V_kᵀ, A_k = U_k U_kᵀ, B_k = V_k V_kᵀ; m_k = Tr M_k/√d;
μ_α = Tr(Z_1⋯Z_w)/d for words over the alphabet {M_k, M_kᵀ, A_k, B_k} (Eq. 26); t^A_k = μ_(A_k),
t^B_k = μ_(B_k), q⁽¹⁾_kl = μ_(M_k, M_lᵀ), q⁽²⁾_kl = μ_(M_k, M_l); D_k = t^A_k + t^B_k.
Φ(m, q⁽¹⁾, q⁽²⁾) is :class:`~attndyn.models.aim.theory.potential.Potential` with Ω = q⁽¹⁾,
Ψ = q⁽²⁾; a⁽ʳ⁾_kl = [∇_{q⁽ʳ⁾}Φ]_kl with the ½ convention of Eqs. 571–572 and b_k = ∂Φ/∂m_k
(Eq. 570). M⁽¹⁾_l = M_l, M⁽²⁾_l = M_lᵀ, r̄ = 3 − r.

- **Fast phase** (Eq. 28, fast time t = nα_d): dm_k/dt = −D_k(0) ∂Φ/∂m_k(m, q(0)), moments
  frozen; its limit is the critical point m*(q) (Assumption 5).
- **Slow phase** (Eqs. 29–32, slow time τ = nα_d/d): m = m*(q(τ)) (Eq. 29), effective bias
  β_k = −ψ_k/D_k (Eq. 30) with ψ_k = 2 Σ_{l,r} a⁽ʳ⁾_kl [μ_(M⁽ʳ⁾_l, B_k) + μ_(A_k, M⁽ʳ⁾_l)]
  (Eq. 27), and for every word α

      dμ_α/dτ = − Σ_{i: k_i∈𝒦} β_{k_i} T^bias_i(μ) − 2 Σ_{i: k_i∈𝒦} Σ_{l,r} a⁽ʳ⁾_{k_i l} T^diff_{i,l,r}(μ)
                − 2γ |α|_𝒦 μ_α                                                     (Eq. 32)

  with the substitution operators of Eq. 31 as re-derived in docs/aim-untied-derivation.md
  (the printed Eq. 31 is garbled; the rows below are the one-step expansion Eqs. 742–745 with
  the bars restored):

      letter Z_i   T^bias_i replaces it by   T^diff_{i,l,r} replaces it by
      M_k          A_k + B_k                 M⁽ʳ⁾_l B_k + A_k M⁽ʳ⁾_l
      M_kᵀ         A_k + B_k                 B_k M⁽ʳ̄⁾_l + M⁽ʳ̄⁾_l A_k
      A_k          M_k + M_kᵀ                M⁽ʳ⁾_l M_kᵀ + M_k M⁽ʳ̄⁾_l
      B_k          M_k + M_kᵀ                M⁽ʳ̄⁾_l M_k + M_kᵀ M⁽ʳ⁾_l

- **Matrix-level slow flow** (the same field written on U, V; its traces satisfy Eq. 32
  identically, so integrating it from the finite-d initial matrices solves the untruncated
  hierarchy for that initial state, like the tied matrix flow):

      dU_k/dτ = −β_k V_k − 2 H_k V_k − γ U_k,   dV_k/dτ = −β_k U_k − 2 H_kᵀ U_k − γ V_k,
      H_k = Σ_{l,r} a⁽ʳ⁾_kl M⁽ʳ⁾_l,   ψ_k = (2/d) Tr[H_k (A_k + B_k)].

Letters use the simulator's names (observables.py): "k" = M_k, "kT" = M_kᵀ, "Ak", "Bk"; a word's
observable name is t_k / tA_k / tB_k (degree 1), q1_kl / q2_kl (degree 2 overlaps), otherwise
``mu_`` + dot-joined letters of its class representative under rotation and transpose-reversal.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from attndyn.core.ode import integrate
from attndyn.models.aim.theory.potential import Potential

# --------------------------------------------------------------------------------------------
# Words and the substitution operators (Eq. 31)


def letter_kind(letter: str) -> tuple[str, int]:
    """("M" | "MT" | "A" | "B", index k) of a letter name."""
    if letter.startswith("A"):
        return "A", int(letter[1:])
    if letter.startswith("B"):
        return "B", int(letter[1:])
    if letter.endswith("T"):
        return "MT", int(letter[:-1])
    return "M", int(letter)


def transpose_letter(letter: str) -> str:
    kind, k = letter_kind(letter)
    return {"M": f"{k}T", "MT": f"{k}", "A": letter, "B": letter}[kind]


def canonical(word: tuple[str, ...]) -> tuple[str, ...]:
    """Class representative under cyclic rotation and transpose-reversal (as observables.py)."""
    n = len(word)
    rev = tuple(transpose_letter(z) for z in reversed(word))
    return min([word[i:] + word[:i] for i in range(n)] + [rev[i:] + rev[:i] for i in range(n)])


def moment_name(word: tuple[str, ...]) -> str:
    """The simulator's observable name of a canonical word."""
    if len(word) == 1:
        kind, k = letter_kind(word[0])
        return {"M": f"t_{k}", "A": f"tA_{k}", "B": f"tB_{k}"}[kind]
    if len(word) == 2:
        (k1, a), (k2, b) = letter_kind(word[0]), letter_kind(word[1])
        if k1 == "M" and k2 == "MT" and a <= b:
            return f"q1_{a}{b}"
        if k1 == "M" and k2 == "M" and a <= b:
            return f"q2_{a}{b}"
    return "mu_" + ".".join(word)


def m_letter(l: int, r: int) -> str:
    """M⁽ʳ⁾_l: M_l for r = 1, M_lᵀ for r = 2."""
    return f"{l}" if r == 1 else f"{l}T"


def bias_substitution(letter: str) -> list[str]:
    """T^bias (Eq. 31): M_k, M_kᵀ → A_k + B_k; A_k, B_k → M_k + M_kᵀ."""
    kind, k = letter_kind(letter)
    return [f"A{k}", f"B{k}"] if kind in ("M", "MT") else [f"{k}", f"{k}T"]


def diff_substitution(letter: str, l: int, r: int) -> list[tuple[str, str]]:
    """T^diff_{·,l,r} (Eq. 31 re-derived; Eqs. 742–745): the two-letter products replacing the
    letter, each with coefficient 1."""
    kind, k = letter_kind(letter)
    mr, mrbar = m_letter(l, r), m_letter(l, 3 - r)
    a, b, mk, mkt = f"A{k}", f"B{k}", f"{k}", f"{k}T"
    if kind == "M":
        return [(mr, b), (a, mr)]
    if kind == "MT":
        return [(b, mrbar), (mrbar, a)]
    if kind == "A":
        return [(mr, mkt), (mk, mrbar)]
    return [(mrbar, mk), (mkt, mr)]


def alphabet(K: int) -> list[str]:
    return [z for k in range(1, K + 1) for z in (f"{k}", f"{k}T", f"A{k}", f"B{k}")]


# --------------------------------------------------------------------------------------------
# Moments of given matrices


def letter_matrices(U: list, V: list) -> dict[str, np.ndarray]:
    """d×d matrices of every letter for factors U_k, V_k ∈ R^{d×r_k} (float64)."""
    out = {}
    for k in range(len(U)):
        u, v = np.asarray(U[k], np.float64), np.asarray(V[k], np.float64)
        m = u @ v.T
        out[f"{k + 1}"], out[f"{k + 1}T"] = m, m.T
        out[f"A{k + 1}"], out[f"B{k + 1}"] = u @ u.T, v @ v.T
    return out


def word_moments(mats: dict[str, np.ndarray], words: list[tuple[str, ...]]) -> np.ndarray:
    """μ_α = Tr(Z_1⋯Z_w)/d for each word (prefix products cached)."""
    d = next(iter(mats.values())).shape[0]
    cache: dict[tuple, np.ndarray] = {}

    def product(word):
        if len(word) == 1:
            return mats[word[0]]
        if word not in cache:
            cache[word] = product(word[:-1]) @ mats[word[-1]]
        return cache[word]

    out = np.empty(len(words))
    for i, word in enumerate(words):
        if len(word) == 1:
            out[i] = np.trace(mats[word[0]]) / d
        else:
            out[i] = np.sum(product(word[:-1]) * mats[word[-1]].T) / d
    return out


def order_parameters(U: list, V: list) -> dict[str, np.ndarray]:
    """m (K,), q1, q2 (K×K), tA, tB (K,) for lists of factors U_k, V_k ∈ R^{d×r_k}."""
    d = U[0].shape[0]
    M = [u @ v.T for u, v in zip(U, V, strict=True)]
    K = len(M)
    return {
        "m": np.array([np.trace(x) for x in M]) / np.sqrt(d),
        "q1": np.array([[np.sum(M[k] * M[l]) / d for l in range(K)] for k in range(K)]),
        "q2": np.array([[np.sum(M[k] * M[l].T) / d for l in range(K)] for k in range(K)]),
        "tA": np.array([np.sum(u * u) for u in U]) / d,
        "tB": np.array([np.sum(v * v) for v in V]) / d,
    }


def psi_words(U: list, V: list, idx) -> np.ndarray:
    """P_kl = Tr[M_l (A_k + B_k)]/d for trainable k (0-based ``idx``), all l; since A_k + B_k
    is symmetric, μ_(M⁽ʳ⁾_l, B_k) + μ_(A_k, M⁽ʳ⁾_l) = P_kl for r = 1, 2, so Eq. 27 reads
    ψ_k = 2 Σ_l (a⁽¹⁾_kl + a⁽²⁾_kl) P_kl. Computed through r×r Gram matrices."""
    d = U[0].shape[0]
    P = np.zeros((len(idx), len(U)))
    for j, k in enumerate(idx):
        for l in range(len(U)):
            uu, uv = U[k].T @ U[l], U[k].T @ V[l]  # Tr(M_l A_k) = ⟨UₖᵀU_l, UₖᵀV_l⟩
            vu, vv = V[k].T @ U[l], V[k].T @ V[l]  # Tr(M_l B_k) = ⟨VₖᵀU_l, VₖᵀV_l⟩
            P[j, l] = (np.sum(uu * uv) + np.sum(vu * vv)) / d
    return P


# --------------------------------------------------------------------------------------------
# Fast phase and the slaved mean


@dataclass
class MeanDynamics:
    """The mean variables: fast flow (Eq. 28), the critical point m*(q) (Eq. 29) and its
    derivative along a change of q (implicit function theorem).

    ``m_fixed`` holds the full mean vector (teachers' entries are never changed); only the
    ``trainable`` (1-based) entries move. ``last`` is the warm start of the Newton solves.
    """

    potential: Potential
    trainable: tuple[int, ...]
    m_fixed: np.ndarray
    last: np.ndarray | None = None
    _warned: bool = field(default=False, repr=False)

    @property
    def idx(self) -> np.ndarray:
        return np.array([k - 1 for k in self.trainable])

    def full(self, m_tr: np.ndarray) -> np.ndarray:
        m = np.array(self.m_fixed, dtype=np.float64)
        m[self.idx] = m_tr
        return m

    def grad_m(self, m_tr, q1, q2) -> np.ndarray:
        """∂Φ/∂m_k for the trainable k (Eq. 570)."""
        return self.potential.gradients(self.full(m_tr), q1, q2)[0][self.idx]

    def hessian_m(self, m_tr, q1, q2, h: float = 1e-5) -> np.ndarray:
        """∇²_{m_𝒦}Φ by central differences of the gradient."""
        n = len(m_tr)
        J = np.empty((n, n))
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            J[:, j] = (self.grad_m(m_tr + e, q1, q2) - self.grad_m(m_tr - e, q1, q2)) / (2 * h)
        return J

    def fast_flow(self, m0_tr, q1, q2, D_tr, times, extra=None) -> np.ndarray:
        """Eq. 28: dm_k/dt = −D_k ∂Φ/∂m_k(m, q(0)) at fast times ``times``; (len(times), |𝒦|).
        ``extra(m)`` adds a drift −extra(m) (the finite-d term ψ/√d of Eq. 573)."""
        times = np.asarray(times, np.float64)
        sol = solve_ivp(
            lambda t, m: self._fast_rhs(m, q1, q2, D_tr, extra),
            (0.0, max(float(times[-1]), 1e-12)),
            np.asarray(m0_tr, np.float64),
            method="DOP853",
            t_eval=times,
            rtol=1e-10,
            atol=1e-12,
        )
        out = np.full((len(times), len(self.idx)), np.nan)
        out[: sol.y.shape[1]] = sol.y.T
        return out

    def _fast_rhs(self, m, q1, q2, D_tr, extra):
        out = -D_tr * self.grad_m(m, q1, q2)
        return out if extra is None else out - extra(m)

    def fast_limit(self, m0_tr, q1, q2, D_tr, extra=None, t_max: float = 1e4) -> np.ndarray:
        """The fast flow's end point: integrate Eq. 28 until its drift vanishes, then polish
        with Newton (without ``extra`` this is m*(q(0))). This selects the branch when
        ∇_m Φ = 0 has several roots."""
        rate = float(np.min(D_tr))

        def event(t, m):
            return np.max(np.abs(self._fast_rhs(m, q1, q2, D_tr, extra))) - 1e-9

        event.terminal = True
        sol = solve_ivp(
            lambda t, m: self._fast_rhs(m, q1, q2, D_tr, extra),
            (0.0, t_max / rate),
            np.asarray(m0_tr, np.float64),
            method="LSODA",
            events=event,
            rtol=1e-10,
            atol=1e-12,
        )
        if extra is None:
            return self.critical_point(q1, q2, sol.y[:, -1])
        m = sol.y[:, -1]
        for _ in range(20):  # Newton on the full drift
            f = self._fast_rhs(m, q1, q2, D_tr, extra)
            if np.max(np.abs(f)) < 1e-12:
                break
            J = np.empty((len(m), len(m)))
            for j in range(len(m)):
                e = np.zeros(len(m))
                e[j] = 1e-5
                J[:, j] = (
                    self._fast_rhs(m + e, q1, q2, D_tr, extra)
                    - self._fast_rhs(m - e, q1, q2, D_tr, extra)
                ) / 2e-5
            m = m - np.linalg.solve(J, f)
        return m

    def critical_point(self, q1, q2, guess=None, tol: float = 1e-11) -> np.ndarray:
        """m*(q): the critical point ∇_{m_𝒦}Φ = 0 nearest ``guess`` (default: the last one
        found), by Newton with backtracking on |∇Φ|."""
        m = np.array(self.last if guess is None else guess, dtype=np.float64)
        g = self.grad_m(m, q1, q2)
        for _ in range(50):
            if np.max(np.abs(g)) < tol:
                break
            step = np.linalg.solve(self.hessian_m(m, q1, q2), -g)
            lam, improved = 1.0, False
            while lam > 1e-3:
                trial = m + lam * step
                g_trial = self.grad_m(trial, q1, q2)
                if np.linalg.norm(g_trial) < np.linalg.norm(g):
                    improved = True
                    break
                lam /= 2
            if not improved:  # round-off level
                break
            m, g = trial, g_trial
        if not self._warned and np.max(np.abs(g)) > 1e-8:
            warnings.warn(f"m*(q): Newton stopped at |∇Φ| = {np.max(np.abs(g)):.2e}", stacklevel=2)
            self._warned = True
        self.last = m
        return m

    def slaved_rate(self, m_tr, q1, q2, dq1, dq2) -> np.ndarray:
        """dm*/dτ = −(∇²_m Φ)⁻¹ ∂_τ ∇_m Φ along dq/dτ = (dq1, dq2) (implicit function theorem)."""
        scale = max(float(np.max(np.abs(dq1))), float(np.max(np.abs(dq2))), 1e-300)
        eps = 1e-5 / scale
        dg = (
            self.grad_m(m_tr, q1 + eps * dq1, q2 + eps * dq2)
            - self.grad_m(m_tr, q1 - eps * dq1, q2 - eps * dq2)
        ) / (2 * eps)
        return -np.linalg.solve(self.hessian_m(m_tr, q1, q2), dg)


# --------------------------------------------------------------------------------------------
# Fast-phase image at finite d


def boost(U: list, V: list, k: int, s: float) -> tuple[list, list]:
    """The fast phase on the factors of index k (0-based): the bias part of the SGD drift,
    dU_k = −(b_k/√d) V_k dt, dV_k = −(b_k/√d) U_k dt (Eqs. 566–567 at leading order on the fast
    scale), integrated exactly: U cosh s − V sinh s, V cosh s − U sinh s with s = ∫ b dt/√d."""
    U, V = list(U), list(V)
    c, sh = np.cosh(s), np.sinh(s)
    U[k], V[k] = U[k] * c - V[k] * sh, V[k] * c - U[k] * sh
    return U, V


def boost_for_mean(U: list, V: list, k: int, target: float) -> float:
    """s with Tr(U_k(s) V_k(s)ᵀ)/√d = target. Closed form: m(s) = m cosh 2s − a sinh 2s with
    a = √d (t^A + t^B)/2 = −√(a² − m²) sinh(2s − x₀), tanh x₀ = m/a (needs a > |m|)."""
    d = U[k].shape[0]
    m = float(np.sum(U[k] * V[k])) / np.sqrt(d)
    a = 0.5 * float(np.sum(U[k] ** 2) + np.sum(V[k] ** 2)) / np.sqrt(d)
    r = np.sqrt(a * a - m * m)
    return 0.5 * (np.arctanh(m / a) - np.arcsinh(target / r))


def fast_image(
    U0: list, V0: list, means: MeanDynamics, iters: int = 8
) -> tuple[list, list, np.ndarray]:
    """Factors at the end of the fast phase at finite d: boosts s_k with m_k = m*_k(q) at the
    boosted state (q moves by O(s²) = O(1/d) under the boost). Returns (U, V, s)."""
    s = np.zeros(len(means.idx))
    U, V = U0, V0
    for _ in range(iters):
        op = order_parameters(U, V)
        target = means.critical_point(op["q1"], op["q2"])
        s_new = np.array(
            [boost_for_mean(U0, V0, k, t) for k, t in zip(means.idx, target, strict=True)]
        )
        U, V = U0, V0
        for k, sk in zip(means.idx, s_new, strict=True):
            U, V = boost(U, V, k, sk)
        if np.max(np.abs(s_new - s)) < 1e-13:
            break
        s = s_new
    return U, V, s_new


# --------------------------------------------------------------------------------------------
# The slow hierarchy (Eq. 32), truncated at degree M


@dataclass
class UntiedHierarchy:
    """Eq. 32 for K indices (``trainable`` 1-based evolve), truncated at degree ``M``: every
    word of degree > M is set to 0 (as Eq. 13 for the tied hierarchy). The state holds the
    closure of the words the order parameters need under the substitutions of Eq. 31."""

    K: int
    trainable: tuple[int, ...]
    M: int
    weight_decay: float = 0.0

    def __post_init__(self):
        if self.M < 2:
            raise ValueError("untied hierarchy: truncation degree must be ≥ 2")
        K, trainable = self.K, set(self.trainable)
        seeds = [(z,) for z in alphabet(K) if letter_kind(z)[0] != "MT"]
        for k in range(1, K + 1):
            for l in range(1, K + 1):
                seeds += [(f"{k}", f"{l}T"), (f"{k}", f"{l}")]
        for k in self.trainable:
            for l in range(1, K + 1):
                for r in (1, 2):
                    seeds += [(m_letter(l, r), f"B{k}"), (f"A{k}", m_letter(l, r))]
        words, queue = {}, [canonical(w) for w in seeds]
        while queue:
            w = queue.pop()
            if w in words or len(w) > self.M:
                continue
            words[w] = None
            for target, _ in self._terms(w, trainable):
                if len(target) <= self.M and target not in words:
                    queue.append(target)
        self.words = sorted(words, key=lambda w: (len(w), w))
        self.index = {w: i for i, w in enumerate(self.words)}
        self.names = [moment_name(w) for w in self.words]
        n = len(self.words)
        src, par, tgt = [], [], []
        for a, w in enumerate(self.words):
            for target, p in self._terms(w, trainable):
                src.append(a)
                par.append(p)
                tgt.append(self.index.get(target, n))  # n: truncated, μ ≡ 0
        self._src, self._par, self._tgt = np.array(src), np.array(par), np.array(tgt)
        self._decay = np.array(
            [sum(letter_kind(z)[1] in trainable for z in w) for w in self.words], float
        )
        ks = range(1, K + 1)
        self._q1 = np.array([[self.index[canonical((f"{k}", f"{l}T"))] for l in ks] for k in ks])
        self._q2 = np.array([[self.index[canonical((f"{k}", f"{l}"))] for l in ks] for k in ks])
        self._tA = np.array([self.index[(f"A{k}",)] for k in ks])
        self._tB = np.array([self.index[(f"B{k}",)] for k in ks])
        self._t = np.array([self.index[(f"{k}",)] for k in ks])
        # ψ_k words (Eq. 27): μ_(M⁽ʳ⁾_l, B_k) and μ_(A_k, M⁽ʳ⁾_l), shape (K, K, 2, 2)
        self._psi = np.array(
            [
                [
                    [
                        [
                            self.index.get(canonical((m_letter(l, r), f"B{k}")), n),
                            self.index.get(canonical((f"A{k}", m_letter(l, r))), n),
                        ]
                        for r in (1, 2)
                    ]
                    for l in ks
                ]
                for k in ks
            ]
        )

    def _terms(self, word, trainable) -> list[tuple[tuple[str, ...], int]]:
        """(canonical target word, parameter index) of every term of Eq. 32 for ``word``.

        Parameter layout: [0, K) bias of index k; K + (r−1)K² + (k−1)K + (l−1) the diff term
        (k, l, r)."""
        K, out = self.K, []
        for i, z in enumerate(word):
            _, k = letter_kind(z)
            if k not in trainable:
                continue
            for y in bias_substitution(z):
                out.append((canonical(word[:i] + (y,) + word[i + 1 :]), k - 1))
            for l in range(1, K + 1):
                for r in (1, 2):
                    p = K + (r - 1) * K * K + (k - 1) * K + (l - 1)
                    for pair in diff_substitution(z, l, r):
                        out.append((canonical(word[:i] + pair + word[i + 1 :]), p))
        return out

    # state accessors
    def q_of(self, mu):
        return mu[self._q1], mu[self._q2]

    def D_of(self, mu):
        return mu[self._tA] + mu[self._tB]

    def psi(self, mu, a1, a2) -> np.ndarray:
        """ψ_k of Eq. 27 (all k; only trainable k are used)."""
        ext = np.append(mu, 0.0)
        words = ext[self._psi].sum(axis=-1)  # (K, K, 2)
        return 2.0 * (a1 * words[:, :, 0] + a2 * words[:, :, 1]).sum(axis=1)

    def field(self, mu, bias, a1, a2) -> np.ndarray:
        """Right-hand side of Eq. 32 with a given bias coefficient per index (β_k on the slow
        scale, Eq. 30; √d b_k for the raw one-step field, Eq. 731)."""
        params = np.concatenate([-np.asarray(bias, float), -2.0 * a1.ravel(), -2.0 * a2.ravel()])
        ext = np.append(mu, 0.0)
        terms = params[self._par] * ext[self._tgt]
        d_mu = np.bincount(self._src, weights=terms, minlength=len(mu))
        return d_mu - 2.0 * self.weight_decay * self._decay * mu

    def initial(self, U: list, V: list) -> np.ndarray:
        """State vector from the factors U_k, V_k of all indices."""
        return word_moments(letter_matrices(U, V), self.words)

    def rhs(self, mu, means: MeanDynamics, d: int | None = None) -> np.ndarray:
        """Eq. 32 with m = m*(q) (Eq. 29) and β of Eq. 30. With ``d``, the bias gets the
        O(d^-1/2) term δ that keeps Tr M_k/√d = m*(q(τ)) at finite d (module docstring)."""
        idx = means.idx
        q1, q2 = self.q_of(mu)
        m_tr = means.critical_point(q1, q2)
        _, a1, a2 = means.potential.gradients(means.full(m_tr), q1, q2)
        D = self.D_of(mu)
        bias = np.zeros(self.K)
        bias[idx] = -self.psi(mu, a1, a2)[idx] / D[idx]
        d_mu = self.field(mu, bias, a1, a2)
        if d is not None:
            # dm_k/dτ = −√d D_k δ_k − 2γ m_k must equal dm*_k/dτ (the decay of Tr M is
            # restored by the fast dynamics, as in SGD: E Δm ∋ −2αγ m/d)
            rate = means.slaved_rate(m_tr, q1, q2, *self.q_of(d_mu))
            m_cur = np.sqrt(d) * mu[self._t[idx]]
            delta = np.zeros(self.K)
            delta[idx] = -(rate + 2.0 * self.weight_decay * m_cur) / (np.sqrt(d) * D[idx])
            d_mu = (
                d_mu
                + self.field(mu, delta, 0 * a1, 0 * a2)
                + 2.0 * self.weight_decay * (self._decay * mu)
            )
        return d_mu

    def solve(self, mu0, means: MeanDynamics, times, rtol=1e-8, d=None) -> dict[str, np.ndarray]:
        """Integrate from ``mu0`` at slow ``times``; NaN after the solver stops (the truncated
        hierarchy can leave the admissible domain in finite time when γ = 0)."""
        y = integrate(lambda tau, mu: self.rhs(mu, means, d), mu0, times, rtol=rtol)
        return {name: y[i] for i, name in enumerate(self.names)}


# --------------------------------------------------------------------------------------------
# Matrix-level slow flow


@dataclass
class UntiedMatrixFlow:
    """dU_k/dτ = −β_k V_k − 2 H_k V_k − γU_k, dV_k/dτ = −β_k U_k − 2 H_kᵀ U_k − γV_k for the
    trainable k (module docstring); the other indices stay fixed. With ``track_mean``, β_k gets
    the O(d^-1/2) term δ_k that keeps Tr M_k/√d = m*(q(τ)) at the flow's finite d."""

    means: MeanDynamics
    weight_decay: float = 0.0
    track_mean: bool = True

    def summary(self, U: list, V: list) -> dict:
        """q1, q2, m* (trainable), a1, a2, ψ, D and the d×d matrices M, Mᵀ of a state."""
        means = self.means
        d = U[0].shape[0]
        M = np.stack([u @ v.T for u, v in zip(U, V, strict=True)])
        Mt = np.ascontiguousarray(np.transpose(M, (0, 2, 1)))
        flat, flat_t = M.reshape(len(M), -1), Mt.reshape(len(M), -1)
        q1, q2 = flat @ flat.T / d, flat @ flat_t.T / d
        m_tr = means.critical_point(q1, q2)
        _, a1, a2 = means.potential.gradients(means.full(m_tr), q1, q2)
        K = len(M)
        psi, D, H = np.zeros(K), np.zeros(K), {}
        for k in means.idx:
            H[k] = np.tensordot(a1[k], M, 1) + np.tensordot(a2[k], Mt, 1)
            # ψ_k = (2/d) Tr[H (A + B)] = (2/d)(⟨Hᵀ U, U⟩ + ⟨H V, V⟩)   (Eq. 27)
            psi[k] = 2.0 * (np.sum((H[k].T @ U[k]) * U[k]) + np.sum((H[k] @ V[k]) * V[k])) / d
            D[k] = (np.sum(U[k] ** 2) + np.sum(V[k] ** 2)) / d
        return dict(q1=q1, q2=q2, m=m_tr, a1=a1, a2=a2, psi=psi, D=D, H=H, M=M, Mt=Mt)

    def rhs_factors(self, U: list, V: list) -> tuple[list, list]:
        """(dU, dV) for lists of all indices' factors (trainable entries only are nonzero)."""
        means = self.means
        d = U[0].shape[0]
        st = self.summary(U, V)
        dU = [np.zeros_like(u) for u in U]
        dV = [np.zeros_like(v) for v in V]
        for k in means.idx:
            beta = -st["psi"][k] / st["D"][k]  # Eq. 30
            dU[k] = -beta * V[k] - 2.0 * st["H"][k] @ V[k] - self.weight_decay * U[k]
            dV[k] = -beta * U[k] - 2.0 * st["H"][k].T @ U[k] - self.weight_decay * V[k]
        if self.track_mean:
            K = len(U)
            dM = np.stack([du @ v.T + u @ dv.T for u, v, du, dv in zip(U, V, dU, dV, strict=True)])
            f, ft = st["M"].reshape(K, -1), st["Mt"].reshape(K, -1)
            df = dM.reshape(K, -1)
            dft = np.ascontiguousarray(np.transpose(dM, (0, 2, 1))).reshape(K, -1)
            dq1 = (df @ f.T + f @ df.T) / d
            dq2 = (df @ ft.T + f @ dft.T) / d
            rate = means.slaved_rate(st["m"], st["q1"], st["q2"], dq1, dq2)
            for j, k in enumerate(means.idx):
                # dm_k/dτ = −√d D_k δ_k − 2γ m_k = dm*_k/dτ (SGD's E Δm ∋ −2αγ m/d)
                m_cur = np.trace(st["M"][k]) / np.sqrt(d)
                delta = -(rate[j] + 2.0 * self.weight_decay * m_cur) / (np.sqrt(d) * st["D"][k])
                dU[k] = dU[k] - delta * V[k]
                dV[k] = dV[k] - delta * U[k]
        return dU, dV

    def solve(self, U0: list, V0: list, times, rtol=1e-7) -> list[tuple[list, list] | None]:
        """Factors at slow ``times`` (None after the solver stops)."""
        idx = list(self.means.idx)
        shapes = [(U0[k].shape, V0[k].shape) for k in idx]

        def unpack(y):
            U, V, pos = list(U0), list(V0), 0
            for k, (su, sv) in zip(idx, shapes, strict=True):
                nu, nv = su[0] * su[1], sv[0] * sv[1]
                U[k] = y[pos : pos + nu].reshape(su)
                V[k] = y[pos + nu : pos + nu + nv].reshape(sv)
                pos += nu + nv
            return U, V

        def pack(U, V):
            return np.concatenate([np.concatenate([U[k].ravel(), V[k].ravel()]) for k in idx])

        def rhs(tau, y):
            return pack(*self.rhs_factors(*unpack(y)))

        sol = solve_ivp(
            rhs,
            (0.0, float(times[-1])),
            pack(U0, V0),
            method="RK45",
            t_eval=times,
            rtol=rtol,
            atol=rtol * 1e-3,
        )
        return [unpack(sol.y[:, i]) if i < sol.y.shape[1] else None for i in range(len(times))]


# --------------------------------------------------------------------------------------------
# predict()


def initial_factors(config, seed: int) -> tuple[list, list]:
    """The simulator's initial factors (students then teachers) for one seed, drawn in the
    config's dtype (so a float32 run and its theory start from the same matrices), returned in
    float64."""
    from attndyn.core.trainer import seed_keys
    from attndyn.models.aim import build, student_side
    from attndyn.models.aim.config import AIMConfig

    values = {k: getattr(config, k) for k in AIMConfig.model_fields}
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(AIMConfig(**{**values, "test_size": 0}))
        init_keys, _ = seed_keys(np.array([seed]))
        params, state = problem.init(init_keys[0])
        student, teacher = student_side(params, "untied"), state["teacher"]
        U = [np.asarray(u, np.float64) for u in (*student["U"], *teacher["U"])]
        V = [np.asarray(v, np.float64) for v in (*student["V"], *teacher["V"])]
    return U, V


def _observe(U: list, V: list, n_s: int, degree: int) -> dict[str, float]:
    """The simulator's observables of factor lists (students first)."""
    from attndyn.models.aim.observables import observe

    with jax.enable_x64(True):
        out = observe(
            {"U": [jnp.asarray(u) for u in U[:n_s]], "V": [jnp.asarray(v) for v in V[:n_s]]},
            {"U": [jnp.asarray(u) for u in U[n_s:]], "V": [jnp.asarray(v) for v in V[n_s:]]},
            "untied",
            degree,
        )
    return {k: float(v) for k, v in out.items()}


def predict_untied(config, method: str) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Observables (averaged over the config's seeds), slow times and samples.

    Per seed, from the simulator's initial factors (same draws):

    1. fast phase, Eq. 28: m_fast(t) at t = nα_d, q(0) frozen; m_fast(∞) = m*(q(0));
    2. its image on the factors at finite d (:func:`fast_image`, the bias part of Eqs. 566–567
       integrated over the boundary layer): this adds the O(m²/d) "mean parts" that the
       simulator's overlaps carry at finite d (e.g. q₁₂ ∋ t₁t₂ = m₁m₂/d);
    3. slow phase from that image: ``untied`` = matrix-level flow, ``untied-hierarchy`` = Eq. 32
       truncated at ``config.truncation``; both keep m = m*(q(τ)) (Eq. 29);
    4. composite (matched asymptotics): obs(n) = slow(τ) + inner(t) − inner(∞), where inner(t) are
       the observables of the initial factors boosted to the mean m_fast(t); for m itself,
       m(n) = m*(q(τ)) + m_fast(t) − m_fast(∞). t_k = m_k/√d, p_kl = q_kl − t_k t_l.
    """
    from attndyn.models.aim.theory import _n_student, time_grid
    from attndyn.models.aim.theory.potential import potential_for

    times, samples = time_grid(config)
    fast_times = samples * config.alpha_d
    potential = potential_for(config, log2_qmc=config.quad_log2)
    K, n_s = potential.K, _n_student(config)
    trainable = tuple(range(1, n_s + 1))
    seeds = config.seed_list
    hierarchy = None
    if method == "untied-hierarchy":
        hierarchy = UntiedHierarchy(K, trainable, config.truncation, config.weight_decay)
    acc: dict[str, np.ndarray] = {}
    for seed in seeds:
        obs = _seed_prediction(config, potential, hierarchy, seed, times, fast_times, n_s)
        for name, v in obs.items():
            acc[name] = acc.get(name, 0.0) + np.asarray(v, float) / len(seeds)
    return acc, times, samples


def _seed_prediction(config, potential, hierarchy, seed, times, fast_times, n_s) -> dict:
    """One seed of :func:`predict_untied`."""
    K, d = potential.K, config.d
    idx = np.arange(n_s)
    U0, V0 = initial_factors(config, seed)
    op = order_parameters(U0, V0)
    means = MeanDynamics(potential, tuple(range(1, n_s + 1)), op["m"])
    D0, m0, q1_0, q2_0 = (op["tA"] + op["tB"])[idx], op["m"][idx], op["q1"], op["q2"]
    m_star = means.fast_limit(m0, q1_0, q2_0, D0)  # Eq. 28's limit m*(q(0)); selects the branch
    Ub, Vb, _ = fast_image(U0, V0, means)
    m_b = means.critical_point(*_q(order_parameters(Ub, Vb)), guess=m_star)
    P0, Pb = psi_words(U0, V0, idx), psi_words(Ub, Vb, idx)
    span = np.where(np.abs(m_b - m0) > 1e-12, m_b - m0, np.inf)

    gamma = config.weight_decay

    def extra(m):  # ψ/√d + 2γm/d (Eq. 573), P interpolated in m between initial and fast states
        P = P0 + ((m - m0) / span)[:, None] * (Pb - P0)
        _, a1, a2 = potential.gradients(means.full(m), q1_0, q2_0)
        return 2.0 * np.sum((a1 + a2)[idx] * P, axis=1) / np.sqrt(d) + 2.0 * gamma * m / d

    m_fast = means.fast_flow(m0, q1_0, q2_0, D0, fast_times, extra)
    m_inf = means.fast_limit(m0, q1_0, q2_0, D0, extra)
    means.last = m_b

    # progress of the fast phase mapped onto the boost path [m(0), m_b] (exact at both ends)
    frac = (m_fast - m0) / np.where(np.abs(m_inf - m0) > 1e-12, m_inf - m0, np.inf)

    def inner(i):  # the initial factors boosted as far as the fast phase has got at t_i
        U, V = U0, V0
        for j, k in enumerate(idx):
            target = m0[j] + frac[i, j] * (m_b[j] - m0[j])
            U, V = boost(U, V, k, boost_for_mean(U0, V0, k, target))
        return U, V

    # ψ_k and D_k of the slow state at each time, for the finite-d offset of the mean
    psi, D = np.full((len(times), K), np.nan), np.full((len(times), K), np.nan)
    if hierarchy is not None:
        mu0 = hierarchy.initial(Ub, Vb)
        obs = hierarchy.solve(mu0, means, times, config.rtol, d=d)
        base = dict(zip(hierarchy.names, mu0, strict=True))
        for i in range(len(times)):
            mu = np.array([obs[name][i] for name in hierarchy.names])
            if np.all(np.isfinite(mu)):
                q1, q2 = hierarchy.q_of(mu)
                m_i = means.full(means.critical_point(q1, q2))
                _, a1, a2 = potential.gradients(m_i, q1, q2)
                psi[i], D[i] = hierarchy.psi(mu, a1, a2), hierarchy.D_of(mu)

        def inner_obs(i):
            return dict(zip(hierarchy.names, hierarchy.initial(*inner(i)), strict=True))

    else:
        flow = UntiedMatrixFlow(means, config.weight_decay)
        path = flow.solve(Ub, Vb, times, rtol=min(config.rtol * 10, 1e-6))
        base = _observe(Ub, Vb, n_s, config.moment_degree)
        obs = {name: np.full(len(times), np.nan) for name in base}
        for i, state in enumerate(path):
            if state is not None:
                for name, v in _observe(*state, n_s, config.moment_degree).items():
                    obs[name][i] = v
                st = flow.summary(*state)
                psi[i], D[i] = st["psi"], st["D"]

        def inner_obs(i):
            return _observe(*inner(i), n_s, config.moment_degree)

    # The slow mean: Tr M_k/√d of the slow state (kept at m*(q), Eq. 29) plus the finite-d
    # offset of the slow manifold, −(∇²_m Φ)⁻¹ (ψ/√d + 2γm/d)/D: SGD's mean drift
    # −α (D ∂Φ/∂m + ψ/√d + 2γm/d) (Eqs. 573, 580–582) vanishes there, not at ∂Φ/∂m = 0.
    m_slow = np.sqrt(d) * np.stack([obs[f"t_{k + 1}"] for k in idx], axis=1)
    q1 = np.stack([[obs[_qname(1, k, l)] for l in range(1, K + 1)] for k in range(1, K + 1)])
    q2 = np.stack([[obs[_qname(2, k, l)] for l in range(1, K + 1)] for k in range(1, K + 1)])
    for i in range(len(times)):
        if np.all(np.isfinite(psi[i, idx])):
            hess = means.hessian_m(m_slow[i], q1[:, :, i], q2[:, :, i])
            drift = psi[i, idx] / np.sqrt(d) + 2.0 * gamma * m_slow[i] / d
            m_slow[i] -= np.linalg.solve(hess, drift / D[i, idx])
    # composite: add inner(t) − inner(∞) where the fast flow has not converged; the mean is
    # m_fast(t) + m_slow(τ) − m_slow(0), exact at n = 0
    for i in range(len(times)):
        if np.max(np.abs(m_fast[i] - m_inf)) < 1e-10 * (1.0 + np.max(np.abs(m_inf))):
            continue
        values = inner_obs(i)
        for name in obs:
            if name in values:
                obs[name][i] += values[name] - base[name]
    for k in range(1, K + 1):
        obs[f"m_{k}"] = np.sqrt(d) * obs[f"t_{k}"]  # teachers: constant
    for j, k in enumerate(idx):
        obs[f"m_{k + 1}"] = m_fast[:, j] + m_slow[:, j] - m_slow[0, j]
    for k in range(1, K + 1):
        obs[f"t_{k}"] = obs[f"m_{k}"] / np.sqrt(d)
        for l in range(k, K + 1):
            obs[f"q_{k}{l}"] = obs[f"q2_{k}{l}"]
            obs[f"qsym_{k}{l}"] = 2.0 * (obs[f"q1_{k}{l}"] + obs[f"q2_{k}{l}"])
    for k in range(1, K + 1):
        for l in range(k, K + 1):
            obs[f"p_{k}{l}"] = obs[f"q_{k}{l}"] - obs[f"t_{k}"] * obs[f"t_{l}"]
    m = np.stack([obs[f"m_{k}"] for k in range(1, K + 1)], axis=1)
    obs["loss"] = np.array(
        [
            potential.value(m[i], q1[:, :, i], q2[:, :, i])
            if np.all(np.isfinite(q1[:, :, i])) and np.all(np.isfinite(m[i]))
            else np.nan
            for i in range(len(times))
        ]
    )
    return obs


def _q(op: dict) -> tuple[np.ndarray, np.ndarray]:
    return op["q1"], op["q2"]


def _qname(r: int, k: int, l: int) -> str:
    return f"q{r}_{min(k, l)}{max(k, l)}"


def eq42_slope(D1: float, q1_22: float, q2_22: float, g12: np.ndarray) -> np.ndarray:
    """P1 Eq. 42: d(q⁽¹⁾₁₂, q⁽²⁾₁₂)/dτ at τ = 0 = −2 D₁ Q₂ g*₁₂, Q₂ = [[q⁽¹⁾₂₂, q⁽²⁾₂₂],
    [q⁽²⁾₂₂, q⁽¹⁾₂₂]], with g*₁₂ = ([∇_{q⁽¹⁾}Φ]₁₂, [∇_{q⁽²⁾}Φ]₁₂) in the ½ convention of
    Eqs. 571–572 (with Eq. 48's symmetric-scalar derivative the slope would be twice the
    one-step drift; docs/aim-untied-derivation.md)."""
    Q2 = np.array([[q1_22, q2_22], [q2_22, q1_22]])
    return -2.0 * D1 * Q2 @ np.asarray(g12, float)
