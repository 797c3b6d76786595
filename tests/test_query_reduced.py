"""The exact reduced sampler (docs/query-reduced-sampler.md) against the full simulation.

Distribution tests use two-sample Kolmogorov–Smirnov tests on independent draws with fixed keys;
each asserts p > 1e-3 (under the null p is uniform, so with the ~40 p-values below a false alarm
has probability ≤ 4%, and the keys are fixed, so a passing test stays passing). Means are also
compared within 4 combined standard errors.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

import attndyn
from attndyn.models.query import model, reduced

P_MIN = 1e-3
N_DRAWS = 10_000
NAMES = ["objective", "g_u", "g_e", "g_perp", "along_q", "along_r"]


def _spec(d, sign_mode="sequence"):
    return model.TokenSpec(
        d=d, n_informative=6, n_nuisance=40, theta=1.2, sigma=0.9, beta=1.3,
        sign_mode=sign_mode, dtype="float64",
    )  # fmt: skip


def test_reduced_scalars_are_the_full_gradient_pathwise():
    """From one sample's full tokens, the scalars (U, E, ‖g‖, ρ) built as in the proof give
    ‖a‖², G_u, G_e and the component φ of G_⊥ along f = a^⊥/‖a^⊥‖ exactly, and the rest of
    G_⊥ is (I − ffᵀ)Z_restᵀr (proof, steps 3–4)."""
    with jax.enable_x64(True):
        spec = _spec(11)
        d, sigma, beta = spec.d, spec.sigma, spec.beta
        alpha, b = 0.35, 0.8
        u, e = jnp.eye(d)[0], jnp.eye(d)[1]
        q = alpha * u + b * e
        for seed in range(3):
            x, valid = model.all_tokens(jax.random.PRNGKey(seed), u, spec)
            x = x[valid]
            obj, grad = model.objective_and_grad_tokens(q, x, jnp.ones(len(x), bool), beta)
            U, E, Z = x[:, 0], x[:, 1], x[:, 2:]
            w = jax.nn.softmax(beta * (x @ q))
            v = Z.T @ w
            f = v / jnp.linalg.norm(v)
            g_norm = jnp.linalg.norm(v) / (sigma * jnp.linalg.norm(w))
            out = reduced.scalars(U, E, Z @ f / sigma, g_norm, alpha, b, sigma, beta)
            np.testing.assert_allclose(out["objective"], obj, rtol=1e-12)
            np.testing.assert_allclose(2 * beta * out["g_u"], grad[0], rtol=1e-10)
            np.testing.assert_allclose(2 * beta * out["g_e"], grad[1], rtol=1e-10)
            g_perp = grad[2:]
            np.testing.assert_allclose(2 * beta * out["phi"], g_perp @ f, rtol=1e-10)
            w_hat = w / jnp.linalg.norm(w)
            z_rest = Z - jnp.outer(w_hat, w_hat @ Z)
            a = w @ x
            r = w * (x @ a)
            rest = z_rest.T @ r
            rest = rest - (rest @ f) * f
            np.testing.assert_allclose(g_perp - (g_perp @ f) * f, 2 * beta * rest, atol=1e-10)
            # κ is σ‖(I − ŵŵᵀ) r‖, the scale of that Gaussian remainder
            k_ref = sigma * jnp.linalg.norm(r - (w_hat @ r) * w_hat)
            np.testing.assert_allclose(out["kappa"], k_ref, rtol=1e-10)


def test_frame_has_the_gram_law_of_gaussian_vectors():
    """Bartlett coordinates (m > 2B) vs explicit N(0, I_m) vectors: the Gram entries ‖g₁‖²,
    ⟨g₁, g₂⟩, ⟨g₁, g'₂⟩ have the same law (KS, 20000 draws each)."""
    m, batch, n = 9, 2, 20_000
    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.PRNGKey(0), n)
        g, g2 = jax.vmap(lambda k: reduced.frame(k, m, batch, jnp.float64))(keys)
        assert g.shape == (n, batch, 2 * batch)
        direct = jax.random.normal(jax.random.PRNGKey(1), (n, 2 * batch, m), jnp.float64)
        h, h2 = direct[:, :batch], direct[:, batch:]
        g, g2, h, h2 = (np.asarray(a) for a in (g, g2, h, h2))
    for left, right in [
        (np.sum(g[:, 0] ** 2, 1), np.sum(h[:, 0] ** 2, 1)),
        (np.sum(g[:, 1] ** 2, 1), np.sum(h[:, 1] ** 2, 1)),
        (np.sum(g[:, 0] * g[:, 1], 1), np.sum(h[:, 0] * h[:, 1], 1)),
        (np.sum(g[:, 0] * g2[:, 1], 1), np.sum(h[:, 0] * h2[:, 1], 1)),
    ]:
        assert stats.ks_2samp(np.asarray(left), np.asarray(right)).pvalue > P_MIN


def _update_statistics(d, batch, sign_mode, n_draws):
    """Per-step statistics of the batch-mean gradient Ĝ at q = αu + be, full vs reduced:
    ‖a‖² (batch mean), Ĝ_u, Ĝ_e, ‖Ĝ_⊥‖, ⟨Ĝ, q⟩ and ⟨Ĝ, r⟩ for a fixed random unit r. In the
    reduced sampler ⟨Ĝ_⊥, r_⊥⟩ = ‖Ĝ_⊥‖‖r_⊥‖ω₁, ω uniform on S^{m−1} (isotropy of Ĝ_⊥ given the
    scalars, proof step 5)."""
    spec = _spec(d, sign_mode)
    alpha, b = 0.6, 0.8
    u, e = jnp.eye(d)[0], jnp.eye(d)[1]
    q = alpha * u + b * e
    r = jax.random.normal(jax.random.PRNGKey(99), (d,), jnp.float64)
    r = r / jnp.linalg.norm(r)
    r_perp = jnp.linalg.norm(r[2:])

    def full(key):
        keys = jax.random.split(key, batch)
        o, g = jax.vmap(lambda k: model.sample_objective_and_grad(q, k, u, spec))(keys)
        G = jnp.mean(g, axis=0)
        return jnp.stack([jnp.mean(o), G[0], G[1], jnp.linalg.norm(G[2:]), G @ q, G @ r])

    def red(key):
        k_step, k_dir = jax.random.split(key)
        out = reduced.batch_step(k_step, alpha, b, spec, batch)
        omega = jax.random.normal(k_dir, (d - 2,), jnp.float64)
        omega1 = omega[0] / jnp.linalg.norm(omega)
        along_q = alpha * out["g_u"] + b * out["g_e"]
        along_r = r[0] * out["g_u"] + r[1] * out["g_e"] + r_perp * out["g_perp"] * omega1
        return jnp.stack(
            [out["objective"], out["g_u"], out["g_e"], out["g_perp"], along_q, along_r]
        )

    f = jax.jit(jax.vmap(full))(jax.random.split(jax.random.PRNGKey(10 + d + batch), n_draws))
    g = jax.jit(jax.vmap(red))(jax.random.split(jax.random.PRNGKey(20 + d + batch), n_draws))
    return np.asarray(f), np.asarray(g)


@pytest.mark.parametrize(
    "d, batch, sign_mode",
    [
        (9, 3, "token"),  # Bartlett frame (m = 7 > 2B)
        (4, 3, "sequence"),  # direct frame (m = 2 ≤ 2B)
        pytest.param(9, 1, "sequence", marks=pytest.mark.long),
        pytest.param(3, 1, "none", marks=pytest.mark.long),  # m = 1: no γ
    ],
)
def test_reduced_update_has_the_law_of_the_full_update(d, batch, sign_mode):
    """10000 independent steps from the same q in each sampler."""
    with jax.enable_x64(True):
        full, red = _update_statistics(d, batch, sign_mode, N_DRAWS)
    for j, name in enumerate(NAMES):
        p = stats.ks_2samp(full[:, j], red[:, j]).pvalue
        se = np.sqrt((full[:, j].var() + red[:, j].var()) / N_DRAWS)
        z = (full[:, j].mean() - red[:, j].mean()) / se
        assert p > P_MIN and abs(z) < 4, (name, p, z)


@pytest.mark.long
def test_distribution_test_has_power(monkeypatch):
    """Negative controls: dropping ρ (the fluctuation of ⟨z_i^⊥, a^⊥⟩ beyond its ŵ part) or the
    Gaussian remainder κγ must fail the same test (measured p ≈ 1e-284 and 1e-52 for ‖Ĝ_⊥‖)."""
    exact = reduced.scalars
    variants = {
        "no_rho": lambda U, E, rho, *rest: exact(U, E, 0 * rho, *rest),
        "no_kappa": lambda *args: {**exact(*args), "kappa": 0 * exact(*args)["kappa"]},
    }
    for name, wrong in variants.items():
        monkeypatch.setattr(reduced, "scalars", wrong)
        with jax.enable_x64(True):
            full, red = _update_statistics(9, 3, "token", N_DRAWS)
        p = stats.ks_2samp(full[:, 3], red[:, 3]).pvalue
        assert p < 1e-6, (name, p)


def test_reduced_simulation_runs_and_is_consistent():
    tr = attndyn.simulate(
        "query", sampler="reduced", d=256, n_nuisance=10_000, t_max=5, records=3, seeds=2,
        init_overlap=0.2, eval_samples=2,
    )  # fmt: skip
    np.testing.assert_allclose(tr["q_norm"].values, 1.0, rtol=1e-5)
    np.testing.assert_allclose(tr["overlap"].values[:, 0], 0.2, rtol=1e-5)
    np.testing.assert_allclose(
        tr["overlap"].values ** 2 + tr["perp_norm"].values ** 2, 1.0, rtol=1e-5
    )
    assert np.all(np.isfinite(tr["objective"].values))


@pytest.mark.long
@pytest.mark.parametrize(
    "extra",
    [
        dict(init_overlap=0.1),
        dict(constraint="unconstrained", l2=0.5, schedule="constant", eta0=0.05),
    ],
)
def test_reduced_trajectories_match_full(extra):
    """64 seeds each, full vs reduced: at every record the mean alignment, ‖P_⊥q‖ and ‖q‖ agree
    within 4 combined standard errors (records are correlated in time, so 4 rather than a
    Bonferroni-corrected bound), and the final overlaps pass a two-sample KS test."""
    kw = dict(d=12, n_informative=8, n_nuisance=60, batch=2, t_max=400, records=6, seeds=64,
              eta0=0.3, k0=50.0, eval_samples=0)  # fmt: skip
    kw.update(extra)
    full = attndyn.simulate("query", **kw)
    red = attndyn.simulate("query", sampler="reduced", **kw)
    np.testing.assert_allclose(full["ode_time"].values, red["ode_time"].values)
    for name in ("alignment", "perp_norm", "q_norm"):
        f, r = full[name].values, red[name].values
        se = np.sqrt((f.var(0) + r.var(0)) / 64)
        ok = np.abs(f.mean(0) - r.mean(0)) <= 4 * se + 1e-6
        assert np.all(ok), (name, f.mean(0), r.mean(0), se)
    p = stats.ks_2samp(full["overlap"].values[:, -1], red["overlap"].values[:, -1]).pvalue
    assert p > P_MIN
