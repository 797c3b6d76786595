"""Theory of the query family (docs/query-theory.md): the two-scalar reduction of E‖a‖² against
the simulator's own d-dimensional tokens, CRN derivatives against finite differences, closed
forms, the sphere ODE's factor against the simulator's gradient, fixed points, predict.

Tolerances: Monte Carlo comparisons use 4.5 combined standard errors (both sides' errors are
measured in the same test), so a correct reduction fails with probability < 1e-4 per check."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.errors import InputError
from attndyn.models.query import model
from attndyn.models.query.theory import QueryTheoryConfig, law_of, phi_fit, predict
from attndyn.models.query.theory.ode import fixed_points, solve_sphere
from attndyn.models.query.theory.population import Population, TokenLaw

LAW = TokenLaw(d=12, n_informative=4, n_nuisance=20, theta=1.0, sigma=1.0, beta=1.5)


def _spec(law: TokenLaw) -> model.TokenSpec:
    return model.TokenSpec(
        d=law.d,
        n_informative=law.n_informative,
        n_nuisance=law.n_nuisance,
        theta=law.theta,
        sigma=law.sigma,
        beta=law.beta,
        sign_mode=law.sign_mode,
        dtype="float64",
    )


def _query(d: int, m: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(q, u): a random unit q with ⟨q, u⟩ = m for a random unit u (both rotated at random)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(d)
    u /= np.linalg.norm(u)
    v = rng.standard_normal(d)
    v -= (v @ u) * u
    v /= np.linalg.norm(v)
    return m * u + np.sqrt(1 - m * m) * v, u


@functools.cache
def _objective_fn(spec: model.TokenSpec):
    """jit: (q, u, keys) -> ‖a‖² per sample, by the simulator's token sampler and model."""
    per = lambda q, u, k: model.sample_objective(q, k, u, spec)  # noqa: E731
    return jax.jit(jax.vmap(per, in_axes=(None, None, 0)))


@functools.cache
def _grad_fn(spec: model.TokenSpec):
    """jit: (q, u, keys) -> ∇_q‖a‖² per sample (the simulator's analytic gradient)."""
    per = lambda q, u, k: model.sample_objective_and_grad(q, k, u, spec)[1]  # noqa: E731
    return jax.jit(jax.vmap(per, in_axes=(None, None, 0)))


def _simulator_mc(law: TokenLaw, q, u, samples: int, seed: int) -> tuple[float, float]:
    """Mean and standard error of ‖a‖² over the simulator's own d-dimensional samples."""
    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.PRNGKey(seed), samples)
        v = np.asarray(_objective_fn(_spec(law))(jnp.asarray(q), jnp.asarray(u), keys))
    return float(v.mean()), float(v.std(ddof=1) / np.sqrt(samples))


@pytest.mark.slow  # 9 CPU s
@pytest.mark.parametrize(
    "sign_mode",
    [
        "sequence",
        pytest.param("token", marks=pytest.mark.long),
        pytest.param("none", marks=pytest.mark.long),
    ],
)
def test_reduction_matches_full_d_at_random_rotations(sign_mode):
    """Eq. R: Φ̂(m) from two scalars per token equals the d-dimensional E‖a‖² at two random
    queries with the same m (rotation invariance about u) and at −m (sign symmetry)."""
    law = TokenLaw(**{**LAW.__dict__, "sign_mode": sign_mode})
    pop = Population(law, samples=20000, seed=1)
    for m in (0.0, 0.6):
        red = pop.phi(np.array([m]), derivatives=False)
        for seed in (1, 2):
            q, u = _query(law.d, m, seed)
            mean, se = _simulator_mc(law, q, u, 20000, seed=10 + seed)
            tol = 4.5 * np.hypot(se, red["se_phi"][0])
            assert abs(mean - red["phi"][0]) < tol, (sign_mode, m, mean, red["phi"][0], tol)


@pytest.mark.long
def test_sign_symmetry_holds_with_signs_and_fails_without():
    """Φ(−m) = Φ(m) when ξ is a random sign; with ξ = 1 the d-dimensional E‖a‖² differs at ±m
    by many standard errors (so the check has power). Plain Monte Carlo (no antithetics)."""
    for sign_mode, symmetric in (("sequence", True), ("none", False)):
        law = TokenLaw(**{**LAW.__dict__, "sign_mode": sign_mode, "beta": 3.0})
        q, u = _query(law.d, 0.7, 3)
        plus = _simulator_mc(law, q, u, 20000, seed=5)
        minus = _simulator_mc(law, -q, u, 20000, seed=6)
        z = abs(plus[0] - minus[0]) / np.hypot(plus[1], minus[1])
        assert (z < 4.5) if symmetric else (z > 10), (sign_mode, z)
        red = Population(law, samples=20000, antithetic=False, seed=2)
        r = red.phi(np.array([0.7, -0.7]), derivatives=False)
        z_red = abs(r["phi"][0] - r["phi"][1]) / np.hypot(*r["se_phi"])
        assert (z_red < 4.5) if symmetric else (z_red > 10), (sign_mode, z_red)


@pytest.mark.slow  # 8 CPU s
def test_uniform_attention_closed_form():
    """β = 0: w = 1/n, so E‖a‖² = E‖x̄‖² = θ²E(Σξ_i)²/n² + dσ²/n, with E(Σξ)² = n_I² (sequence,
    none) or n_I (token); Φ is flat (Φ' = 0 exactly under CRN)."""
    for sign_mode, s2 in (("sequence", 16), ("token", 4), ("none", 16)):
        law = TokenLaw(
            d=12,
            n_informative=4,
            n_nuisance=20,
            theta=1.3,
            sigma=0.7,
            beta=0.0,
            sign_mode=sign_mode,
        )
        n = law.n_tokens
        exact = law.theta**2 * s2 / n**2 + law.d * law.sigma**2 / n
        r = Population(law, samples=40000, seed=3).phi(np.array([0.0, 0.5, 0.9]))
        assert np.all(np.abs(r["phi"] - exact) < 4.5 * r["se_phi"] + 1e-12), (r["phi"], exact)
        assert np.all(np.abs(r["dphi"]) < 1e-12)


@pytest.mark.slow  # 8 CPU s
def test_crn_derivatives_match_finite_differences():
    """F̂ is a smooth function of (α, b) under common random numbers: its autodiff derivatives
    equal central differences of F̂ (step 1e-5, float64: agreement to ~1e-8 relative)."""
    pop = Population(LAW, samples=512, seed=4)
    a, b, h = 0.4, 0.7, 1e-5
    r = pop.evaluate(np.array([a]), np.array([b]), order=2)
    fa = pop.evaluate(np.array([a + h, a - h]), np.array([b, b]), order=1)
    fb = pop.evaluate(np.array([a, a]), np.array([b + h, b - h]), order=1)
    fd_a = (fa["F"][0] - fa["F"][1]) / (2 * h)
    fd_b = (fb["F"][0] - fb["F"][1]) / (2 * h)
    assert fd_a == pytest.approx(r["Fa"][0], rel=1e-7)
    assert fd_b == pytest.approx(r["Fb"][0], rel=1e-7)
    assert (fa["Fa"][0] - fa["Fa"][1]) / (2 * h) == pytest.approx(r["Faa"][0], rel=1e-6)
    assert (fb["Fb"][0] - fb["Fb"][1]) / (2 * h) == pytest.approx(r["Fbb"][0], rel=1e-6)
    assert (fb["Fa"][0] - fb["Fa"][1]) / (2 * h) == pytest.approx(r["Fab"][0], rel=1e-6)
    # on the sphere: Φ̂'(m) vs central differences of Φ̂(m) = F̂(m, √(1 − m²))
    m = np.array([0.3, 0.8])
    d = pop.phi(m)["dphi"]
    fd = pop.phi(m + h, derivatives=False)["phi"] - pop.phi(m - h, derivatives=False)["phi"]
    np.testing.assert_allclose(fd / (2 * h), d, rtol=1e-6)


@pytest.mark.slow  # 9 CPU s
def test_chebyshev_fit_and_endpoint_derivative():
    """The Chebyshev series reproduces Φ̂ between its nodes to 1e-9 and its derivative matches
    the exact CRN derivative, including Φ'(1) = F_a(1, 0) − F_bb(1, 0) at the pole."""
    pop = Population(LAW, samples=2048, seed=5)
    fit = pop.fit()
    assert fit.fit_error < 1e-9 and fit.rhs_error < 1e-8
    exact = pop.phi(np.array([0.45, 1.0]))
    np.testing.assert_allclose(fit.dphi([0.45, 1.0]), exact["dphi"], rtol=1e-7)
    # even: Φ̂(−m) = Φ̂(m) exactly with the sign antithetics
    np.testing.assert_allclose(fit.phi([-0.3, -0.8]), fit.phi([0.3, 0.8]), rtol=1e-12)


@pytest.mark.slow  # 9 CPU s
def test_sphere_drift_factor_against_simulator_gradient():
    """The mean one-step drift of projected SGA, ⟨E ĝ, u⟩ − m⟨E ĝ, q⟩ with ĝ the simulator's
    gradient of ‖a‖², equals (1 − m²)Φ'(m) (ODE-S: the constant is 1, β is inside Φ)."""
    law = TokenLaw(**{**LAW.__dict__, "sigma": 0.3, "beta": 2.0})
    pop = Population(law, samples=20000, seed=6)
    for m, seed in ((0.35, 7), (0.8, 8)):
        q, u = _query(law.d, m, seed)
        with jax.enable_x64(True):
            keys = jax.random.split(jax.random.PRNGKey(seed), 20000)
            grads = _grad_fn(_spec(law))(jnp.asarray(q), jnp.asarray(u), keys)
            drift = np.asarray(grads @ u - m * (grads @ q))
        mean, se = drift.mean(), drift.std(ddof=1) / np.sqrt(len(drift))
        r = pop.phi(np.array([m]))
        tol = 4.5 * np.hypot(se, r["se_rhs"][0])
        assert abs(mean - r["rhs"][0]) < tol, (m, mean, r["rhs"][0], tol)
        assert abs(r["rhs"][0]) > 3 * tol  # the drift is resolved, not 0 ± noise


@pytest.mark.slow  # 8 CPU s
def test_fixed_points_and_flow():
    """Baseline law (digest §4 [O]): ±1 stable with slope −2Φ'(1), 0 unstable with slope Φ''(0);
    flows from (0, 1) rise monotonically to 1, from (−1, 0) fall to −1, m = 0 stays."""
    law = TokenLaw(d=20, n_informative=20, n_nuisance=200, theta=1.0, sigma=1.0, beta=1.0)
    pop = Population(law, samples=1024, seed=0)
    fit = pop.fit()
    pts = {round(p.m, 6): p for p in fixed_points(fit, pop)}
    assert set(pts) == {-1.0, 0.0, 1.0}
    assert pts[1.0].kind == pts[-1.0].kind == "stable"
    assert pts[0.0].kind == "unstable"
    assert pts[1.0].slope == pytest.approx(-2 * fit.dphi(1.0), rel=1e-9)
    assert pts[0.0].slope == pytest.approx(fit.d2phi(0.0), rel=1e-9)
    times = np.linspace(0, 30, 301)
    m = solve_sphere(fit, [0.05, 0.5, -0.3, 0.0], times)
    assert np.all(np.diff(m[0]) >= -1e-12) and m[0, -1] > 0.999
    assert np.all(np.diff(m[1]) >= -1e-12) and m[1, -1] > 0.999
    assert np.all(np.diff(m[2]) <= 1e-12) and m[2, -1] < -0.999
    assert np.all(m[3] == 0.0)
    # linearisation at m = 1: 1 − m decays at rate 2Φ'(1)
    eps = 1 - m[1]
    late = (eps > 1e-9) & (eps < 1e-4)
    rate = -np.polyfit(times[late], np.log(eps[late]), 1)[0]
    assert rate == pytest.approx(2 * fit.dphi(1.0), rel=1e-2)


@pytest.mark.slow  # 11 CPU s
def test_predict_on_simulator_grid_and_config_errors():
    values = dict(
        d=8,
        n_informative=4,
        n_nuisance=12,
        seeds=3,
        t_max=300,
        records=12,
        mc_samples=1024,
        dtype="float64",
    )
    cfg = QueryTheoryConfig(**values)
    traj = predict(cfg)
    import attndyn

    sim = attndyn.simulate(
        "query", **{k: v for k, v in values.items() if k != "mc_samples"}, eval_samples=0
    )
    np.testing.assert_array_equal(traj["time"].values, sim["time"].values)
    np.testing.assert_allclose(traj["ode_time"].values, sim["ode_time"].values)
    # the theory starts where the simulator's seeds start
    np.testing.assert_allclose(
        traj["alignment"].values[0], sim["alignment"].isel(time=0).mean(), rtol=1e-10
    )
    assert set(traj.data_vars) >= {"overlap", "alignment", "q_norm", "perp_norm", "objective"}
    assert np.all(np.diff(traj["alignment"].values) >= -1e-8)
    assert law_of(cfg).sigma == cfg.sigma_eff
    with pytest.raises(InputError, match="method"):
        attndyn.predict("query", method="unconstrained")
    with pytest.raises(InputError, match="mc_samples"):
        attndyn.predict("query", mc_samples=1)


@pytest.mark.slow  # 5 CPU s
def test_phi_fit_cached_and_inv_d_law():
    cfg = QueryTheoryConfig(
        d=16, noise_scaling="inv_d", beta=4.0, beta_scaling="inv_sqrt_d", mc_samples=256
    )
    law = law_of(cfg)
    assert law.sigma == pytest.approx(0.25) and law.beta == pytest.approx(1.0)
    assert phi_fit(cfg) is phi_fit(cfg)


@pytest.mark.slow  # 13 CPU s
def test_unconstrained_flow_tracks_sgd_at_small_step():
    """ODE-U (α̇ = F_α − l2 α, ḃ = F_b − l2 b) against the unconstrained simulator (constant
    η = 0.01, 16 seeds, m₀ = 0.3, ‖q₀‖ = 1) up to ODE time 1. Measured: overlap 0.4125 (theory)
    vs 0.414 ± 0.024 (SGA) at t = 0.5, ‖q‖ 2.000 vs 2.021 ± 0.006 (the η-order noise inflates ‖q‖
    by ≈ 1%). Tolerances: 4 standard errors + 0.01 for the overlap, 3% for ‖q‖."""
    import attndyn

    values = dict(
        d=8, n_informative=4, n_nuisance=12, beta=1.5, seeds=16, t_max=100, records=3,
        grid="linear", constraint="unconstrained", l2=0.5, schedule="constant", eta0=0.01,
        init_overlap=0.3, dtype="float64", eval_samples=0,
    )  # fmt: skip
    th = attndyn.predict("query", **values, mc_samples=1024)
    sim = attndyn.simulate("query", **values)
    se = sim["overlap"].std("seed").values / 4
    assert np.all(
        np.abs(th["overlap"].values - sim["overlap"].mean("seed").values) <= 4 * se + 0.01
    )
    np.testing.assert_allclose(th["q_norm"].values, sim["q_norm"].mean("seed").values, rtol=0.03)
    assert th["q_norm"].values[-1] > 1.5  # ‖q‖ grows: the flow is not the sphere's


@pytest.mark.slow  # 17 CPU s
def test_predict_starts_at_the_reduced_samplers_initial_state():
    import attndyn

    values = dict(d=16, n_nuisance=40, seeds=5, t_max=50, records=4, sampler="reduced")
    th = attndyn.predict("query", **values, mc_samples=256)
    sim = attndyn.simulate("query", **values, eval_samples=0)
    assert th["alignment"].values[0] == pytest.approx(
        float(sim["alignment"].isel(time=0).mean()), rel=1e-5
    )
