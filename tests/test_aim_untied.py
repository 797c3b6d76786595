"""Untied AIM theory (P1 §4.1–4.2, App. F; src/attndyn/models/aim/theory/untied/).

- the one-step drift of the derivation (Eqs. 731, 742–745; docs/aim-untied-derivation.md)
  against the exact expected one-step SGD change, by Monte Carlo at d = 64;
- the substitution operators of Eq. 31 (hierarchy) against the matrix-level flow (two
  independent codings of the same field);
- the fast m-flow (Eq. 28) against simulation on the fast time axis;
- the slow hierarchy (Eq. 32, truncation 3) and the matrix-level flow against simulation;
- Eq. 42's initial slope against a closed form and against simulation; Eq. 48/49's zero case.
"""

from __future__ import annotations

import numpy as np
import pytest

import attndyn
from attndyn.core.config import validate
from attndyn.models.aim.theory import AIMTheoryConfig, initial_matrices
from attndyn.models.aim.theory.potential import potential_for
from attndyn.models.aim.theory.untied.fast import MeanDynamics
from attndyn.models.aim.theory.untied.moments import (
    factors,
    letter_matrices,
    order_parameters,
    word_moments,
)
from attndyn.models.aim.theory.untied.slow import (
    UntiedHierarchy,
    UntiedMatrixFlow,
    canonical_untied,
    eq42_slope,
)

ACT = {
    "h1": (lambda z: z, lambda z: np.ones_like(z)),
    "h2": (lambda z: (z**2 - 1) / np.sqrt(2), lambda z: np.sqrt(2) * z),
}


def _config(**values):
    base = dict(param="untied", L=1, seeds=1, dtype="float64")
    return validate(AIMTheoryConfig, {**base, **values})


def _state(d, activation, init_mean, teacher_mean, seed=0):
    config = _config(
        d=d, activation=activation, init_mean=init_mean, teacher_mean=teacher_mean, seed=seed
    )
    U, V = factors(*initial_matrices(config, seed))
    return config, U, V


# --------------------------------------------------------------------------------------------
# One-step drift: derivation vs the exact expected SGD change (Monte Carlo)


def _exact_one_step(U, V, M2, activation, alpha, X):
    """Exact per-sample changes of (m, tA, tB, q1_11, q2_11, q1_12, q2_12) after one online SGD
    step U ← U − α∇_U L, V ← V − α∇_V L on L = ½(σ(G1) − σ(G2))², G_k = xᵀM_k x/√d (γ = 0).

    With f = ∂L/∂G1 the step is rank one: U' = U − x uᵀ, V' = V − x wᵀ with u = αf Vᵀx/√d,
    w = αf Uᵀx/√d, so M' − M = −a xᵀ − x bᵀ + c x xᵀ, a = αf A x/√d, b = αf B x/√d,
    c = uᵀw = α²f² G1/√d; every change is then a polynomial in quadratic forms of x.
    """
    sigma, dsigma = ACT[activation]
    n, d = X.shape
    rd = np.sqrt(d)
    M = U @ V.T
    A, B = U @ U.T, V @ V.T
    XM, XMt, XM2, XM2t = X @ M.T, X @ M, X @ M2.T, X @ M2  # rows: Mx, Mᵀx, M2x, M2ᵀx
    XA, XB = X @ A, X @ B
    s = np.sum(X * X, axis=1)
    G1 = np.sum(X * XM, axis=1) / rd
    G2 = np.sum(X * XM2, axis=1) / rd
    f = (sigma(G1) - sigma(G2)) * dsigma(G1)
    a = (alpha * f / rd)[:, None] * XA
    b = (alpha * f / rd)[:, None] * XB
    c = alpha**2 * f**2 * G1 / rd
    xa, xb = np.sum(X * a, axis=1), np.sum(X * b, axis=1)
    u2 = alpha**2 * f**2 * np.sum(X * XB, axis=1) / d  # |u|²
    w2 = alpha**2 * f**2 * np.sum(X * XA, axis=1) / d  # |w|²
    out = {}
    out["m"] = (-xa - xb + c * s) / rd
    out["tA_1"] = (-2 * alpha * f * G1 + u2 * s) / d
    out["tB_1"] = (-2 * alpha * f * G1 + w2 * s) / d

    def lin(Px, Ptx, xPx):  # Tr(ΔM P) for P with rows Px = P x, Ptx = Pᵀx
        return -np.sum(Ptx * a, axis=1) - np.sum(b * Px, axis=1) + c * xPx

    out["q1_12"] = lin(XM2t, XM2, rd * G2) / d  # Tr(ΔM M2ᵀ): P = M2ᵀ
    out["q2_12"] = lin(XM2, XM2t, rd * G2) / d  # Tr(ΔM M2)
    ab = np.sum(a * b, axis=1)
    dm_sq = (
        np.sum(a * a, axis=1) * s
        + s * np.sum(b * b, axis=1)
        + c**2 * s**2
        + 2 * xa * xb
        - 2 * c * s * xa
        - 2 * c * s * xb
    )  # |ΔM|_F²
    dm_tr2 = xa**2 + xb**2 + 2 * s * ab + c**2 * s**2 - 2 * c * s * xa - 2 * c * s * xb
    out["q1_11"] = (2 * lin(XMt, XM, rd * G1) + dm_sq) / d  # 2Tr(ΔM Mᵀ) + |ΔM|²
    out["q2_11"] = (2 * lin(XM, XMt, rd * G1) + dm_tr2) / d  # 2Tr(ΔM M) + Tr(ΔM²)
    return out


def test_exact_one_step_formulas_match_brute_force():
    """The closed forms above against forming U', V' explicitly (8 samples, d = 16)."""
    _, U, V = _state(16, "h2", 0.4, 0.7)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((8, 16))
    alpha = 0.3  # large, so that the O(α²) terms are tested too
    got = _exact_one_step(U[0], V[0], U[1] @ V[1].T, "h2", alpha, X)
    sigma, dsigma = ACT["h2"]
    M2 = U[1] @ V[1].T
    for i, x in enumerate(X):
        u, v = U[0], V[0]
        g1 = x @ u @ v.T @ x / 4.0
        f = (sigma(g1) - sigma(x @ M2 @ x / 4.0)) * dsigma(g1)
        u2 = u - alpha * f * np.outer(x, x @ v) / 4.0
        v2 = v - alpha * f * np.outer(x, x @ u) / 4.0
        before = order_parameters([u, U[1]], [v, V[1]])
        after = order_parameters([u2, U[1]], [v2, V[1]])
        want = {
            "m": after["m"][0] - before["m"][0],
            "tA_1": after["tA"][0] - before["tA"][0],
            "tB_1": after["tB"][0] - before["tB"][0],
            "q1_11": after["q1"][0, 0] - before["q1"][0, 0],
            "q2_11": after["q2"][0, 0] - before["q2"][0, 0],
            "q1_12": after["q1"][0, 1] - before["q1"][0, 1],
            "q2_12": after["q2"][0, 1] - before["q2"][0, 1],
        }
        for name, value in want.items():
            assert got[name][i] == pytest.approx(value, rel=1e-9, abs=1e-13), name


def _predicted_drift(config, U, V):
    """E[Δμ_w]/(α/d) from the derivation: the raw field of Eq. 731, bias √d b_k with
    b_k = ∂Φ/∂m_k and a⁽ʳ⁾ = ∇_{q⁽ʳ⁾}Φ at the current finite-d (m, q⁽¹⁾, q⁽²⁾)."""
    potential = potential_for(config)
    op = order_parameters(U, V)
    b, a1, a2 = potential.gradients(op["m"], op["q1"], op["q2"])
    h = UntiedHierarchy(2, (1,), 3)
    mu = h.initial(U, V)
    field = h.field(mu, np.sqrt(config.d) * b * np.array([1.0, 0.0]), a1, a2)
    names = {
        "m": ("1",),
        "tA_1": ("A1",),
        "tB_1": ("B1",),
        "q1_11": ("1", "1T"),
        "q2_11": ("1", "1"),
        "q1_12": ("1", "2T"),
        "q2_12": ("1", "2"),
    }
    out = {k: field[h.index[canonical_untied(w)]] for k, w in names.items()}
    out["m"] *= np.sqrt(config.d)  # m = √d μ_(M_1)
    return out


def _mc_drift(U, V, activation, alpha, n, seed=0, chunk=1 << 15):
    """Mean and standard error of the exact one-step change, in units of α/d."""
    rng = np.random.default_rng(seed)
    d = U[0].shape[0]
    M2 = U[1] @ V[1].T
    acc, acc2 = {}, {}
    for _ in range(n // chunk):
        X = rng.standard_normal((chunk, d))
        for name, v in _exact_one_step(U[0], V[0], M2, activation, alpha, X).items():
            v = v * d / alpha
            acc[name] = acc.get(name, 0.0) + v.sum()
            acc2[name] = acc2.get(name, 0.0) + (v**2).sum()
    mean = {k: acc[k] / n for k in acc}
    se = {k: np.sqrt((acc2[k] / n - mean[k] ** 2) / n) for k in acc}
    return mean, se


def test_one_step_drift_h1_matches_monte_carlo():
    """h1: L is quadratic in G, so Stein's expansion (Eqs. 566–567) is exact and b = m₁ − m₂,
    a⁽ʳ⁾ constant: the derivation's drift is the exact first-order SGD drift at any d. At
    α = 1e-6 the O(α²) part is < 1e-4 of it, so the Monte Carlo mean (2^18 samples, d = 64)
    must agree within 4 standard errors (+1e-3 relative for round-off)."""
    config, U, V = _state(64, "h1", 0.5, 0.8)
    want = _predicted_drift(config, U, V)
    mean, se = _mc_drift(U, V, "h1", 1e-6, 1 << 18)
    for name in want:
        assert abs(mean[name] - want[name]) < 4 * se[name] + 1e-3 * abs(want[name]), (
            name,
            mean[name],
            want[name],
            se[name],
        )
    # the cross-overlap drift is the Eq. 42 mechanism: clearly nonzero here
    assert abs(want["q1_12"]) > 20 * se["q1_12"]


def test_one_step_drift_h2_finite_d_corrections_shrink():
    """h2: b and a are Gaussian (d = ∞) expectations while SGD sees the finite-d law of G, whose
    higher cumulants are O(1/d) here (fourth cumulant 48 Tr(M_s⁴)/d², P1 Thm 1 proof), and
    Stein's expansion has a remainder (Eq. 741). Measured (Monte Carlo, units α/d): the
    cross-overlap drifts agree within 11% at d = 64 and 3% at d = 128; the self-overlap drifts
    (t^A, q⁽¹⁾₁₁) are off by 56% / 32% (h2's fourth-order expectations amplify κ₄), i.e.
    ≈ 35/d; the implied b error is 0.11 / 0.05 (≈ 7/d). Asserted: q₁₂ drifts within
    4 SE + 15%, the t^A error shrinks by ≥ 1.4× from d = 64 to 128, |Δb| < 12/d."""
    rel_tA = {}
    for d, n in ((64, 1 << 17), (128, 1 << 16)):
        config, U, V = _state(d, "h2", 0.5, 0.8)
        want = _predicted_drift(config, U, V)
        mean, se = _mc_drift(U, V, "h2", 1e-6, n, chunk=1 << 13)
        for name in ("q1_12", "q2_12"):
            assert abs(mean[name] - want[name]) < 4 * se[name] + 0.15 * abs(want[name]), (d, name)
        rel_tA[d] = abs(mean["tA_1"] - want["tA_1"]) / abs(want["tA_1"])
        D = float(order_parameters(U, V)["tA"][0] + order_parameters(U, V)["tB"][0])
        b_error = abs(mean["m"] - want["m"]) / (d * D)  # E Δm = −α D b + …, in units α/d
        assert b_error < 12.0 / d + 4 * se["m"] / (d * D), (d, b_error)
    assert rel_tA[128] < rel_tA[64] / 1.4, rel_tA


# --------------------------------------------------------------------------------------------
# Eq. 31 (hierarchy) vs the matrix-level flow


@pytest.mark.parametrize("gamma", [0.0, 0.3])
def test_substitution_operators_match_matrix_flow(gamma):
    """For every word of degree ≤ M − 1 (whose targets are all kept), the hierarchy's right-hand
    side (Eq. 32 with the rows of Eq. 31) equals the derivative of the word's trace along the
    matrix-level flow (coded independently on U, V), to finite-difference accuracy."""
    config, U, V = _state(24, "h2", 0.4, 0.7)
    potential = potential_for(config)
    op = order_parameters(U, V)
    means = MeanDynamics(potential, (1,), op["m"], last=op["m"][:1])
    flow = UntiedMatrixFlow(means, gamma, track_mean=False)
    dU, dV = flow.rhs_factors(U, V)
    h = UntiedHierarchy(2, (1,), 4, gamma)
    mu = h.initial(U, V)
    rhs = h.rhs(mu, means)
    low = [w for w in h.words if len(w) <= 3]
    eps = 1e-5

    def moments(sign):
        Us = [u + sign * eps * du for u, du in zip(U, dU, strict=True)]
        Vs = [v + sign * eps * dv for v, dv in zip(V, dV, strict=True)]
        return word_moments(letter_matrices(Us, Vs), low)

    fd = (moments(1) - moments(-1)) / (2 * eps)
    got = np.array([rhs[h.index[w]] for w in low])
    assert np.max(np.abs(got - fd)) < 1e-7 * (1 + np.max(np.abs(fd))), np.max(np.abs(got - fd))
    assert np.max(np.abs(fd)) > 1e-2  # a nontrivial field


def test_degree_one_word_of_m_is_stationary():
    """dμ_(M_k)/dτ = −β_k D_k − ψ_k = 0 with β_k = −ψ_k/D_k (Eqs. 30, 32): the mean is slaved."""
    config, U, V = _state(24, "h1", 0.4, 0.7)
    op = order_parameters(U, V)
    means = MeanDynamics(potential_for(config), (1,), op["m"], last=op["m"][:1])
    h = UntiedHierarchy(2, (1,), 3)
    rhs = h.rhs(h.initial(U, V), means)
    assert abs(rhs[h.index[("1",)]]) < 1e-12


# --------------------------------------------------------------------------------------------
# Eq. 42 and Eq. 48/49


def test_eq42_initial_slope_closed_form_and_hierarchy():
    """Eq. 42 with the ½ convention (Eqs. 571–572): for h1, [∇_{q⁽ʳ⁾}Φ]₁₂ = −½ E σ' E σ*' = −½,
    so dq⁽ʳ⁾₁₂/dτ|₀ = D₁ (q⁽¹⁾₂₂ + q⁽²⁾₂₂). The hierarchy's rhs at an initial state agrees up to
    the finite-d non-freeness of the initial matrices (O(d^-1/2); 5% at d = 256)."""
    config, U, V = _state(256, "h1", 0.0, 0.0)
    op = order_parameters(U, V)
    potential = potential_for(config)
    _, a1, a2 = potential.gradients(op["m"], op["q1"], op["q2"])
    assert a1[0, 1] == pytest.approx(-0.5, abs=1e-10)
    assert a2[0, 1] == pytest.approx(-0.5, abs=1e-10)
    D1 = op["tA"][0] + op["tB"][0]
    slope = eq42_slope(D1, op["q1"][1, 1], op["q2"][1, 1], [-0.5, -0.5])
    closed = D1 * (op["q1"][1, 1] + op["q2"][1, 1])
    assert slope == pytest.approx([closed, closed], rel=1e-12)
    means = MeanDynamics(potential, (1,), op["m"], last=op["m"][:1])
    h = UntiedHierarchy(2, (1,), 3)
    rhs = h.rhs(h.initial(U, V), means)
    got = [rhs[h.index[("1", "2T")]], rhs[h.index[("1", "2")]]]
    assert got == pytest.approx(slope, rel=0.05)


def test_eq48_zero_signal_leaves_overlap_still():
    """h2 with centred student and teacher (m₁ = m₂ = 0): E σ'(Z) = √2 m = 0 for both (Eq. 48),
    the cross-gradients vanish and the hierarchy's q₁₂ drift is zero up to the finite-d
    overlap of the initial matrices (|q₁₂(0)| = O(1/d))."""
    config, U, V = _state(256, "h2", 0.0, 0.0)
    op = order_parameters(U, V)
    potential = potential_for(config)
    means = MeanDynamics(potential, (1,), op["m"], last=op["m"][:1])
    m_star = means.critical_point(op["q1"], op["q2"])
    assert abs(m_star[0]) < 1e-6
    _, a1, a2 = potential.gradients(means.full(m_star), op["q1"], op["q2"])
    # at the measured q₁₂ ≈ O(1/d): a₁₂ ∝ E[h2'(Z1) h2'(Z2)] = 2 Cov(Z1, Z2) = O(1/d)
    assert abs(a1[0, 1]) < 5 * abs(op["q1"][0, 1] + op["q2"][0, 1]) + 1e-9
    h = UntiedHierarchy(2, (1,), 3)
    rhs = h.rhs(h.initial(U, V), means)
    for word in (("1", "2T"), ("1", "2")):
        assert abs(rhs[h.index[word]]) < 0.01


# --------------------------------------------------------------------------------------------
# Theory vs simulation

FAST = dict(
    param="untied", activation="h1", init_mean=0.0, teacher_mean=1.0, seeds=4, batch=32,
    test_size=0, moment_degree=2, records=12,
)  # fmt: skip


@pytest.mark.slow  # 12 CPU s
def test_fast_flow_matches_simulation_on_fast_axis():
    """Eq. 28 for h1: ∂Φ/∂m₁ = m₁ − m₂, so m₁(t) = m₂ + (m₁(0) − m₂) e^{−D₁t} with t = nα_d.
    d = 128, 2 seeds, t ≤ 8. Measured: predict()'s m₁ (Eq. 28 plus its finite-d ψ/√d term)
    within 0.007 of the seed mean; the bare closed form within 0.027 (its finite-d offset
    ψ/(√d D) ≈ 4/d). Tolerances 0.015 and 0.05."""
    cfg = dict(FAST, d=128, t_max=8.0 / 128, seeds=2)
    sim = attndyn.simulate("aim", **cfg)
    theory = attndyn.predict("aim", **cfg)
    t = sim["time_fast"].values
    assert np.allclose(theory["time_fast"].values, t)
    m_sim = sim["m_1"].mean("seed").values
    assert np.max(np.abs(theory["m_1"].values - m_sim)) < 0.015
    D = float(sim["tA_1"].isel(time=0).mean() + sim["tB_1"].isel(time=0).mean())
    closed = 1.0 - np.exp(-D * t)
    assert np.max(np.abs(closed - m_sim)) < 0.05
    # the moments move only by O(t/d) here (plus the O(m²/d) mean parts); the composite
    # prediction follows them (measured within 0.0006; tolerance 0.01)
    for name in ("q1_11", "q2_11", "p_12", "q1_12"):
        diff = theory[name].values - sim[name].mean("seed").values
        assert np.max(np.abs(diff)) < 0.01, (name, diff)


@pytest.mark.slow  # 6 CPU s
def test_slow_hierarchy_truncation_3_matches_simulation_at_short_times():
    """Eq. 32 truncated at degree 3 (words of degree 4 set to 0) vs SGD, h1, d = 64, 4 seeds,
    τ ≤ 0.05 (with γ = 0 the truncation leaves the admissible domain near τ ≈ 0.1). Measured:
    structural overlap p₁₂ within 0.002 and q⁽¹⁾₁₂ within 0.003 of the seed mean (growth 0.02);
    tolerance 0.005."""
    cfg = dict(FAST, d=64, t_max=0.05, records=10)
    sim = attndyn.simulate("aim", **cfg)
    hier = attndyn.predict("aim", method="untied-hierarchy", truncation=3, **cfg)
    for name in ("p_12", "q1_12", "q2_12"):
        diff = hier[name].values - sim[name].mean("seed").values
        assert np.max(np.abs(diff)) < 0.005, (name, diff)
    growth = float(sim["p_12"].mean("seed").values[-1] - sim["p_12"].mean("seed").values[0])
    assert growth > 0.01


@pytest.mark.long
@pytest.mark.parametrize("gamma", [0.0, 1.0])
def test_matrix_flow_matches_simulation_over_slow_time(gamma):
    """The matrix-level slow flow (exact solution of Eq. 32 for the initial matrices) vs SGD, h1,
    d = 64, 4 seeds, τ ≤ 0.5: measured |Δ| ≤ 0.0011 on p₁₂, q⁽ʳ⁾₁₂, q⁽¹⁾₁₁, t^A while q⁽¹⁾₁₂ grows
    by 0.17 (γ = 0); with weight decay γ = 1 (decay −2γ|α|_𝒦, Eq. 32) ≤ 0.005 while t^A falls by
    0.27. Tolerance 0.015 (room for the O(c/log d) Itô drift of SGD, aim_d3_notes.md)."""
    cfg = dict(FAST, d=64, t_max=0.5, records=10, weight_decay=gamma)
    sim = attndyn.simulate("aim", **cfg)
    theory = attndyn.predict("aim", **cfg)
    for name in ("p_12", "q1_12", "q2_12", "q1_11", "tA_1"):
        diff = theory[name].values - sim[name].mean("seed").values
        assert np.max(np.abs(diff)) < 0.015, (name, diff)


def test_eq42_slope_matches_simulation():
    """Initial slope of c₁₂ = q⁽¹⁾₁₂ + q⁽²⁾₁₂ under SGD (h1, centred, d = 128, 4 seeds, τ ≤ 0.02,
    linear coefficient of a quadratic fit) against Eq. 42 with the ½ convention:
    2 D₁ (q⁽¹⁾₂₂ + q⁽²⁾₂₂). Measured ratio 0.99 (a linear fit on τ ≤ 0.05 gives 0.90: the
    growth already bends, and the matrix flow bends identically); tolerance 5%. With Eq. 48's
    symmetric-scalar derivative the prediction would double."""
    cfg = dict(FAST, d=128, teacher_mean=0.0, t_max=0.02, records=11, grid="linear")
    sim = attndyn.simulate("aim", **cfg)
    tau = sim["time"].values
    c12 = (sim["q1_12"] + sim["q2_12"]).mean("seed").values
    slope = np.polyfit(tau, c12, 2)[1]
    D1 = float((sim["tA_1"] + sim["tB_1"]).isel(time=0).mean())
    q1_22, q2_22 = (float(sim[n].isel(time=0).mean()) for n in ("q1_22", "q2_22"))
    predicted = float(np.sum(eq42_slope(D1, q1_22, q2_22, [-0.5, -0.5])))
    assert predicted == pytest.approx(2 * D1 * (q1_22 + q2_22), rel=1e-12)
    assert slope == pytest.approx(predicted, rel=0.05)


# --------------------------------------------------------------------------------------------
# predict() plumbing


def test_predict_untied_names_and_axes():
    cfg = dict(FAST, d=16, t_max=0.05, records=5, seeds=1)
    theory = attndyn.predict("aim", **cfg)
    for name in (
        "m_1",
        "m_2",
        "t_1",
        "q_12",
        "p_12",
        "q1_12",
        "q2_12",
        "qsym_12",
        "tA_1",
        "tB_1",
        "loss",
    ):
        assert name in theory, name
        assert np.all(np.isfinite(theory[name].values)), name
    assert "time_fast" in theory.coords
    assert np.allclose(theory["time_fast"].values, theory["time"].values * 16)
    assert theory["m_1"].values[0] == pytest.approx(0.0, abs=1e-6)
    assert theory["m_2"].values[0] == pytest.approx(1.0, abs=1e-6)


def test_untied_theory_rejects_symmetric_teacher():
    with pytest.raises(attndyn.errors.InputError if hasattr(attndyn, "errors") else Exception):
        attndyn.predict("aim", param="untied", teacher="wishart", d=16, t_max=0.01)


def test_experiment_presets_validate():
    """aim-untied: both presets validate; the paper preset is Fig. 3's caption (d = 800, batch 4096,
    batch-mean step 0.01 ⇒ α_d = 0.01/4096) with h3 among the centred cases."""
    from attndyn.claims.runner import experiment_config

    exp, small = experiment_config("aim-untied", "small", {})
    assert exp.cases(small) == ["h1", "h2-centred", "h2-repaired", "h2-student-trapped"]
    _, paper = experiment_config("aim-untied", "paper", {})
    assert paper.d[-1] == 800 and paper.base.batch == 4096
    assert paper.base.lr / (800 * np.log(800)) == pytest.approx(0.01 / 4096)
    assert "h3-centred" in exp.cases(paper)


# --------------------------------------------------------------------------------------------
# fast_state: the fast equilibrium and the Eq. 49 signal


@pytest.mark.parametrize(
    ("activation", "init_mean", "teacher_mean"),
    [
        ("h1", 0.0, 1.0),
        pytest.param("h2", 0.0, 0.0, marks=pytest.mark.slow),  # 10 CPU s
        ("h2", 0.05, 1.0),
    ],
)
def test_fast_state_closed_forms(activation, init_mean, teacher_mean):
    """h1: ∂Φ/∂m₁ = m₁ − m₂, so m* = m₂ and E σ' = 1 on both sides (signal 1). h2: E h2'(Z) = √2 m
    for Z ~ N(m, v), so the signal is 2 m₁ m₂, at the initial mean (2·0.05·1 = 0.1 repaired,
    0 centred) and at m* — the centred start stays at m* = 0 (Eq. 48's trapped case), the
    repaired one leaves m = 0 (d = 64, seed 0)."""
    from attndyn.models.aim.theory.untied.fast import fast_state

    config = _config(d=64, activation=activation, init_mean=init_mean, teacher_mean=teacher_mean)
    out = fast_state(config)
    assert out["m0"] == pytest.approx(init_mean, abs=1e-12)
    assert out["m_teacher"] == pytest.approx(teacher_mean, abs=1e-12)
    if activation == "h1":
        assert out["m_star"] == pytest.approx(teacher_mean, abs=1e-8)
        assert out["signal_init"] == pytest.approx(1.0, abs=1e-12)
        assert out["signal_fast"] == pytest.approx(1.0, abs=1e-12)
        return
    assert out["signal_init"] == pytest.approx(2 * init_mean * teacher_mean, abs=1e-10)
    assert out["signal_fast"] == pytest.approx(2 * out["m_star"] * teacher_mean, abs=1e-10)
    if teacher_mean == 0.0:
        assert abs(out["m_star"]) < 1e-6
    else:
        assert out["m_star"] > 0.5  # m = 0 is unstable for this teacher: the fast phase repairs it
