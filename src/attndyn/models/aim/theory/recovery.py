"""Weak recovery in the AIM: detectors, initial slopes and the recovery conditions of P1
(arXiv 2609.03858) §3.3 (Eqs. 15–23, Cor. 3), §4.2 (Eqs. 39–49, Cor. 4) and App. E (Eqs. 405–414,
Cor. 7; App. D.4 Eqs. 349–358).

Detectors (first sample count at which an overlap reaches a threshold c):

- tied (Eq. 18):     N_wr(c)   = inf{n : |p_12| ≥ c},  p_12 = q_12 − t_1 t_2 (Eq. 15);
- direct S:          N_wr,S(c) = inf{n : max(|p₊|, |p₋|) ≥ c} with p± = (p_Ω ± p_Ψ)/2 (Eq. 408);
  the paper's own definition (Eq. 413) uses max(|p_Ψ,12|, |p_Ω,12|) = |p₊| + |p₋| instead, which
  is ``direct="psi-omega"`` here (it is ≥ the p± version, Eq. 518);
- untied (Eq. 41):    N_wr(c)   = inf{n : ‖(q⁽¹⁾_12, q⁽²⁾_12)‖_∞ ≥ c}.

Records are discrete, so the crossing is located by linear interpolation in the sample count
between the last record below c and the first at or above it; a seed that never reaches c gives
NaN. Records at or after a seed's divergence step are ignored.

Initial slopes and conditions (all gradients use the ½ convention of potential.py, Eqs. 91, 458,
459, 571–572):

- tied, Eq. 17 (= Eq. 358): dp̄_12/dt|₀ = −2 Γ_12(q̄(0)) t̄_1(0) p̄_22; Cor. 3 needs Γ_12 ≠ 0
  (Eq. 19). At finite d the exact identity behind it is Eq. 352,
  dp_12/dt = −2Γ_11 (μ_112 − t_2 q_11) − 2Γ_12 (μ_122 − t_2 q_12) − (γ/2) p_12,
  which reduces to Eq. 17 when p_12 = μ̊_112 = μ̊_122 = 0 (Assumption 3, Eq. 357);
- direct S, Eq. 513: dp̄±/dt|₀ = −2 a± g±, a± = (p_Ω,22 ± p_Ψ,22)/2 (Eqs. 409–410),
  g± = [∇_Ω Φ]_12 ± [∇_Ψ Φ]_12 (Eq. 412); Cor. 7 needs a₊g₊ ≠ 0 or a₋g₋ ≠ 0 (Eq. 414);
- untied, Eq. 42: dq̄_12/dτ|₀ = −2 D_1(0) Q_2 g*_12, D_1 = t^A_1 + t^B_1,
  Q_2 = [[q⁽¹⁾_22, q⁽²⁾_22], [q⁽²⁾_22, q⁽¹⁾_22]], g*_12 = ([∇_q⁽¹⁾ Φ]_12, [∇_q⁽²⁾ Φ]_12) at the
  mean m̄* selected by the fast flow (Eq. 28); Cor. 4 needs Q_2 g*_12 ≠ 0 (Eq. 43). The ½
  convention makes g*_12 half of Eq. 48's symmetric-scalar derivative; that is the convention of
  the slow equations (Eqs. 571–572, 920), so the slope formula is consistent.

Eq. 23 (L = 1, MSE ½(F(G_1) − F(G_2))², same activation F for student and teacher): with
B = 2C² (the L = 1 case of B_(ij),(i'j') = C_ii'C_jj' + C_ij'C_ji') and G_k = √(B q_kk) z_k,

    −Γ_12 = ½ Σ_ν ρ^ν ν! a_ν b_ν,   ρ = q_12/√(q_11 q_22),

where a_ν, b_ν are the Hermite (He_ν) coefficients of √B F'(√(B q_11) z) and √B F'(√(B q_22) z).
For q_11 = q_22 and q_12 = t_1 t_2 this is Eq. 23 verbatim (a = b = H, ρ = t_1 t_2/√(q_11 q_22));
for unequal variances it is the same Mehler expansion with two coefficient sequences.
"""

from __future__ import annotations

from collections.abc import Mapping
from math import factorial
from typing import cast

import numpy as np
import xarray as xr
from numpy.polynomial import hermite_e, polynomial

from attndyn.core.trajectory import config_of
from attndyn.models.aim.theory.potential import Potential
from attndyn.models.aim.theory.untied.fast import MeanDynamics
from attndyn.models.aim.theory.untied.slow import eq42_q2, eq42_slope

__all__ = [
    "first_crossing",
    "crossing_samples",
    "recovery_signal",
    "n_wr",
    "eq17_slope",
    "eq352_slope",
    "tied_slope_prediction",
    "measured_initial_slope",
    "cor3_condition",
    "cor7_condition",
    "cor4_condition",
    "fast_mean",
    "hermite_coefficients",
    "gamma12_hermite",
]


# --------------------------------------------------------------------------------------------
# Detectors


def first_crossing(samples: np.ndarray, signal: np.ndarray, threshold: float) -> float:
    """First sample count at which ``signal`` (≥ 0) reaches ``threshold``, linearly interpolated
    in samples between the bracketing records; NaN if it never does. NaN records are skipped."""
    samples = np.asarray(samples, dtype=np.float64)
    signal = np.asarray(signal, dtype=np.float64)
    ok = np.isfinite(signal)
    samples, signal = samples[ok], signal[ok]
    above = np.nonzero(signal >= threshold)[0]
    if above.size == 0:
        return float("nan")
    i = int(above[0])
    if i == 0:
        return float(samples[0])
    s0, s1 = samples[i - 1], samples[i]
    a0, a1 = signal[i - 1], signal[i]
    return float(s0 + (threshold - a0) / (a1 - a0) * (s1 - s0))


def crossing_samples(
    samples: np.ndarray,
    signal: np.ndarray,
    threshold: float,
    valid: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`first_crossing` for every row of ``signal`` (seed × time); ``valid`` (same shape,
    boolean) masks records that must not count."""
    signal = np.atleast_2d(np.asarray(signal, dtype=np.float64))
    if valid is not None:
        signal = np.where(valid, signal, np.nan)
    return np.array([first_crossing(samples, row, threshold) for row in signal])


def _kind(traj: xr.Dataset, kind: str) -> str:
    if kind != "auto":
        return kind
    param = config_of(traj).get("param")
    if param is None:
        raise ValueError("cannot infer the parameterisation; pass kind='tied'|'direct'|'untied'")
    return param


def recovery_signal(
    traj: xr.Dataset, kind: str = "auto", pair: tuple[int, int] = (1, 2), direct: str = "pm"
) -> xr.DataArray:
    """The overlap whose threshold defines weak recovery (see the module docstring):
    tied |p_kl|; direct max(|p₊|, |p₋|) (``direct="pm"``) or max(|p_Ψ|, |p_Ω|) (``"psi-omega"``,
    Eq. 413); untied max(|q⁽¹⁾_kl|, |q⁽²⁾_kl|) (Eq. 41)."""
    k, l = sorted(pair)
    tag = f"{k}{l}"
    kind = _kind(traj, kind)
    # NumPy ufuncs return DataArrays for DataArrays (__array_ufunc__); numpy's stubs say ndarray
    if kind == "tied":
        return cast(xr.DataArray, np.abs(traj[f"p_{tag}"]))
    if kind == "direct":
        names = {"pm": ("pplus", "pminus"), "psi-omega": ("pPsi", "pOmega")}[direct]
        signal = np.maximum(np.abs(traj[f"{names[0]}_{tag}"]), np.abs(traj[f"{names[1]}_{tag}"]))
        return cast(xr.DataArray, signal)
    if kind == "untied":
        return cast(xr.DataArray, np.maximum(np.abs(traj[f"q1_{tag}"]), np.abs(traj[f"q2_{tag}"])))
    raise ValueError(f"unknown kind {kind!r}; use tied, direct, untied or auto")


def n_wr(
    traj: xr.Dataset,
    threshold: float,
    kind: str = "auto",
    pair: tuple[int, int] = (1, 2),
    direct: str = "pm",
) -> np.ndarray:
    """N_wr(c) per seed (Eqs. 18, 41, 413): samples at the first crossing of ``threshold`` by
    :func:`recovery_signal`, NaN where never crossed. Theory trajectories (no seed axis) give a
    one-element array."""
    signal = recovery_signal(traj, kind, pair, direct)
    samples = traj["samples"].values
    values = signal.values if "seed" in signal.dims else signal.values[None, :]
    valid = None
    if "diverged_step" in traj.coords and "step" in traj.coords:
        div = traj["diverged_step"].values
        step = traj["step"].values
        valid = (div[:, None] < 0) | (step[None, :] < div[:, None])
    return crossing_samples(samples, values, threshold, valid)


# --------------------------------------------------------------------------------------------
# Tied: Eq. 17 and Eq. 352


def eq17_slope(gamma12: float, t1: float, p22: float) -> float:
    """P1 Eq. 17: dp̄_12/dt|₀ = −2 Γ_12(q̄(0)) t̄_1(0) p̄_22 (tied time t = 4nα_d/d)."""
    return -2.0 * gamma12 * t1 * p22


def eq352_slope(
    gamma: np.ndarray,
    t1: float,
    t2: float,
    q11: float,
    q12: float,
    mu112: float,
    mu122: float,
    weight_decay: float = 0.0,
) -> float:
    """P1 Eq. 352 (App. D.4), exact for the tied hierarchy (and hence the matrix flow) at any
    state: dp_12/dt = −2Γ_11(μ_112 − t_2 q_11) − 2Γ_12(μ_122 − t_2 q_12) − (γ/2) p_12."""
    p12 = q12 - t1 * t2
    return float(
        -2.0 * gamma[0, 0] * (mu112 - t2 * q11)
        - 2.0 * gamma[0, 1] * (mu122 - t2 * q12)
        - 0.5 * weight_decay * p12
    )


def _get(obs: Mapping, name: str) -> float:
    value = obs[name]
    return float(np.asarray(value).reshape(-1)[0]) if np.ndim(value) else float(value)


def tied_slope_prediction(
    potential: Potential, obs: Mapping[str, float], weight_decay: float = 0.0
) -> dict[str, float]:
    """Eq. 17 (and Eq. 352 when μ_112, μ_122 are in ``obs``) at the state ``obs`` (names t_1, t_2,
    q_11, q_12, q_22 as recorded by the simulator), for a student index 1 and teacher index 2.

    Γ is evaluated at the measured q (so q_12 includes any finite-d p_12(0)); Eq. 17 itself is the
    d → ∞ statement with p_12(0) = 0."""
    t1, t2 = _get(obs, "t_1"), _get(obs, "t_2")
    q11, q12, q22 = _get(obs, "q_11"), _get(obs, "q_12"), _get(obs, "q_22")
    q = np.array([[q11, q12], [q12, q22]])
    gamma = potential.gamma_tied(q)
    p22 = q22 - t2 * t2
    out = {
        "gamma11": float(gamma[0, 0]),
        "gamma12": float(gamma[0, 1]),
        "t1": t1,
        "p22": p22,
        "p12": q12 - t1 * t2,
        "slope_eq17": eq17_slope(float(gamma[0, 1]), t1, p22),
    }
    if "mu_1.1.2" in obs and "mu_1.2.2" in obs:
        out["slope_eq352"] = eq352_slope(
            gamma, t1, t2, q11, q12, _get(obs, "mu_1.1.2"), _get(obs, "mu_1.2.2"), weight_decay
        )
    return out


def measured_initial_slope(
    traj: xr.Dataset,
    name: str = "p_12",
    window: float = 0.1,
    degree: int = 2,
    axis: str = "time",
) -> dict[str, object]:
    """Initial slope d(name)/d(axis) at 0, from a least-squares polynomial of ``degree`` fitted to
    the records with axis ≤ ``window`` (the linear coefficient). Per seed, with the seed mean and
    its standard error; for a theory trajectory the single fit.

    The polynomial absorbs the curvature inside the window (degree 2 makes the bias O(window²));
    the window must hold more than ``degree`` + 1 records."""
    x = np.asarray(traj[axis].values, dtype=np.float64)
    keep = x <= window * (1 + 1e-12)
    if keep.sum() <= degree + 1:
        raise ValueError(
            f"only {int(keep.sum())} records within {axis} ≤ {window}; need > {degree + 1}"
        )
    y = traj[name].values
    y = y if y.ndim == 2 else y[None, :]
    slopes = []
    for row in y:
        ok = keep & np.isfinite(row)
        if ok.sum() <= degree + 1:
            slopes.append(np.nan)
            continue
        coef = np.polynomial.polynomial.polyfit(x[ok], row[ok], degree)
        slopes.append(float(coef[1]))
    per_seed = np.asarray(slopes)
    good = per_seed[np.isfinite(per_seed)]
    sem = float(np.std(good, ddof=1) / np.sqrt(len(good))) if len(good) > 1 else float("nan")
    return {
        "per_seed": per_seed,
        "mean": float(np.mean(good)) if len(good) else float("nan"),
        "sem": sem,
        "records": int(keep.sum()),
    }


# --------------------------------------------------------------------------------------------
# Conditions of Cor. 3, Cor. 7, Cor. 4


def cor3_condition(
    potential: Potential,
    t1: float,
    t2: float,
    q11: float,
    q22: float,
    q12: float | None = None,
) -> dict[str, float]:
    """Cor. 3 (Eq. 19): Γ_12(q̄(0)) ≠ 0, with Assumption 3's t̄_1(0) > 0 and p̄_22 > 0, at the
    uninformative state q_12 = t_1 t_2 (p_12 = 0) unless ``q12`` is given. Returns Γ_12, t_1, p_22
    and the Eq. 17 slope; the condition holds when the slope is nonzero."""
    q12 = t1 * t2 if q12 is None else q12
    gamma = potential.gamma_tied(np.array([[q11, q12], [q12, q22]]))
    p22 = q22 - t2 * t2
    return {
        "gamma12": float(gamma[0, 1]),
        "t1": float(t1),
        "p22": float(p22),
        "slope": eq17_slope(float(gamma[0, 1]), t1, p22),
    }


def cor7_condition(
    potential: Potential, t: np.ndarray, psi: np.ndarray, omega: np.ndarray
) -> dict[str, float]:
    """Cor. 7 (Eq. 414) for direct S at the state (t, Ψ, Ω) (K = 2: student 1, teacher 2):
    a± = (p_Ω,22 ± p_Ψ,22)/2 (Eqs. 409–410), g± = [∇_Ω Φ]_12 ± [∇_Ψ Φ]_12 (Eq. 412) and the
    initial slopes dp̄±/dt|₀ = −2 a± g± (Eq. 513). Recovery on the d² log d scale needs one of
    a₊g₊, a₋g₋ to be nonzero."""
    t = np.asarray(t, dtype=np.float64)
    psi = np.asarray(psi, dtype=np.float64)
    omega = np.asarray(omega, dtype=np.float64)
    _, A, B = potential.gradients(np.zeros(potential.K), omega, psi)
    t2 = t[1]
    p_psi22, p_omega22 = psi[1, 1] - t2 * t2, omega[1, 1] - t2 * t2
    a_plus, a_minus = 0.5 * (p_omega22 + p_psi22), 0.5 * (p_omega22 - p_psi22)
    g_plus, g_minus = A[0, 1] + B[0, 1], A[0, 1] - B[0, 1]
    return {
        "a_plus": float(a_plus),
        "a_minus": float(a_minus),
        "g_plus": float(g_plus),
        "g_minus": float(g_minus),
        "a_g_plus": float(a_plus * g_plus),
        "a_g_minus": float(a_minus * g_minus),
        "slope_plus": float(-2 * a_plus * g_plus),
        "slope_minus": float(-2 * a_minus * g_minus),
    }


def fast_mean(
    potential: Potential,
    m0: np.ndarray,
    q1: np.ndarray,
    q2: np.ndarray,
    trainable: tuple[int, ...] = (1,),
    rate: np.ndarray | float = 1.0,
) -> np.ndarray:
    """The mean m̄* selected by the untied fast flow (P1 Eq. 28),
    dm_k/dt = −D_k ∂Φ/∂m_k(m, q⁽¹⁾(0), q⁽²⁾(0)) for trainable k (others fixed), from m0 to its
    attracting critical point (Assumption 5; :meth:`MeanDynamics.fast_limit`). ``rate`` is D_k;
    returns the full mean vector."""
    m0 = np.asarray(m0, dtype=np.float64)
    means = MeanDynamics(potential, tuple(trainable), m0)
    rate = np.broadcast_to(np.asarray(rate, dtype=np.float64), means.idx.shape)
    m_star = means.full(means.fast_limit(m0[means.idx], q1, q2, rate))
    if np.max(np.abs(means.grad_m(m_star[means.idx], q1, q2))) > 1e-8:
        raise RuntimeError("the fast mean flow (Eq. 28) did not reach a critical point")
    return m_star


def cor4_condition(
    potential: Potential,
    m: np.ndarray,
    q1: np.ndarray,
    q2: np.ndarray,
    tA1: float,
    tB1: float,
    select_mean: bool = True,
) -> dict[str, object]:
    """Cor. 4 (Eq. 43) for untied S = UVᵀ (K = 2: student 1, teacher 2): g*_12 at the fast-selected
    mean m̄* (Eq. 28, via :func:`fast_mean` from ``m`` unless ``select_mean`` is False), Q_2 g*_12
    and the slow initial slope dq̄_12/dτ|₀ = −2 D_1 Q_2 g*_12 (Eq. 42), D_1 = t^A_1 + t^B_1.
    Recovery on the d² log d scale needs Q_2 g*_12 ≠ 0."""
    q1 = np.asarray(q1, dtype=np.float64)
    q2 = np.asarray(q2, dtype=np.float64)
    D1 = float(tA1 + tB1)
    m_star = fast_mean(potential, m, q1, q2, (1,), D1) if select_mean else np.asarray(m, float)
    _, g1, g2 = potential.gradients(m_star, q1, q2)
    g12 = np.array([g1[0, 1], g2[0, 1]])
    Qg = eq42_q2(q1[1, 1], q2[1, 1]) @ g12
    return {
        "m_star": m_star,
        "g12": g12,
        "Q2_g12": Qg,
        "D1": D1,
        "slope": eq42_slope(D1, q1[1, 1], q2[1, 1], g12),
        "max_abs_Q2_g12": float(np.max(np.abs(Qg))),
    }


# --------------------------------------------------------------------------------------------
# Eq. 23: the Hermite closed form of Γ_12 for L = 1 MSE with one activation

# power-series coefficients (lowest degree first) of the polynomial activations of P1 Fig. 2
POLYNOMIAL_ACTIVATIONS = {
    "h1": np.array([0.0, 1.0]),
    "h2": np.array([-1.0, 0.0, 1.0]) / np.sqrt(2.0),
    "h3": np.array([0.0, -3.0, 0.0, 1.0]) / np.sqrt(6.0),
}


def hermite_coefficients(
    activation: str, sigma: float, scale: float = 1.0, order: int = 40
) -> np.ndarray:
    """Coefficients c_ν of scale·F'(σ z) = Σ_ν c_ν He_ν(z) (probabilists' Hermite).

    Exact (finite) for the polynomial activations h1, h2, h3; otherwise the projection
    c_ν = E[scale·F'(σZ) He_ν(Z)]/ν! by Gauss–Hermite quadrature with 4·``order`` nodes, for
    ν < ``order``, with F' by automatic differentiation of the simulator's activation."""
    if activation in POLYNOMIAL_ACTIVATIONS:
        deriv = polynomial.polyder(POLYNOMIAL_ACTIVATIONS[activation])
        in_z = deriv * sigma ** np.arange(len(deriv)) * scale
        return hermite_e.poly2herme(in_z)
    import jax
    import jax.numpy as jnp

    from attndyn.models.aim.model import ACTIVATIONS

    fn = ACTIVATIONS[activation]
    x, w = hermite_e.hermegauss(4 * order)
    w = w / w.sum()
    with jax.enable_x64(True):
        fprime = np.asarray(jax.vmap(jax.grad(lambda u: fn(u)))(jnp.asarray(sigma * x)))
    values = scale * fprime
    coef = np.empty(order)
    for nu in range(order):
        basis = hermite_e.hermeval(x, np.eye(order)[nu])
        coef[nu] = np.sum(w * values * basis) / factorial(nu)
    return coef


def gamma12_hermite(
    activation: str,
    q11: float,
    q22: float,
    q12: float,
    C: float = 1.0,
    loss_scale: str = "half",
    order: int = 40,
) -> float:
    """Γ_12 for L = 1, one index each, loss ½(F(G_1) − F(G_2))² (``loss_scale="full"``: without the
    ½), from the Hermite expansion of P1 Eq. 23 (see the module docstring):
    −Γ_12 = s·½ Σ_ν ρ^ν ν! a_ν b_ν, s = 1 (half) or 2 (full), B = 2C², ρ = q_12/√(q_11 q_22)."""
    B = 2.0 * C * C
    a = hermite_coefficients(activation, np.sqrt(B * q11), np.sqrt(B), order)
    b = hermite_coefficients(activation, np.sqrt(B * q22), np.sqrt(B), order)
    n = min(len(a), len(b))
    rho = q12 / np.sqrt(q11 * q22)
    nu = np.arange(n)
    fact = np.array([float(factorial(int(k))) for k in nu])
    total = 0.5 * np.sum(rho**nu * fact * a[:n] * b[:n])
    s = 1.0 if loss_scale == "half" else 2.0
    return float(-s * total)
