"""Markov data of arXiv 2605.01199, Section 2.2: the stationary law π, the chain P, sequences.

- Eq. 1: π₁ frequent, π_i = (1 − π₁)/(d − 1) + c_i δ for i ≥ 2 with Σc_i = 0 (:func:`two_group_pi`).
- Section 4.1: π = (0.75, 0.19, 0.05, 0.01); Appendix E.1: π₀ = (1/2, 1/4, …, 1/2^d) with
  π = π₀/‖π₀‖. As printed (Euclidean norm) that is not a distribution; we normalise by the sum
  ‖π₀‖₁, the reading under which π is stationary for P (docs/markov.md, "Data").
- Eq. 2: P = λI + (1 − λ)𝟙πᵀ, πᵀP = πᵀ. For Section 4.1's "distinct transition matrices sharing
  π" we offer P = λQ + (1 − λ)𝟙πᵀ with Q a random Metropolis chain reversible for π.
- Def. 2.1: x₁ ~ Unif([d]), x_{j+1} ~ P_{x_j}; input (x₁ … x_s), label x_{s+1}. Tokens are
  0-based here (token 0 is the paper's token 1).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from attndyn.errors import InputError

PAPER_PI = (0.75, 0.19, 0.05, 0.01)
"""Section 4.1's stationary law (d = 4)."""


def two_group_pi(d: int, pi1: float, delta: float = 0.0, pattern: str = "linear") -> np.ndarray:
    """Eq. 1: π₁ and π_i = (1 − π₁)/(d − 1) + c_i δ, i = 2 … d, Σc_i = 0.

    ``linear``: c_i ∝ (d + 1)/2 − i scaled so that max|c_i| = 1 (for d = 3: c = (+1, −1), the
    Thm 3.9 perturbation π̃ = (π₁, (1−π₁)/2 + δ, (1−π₁)/2 − δ)); ``alternating``: +1, −1, …
    (the last 0 when d − 1 is odd)."""
    if d < 2:
        raise InputError(f"invalid value for 'd': must be >= 2 (got {d})")
    base = (1.0 - pi1) / (d - 1)
    if not base < pi1:
        raise InputError(
            f"invalid value for 'pi1': Eq. 1 needs (1 − π₁)/(d − 1) < π₁ < 1 (got {pi1} at d={d})"
        )
    n = d - 1
    if pattern == "linear":
        c = (n + 1) / 2.0 - np.arange(1, n + 1, dtype=np.float64)
        c = c / np.max(np.abs(c)) if n > 1 else np.zeros(1)
    elif pattern == "alternating":
        c = np.array([(-1.0) ** k for k in range(n)])
        if n % 2:
            c[-1] = 0.0
    else:
        raise InputError(
            f"invalid value for 'pattern': must be 'linear' or 'alternating' (got {pattern!r})"
        )
    pi = np.concatenate([[pi1], base + c * delta])
    if pi.min() <= 0:
        raise InputError(
            f"invalid value for 'delta': π must stay positive (δ = {delta} gives min π = "
            f"{pi.min():.3g})"
        )
    return pi


def geometric_pi(d: int) -> np.ndarray:
    """Appendix E.1's π₀ = (1/2, 1/4, …, 1/2^d), normalised to sum 1 (our reading of π₀/‖π₀‖)."""
    p = 0.5 ** np.arange(1, d + 1, dtype=np.float64)
    return p / p.sum()


def stationary_law(config) -> np.ndarray:
    """π of a :class:`~attndyn.models.markov.config.MarkovConfig` (float64)."""
    if config.pi is not None:
        return np.asarray(config.pi, dtype=np.float64)
    if config.pi_kind == "paper":
        return np.asarray(PAPER_PI, dtype=np.float64)
    if config.pi_kind == "geometric":
        return geometric_pi(config.d)
    return two_group_pi(config.d, config.pi1, config.delta, config.pattern)


def lazy_chain(pi: np.ndarray, lam: float) -> np.ndarray:
    """Eq. 2: P = λI + (1 − λ)𝟙πᵀ (row i: stay with probability λ, else draw from π)."""
    pi = np.asarray(pi, dtype=np.float64)
    return lam * np.eye(len(pi)) + (1.0 - lam) * np.outer(np.ones(len(pi)), pi)


def metropolis_chain(pi: np.ndarray, lam: float, seed: int) -> np.ndarray:
    """P = λQ + (1 − λ)𝟙πᵀ with Q_ij = K_ij min(1, π_j/π_i) (i ≠ j) for a random symmetric
    proposal K (rows summing to ≤ 1); π_iQ_ij = K_ij min(π_i, π_j) is symmetric, so πᵀQ = πᵀ
    and πᵀP = πᵀ."""
    pi = np.asarray(pi, dtype=np.float64)
    d = len(pi)
    a = np.random.default_rng(seed).uniform(size=(d, d))
    k = (a + a.T) / 2.0
    np.fill_diagonal(k, 0.0)
    k /= k.sum(axis=1).max()
    q = k * np.minimum(1.0, pi[None, :] / pi[:, None])
    np.fill_diagonal(q, 1.0 - q.sum(axis=1))
    return lam * q + (1.0 - lam) * np.outer(np.ones(d), pi)


def transition_matrix(config, pi: np.ndarray) -> np.ndarray:
    """P of a config: :func:`lazy_chain` or :func:`metropolis_chain`."""
    if config.transition == "lazy":
        return lazy_chain(pi, config.lam)
    return metropolis_chain(pi, config.lam, config.transition_seed)


def sample_sequences(key: jax.Array, P: jax.Array, n: int, length: int) -> jax.Array:
    """``n`` chains of ``length`` tokens (int32, shape (n, length)) of Def. 2.1: x₁ uniform, then
    x_{j+1} = the first k with u_j < Σ_{l≤k} P_{x_j l} (inverse CDF), all n chains per step."""
    d = P.shape[0]
    cdf = jnp.cumsum(P, axis=1)
    k_first, k_rest = jax.random.split(key)
    x1 = jax.random.randint(k_first, (n,), 0, d, dtype=jnp.int32)
    u = jax.random.uniform(k_rest, (length - 1, n), dtype=P.dtype)

    def step(x, u_j):
        nxt = jnp.sum(u_j[:, None] >= cdf[x, :-1], axis=1).astype(jnp.int32)
        return nxt, nxt

    _, rest = jax.lax.scan(step, x1, u)
    return jnp.concatenate([x1[:, None], rest.T], axis=1)


def group_by_query(sequences: np.ndarray, d: int) -> list[np.ndarray]:
    """Appendix E.1's S_k: indices of the sequences whose last input token X[−2] is k (the last
    column of ``sequences`` being the label X[−1])."""
    query = np.asarray(sequences)[:, -2]
    return [np.flatnonzero(query == k) for k in range(d)]


def conditional_entropy(pi: np.ndarray, P: np.ndarray) -> float:
    """L* = −Σ_i π_i Σ_y P_iy log P_iy, the population loss's infimum (Prop. 2.3)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(P > 0, np.log(P), 0.0)
    return float(-np.sum(pi[:, None] * P * logs))


class DataLaw:
    """π, P and L* of a MarkovConfig (float64 NumPy); for text, the corpus's π̂, P̂ and its
    tokens. (``config`` is typed ``Any``: config.py imports this module.)"""

    def __init__(self, config: Any):
        self.tokens = None
        self.vocab = None
        if config.data == "text":
            from attndyn.models.markov import text

            corpus = text.load_corpus(config)
            self.tokens, self.vocab = corpus.tokens, corpus.vocab
            self.pi, self.P = corpus.unigram(), corpus.bigram()
        else:
            self.pi = stationary_law(config)
            self.P = transition_matrix(config, self.pi)
        self.entropy_star = conditional_entropy(self.pi, self.P)

    @property
    def d(self) -> int:
        return len(self.pi)


def data_law(config: Any) -> DataLaw:
    """:class:`DataLaw` of ``config``."""
    return DataLaw(config)
