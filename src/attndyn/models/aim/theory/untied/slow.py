"""The slow phase of untied AIM (arXiv 2609.03858 §4.1, Eqs. 27, 29–32, 42): the moment
hierarchy Eq. 32 with the substitution operators of Eq. 31, truncated at a degree, and the
matrix-level flow on U, V whose traces satisfy Eq. 32 identically. Notation and the table of
Eq. 31 as re-derived (docs/aim-untied-derivation.md): :mod:`attndyn.models.aim.theory.untied`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attndyn.core import ode
from attndyn.models.aim.theory.untied.fast import MeanDynamics
from attndyn.models.aim.theory.untied.moments import letter_matrices, word_moments
from attndyn.models.aim.words import canonical, letter_kind, moment_name, transpose_letter


def canonical_untied(word: tuple[str, ...]) -> tuple[str, ...]:
    """Class representative of an untied word (letters M_k, M_kᵀ, A_k, B_k)."""
    return canonical(word, transpose_letter)


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
    """The untied letters of indices 1..K: M_k, M_kᵀ, A_k, B_k."""
    return [z for k in range(1, K + 1) for z in (f"{k}", f"{k}T", f"A{k}", f"B{k}")]


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
        words, queue = {}, [canonical_untied(w) for w in seeds]
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
        self.names = [moment_name(w, symmetric=False) for w in self.words]
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
        self._q1 = np.array(
            [[self.index[canonical_untied((f"{k}", f"{l}T"))] for l in ks] for k in ks]
        )
        self._q2 = np.array(
            [[self.index[canonical_untied((f"{k}", f"{l}"))] for l in ks] for k in ks]
        )
        self._tA = np.array([self.index[(f"A{k}",)] for k in ks])
        self._tB = np.array([self.index[(f"B{k}",)] for k in ks])
        self._t = np.array([self.index[(f"{k}",)] for k in ks])
        # ψ_k words (Eq. 27): μ_(M⁽ʳ⁾_l, B_k) and μ_(A_k, M⁽ʳ⁾_l), shape (K, K, 2, 2)
        self._psi = np.array(
            [
                [
                    [
                        [
                            self.index.get(canonical_untied((m_letter(l, r), f"B{k}")), n),
                            self.index.get(canonical_untied((f"A{k}", m_letter(l, r))), n),
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
                out.append((canonical_untied(word[:i] + (y,) + word[i + 1 :]), k - 1))
            for l in range(1, K + 1):
                for r in (1, 2):
                    p = K + (r - 1) * K * K + (k - 1) * K + (l - 1)
                    for pair in diff_substitution(z, l, r):
                        out.append((canonical_untied(word[:i] + pair + word[i + 1 :]), p))
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
            # restored by the fast dynamics, as in SGD: E Δm ∋ −2αγ m/d); δ moves q as well,
            # so dm*/dτ = rate + R δ and δ solves (√d D + R) δ = −(rate + 2γ m)
            rate = means.slaved_rate(m_tr, q1, q2, *self.q_of(d_mu))

            def bias_field(delta):  # the δ terms alone (field() also adds the decay)
                return self.field(mu, delta, 0 * a1, 0 * a2) + 2.0 * self.weight_decay * (
                    self._decay * mu
                )

            R = np.zeros((len(idx), len(idx)))
            for j, k in enumerate(idx):
                unit = np.zeros(self.K)
                unit[k] = 1.0
                R[:, j] = means.slaved_rate(m_tr, q1, q2, *self.q_of(bias_field(unit)))
            m_cur = np.sqrt(d) * mu[self._t[idx]]
            delta = np.zeros(self.K)
            delta[idx] = -np.linalg.solve(
                np.sqrt(d) * np.diag(D[idx]) + R, rate + 2.0 * self.weight_decay * m_cur
            )
            d_mu = d_mu + bias_field(delta)
        return d_mu

    def solve(self, mu0, means: MeanDynamics, times, rtol=1e-8, d=None) -> dict[str, np.ndarray]:
        """Integrate from ``mu0`` at slow ``times``; NaN after the solver stops (the truncated
        hierarchy can leave the admissible domain in finite time when γ = 0)."""
        y = ode.integrate(lambda tau, mu: self.rhs(mu, means, d), mu0, times, rtol=rtol)
        return {name: y[i] for i, name in enumerate(self.names)}


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
            f, ft = st["M"].reshape(K, -1), st["Mt"].reshape(K, -1)

            def q_rates(dM):  # (dq1, dq2) of a change dM of the stacked M_k
                df = dM.reshape(K, -1)
                dft = np.ascontiguousarray(np.transpose(dM, (0, 2, 1))).reshape(K, -1)
                return (df @ f.T + f @ df.T) / d, (df @ ft.T + f @ dft.T) / d

            dM = np.stack([du @ v.T + u @ dv.T for u, v, du, dv in zip(U, V, dU, dV, strict=True)])
            rate = means.slaved_rate(st["m"], st["q1"], st["q2"], *q_rates(dM))
            # the correction −δ_k (V_k, U_k) moves M_k by −δ_k (A_k + B_k), hence q and m*:
            # dm*/dτ = rate + R δ, and dm_k/dτ = −√d D_k δ_k − 2γ m_k (SGD's E Δm ∋ −2αγ m/d)
            # must equal it: (√d D + R) δ = −(rate + 2γ m)
            idx = list(means.idx)
            R = np.zeros((len(idx), len(idx)))
            for j, k in enumerate(idx):
                dMk = np.zeros_like(st["M"])
                dMk[k] = -(U[k] @ U[k].T + V[k] @ V[k].T)
                R[:, j] = means.slaved_rate(st["m"], st["q1"], st["q2"], *q_rates(dMk))
            m_cur = np.array([np.trace(st["M"][k]) for k in idx]) / np.sqrt(d)
            D = np.array([st["D"][k] for k in idx])
            delta = -np.linalg.solve(
                np.sqrt(d) * np.diag(D) + R, rate + 2.0 * self.weight_decay * m_cur
            )
            for j, k in enumerate(idx):
                dU[k] = dU[k] - delta[j] * V[k]
                dV[k] = dV[k] - delta[j] * U[k]
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

        sol = ode.solve(
            rhs,
            (0.0, float(times[-1])),
            pack(U0, V0),
            method="RK45",
            t_eval=times,
            rtol=rtol,
            atol=rtol * 1e-3,
            allow_failure=True,  # None after an early stop
        )
        return [unpack(sol.y[:, i]) if i < sol.y.shape[1] else None for i in range(len(times))]


def eq42_q2(q1_22: float, q2_22: float) -> np.ndarray:
    """Q₂ = [[q⁽¹⁾₂₂, q⁽²⁾₂₂], [q⁽²⁾₂₂, q⁽¹⁾₂₂]] of P1 Eqs. 42–43."""
    return np.array([[q1_22, q2_22], [q2_22, q1_22]])


def eq42_slope(D1: float, q1_22: float, q2_22: float, g12: np.ndarray) -> np.ndarray:
    """P1 Eq. 42: d(q⁽¹⁾₁₂, q⁽²⁾₁₂)/dτ at τ = 0 = −2 D₁ Q₂ g*₁₂ (Q₂: :func:`eq42_q2`), with
    g*₁₂ = ([∇_{q⁽¹⁾}Φ]₁₂, [∇_{q⁽²⁾}Φ]₁₂) in the ½ convention of Eqs. 571–572 (with Eq. 48's
    symmetric-scalar derivative the slope would be twice the one-step drift;
    docs/aim-untied-derivation.md)."""
    return -2.0 * D1 * eq42_q2(q1_22, q2_22) @ np.asarray(g12, float)
