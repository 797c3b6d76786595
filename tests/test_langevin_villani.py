"""The Villani probe (src/attndyn/models/langevin/villani.py): Hutchinson's Laplacian against the
exact Hessian trace in float64 within its Monte Carlo error, gradients and Hessian-vector
products against finite differences, and V_s on the quadratic potential in closed form."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from attndyn.models import langevin as L
from attndyn.models.langevin import villani as V
from attndyn.models.langevin.model import potential

SMALL = {
    "attention": dict(model="attention", n=6, d=3, tokens=3, heads=2, d_k=2, output=True, d_v=2),
    "lora": dict(model="lora", n=6, width=5, d=4, rank=2, train_outer=True),
}


def _flat(name, lam=0.3):
    c = L.LangevinConfig(**SMALL[name], lam=lam, dtype="float64")
    pot = potential(c)
    frozen = L.frozen_part(c, pot)
    params = pot.init(jax.random.PRNGKey(3))
    f, _ = V.flat_potential(pot, frozen, params)
    x, _ = ravel_pytree(params)
    return f, x


@pytest.mark.parametrize("name", ["attention", "lora"])
def test_hutchinson_matches_exact_trace(name):
    with jax.enable_x64(True):
        f, x = _flat(name)
        x = 1.5 * x  # away from the init's scale: a generic point
        exact = float(V.exact_laplacian(f, x))
        est, se = jax.jit(lambda x, k: V.hutchinson_laplacian(f, x, k, 500))(
            x, jax.random.PRNGKey(0)
        )
        est, se = float(est), float(se)
    assert se > 0
    # a 4-sigma band of the estimator's own Monte Carlo error
    assert abs(est - exact) <= 4 * se, (est, exact, se)
    # and the error is not vacuous: far below the trace's scale
    assert se < 0.2 * max(1.0, abs(exact))


@pytest.mark.parametrize("name", ["attention", "lora"])
def test_gradient_and_hvp_against_finite_differences(name):
    with jax.enable_x64(True):
        f, x = _flat(name)
        rng = np.random.default_rng(0)
        v = jnp.asarray(rng.standard_normal(x.shape[0]))
        eps = 1e-5
        f, grad = jax.jit(f), jax.jit(jax.grad(f))
        fd_dir = (f(x + eps * v) - f(x - eps * v)) / (2 * eps)
        g = grad(x)
        np.testing.assert_allclose(float(jnp.vdot(g, v)), float(fd_dir), rtol=1e-6, atol=1e-9)
        fd_hvp = (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)
        hv = jax.jit(lambda x, v: V.hvp(f, x, v))(x, v)
        np.testing.assert_allclose(hv, fd_hvp, rtol=1e-5, atol=1e-8)


def test_probe_on_the_quadratic_is_closed_form():
    # F = (λ/2)‖θ‖²: ‖∇F‖² = λ²R², ΔF = λp exactly (Hutchinson is exact: H = λI)
    lam, s, p = 0.7, 0.2, 5
    c = L.LangevinConfig(model="quadratic", lam=lam, dim=p, s=s, dtype="float64")
    radii = [0.5, 1.0, 2.0, 4.0]
    pr = V.probe_config(c, radii, n_rays=6, probes=3, key=jax.random.PRNGKey(0))
    want = lam**2 * np.asarray(radii) ** 2 / s - lam * p
    np.testing.assert_allclose(pr.value, np.broadcast_to(want, (6, 4)), rtol=1e-10)
    np.testing.assert_allclose(pr.laplacian_se, 0.0, atol=1e-12)


def test_double_well_probe_against_its_formula():
    # F = (x² − 1)² in 1-D: F' = 4x(x² − 1), F'' = 12x² − 4, along the rays u = ±1
    s = 0.5
    c = L.LangevinConfig(model="double-well", lam=0.0, dim=1, s=s, dtype="float64")
    radii = np.array([0.3, 1.0, 2.0, 3.0])
    pr = V.probe_config(c, radii, n_rays=4, probes=2, key=jax.random.PRNGKey(1))
    want = (4 * radii * (radii**2 - 1)) ** 2 / s - (12 * radii**2 - 4)
    np.testing.assert_allclose(pr.value, np.broadcast_to(want, (4, 4)), rtol=1e-10)


def test_lora_probe_grows_only_with_regularisation():
    # condition (iii) along rays: λ > 0 gives V_s ≈ λ²R²/s at large R; at λ = 0 tanh saturates
    # and V_s stays O(1) (docs/langevin.md, "Villani probe")
    from attndyn.experiments.langevin.regularization import probe_slope

    base = dict(model="lora", n=16, width=8, d=4, rank=2, s=0.1)
    radii = V.init_radius(L.LangevinConfig(**base, lam=0.5)) * np.array([1, 4, 16, 64.0])
    reg = V.probe_config(L.LangevinConfig(**base, lam=0.5), radii, 8, 4, jax.random.PRNGKey(2))
    free = V.probe_config(L.LangevinConfig(**base, lam=0.0), radii, 8, 4, jax.random.PRNGKey(2))
    assert 1.8 < probe_slope(reg.value, radii) < 2.2
    assert abs(reg.value.min(axis=0)[-1] / (0.25 * radii[-1] ** 2 / 0.1) - 1) < 0.05
    assert np.abs(free.value[:, -1]).max() < 1e-2 * reg.value[:, -1].min()


def test_init_radius_matches_the_init():
    for name in ("attention", "lora"):
        c = L.LangevinConfig(**SMALL[name], init_scale=1.3)
        pot = potential(c)
        keys = jax.random.split(jax.random.PRNGKey(0), 4000)

        def sq_norm(k, pot=pot):
            x = ravel_pytree(pot.init(k))[0]
            return x @ x

        sq = jax.jit(jax.vmap(sq_norm))(keys)
        # E‖θ₀‖² within 5 standard errors of the sample mean
        se = float(jnp.std(sq)) / np.sqrt(len(keys))
        assert abs(float(jnp.mean(sq)) - V.init_radius(c) ** 2) < 5 * se
