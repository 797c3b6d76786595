"""The markov-symmetry measurements (experiments/markov/symmetry.py) on inputs with known answers,
and the ∂L/∂M observable against autodiff."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.experiments.markov.symmetry import (
    Config,
    first_crossing,
    law,
    loglog_slope,
    seed_escape,
)


def test_first_crossing_interpolates_in_log_time():
    t = np.array([0.0, 1.0, 10.0, 100.0, 1000.0])
    y = np.array([3.0, 1.0, 1.0, 2.0, 3.0])
    # from record 1 on, y reaches 1.5 halfway (in log t) between t = 10 and t = 100
    assert first_crossing(t, y, 1.5, start=1) == pytest.approx(np.sqrt(10.0 * 100.0))
    assert np.isnan(first_crossing(t, y, 5.0, start=1))


def test_loglog_slope_of_a_power_law():
    deltas = np.array([0.001, 0.004, 0.016])
    groups = [np.array([2.0, 2.0]) * x**-1.3 for x in deltas]
    assert loglog_slope(deltas, *groups) == pytest.approx(-1.3)


def test_seed_escape_on_an_exponential_escape():
    """A synthetic run: condensation, a plateau reached at t = 50, then σ₂/σ₁ = r₀e^{μ(t − 50)}
    and erank = 1 + 5r (crossing 1.2 at r = 0.04): the rate is μ and τ = log(0.04/r₀)/μ."""
    config = Config(ds=[4], deltas=[0.01, 0.02])
    t = np.concatenate([[0.0], np.geomspace(0.5, 4000.0, 400)])
    mu, r0 = 2e-3, 2e-3
    r = np.where(t < 50, r0, r0 * np.exp(mu * np.clip(t - 50, 0, None)))
    erank = np.where(t < 10, 3.0, 1.0 + 5.0 * r)
    gap = np.where(t < 50, 0.3, 0.1)
    out = seed_escape(config, t, erank, gap, r, np.full_like(t, 7.0))
    assert out["rate"] == pytest.approx(mu, rel=1e-6)
    assert out["t_arr"] == pytest.approx(50.0, rel=0.03)
    assert out["tau"] == pytest.approx(np.log(0.04 / r0) / mu, rel=0.03)
    assert out["grad_sv"] == 7.0


def test_frequent_only_keeps_the_low_tokens_symmetric():
    config = Config(ds=[4], deltas=[0.01, 0.02])
    pi = np.asarray(law(config, 4, 0.02, "frequent")["pi"])
    assert pi.sum() == pytest.approx(1.0) and pi[0] == pytest.approx(0.72)
    assert np.ptp(pi[1:]) == 0.0
    assert law(config, 4, 0.02, "low") == {"d": 4, "delta": 0.02}  # Eq. 1's c_iδ, in the family


def test_gradM_observable_is_the_autodiff_gradient():
    """``gradM_sv1`` = σ₁(∂L/∂M) with L(M, Φ) of Prop. 2.3, checked against jax.grad in M."""
    from attndyn.models.markov import data, model, observables

    pi = jnp.asarray(data.two_group_pi(4, 0.7, 0.03))
    P = jnp.asarray(data.lazy_chain(np.asarray(pi), 0.5))
    params = model.init_params(jax.random.PRNGKey(1), 4, 6, 6, 0.7, model.Arch(), jnp.float32)
    sh = model.shorthands(params)
    A = model.population_attention(sh["Phi"], pi)

    def loss_of_m(M):
        logp = jax.nn.log_softmax(A @ M, axis=1)
        return -jnp.sum(pi[:, None] * P * logp)

    G = jax.grad(loss_of_m)(sh["M"])
    obs = observables.observe(params, pi, P, 0.0, (0,))
    expected = np.linalg.svd(np.asarray(G), compute_uv=False)[0]
    assert float(obs["gradM_sv1"]) == pytest.approx(expected, rel=1e-4)
    s = np.linalg.svd(np.asarray(params["W0"]), compute_uv=False)
    assert float(obs["sv_ratio_W0"]) == pytest.approx(s[1] / s[0], rel=1e-4)
    for k in (3, 4):  # d = 4 singular values: σ₃/σ₁, σ₄/σ₁ recorded, no σ₅
        assert float(obs[f"sv_ratio{k}_W0"]) == pytest.approx(s[k - 1] / s[0], rel=1e-4)
    assert "sv_ratio5_W0" not in obs
    assert float(obs["stable_rank_W0"]) == pytest.approx(np.sum(s**2) / s[0] ** 2, rel=1e-4)


@pytest.mark.parametrize("pi1, lam, unstable", [(0.6, 0.5, False), (0.7, 0.8, True)])
def test_stall_hessian_is_split_by_the_swap_and_predicts_a_kick(pi1, lam, unstable):
    """At δ = 0 L is invariant under the swap of the two low-frequency tokens, so the Hessian on
    𝒲 at the symmetric stall θ₀ does not couple swap-even and swap-odd directions; the even block
    is flat (Prop. 3.8's degeneracy) and the odd block's rate — negative at (0.6, 0.5), positive
    at (0.7, 0.8) — is the growth rate of a 10⁻⁸ odd kick in Eq. 20's δ = 0 flow (an ODE
    integration, independent of the autodiff Hessian); an even kick neither grows nor decays."""
    from attndyn.models.markov.theory.symmetry import degenerate_point, stall_hessian, stall_kick

    y0 = degenerate_point(pi1, lam)
    h = stall_hessian(pi1, lam, y0)
    assert h["grad"] <= 1e-8  # θ₀ is a critical point
    assert h["coupling"] <= 1e-12
    assert abs(h["rate_even"]) <= 1e-10
    assert (h["rate_odd"] > 1e-3) is unstable and (h["rate_odd"] < -1e-3) is not unstable
    if unstable:  # the most negative eigenvalue's eigenvector is odd
        assert h["h_min"] == pytest.approx(-h["rate_odd"], rel=1e-12)
        assert h["odd_fraction"] == pytest.approx(1.0, abs=1e-9)
    odd = stall_kick(pi1, lam, "odd", theta0=y0)
    assert odd["rate"] == pytest.approx(h["rate_odd"], rel=2e-3)
    even = stall_kick(pi1, lam, "even", theta0=y0)
    assert abs(even["rate"]) <= 1e-5  # drift along the flat family, ≪ |odd rate| ≥ 4e-3
    if not unstable:  # the decaying kick leaves the loss on the plateau
        assert np.ptp(odd["gap"]) <= 1e-9


def test_stall_kick_rejects_an_unknown_parity():
    from attndyn.models.markov.theory.symmetry import stall_kick

    with pytest.raises(ValueError, match="parity must be 'odd' or 'even'"):
        stall_kick(0.6, 0.5, "both")
