"""Tied AIM: the moment hierarchy (P1 Eq. 11) truncated at degree M (Eq. 13), and the
matrix-level mean flow (Eqs. 207–210, 263) that solves it exactly for a finite-d initial state.

Moments μ_α = Tr(S_{k1}⋯S_{kw})/d for words α over the indices; the S_k are symmetric, so a word
is one representative of its class under cyclic rotation and reversal. Eq. 11:

    dμ_α/dt = − Σ_{i: k_i ∈ 𝒦} Σ_l Γ_{k_i l}(q) [μ_(k1..k_{i−1}, l, k_i..kw)
                                                 + μ_(k1..k_i, l, k_{i+1}..kw)]
              − (γ/2) |α|_𝒦 μ_α,

with q_kl = μ_(k,l), Γ = ∇Φ (Eq. 91) and |α|_𝒦 the number of trainable letters in α. The
truncation sets μ_α ≡ 0 for |α| > M. The matrix flow is

    dS_k/dt = − Σ_l Γ_kl(q) (S_l S_k + S_k S_l) − (γ/2) S_k   (k trainable),

(P1 Eqs. 207–210, with H_k = 4 Σ_l Γ_kl S_l of Eq. 263), whose traces satisfy Eq. 11 identically:
taking Tr(·)/d of a word's derivative reproduces the right-hand side of Eq. 11 term by term.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attndyn.core.ode import as_event, integrate
from attndyn.models.aim.words import canonical, canonical_words, moment_name


@dataclass
class TiedHierarchy:
    """Eq. 11 truncated at degree M for K indices, of which ``trainable`` (1-based) evolve."""

    K: int
    trainable: tuple[int, ...]
    M: int
    gamma_fn: Callable[[np.ndarray], np.ndarray]  # q (K×K) -> Γ(q) (K×K)
    weight_decay: float = 0.0

    def __post_init__(self):
        letters = [str(k) for k in range(1, self.K + 1)]
        sym = {z: z for z in letters}
        self.words = [w for n in range(1, self.M + 1) for w in canonical_words(letters, sym, n)]
        self.index = {w: i for i, w in enumerate(self.words)}
        self.names = [moment_name(w, symmetric=True) for w in self.words]
        n = len(self.words)
        src, ki, li, tgt1, tgt2 = [], [], [], [], []
        trainable = {str(k) for k in self.trainable}
        for a, word in enumerate(self.words):
            for i, letter in enumerate(word):
                if letter not in trainable:
                    continue
                for l in letters:
                    w1 = word[:i] + (l,) + word[i:]
                    w2 = word[: i + 1] + (l,) + word[i + 1 :]
                    src.append(a)
                    ki.append(int(letter) - 1)
                    li.append(int(l) - 1)
                    tgt1.append(self.index.get(canonical(w1), n))  # n: truncated (μ ≡ 0)
                    tgt2.append(self.index.get(canonical(w2), n))
        self._src, self._k, self._l = np.array(src), np.array(ki), np.array(li)
        self._t1, self._t2 = np.array(tgt1), np.array(tgt2)
        self._decay = np.array([sum(z in trainable for z in w) for w in self.words], float)
        # trainable letters gained by each insertion (0 for truncated words, whose μ is 0)
        ext_decay = np.append(self._decay, 0.0)
        gain1 = ext_decay[self._t1] - self._decay[self._src]
        gain2 = ext_decay[self._t2] - self._decay[self._src]
        self._jump1 = np.where(self._t1 == n, 0.0, gain1)
        self._jump2 = np.where(self._t2 == n, 0.0, gain2)
        self._q_index = np.array(
            [
                [self.index[canonical((str(k), str(l)))] for l in range(1, self.K + 1)]
                for k in range(1, self.K + 1)
            ]
        )

    def q_of(self, mu: np.ndarray) -> np.ndarray:
        return mu[self._q_index]

    def rhs(self, t: float, mu: np.ndarray) -> np.ndarray:
        gamma = self.gamma_fn(self.q_of(mu))
        ext = np.append(mu, 0.0)
        terms = gamma[self._k, self._l] * (ext[self._t1] + ext[self._t2])
        d_mu = -np.bincount(self._src, weights=terms, minlength=len(mu))
        return d_mu - 0.5 * self.weight_decay * self._decay * mu

    def _scaled_rhs(self, t: float, nu: np.ndarray) -> np.ndarray:
        """Eq. 11 for ν_α = e^{(γ/2)|α|_𝒦 t} μ_α (the decay term integrated exactly). An inserted
        letter adds 0 or 1 trainable letters, so only the bounded factors e^{−(γ/2)Δt} appear:
        the system is not stiff however large γ is."""
        c = 0.5 * self.weight_decay * t
        gamma = self.gamma_fn(self.q_of(nu * np.exp(-c * self._decay)))
        ext = np.append(nu, 0.0)
        f1, f2 = np.exp(-c * self._jump1), np.exp(-c * self._jump2)
        terms = gamma[self._k, self._l] * (ext[self._t1] * f1 + ext[self._t2] * f2)
        return -np.bincount(self._src, weights=terms, minlength=len(nu))

    def initial(self, moments: dict[str, float]) -> np.ndarray:
        """State vector from a dict of observable names (missing names are an error)."""
        missing = [n for n in self.names if n not in moments]
        if missing:
            raise KeyError(f"initial moments missing: {missing[:5]}")
        return np.array([moments[n] for n in self.names], dtype=np.float64)

    def solve(
        self, mu0: np.ndarray, times: np.ndarray, rtol: float = 1e-8
    ) -> dict[str, np.ndarray]:
        """Integrate with an adaptive Runge–Kutta (DOP853) in float64; values at ``times``.

        With weight decay the state is ν_α = e^{(γ/2)|α|_𝒦 t} μ_α (see ``_scaled_rhs``), which
        removes the stiffness of the decay rates (γ/2)|α|_𝒦. The integration stops, and the
        values are NaN from there on, when the solution blows up or when q leaves the PSD cone by
        more than ``CONE_TOL`` (a truncation beyond its radius at γ = 0); smaller excursions
        continue with Γ̃ of Eqs. 92–93 (``Potential.gamma_tied``)."""
        decay = 0.5 * self.weight_decay * self._decay

        def to_mu(t, y):
            return y * np.exp(-decay * t) if self.weight_decay > 0 else y

        def blow_up(t, y):
            size = float(np.max(np.abs(to_mu(t, y))))
            return 1e8 - size if np.isfinite(size) else -1.0

        def cone_exit(t, y):
            q = self.q_of(to_mu(t, y))
            if not np.all(np.isfinite(q)):
                return -1.0
            vals = np.linalg.eigvalsh(0.5 * (q + q.T))
            return float(vals[0] + CONE_TOL * max(vals[-1], 0.0))

        as_event(blow_up, terminal=True)
        as_event(cone_exit, terminal=True)
        values = integrate(
            self._scaled_rhs if self.weight_decay > 0 else self.rhs,
            mu0,
            times,
            rtol=rtol,
            events=[blow_up, cone_exit],
        )
        if self.weight_decay > 0:
            values = values * np.exp(-np.outer(decay, times))
        self.stop = self._stop_record(values, times, blow_up, cone_exit)
        return {name: values[i] for i, name in enumerate(self.names)}

    def _stop_record(self, values, times, blow_up, cone_exit) -> dict | None:
        """Why and when the integration stopped early (None if it reached the last time): the
        event whose function is smaller at the last finite record, between that record's time
        and the next one."""
        finite = np.all(np.isfinite(values), axis=0)
        if finite.all():
            return None
        first = int(np.argmin(finite))
        if first == 0:
            return {"reason": "the initial state is not finite", "after": 0.0, "before": 0.0}
        last = values[:, first - 1]
        y = last * np.exp(0.5 * self.weight_decay * self._decay * times[first - 1])
        cone, size = cone_exit(times[first - 1], y), blow_up(times[first - 1], y)
        if cone <= size:
            reason = (
                f"q left the PSD cone (smallest eigenvalue below −{CONE_TOL:g} × the largest): "
                f"the degree-{self.M} truncation is not admissible there (Thm 2)"
            )
        else:
            reason = f"the degree-{self.M} truncation blew up (|μ| > 1e8)"
        return {"reason": reason, "after": float(times[first - 1]), "before": float(times[first])}


CONE_TOL = 1e-2
"""The hierarchy stops when the smallest eigenvalue of q falls below −CONE_TOL × the largest:
such a truncation is not admissible (Thm 2) and is wrong by at least that much."""


@dataclass
class MatrixFlow:
    """The matrix-level mean flow at finite d (float64 numpy), tied indices."""

    trainable: tuple[int, ...]
    gamma_fn: Callable[[np.ndarray], np.ndarray]
    weight_decay: float = 0.0

    def solve(self, S0: np.ndarray, times: np.ndarray, rtol: float = 1e-8) -> np.ndarray:
        """S(t) at ``times`` from S0 (K, d, d); returns (len(times), K, d, d)."""
        K, d, _ = S0.shape
        train = [k - 1 for k in self.trainable]

        def rhs(t, y):
            S = y.reshape(K, d, d)
            q = np.einsum("kab,lab->kl", S, S) / d
            gamma = self.gamma_fn(q)
            dS = np.zeros_like(S)
            for k in train:
                acc = np.zeros((d, d))
                for l in range(K):
                    acc += gamma[k, l] * S[l]
                dS[k] = -(acc @ S[k] + S[k] @ acc) - 0.5 * self.weight_decay * S[k]
            return dS.reshape(-1)

        values = integrate(rhs, S0.reshape(-1), times, rtol=rtol, method="RK45")
        return values.T.reshape(len(times), K, d, d)
