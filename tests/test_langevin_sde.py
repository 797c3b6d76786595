"""The Langevin family's integrator: Euler–Maruyama of dΘ = −∇F dt + √s dW (docs/langevin.md).

- one trainer step is θ − h∇F(θ) + √(sh) ξ with ξ from the step's key, bit for bit;
- weak order 1 in h of the trainer (Ornstein–Uhlenbeck, exact reference);
- strong order 1 of the same formula (additive noise: Kloeden & Platen, Numerical Solution of
  SDEs, Thm 10.2.2 with Milstein = Euler for constant diffusion) on shared Brownian paths, the
  error slope fitted on a log–log scale as diffrax's tests do: against a fine-step reference on
  the same path (default run), and against diffrax (Kidger, arXiv 2202.02435) with ShARK on a
  fine grid (``slow``: its compilation takes ~15 s);
- the double well's stationary law is exp(−2F/s)/Z (KS test), and the KS test rejects the Gibbs
  law at a wrong temperature.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from attndyn.core import fastrandom
from attndyn.core.trainer import init_seeds, make_advance
from attndyn.models import langevin as L
from attndyn.models.langevin.theory import fokker_planck as fp
from attndyn.models.langevin.theory import ou


def test_one_trainer_step_is_the_euler_maruyama_formula():
    """θ₁ = θ₀ − h∇F(θ₀) + √(s h) ξ, ξ ~ N(0, I) the counter-based draw of step 0 from the
    chain's data key (fastrandom.counter_normal(data_key, 0, ...)), to float64 rounding (XLA may
    fuse the multiply-add; a wrong ξ would be off by ~√(sh) = 0.14)."""
    config = L.LangevinConfig(
        model="double-well", dim=3, s=0.7, h=0.03, lam=0.4, x0=0.5, t_max=1.0, dtype="float64"
    )
    with jax.enable_x64(True):
        _check_one_step(config)


def _check_one_step(config):
    problem = L.build(config)
    seeds = np.array([5, 11])
    carry, state, data_keys = init_seeds(problem, seeds)
    after = make_advance(problem)(carry, state, data_keys, 0, 1)
    pot = L.potential(config)
    for i in range(len(seeds)):
        theta = carry.params["theta"][i]
        grad = jax.grad(lambda th: pot.F({"theta": th}, {}))(theta)
        xi = fastrandom.counter_normal(data_keys[i], 0, theta.shape, 0, theta.dtype)
        std = jnp.asarray(jnp.sqrt(config.s * config.h), theta.dtype)
        expected = theta + (grad * -config.h + std * xi)
        assert expected.dtype == jnp.float64
        np.testing.assert_allclose(after.params["theta"][i], expected, rtol=0, atol=1e-14)


@pytest.mark.slow  # 7 CPU s
def test_weak_order_one_on_ornstein_uhlenbeck():
    """|E θ_T² (trainer) − v(T) (SDE)| ∝ h: 4096 chains × 64 coordinates per step size; the
    measured E θ_T² agree with the EM chain's exact second moment within 4.5 standard errors,
    and the fitted exponent of the error is 1 ± 0.15."""
    lam, s, T = 2.0, 1.0, 1.0
    hs = np.array([0.2, 0.1, 0.05, 0.025])
    exact = ou.moments(T, lam, s, 0.0, 0.0)[1]
    errors = []
    for h in hs:
        tr = L.simulate(
            L.LangevinConfig(
                model="quadratic",
                lam=lam,
                s=s,
                h=h,
                t_max=T,
                x0=0.0,
                init_scale=0.0,
                dim=64,
                seeds=4096,
                records=2,
                grid="linear",
            )  # fmt: skip
        )
        second = tr["sq_norm"].values[:, -1] / 64  # per chain: mean of 64 independent θᵢ²
        em = ou.moments(T, lam, s, 0.0, 0.0, h=h)[1]
        se = second.std(ddof=1) / math.sqrt(second.size)
        assert abs(second.mean() - em) < 4.5 * se, (h, second.mean(), em, se)
        errors.append(abs(second.mean() - exact))
    slope = np.polyfit(np.log(hs), np.log(errors), 1)[0]
    assert 0.85 < slope < 1.15, (slope, errors)


def _df(x, lam=0.0):
    return 4.0 * x * (x * x - 1.0) + lam * x


def _em_on_path(x0, s, dW, h):
    """θ ← θ − h f'(θ) + √s ΔW_k, ΔW_k the path's increments over [kh, (k+1)h] (axis 0)."""
    x = np.full(dW.shape[1:], x0, dtype=float)
    for d in dW:
        x = x - h * _df(x) + math.sqrt(s) * d
    return x


LEVELS = np.arange(4, 9)  # h = 2⁻⁴ … 2⁻⁸


def test_strong_order_one_on_a_shared_path():
    """Fast version (default run): E|X_T^h − X_T^ref| ∝ h on 256 shared Brownian paths (double
    well, s = 0.5, x₀ = 1, T = 1), the reference the same formula at h = 2⁻¹⁴ on the same path
    (Kloeden & Platen §9.3); the independent reference is the slow test below."""
    s, T, fine = 0.5, 1.0, 14
    rng = np.random.default_rng(0)
    dW = rng.normal(0.0, math.sqrt(T / 2**fine), size=(2**fine, 256))
    ref = _em_on_path(1.0, s, dW, T / 2**fine)
    hs, err = 2.0**-LEVELS, []
    for level in LEVELS:
        coarse = dW.reshape(2**level, -1, dW.shape[1]).sum(axis=1)
        err.append(np.mean(np.abs(_em_on_path(1.0, s, coarse, T / 2**level) - ref)))
    slope = np.polyfit(np.log(hs), np.log(err), 1)[0]
    assert 0.85 < slope < 1.25, (slope, err)


@pytest.mark.long
def test_strong_order_one_against_diffrax():
    """E|X_T^h − X_T^ref| ∝ h on shared VirtualBrownianTree paths (double well, s = 0.5,
    x₀ = 1, T = 1, 64 paths); the reference is diffrax's ShARK (strong order 1.5 for additive
    noise) at dt = 2⁻¹⁰. Slow: compiling the tree with its space-time Lévy area takes ~15 s."""
    diffrax = pytest.importorskip("diffrax")
    s, T, x0 = 0.5, 1.0, 1.0
    fine = 2 ** int(LEVELS[-1])

    def errors_for(key):
        bm = diffrax.VirtualBrownianTree(
            0.0, T, tol=2.0**-13, shape=(), key=key, levy_area=diffrax.SpaceTimeLevyArea
        )
        terms = diffrax.MultiTerm(
            diffrax.ODETerm(lambda t, y, args: -_df(y)),
            diffrax.ControlTerm(lambda t, y, args: jnp.sqrt(s), bm),
        )
        ref = diffrax.diffeqsolve(
            terms, diffrax.ShARK(), 0.0, T, dt0=2.0**-10, y0=jnp.asarray(x0)
        ).ys[-1]
        grid = jnp.linspace(0.0, T, fine + 1)
        W = jnp.concatenate([jnp.zeros(1), jax.vmap(lambda b: bm.evaluate(0.0, b))(grid[1:])])
        out = []
        for level in LEVELS:
            h = T / 2**level
            dW = jnp.diff(W[:: fine // 2**level])
            x = jax.lax.scan(lambda x, d, h=h: (x - h * _df(x) + jnp.sqrt(s) * d, None), x0, dW)
            out.append(jnp.abs(x[0] - ref))
        return jnp.stack(out)

    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.PRNGKey(0), 64)
        err = np.asarray(jax.jit(jax.vmap(errors_for))(keys)).mean(axis=0)
    slope = np.polyfit(np.log(2.0**-LEVELS), np.log(err), 1)[0]
    assert 0.85 < slope < 1.25, (slope, err)


def test_stationary_histogram_is_gibbs_and_ks_rejects_a_wrong_temperature():
    """4096 chains of the double well at s = 0.5 from the symmetric law N(0, 0.5²) (its law stays
    symmetric, so only the fast even modes must relax: t = 4 ≫ their time ~0.1); one sample per
    chain (independent). KS against exp(−2F/s)/Z passes (p > 0.01); against the Gibbs law at
    s = 0.3 or 0.8 it rejects (p < 10⁻⁴; those laws are 0.048 from the true one in KS distance,
    where 4096 samples give p ≈ 10⁻⁸; at 0.35 and 0.7, 0.034 away, the expected p is 10⁻⁴ itself,
    and over five seeds s = 0.7 gave 2·10⁻⁴–10⁻³). The EM bias at h = 0.005 (~1 % in E F) moves
    the CDF by far less than the KS resolution 1.36/√4096 ≈ 0.02."""
    s = 0.5
    tr = L.simulate(
        L.LangevinConfig(
            model="double-well",
            lam=0.0,
            s=s,
            h=0.005,
            t_max=4.0,
            x0=0.0,
            init_scale=0.5,
            seeds=4096,
            records=2,
            grid="linear",
        )  # fmt: skip
    )
    x = tr["x"].values[:, -1]
    assert stats.kstest(x, lambda v: fp.gibbs_cdf(v, s)).pvalue > 0.01
    for wrong in (0.3, 0.8):
        assert stats.kstest(x, lambda v, w=wrong: fp.gibbs_cdf(v, w)).pvalue < 1e-4


def test_ornstein_uhlenbeck_mean_decays_at_lambda():
    """E θ(t) of the trainer's OU chains (F = (λ/2)‖θ‖², θ₀ = x0) is the EM chain's
    x0 (1 − λh)^k within 4.5 standard errors at every record, and its fitted rate
    −log(1 − λh)/h → λ within 0.05 (≈ 4 standard deviations: the fitted rate's spread over
    seeds 0, 1000, …, 4000 was 0.012): the identity E θ(t) = θ₀ e^{−λt} that langevin-gibbs
    reports as `ou_rate` (a deterministic mean, checked here rather than claimed;
    docs/langevin.md)."""
    lam, s, h, x0 = 1.0, 0.5, 0.01, 2.0
    tr = L.simulate(
        L.LangevinConfig(
            model="quadratic",
            lam=lam,
            s=s,
            h=h,
            t_max=2.5,
            x0=x0,
            init_scale=0.0,
            dim=8,
            seeds=256,
            records=6,
            grid="linear",
            dtype="float64",
        )  # fmt: skip
    )
    t = tr["time"].values
    per_chain = tr["mean_x"].values  # per chain: the mean of its 8 coordinates
    mean, exact_var = ou.moments(t, lam, s, x0, 0.0, h=h)
    se = np.sqrt(exact_var / 8 / per_chain.shape[0])
    assert np.all(np.abs(per_chain.mean(axis=0) - mean) <= 4.5 * se + 1e-12), (t, mean)
    rate = -np.polyfit(t, np.log(per_chain.mean(axis=0)), 1)[0]
    assert abs(rate - (-math.log(1 - lam * h) / h)) < 0.05, rate


@pytest.mark.parametrize(
    "values",
    [
        dict(model="double-well", dim=3),
        dict(model="lora", n=16, d=6, width=8, rank=2, dtype="float64"),
    ],
)
def test_a_chains_path_depends_on_neither_the_chain_count_nor_the_record_grid(values):
    """The noise is counter-based, indexed by (chain key, step, element)
    (fastrandom.counter_normal): chain 5's final parameters are the same run with chains 5–6 on
    a 3-point record grid and with chains 3–9 on a 9-point grid (bitwise for the elementwise
    double well; to 1e-12 in float64 for LoRA, whose batched GEMMs may block differently)."""
    from attndyn.core.trainer import train

    config = L.LangevinConfig(**values, s=0.5, h=0.02, t_max=1.0)
    with jax.enable_x64(config.dtype == "float64"):
        problem = L.build(config)
        few = train(problem, np.array([0, 20, 50]), np.array([5, 6]))
        many = train(problem, np.linspace(0, 50, 9).astype(int), np.arange(3, 10))
    for group in few.final_params:
        a, b = np.asarray(few.final_params[group][0]), np.asarray(many.final_params[group][2])
        assert np.std(a) > 0
        if config.model == "double-well":
            np.testing.assert_array_equal(a, b)
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
        assert not np.array_equal(a, np.asarray(few.final_params[group][1]))  # chain 6's own
