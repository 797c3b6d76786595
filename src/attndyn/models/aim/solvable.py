"""The exactly solvable tied AIM of arXiv 2609.03858, App. D.3.

Setting (P1 App. D.3): one token (L = 1), two indices — the student S1 = W Wᵀ and a fixed
teacher S2 — centred forms G_k = (xᵀ S_k x − Tr S_k)/√d, the loss (G1 − G2)², no weight decay.
The potential is Φ = 2q11 + 2q22 − 4q12 (Eq. 339), so Γ11 = 2, Γ12 = −2, and on the tied time axis
t = 4nα_d/d the mean flow is the matrix Riccati equation (Eq. 342)

    dS1/dt = 2(S1 S2 + S2 S1) − 4 S1²,

solved in closed form by Eq. 343. In the simulator's config this is::

    param="tied", L=1, output="index", activation="h1", loss_scale="full",
    teacher="identity" (S2 = teacher_scale·I) or "wishart", weight_decay=0.

``loss_scale="half"`` halves every rate (t → t/2) and ``weight_decay=γ`` adds −(γ/2)S1 to the
flow (P1 Eqs. 207–210); :func:`riccati_flow` and :func:`predict` handle both (our extension of
Eq. 343, checked against direct integration in the tests). The truncations of Eqs. 340–341 are for
γ = 0 only.

Everything here is float64 NumPy except :func:`initial_condition`, which reruns the simulator's
initialisation (JAX) to get a seed's S1(0) and S2.
"""

from __future__ import annotations

from collections.abc import Mapping

import jax
import numpy as np
import xarray as xr

from attndyn.core.config import canonical
from attndyn.core.trajectory import make_trajectory
from attndyn.errors import InputError

STUDENT_MOMENTS = {
    1: ("t_1",),
    2: ("q_11", "q_12"),
    3: ("mu_1.1.1", "mu_1.1.2", "mu_1.2.2"),
}
"""Moments that involve the student, by degree, in the simulator's names (index 1 = student,
index 2 = teacher)."""

TEACHER_MOMENTS = ("t_2", "q_22", "mu_2.2.2")


def _phi(x: np.ndarray) -> np.ndarray:
    """φ(x) = (eˣ − 1)/x, with φ(0) = 1 (stable near 0)."""
    x = np.asarray(x, dtype=np.float64)
    small = np.abs(x) < 1e-8
    safe = np.where(small, 1.0, x)
    return np.where(small, 1.0 + 0.5 * x, np.expm1(safe) / safe)


def eigenvalue_flow(lam0, c, t) -> np.ndarray:
    """Eigenvalues of S1(t) for the teacher S2 = c·I (P1 App. D.3, Eq. 347).

    Each eigenvalue obeys λ̇ = 4cλ − 4λ² independently, so

        λ(t) = cλ0 / (λ0 + (c − λ0) e^{−4ct}),

    evaluated here as λ0 / (e^{−4ct} + 4tλ0·φ(−4ct)) with φ(x) = (eˣ − 1)/x, which is the same
    expression but stays finite for c = 0 (λ = λ0/(1 + 4λ0 t)) and for λ0 = 0 (λ ≡ 0).
    ``lam0``, ``c`` and ``t`` broadcast against each other (pass ``t[:, None]`` for a time grid).
    """
    lam0, c, t = (np.asarray(a, dtype=np.float64) for a in (lam0, c, t))
    x = -4.0 * c * t
    denom = np.exp(x) + 4.0 * t * lam0 * _phi(x)
    out = np.where(lam0 == 0.0, 0.0, lam0 / np.where(lam0 == 0.0, 1.0, denom))
    return out[()] if out.ndim == 0 else out


def riccati_flow(S1_0, S2, t, gamma: float = 0.0) -> np.ndarray:
    """S1(t) solving dS1/dt = 2(S1 S2 + S2 S1) − 4 S1² − (γ/2) S1 (P1 App. D.3, Eqs. 342–343).

    Eq. 343 (γ = 0) reads S1(t) = [e^{−2S2t} S1(0)⁻¹ e^{−2S2t} + S2⁻¹(I − e^{−4S2t})]⁻¹. By the
    Woodbury identity this equals

        S1(t) = E S0 (I + A S0)⁻¹ E,   E = e^{Bt},   A = 2B⁻¹(e^{2Bt} − I) = 4t·φ(2Bt),

    with B = 2S2 − (γ/4)I (for γ = 0: E = e^{2S2t}, A = (e^{4S2t} − I)S2⁻¹) and φ(x) = (eˣ − 1)/x.
    This form needs neither S1(0) nor S2 to be invertible (a rank-deficient S1(0) = W Wᵀ with W of
    width r < d is fine; zero eigen-directions stay zero), unlike Eq. 343 itself. It is evaluated
    in the eigenbasis of S2 in float64; γ > 0 is our extension (d S1⁻¹/dt is then linear as well).

    ``t`` is a scalar (returns d×d) or a 1-d array (returns T×d×d). S1(0), S2 symmetric PSD.
    """
    S0 = np.asarray(S1_0, dtype=np.float64)
    S2 = np.asarray(S2, dtype=np.float64)
    d = S0.shape[0]
    if S0.shape != (d, d) or S2.shape != (d, d):
        raise InputError(f"S1_0 and S2 must be square of the same size ({S0.shape}, {S2.shape})")
    times = np.atleast_1d(np.asarray(t, dtype=np.float64))
    c = S2[0, 0]
    if np.array_equal(S2, c * np.eye(d)):
        # S2 = cI (Eq. 347): S1(t) keeps the eigenvectors of S1(0), each eigenvalue follows
        # λ̇ = 4(c − γ/8)λ − 4λ² (eigenvalue_flow); one eigendecomposition for every t
        lam0, U = np.linalg.eigh(0.5 * (S0 + S0.T))
        lam = eigenvalue_flow(lam0[None, :], c - 0.125 * gamma, times[:, None])
        out = np.einsum("ak,tk,bk->tab", U, lam, U)
        return out[0] if np.ndim(t) == 0 else out
    s, V = np.linalg.eigh(0.5 * (S2 + S2.T))
    b = 2.0 * s - 0.25 * gamma
    S0e = V.T @ (0.5 * (S0 + S0.T)) @ V
    eye = np.eye(d)
    out = np.empty((len(times), d, d))
    for i, ti in enumerate(times):
        e = np.exp(b * ti)
        a = 4.0 * ti * _phi(2.0 * b * ti)
        # X = S0 (I + A S0)⁻¹, i.e. Xᵀ = (I + S0 A)⁻¹ S0 with A diagonal here.
        x = np.linalg.solve(eye + S0e * a[None, :], S0e).T
        st = e[:, None] * x * e[None, :]
        st = 0.5 * (st + st.T)
        out[i] = V @ st @ V.T
    return out[0] if np.ndim(t) == 0 else out


def moments_of(S1: np.ndarray, S2: np.ndarray) -> dict[str, np.ndarray]:
    """The simulator's observables of degree ≤ 3 (observables.py) for S1 of shape (..., d, d)."""
    S1 = np.asarray(S1, dtype=np.float64)
    S2 = np.asarray(S2, dtype=np.float64)
    d = S2.shape[-1]

    def tr(m):
        return np.trace(m, axis1=-2, axis2=-1) / d

    S11 = S1 @ S1
    S12 = S1 @ S2
    t1, t2 = tr(S1), tr(S2) * np.ones(S1.shape[:-2])
    q11, q12, q22 = tr(S11), tr(S12), tr(S2 @ S2) * np.ones(S1.shape[:-2])
    return {
        "t_1": t1,
        "t_2": t2,
        "q_11": q11,
        "q_12": q12,
        "q_22": q22,
        "p_11": q11 - t1 * t1,
        "p_12": q12 - t1 * t2,
        "p_22": q22 - t2 * t2,
        "mu_1.1.1": tr(S11 @ S1),
        "mu_1.1.2": tr(S11 @ S2),
        "mu_1.2.2": tr(S12 @ S2),
        "mu_2.2.2": tr(S2 @ S2 @ S2) * np.ones(S1.shape[:-2]),
    }


def truncation(order: int, mu0: Mapping[str, float], t) -> dict[str, np.ndarray]:
    """The degree-N truncation of the moment hierarchy in D.3 (P1 Eqs. 340–341; Eq. 11 with the
    closure of Eq. 13: moments of degree > N set to zero, so those of degree N are frozen).

    - N = 1: μ1 static;
    - N = 2 (Eq. 340): μ1(t) = μ1(0) − 4t(q11 − q12), with q11, q12 frozen;
    - N = 3 (Eq. 341): q11(t) = q11 − 8t(μ111 − μ112), q12(t) = q12 − 4t(μ112 − μ122),
      μ1(t) = μ1 − 4t(q11 − q12) + 8t²(2μ111 − 3μ112 + μ122), third moments frozen.

    ``mu0`` holds the initial moments under the simulator's names (``t_1``, ``q_11``, ``q_12``,
    ``mu_1.1.1``, ``mu_1.1.2``, ``mu_1.2.2``; only those of degree ≤ N are needed). Returns the
    student moments of degree ≤ N on the grid ``t``, plus any teacher-only moments given in
    ``mu0`` (``t_2``, ``q_22``, ``mu_2.2.2``), which are constant. γ = 0 only.
    With Γ constant, the result is the Taylor polynomial of degree N − |α| of each exact moment.
    """
    if order not in (1, 2, 3):
        raise InputError(f"invalid value for 'order': must be 1, 2 or 3 (got {order!r})")
    t = np.asarray(t, dtype=np.float64)
    needed = [n for k in range(1, order + 1) for n in STUDENT_MOMENTS[k]]
    missing = [n for n in needed if n not in mu0]
    if missing:
        raise InputError(f"truncation of order {order} needs initial moments {', '.join(missing)}")
    m = {n: float(mu0[n]) for n in needed}
    ones = np.ones_like(t)
    out = {n: m[n] * ones for n in needed}
    if order >= 2:
        out["t_1"] = m["t_1"] - 4.0 * t * (m["q_11"] - m["q_12"])
    if order >= 3:
        m111, m112, m122 = m["mu_1.1.1"], m["mu_1.1.2"], m["mu_1.2.2"]
        out["q_11"] = m["q_11"] - 8.0 * t * (m111 - m112)
        out["q_12"] = m["q_12"] - 4.0 * t * (m112 - m122)
        out["t_1"] = out["t_1"] + 8.0 * t**2 * (2.0 * m111 - 3.0 * m112 + m122)
    for n in TEACHER_MOMENTS:
        if n in mu0:
            out[n] = float(mu0[n]) * ones
    return out


def predict_from(S1_0, S2, times, *, gamma: float = 0.0, config=None) -> xr.Dataset:
    """Theory Trajectory of the exact D.3 flow (P1 Eqs. 342–343, via :func:`riccati_flow`) from a
    given S1(0): the simulator's observables t_k, q_kl, p_kl and the third moments mu_*, on the
    tied time axis t = 4nα_d/d (dims ``time`` only)."""
    times = np.asarray(times, dtype=np.float64)
    S1 = riccati_flow(S1_0, S2, times, gamma=gamma)
    obs = moments_of(S1, S2)
    return make_trajectory(
        obs,
        time=times,
        family="aim",
        config=None if config is None else canonical(config),
    )


def check_solvable(config) -> None:
    """Raise InputError unless ``config`` is a D.3 (Riccati) setting that :func:`predict` covers."""
    problems = []
    if config.param != "tied":
        problems.append("param='tied'")
    if config.L != 1 or (config.C is not None and config.C != [[1.0]]):
        problems.append("L=1 with C=[[1]]")
    if config.output != "index" or config.activation != "h1":
        problems.append("output='index', activation='h1'")
    if config.heads != 1 or config.n_teacher_heads != 1:
        problems.append("heads=1")
    if config.teacher_kind not in ("identity", "wishart"):
        problems.append("teacher='identity' or 'wishart'")
    if problems:
        raise InputError("the D.3 closed form needs " + ", ".join(problems))


def initial_condition(config, seed: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(S1(0), S2) in float64 exactly as the simulator initialises ``seed`` (default
    ``config.seed``): the trainer's init key for that seed, then the family's ``init``."""
    from attndyn.core.trainer import seed_keys
    from attndyn.models.aim import build

    seed = config.seed if seed is None else seed
    with jax.enable_x64(config.dtype == "float64"):
        problem = build(config)
        init_keys, _ = seed_keys(np.array([seed]))
        params, state = problem.init(init_keys[0])
        W = np.asarray(params["W"][0], dtype=np.float64)
        F = np.asarray(state["teacher"]["F"][0], dtype=np.float64)
    return W @ W.T, F @ F.T


def predict(config, times, seed: int | None = None) -> xr.Dataset:
    """Theory Trajectory for a D.3 config, started from the S1(0) and S2 of the simulator's run
    ``seed`` (default ``config.seed``) so that SGD and theory can be compared seed by seed.

    ``loss_scale='half'`` is the flow at half speed (t → t/2); ``weight_decay`` enters as γ in
    :func:`riccati_flow`; label noise does not change the mean flow.
    """
    check_solvable(config)
    S1_0, S2 = initial_condition(config, seed)
    times = np.asarray(times, dtype=np.float64)
    rate = 1.0 if config.loss_scale == "full" else 0.5
    traj = predict_from(S1_0, S2, rate * times, gamma=config.weight_decay / rate, config=config)
    return traj.assign_coords(time=times)
