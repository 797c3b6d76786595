"""The measurement helpers of aim-landscape (src/attndyn/experiments/aim/landscape_measure.py):
the control-variate Monte Carlo of E_x L(G(x)), the even/odd split of the loss, the Edgeworth
term's order in d, and the slope statistic (docs/claims/aim-landscape.md)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.core.gaussian import gauss_hermite
from attndyn.experiments.aim.landscape import LandscapeConfig as Config
from attndyn.experiments.aim.landscape import draws, slope
from attndyn.experiments.aim.landscape_measure import (
    ARCHS,
    arch_config,
    cached_potential,
    even_loss,
    inf_width_constrained,
    mc_population_loss,
    moments,
    mp_top_moment,
    seed_point,
    theory_values,
)
from attndyn.models.aim import AIMConfig
from attndyn.models.aim.theory.initial import initial_matrices
from attndyn.models.aim.theory.potential import potential_for

BASE = AIMConfig(param="tied", L=2, output="softmax", dtype="float64", test_size=0)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_even_loss_is_the_loss_symmetry(arch):
    """``even_loss`` says which losses satisfy L(−G) = L(G): with two tokens a row-wise softmax
    has softmax(−a, −b) = 1 − softmax(a, b), so every softmax head's output flips about a
    constant and the squared error is even; the two-layer recursion is not (checked at random
    form tensors, not read off the code)."""
    config = arch_config(BASE, arch, 16)
    pot = cached_potential(config, 8)
    g = np.random.default_rng(0).standard_normal((64, pot.K, 2, 2))
    with jax.enable_x64(True):
        plus = np.asarray(jax.vmap(pot.loss)(jnp.asarray(g)))
        minus = np.asarray(jax.vmap(pot.loss)(jnp.asarray(-g)))
    if even_loss(arch, 2):
        np.testing.assert_allclose(plus, minus, rtol=1e-12, atol=1e-14)
    else:
        assert np.max(np.abs(plus - minus)) > 1e-2


def _point(arch: str, d: int, seed: int, pot):
    config = arch_config(BASE, arch, d)
    student, teacher = initial_matrices(config, seed)
    return config, student, teacher, moments(config, pot, student, teacher)


def test_control_variates_are_exact_for_a_cubic_loss():
    """For a loss that is a polynomial of degree ≤ 3 in the reduced forms, the control variates
    (the monomials of degree 1–3, whose means are the forms' exact covariance and third
    cumulants) span it: the estimator returns its exact expectation with zero standard error,
    and that expectation is Φ₃ (the Edgeworth series of a cubic stops at its first term), while
    the raw sample mean only agrees within its error. Two-layer, d = 16, seed 0."""
    config = arch_config(BASE, "two-layer", 16)
    pot = cached_potential(config, 12)
    basis = np.asarray(pot.basis)
    keep = np.asarray(pot.keep)
    w = np.random.default_rng(3).standard_normal(basis.shape[0])

    def cubic(g):
        y = jnp.asarray(basis) @ g.reshape(-1)[keep]
        z = y @ jnp.asarray(w)
        return z**3 + 0.5 * z**2 - z

    # Gauss–Hermite order 4 integrates the degree-6 integrand (cubic × Hermite weight) exactly
    pot3 = dataclasses.replace(pot, loss=cubic, rule=gauss_hermite(basis.shape[0], 4), _jit={})
    config, student, teacher, mom = _point("two-layer", 16, 0, pot3)
    out = mc_population_loss(
        config, pot3, student, teacher, mom, jax.random.PRNGKey(1), samples=8192
    )
    phi, phi3 = theory_values(pot3, *mom)
    assert out["mc"] == pytest.approx(phi3, rel=1e-7, abs=1e-9)
    assert out["mc_se"] < 1e-6 * out["mc_raw_se"]
    assert abs(out["mc_raw"] - phi3) < 5 * out["mc_raw_se"]
    assert abs(phi3 - phi) > 10 * 1e-7  # the cubic has a nonzero Edgeworth term to get right
    # the odd part of a cubic is its odd monomials: E = Edgeworth term exactly
    assert out["odd"] == pytest.approx(phi3 - phi, rel=1e-6, abs=1e-9)


@pytest.mark.slow  # about 10 s
def test_monte_carlo_estimators_agree():
    """The control-variate estimate and the raw sample mean of E_x L over the same 2^15 tokens
    agree within their errors (h1 and two-layer, d = 32), the control variates cut the error
    (measured ≈ 3× for h1, 2× for two-layer), and the odd part of an even loss is 0 to rounding."""
    for arch in ("h1", "two-layer"):
        out = seed_point(BASE, arch, 32, 0, 1 << 15, None)
        assert abs(out["mc"] - out["mc_raw"]) < 4 * out["mc_raw_se"]
        assert out["mc_se"] < 0.7 * out["mc_raw_se"]
        if even_loss(arch, 2):
            assert abs(out["odd"]) < 1e-12 and abs(out["odd_raw"]) < 1e-12  # rounding only


def test_edgeworth_term_is_linear_in_kappa_and_of_order_root_d():
    """Φ₃ − Φ is linear in κ (so the edgeworth-half control halves it exactly) and, for the
    matrices of each d, of order d^−½: the term times √d stays within a factor 2 from d = 32 to
    d = 128 (seed 0, two-layer). This is the identity behind the Edgeworth claim, not a claim."""
    config = arch_config(BASE, "two-layer", 32)
    pot = cached_potential(config, 14)
    scaled = []
    for d in (32, 128):
        _, _, _, mom = _point("two-layer", d, 0, pot)
        phi, phi3 = theory_values(pot, *mom)
        phi_h, phi3_h = theory_values(pot, *mom, edgeworth=0.5)
        assert phi_h == phi
        assert phi3_h - phi == pytest.approx(0.5 * (phi3 - phi), rel=1e-9)
        scaled.append((phi3 - phi) * np.sqrt(d))
    assert 0.5 < scaled[1] / scaled[0] < 2.0


def test_no_psi_moves_phi_by_order_one():
    """The no-psi control's Φ (Thm 1's covariance without the C_ij'C_ji'Ψ term) differs from Φ
    by much more than the gaps measured (≥ 0.01 at d = 64, h1), so a gap against it cannot
    vanish."""
    config = arch_config(BASE, "h1", 64)
    pot = cached_potential(config, 12)
    _, _, _, mom = _point("h1", 64, 0, pot)
    phi, _ = theory_values(pot, *mom)
    wrong, _ = theory_values(pot, *mom, psi_factor=0.0)
    assert abs(phi - wrong) > 0.01


def test_slope_of_power_laws():
    """``slope`` fits log|values| on log d: exact for a power law of either sign."""
    d = [32, 64, 128, 256]
    assert slope(d, [3.0 * x**-0.5 for x in d]) == pytest.approx(-0.5)
    assert slope(d, [-2.0 / x for x in d]) == pytest.approx(-1.0)


def test_draws_per_d():
    """``scale_samples`` spends the token draws where the gap is smallest: samples·d/max(d) at d,
    never fewer than two chunks; without it every d gets ``samples``."""
    scaled = Config(d=[32, 64, 128], samples=1 << 15, scale_samples=True)
    assert [draws(scaled, d) for d in scaled.d] == [8192, 16384, 32768]
    assert draws(Config(d=[8, 64, 128], samples=1 << 14, scale_samples=True), 8) == 2 * 4096
    plain = Config(d=[32, 64, 128], samples=1 << 15)
    assert {draws(plain, d) for d in plain.d} == {1 << 15}


def test_marchenko_pastur_moments_match_the_closed_form():
    """The whole law's second moment is 1 + y (Marchenko–Pastur, mean 1), and the top fraction's
    share is more than that fraction of it (the largest eigenvalues carry more mass)."""
    for y in (0.25, 0.5, 1.0):
        assert mp_top_moment(y, 1.0) == pytest.approx(1.0 + y, rel=1e-8)
        assert mp_top_moment(y, 0.5) > 0.5 * (1.0 + y)
    # the top 1 % lies below the right edge (1 + √y)²: its second moment < 0.01·(1 + √y)⁴
    assert 0.9 * 0.01 * (1 + 0.5**0.5) ** 4 < mp_top_moment(0.5, 0.01) < 0.01 * (1 + 0.5**0.5) ** 4


def test_width_constrained_infimum_is_zero_when_the_student_can_reach_the_teacher():
    """Without the width constraint (top = q₂₂) the student can be its teacher, so inf Φ = 0; with
    it, the infimum is positive and below Φ at S₁ = 0."""
    config = AIMConfig(param="tied", L=2, output="softmax", heads=1, rho=0.25, teacher_rho=0.5)
    pot = potential_for(config, log2_qmc=10)
    q22 = 0.75
    assert inf_width_constrained(pot, q22, q22)["phi"] == pytest.approx(0.0, abs=1e-7)
    zero = np.array([[0.0, 0.0], [0.0, q22]])
    constrained = inf_width_constrained(pot, 0.5 * mp_top_moment(0.5, 0.5), q22)["phi"]
    assert 1e-3 < constrained < pot.value(np.zeros(2), zero, zero)


@pytest.mark.slow
def test_a_theory_run_stored_without_its_quadrature_check_is_not_read_back(tmp_path):
    """A preset stores its smaller d without the coarse quadrature (kept at the largest d only);
    a preset whose largest d is one of those computes it again rather than reading back a run
    without `phi_coarse` (a KeyError before)."""
    from attndyn.claims.runner import run_experiment

    small = {"archs": ["h1"], "seeds": 2, "samples": 1024, "log2_qmc": 8}
    run_experiment("aim-landscape", "tiny", {**small, "d": [8, 16, 32]}, out=tmp_path)
    outcome = run_experiment("aim-landscape", "tiny", {**small, "d": [4, 8, 16]}, out=tmp_path)
    assert {c.name for c in outcome.claims} >= {"gap-slope-h1", "even-gap-order-h1"}
