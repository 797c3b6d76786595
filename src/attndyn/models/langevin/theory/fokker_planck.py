"""The one-dimensional Fokker–Planck equation of the double well, its Gibbs measure and gap.

Per coordinate the SDE dX = −f'(X) dt + √s dW, f(x) = (x² − 1)² + (λ/2)x² (the double-well
potential of docs/langevin.md, separable across coordinates), has the density ρ(x, t) with

    ∂ρ/∂t = ∂ₓ(ρ f') + (s/2) ∂ₓ²ρ,            μ_s(x) = exp(−2f(x)/s) / Z_s.

Discretisation: finite volumes of width Δ on [−L, L] with zero-flux ends and the
Scharfetter–Gummel flux (Scharfetter & Gummel, IEEE Trans. Electron Devices 16, 64 (1969)):
cell i jumps to i + 1 at rate (s/2Δ²) B(z_i) and back at (s/2Δ²) B(−z_i), z_i = 2(f_{i+1} − f_i)/s,
B(z) = z/(eᶻ − 1). It is the continuum flux J = −f'ρ − (s/2)ρ' to O(Δ²) in smooth regions, keeps
mass and positivity, and satisfies detailed balance with the discrete Gibbs weights
π_i ∝ exp(−2f(x_i)/s) exactly (B(−z) = eᶻ B(z)), so its stationary state is μ_s sampled on the
grid. Conjugating by π^{1/2} gives the symmetric (Schrödinger) form, a tridiagonal matrix with
off-diagonals (s/2Δ²)(z/2)/sinh(z/2), whose lowest eigenvalues are 0 and the spectral gap λ_s.
The time evolution is integrated by BDF (the matrix is stiff in the tails, where initial mass may
sit far from μ_s and the spectral expansion is ill-conditioned). Accuracy is checked by grid
refinement in tests/test_langevin_theory.py.

Eyring–Kramers (Kramers, Physica 7, 284 (1940); Berglund, arXiv 1106.5799, Eq. 1.6; Shi, Su &
Jordan, arXiv 2004.06977, the e^{−2H_F/s} law): the escape rate from one well is
√(f''(x*)|f''(0)|)/(2π) · exp(−2Δf/s) (noise √s ⇔ ε = s/2 in Berglund's dX = −∇V dt + √(2ε) dW);
the symmetric double well relaxes (odd observables such as E X) at twice that rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import integrate, sparse, special
from scipy.linalg import eigh_tridiagonal

from attndyn.core.ode import ODEError, solve
from attndyn.errors import InputError

TAIL = 25.0
"""Truncation: [−L, L] ends where f − min f ≥ TAIL·s, i.e. μ_s(L)/μ_s(x*) ≤ e^{−50}."""


def f(x, lam: float = 0.0):
    """f(x) = (x² − 1)² + (λ/2)x² (one coordinate of the double well)."""
    x = np.asarray(x, dtype=float)
    return np.square(x * x - 1.0) + 0.5 * lam * x * x


def df(x, lam: float = 0.0):
    """f'(x) = 4x(x² − 1) + λx."""
    x = np.asarray(x, dtype=float)
    return 4.0 * x * (x * x - 1.0) + lam * x


def wells(lam: float = 0.0) -> tuple[float, float, float, float]:
    """(x*, Δf, f''(x*), f''(0)): minima ±x*, x*² = 1 − λ/4, barrier Δf = f(0) − f(x*) =
    (1 − λ/4)², curvatures 8 − 2λ and λ − 4 (λ < 4: two wells)."""
    if not 0 <= lam < 4:
        raise InputError(
            f"invalid value for 'lam': the double well has two wells for 0 <= lam < 4 (got {lam})"
        )
    return math.sqrt(1 - lam / 4), (1 - lam / 4) ** 2, 8 - 2 * lam, lam - 4


def _f_min(lam: float) -> float:
    return float(f(wells(lam)[0], lam)) if lam < 4 else 0.0


def half_width(s: float, lam: float = 0.0, x0: float = 0.0, init_scale: float = 0.0) -> float:
    """L: f(L) − min f ≥ TAIL·s, and L ≥ |x0| + 10·init_scale + 0.1 (the initial law inside)."""
    target = _f_min(lam) + TAIL * s
    # f increases on [x*, ∞): bisect there
    lo = wells(lam)[0] if lam < 4 else 0.0
    hi = 2.0
    while f(hi, lam) < target:
        hi *= 2
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if f(mid, lam) < target else (lo, mid)
    return max(hi, abs(x0) + 10.0 * init_scale + 0.1)


@dataclass(frozen=True)
class Grid:
    """Cell centres x (N,), width Δ, and the Scharfetter–Gummel jump rates ``up`` (i → i+1) and
    ``down`` (i+1 → i), each (N − 1,)."""

    x: np.ndarray
    dx: float
    up: np.ndarray
    down: np.ndarray
    s: float
    lam: float

    @property
    def generator(self) -> sparse.csc_matrix:
        """Q with dp/dt = Q p (columns sum to zero: mass is kept)."""
        diag = np.zeros(self.x.size)
        diag[:-1] -= self.up
        diag[1:] -= self.down
        return sparse.diags([self.up, diag, self.down], [-1, 0, 1], format="csc")

    def gibbs(self) -> np.ndarray:
        """The discrete Gibbs weights π_i ∝ exp(−2f(x_i)/s) (the generator's null vector)."""
        w = np.exp(-2.0 * (f(self.x, self.lam) - f(self.x, self.lam).min()) / self.s)
        return w / w.sum()


def grid(
    s: float,
    lam: float = 0.0,
    cells: int = 0,
    L: float | None = None,
    x0: float = 0.0,
    init_scale: float = 0.0,
) -> Grid:
    """The finite-volume grid on [−L, L] (L from :func:`half_width` when None). ``cells`` = 0:
    Δ = σ/25 with σ = √(s/(2 f''(x*))) the width of μ_s in a well (at least 200 cells)."""
    if s <= 0:
        raise InputError("invalid value for 's': the Fokker–Planck theory needs s > 0")
    L = half_width(s, lam, x0, init_scale) if L is None else L
    if cells <= 0:
        curvature = wells(lam)[2] if lam < 4 else max(lam - 4, 1.0)
        sigma = math.sqrt(s / (2.0 * curvature))
        cells = max(200, int(math.ceil(2 * L / (sigma / 25.0))))
    dx = 2.0 * L / cells
    x = -L + dx * (np.arange(cells) + 0.5)
    z = 2.0 * np.diff(f(x, lam)) / s
    scale = s / (2.0 * dx * dx)
    return Grid(x, dx, scale / special.exprel(z), scale / special.exprel(-z), s, lam)


def initial_masses(g: Grid, x0: float, init_scale: float) -> np.ndarray:
    """Cell masses of N(x0, init_scale²) (exact cell integrals); a point mass at x0 is shared
    linearly between its two nearest cells."""
    if init_scale > 0:
        edges = np.concatenate([g.x - g.dx / 2, [g.x[-1] + g.dx / 2]])
        cdf = special.ndtr((edges - x0) / init_scale)
        p = np.diff(cdf)
    else:
        p = np.zeros(g.x.size)
        j = float(np.clip((x0 - g.x[0]) / g.dx, 0, g.x.size - 1))
        i = min(int(j), g.x.size - 2)
        p[i], p[i + 1] = 1 - (j - i), j - i
    return p / p.sum()


def evolve(g: Grid, p0: np.ndarray, times: np.ndarray, rtol: float = 1e-9) -> np.ndarray:
    """Cell masses (len(times), N) of dp/dt = Q p from p0 at ``times`` (increasing, ≥ 0)."""
    times = np.asarray(times, dtype=float)
    Q = g.generator
    out = np.empty((times.size, p0.size))
    start = 0
    if times[0] == 0:
        out[0], start = p0, 1
    if start < times.size:
        # a trial step may overflow in the stiff tails (BDF then rejects it and shrinks the
        # step); the result is checked below: finite, and mass kept
        with np.errstate(invalid="ignore", over="ignore"):
            sol = solve(
                lambda t, p: Q @ p,
                (0.0, float(times[-1])),
                p0,
                method="BDF",
                t_eval=times[start:],
                jac=Q,
                rtol=rtol,
                atol=1e-14,
                what="Fokker–Planck",
            )
        mass = sol.y.sum(axis=0)
        if not np.all(np.abs(mass - 1.0) < 1e-6):  # pragma: no cover - BDF on a linear system
            raise ODEError(f"Fokker–Planck integration lost mass: {sol.message}")
        out[start:] = sol.y.T
    return out


def spectral_gap(s: float, lam: float = 0.0, cells: int = 0, L: float | None = None) -> float:
    """λ_s: the smallest non-zero eigenvalue of −Q, from its symmetric (Schrödinger) form.
    The eigensolver's absolute error ~ε‖S‖ limits it to s ≳ 0.1 (λ_s ≳ 10⁻⁸; InputError
    below)."""
    g = grid(s, lam, cells, L)
    z = 2.0 * np.diff(f(g.x, lam)) / s
    scale = s / (2.0 * g.dx * g.dx)
    half = 0.5 * z
    off = scale * np.where(half == 0, 1.0, half / np.sinh(np.where(half == 0, 1.0, half)))
    diag = np.zeros(g.x.size)
    diag[:-1] += g.up
    diag[1:] += g.down
    values = eigh_tridiagonal(diag, -off, eigvals_only=True, select="i", select_range=(0, 1))
    gap = float(values[1] - values[0])
    if gap < 1e4 * np.finfo(float).eps * diag.max():  # eigenvalues are exact to ~ε‖S‖
        raise InputError(
            f"invalid value for 's': the gap at s = {s:g} (~e^(-2Δf/s)) is below the "
            "eigensolver's precision; use s >= 0.1"
        )
    return gap


def gibbs_mean(fn, s: float, lam: float = 0.0) -> float:
    """E_μ fn for μ_s ∝ exp(−2f/s) on ℝ, by adaptive quadrature (scipy ``quad``) on [−L, L]
    with breakpoints at the wells and the saddle (the mass outside is below e^{−50})."""
    if s <= 0:
        raise InputError("invalid value for 's': the Gibbs measure needs s > 0")
    L = half_width(s, lam)
    f0 = _f_min(lam)
    xs = wells(lam)[0] if lam < 4 else 0.0
    pts = sorted({-xs, 0.0, xs})

    def w(x):
        return math.exp(-2.0 * (float(f(x, lam)) - f0) / s)

    opts = dict(points=pts, limit=200, epsabs=0.0, epsrel=1e-12)
    Z = integrate.quad(w, -L, L, **opts)[0]
    return integrate.quad(lambda x: fn(x) * w(x), -L, L, **opts)[0] / Z


def gibbs_mean_f(s: float, lam: float = 0.0) -> float:
    """E_μ f by :func:`gibbs_mean` (one coordinate)."""
    return gibbs_mean(lambda x: float(f(x, lam)), s, lam)


def kramers_rate(s: float, lam: float = 0.0) -> float:
    """Eyring–Kramers relaxation rate of the symmetric double well: twice the escape rate,
    2 · √(f''(x*)|f''(0)|)/(2π) · exp(−2Δf/s) (module docstring)."""
    _, barrier, c_min, c_saddle = wells(lam)
    return 2.0 * math.sqrt(c_min * abs(c_saddle)) / (2.0 * math.pi) * math.exp(-2.0 * barrier / s)


def gibbs_cdf(x, s: float, lam: float = 0.0, points: int = 200_001):
    """The distribution function of μ_s ∝ exp(−2f/s) at x, by the cumulative trapezoid rule on
    ``points`` nodes of [−L, L] (the mass outside is below e^{−50}), linearly interpolated."""
    L = half_width(s, lam)
    nodes = np.linspace(-L, L, points)
    w = np.exp(-2.0 * (f(nodes, lam) - _f_min(lam)) / s)
    cdf = integrate.cumulative_trapezoid(w, nodes, initial=0.0)
    return np.interp(x, nodes, cdf / cdf[-1], left=0.0, right=1.0)


def em_stationary(s: float, h: float, lam: float = 0.0, nodes: int = 0):
    """(nodes y, probabilities q) of the stationary law of the Euler–Maruyama chain
    x ← x − h f'(x) + √(sh) ξ: the Perron vector of its Gaussian transition kernel on [−L − 0.3,
    L + 0.3] (Nyström, :func:`_em_kernel`), found by power iteration kept symmetric (the kernel
    preserves x ↦ −x; the slow odd mode of the double well then never enters). It differs from
    μ_s by O(h) for Euler–Maruyama (Talay & Tubaro, Stoch. Anal. Appl. 8, 483 (1990))."""
    y, K = _em_kernel(s, h, lam, nodes)
    p = np.exp(-2.0 * (f(y, lam) - _f_min(lam)) / s)
    p /= p.sum()
    for _ in range(100_000):
        q = K @ p
        q = 0.5 * (q + q[::-1])
        q /= q.sum()
        if np.max(np.abs(q - p)) < 1e-15:
            break
        p = q
    return y, q


def em_stationary_mean(fn, s: float, h: float, lam: float = 0.0, nodes: int = 0) -> float:
    """E fn under :func:`em_stationary`; minus :func:`gibbs_mean` it is the EM bias."""
    y, q = em_stationary(s, h, lam, nodes)
    return float(q @ np.asarray(fn(y), dtype=float))


def em_ks_distance_abs(s: float, h: float, lam: float = 0.0) -> float:
    """sup_y |P_EM(|X| ≤ y) − P_μ(|X| ≤ y)|: the Kolmogorov distance of |X| between the EM
    chain's stationary law and μ_s (what a KS test of |X| against μ_s can detect of the EM
    bias); the EM law's distribution function is taken at the midpoints between its nodes."""
    y, q = em_stationary(s, h, lam)
    order = np.argsort(np.abs(y), kind="stable")
    a, below = np.abs(y)[order], np.cumsum(q[order])  # P(|X| ≤ a_k) at the sorted nodes
    keep = np.append(a[1:] > a[:-1] + 1e-12, True)  # the last of each tied pair ±y
    a, below = a[keep], below[keep]
    edges = a + 0.5 * (y[1] - y[0])
    return float(np.max(np.abs(below - (2.0 * gibbs_cdf(edges, s, lam) - 1.0))))


def _em_kernel(s: float, h: float, lam: float, nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes y and the column-stochastic kernel K[j, i] ∝ N(y_j; y_i − h f'(y_i), s h);
    ``nodes`` = 0: three per kernel width √(sh) (at least 201); always odd (y = 0 a node)."""
    L = half_width(s, lam) + 0.3
    nodes = (nodes if nodes > 1 else max(201, int(math.ceil(6.0 * L / math.sqrt(s * h))))) | 1
    y = np.linspace(-L, L, nodes)
    mean = y - h * df(y, lam)
    K = np.exp(-0.5 * np.square((y[:, None] - mean[None, :]) / math.sqrt(s * h)))
    return y, K / K.sum(axis=0, keepdims=True)


def em_relaxation_rate(s: float, h: float, lam: float = 0.0, nodes: int = 0) -> float:
    """−log(μ₁)/h, μ₁ the leading odd eigenvalue of the Euler–Maruyama kernel of
    :func:`em_stationary` (its slowest mode): the rate at which E X of the chain decays, against
    the SDE's λ_s. The kernel maps odd vectors to odd vectors (f' is odd), so μ₁ is the Perron
    root of K_odd[j, i] = K[j, i] − K[j, −i] on the nodes y > 0, found by power iteration (its
    next eigenvalue is e^{−λ₃h}, λ₃ ≈ 5–12 the next odd rate, so ~10³ steps suffice)."""
    y, K = _em_kernel(s, h, lam, nodes)  # odd count: y = 0 is the middle node
    mid = y.size // 2
    K_odd = K[mid + 1 :, mid + 1 :] - K[mid + 1 :, :mid][:, ::-1]
    p = y[mid + 1 :] * np.exp(-2.0 * (f(y[mid + 1 :], lam) - _f_min(lam)) / s)
    p /= np.linalg.norm(p)
    mu = 0.0
    for _ in range(200_000):
        q = K_odd @ p
        new = float(np.linalg.norm(q))
        q /= new
        if abs(new - mu) < 1e-15 * new and np.max(np.abs(q - p)) < 1e-10:
            break
        p, mu = q, new
    return -math.log(new) / h
