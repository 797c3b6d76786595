"""SGD's stochastic modified equations (Li, Tai & E, arXiv 1811.01558; the ``sme1`` / ``sme2``
dynamics, src/attndyn/models/langevin/simulation.py ``sme_loss``): the gradient of the loss the
trainer steps on is the Euler–Maruyama increment, drift ∇F (+ (s/2)∇²F∇F for order 2, checked by
finite differences) and noise of covariance s·h·Σ_b exactly, Σ_b = Cov_i(∇ℓ_i)/b."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pydantic
import pytest
from jax.flatten_util import ravel_pytree

from attndyn.models import langevin as L
from attndyn.models.langevin.model import frozen_part, potential
from attndyn.models.langevin.simulation import sme_loss

FIELDS = dict(model="lora", n=12, width=5, d=3, rank=2, labels="random", train_outer=True,
              lam=0.3, s=0.1, h=0.02, batch=2, dtype="float64")  # fmt: skip


def _setup(dynamics: str):
    c = L.LangevinConfig(**FIELDS, dynamics=dynamics)
    pot = potential(c)
    frozen = frozen_part(c, pot)
    params = pot.init(jax.random.PRNGKey(4))
    x, unravel = ravel_pytree(params)
    zeta = jax.random.normal(jax.random.PRNGKey(5), (c.n,), jnp.float64)

    def F(z):
        return pot.F(unravel(z), frozen)

    def sample_grads(z):
        return jnp.stack(
            [
                jax.grad(lambda y, i=i: pot.empirical(unravel(y), frozen, jnp.array([i])))(z)
                for i in range(c.n)
            ]  # fmt: skip
        )

    def step_grad(z, zeta):
        return ravel_pytree(jax.grad(lambda p: sme_loss(pot, c)(p, frozen, zeta))(unravel(z)))[0]

    return c, x, zeta, F, sample_grads, step_grad


@pytest.mark.parametrize("dynamics", ["sme1", "sme2"])
def test_step_gradient_is_the_modified_drift_plus_the_minibatch_noise(dynamics):
    with jax.enable_x64(True):
        c, x, zeta, F, sample_grads, step_grad = _setup(dynamics)
        g = np.asarray(jax.grad(F)(x))
        G = np.asarray(sample_grads(x))
        want = g - np.sqrt(c.s / (c.h * c.batch * c.n)) * (zeta - zeta.mean()) @ G
        if dynamics == "sme2":  # ∇((s/4)‖∇F‖²) = (s/2)∇²F ∇F, by central differences
            eps = 1e-5
            hvp = np.asarray(jax.grad(F)(x + eps * g)) - np.asarray(jax.grad(F)(x - eps * g))
            want = want + (c.s / 2) * hvp / (2 * eps)
        np.testing.assert_allclose(np.asarray(step_grad(x, zeta)), want, rtol=1e-7, atol=1e-9)


def test_noise_covariance_is_s_h_times_the_minibatch_covariance():
    with jax.enable_x64(True):
        c, x, _, F, sample_grads, step_grad = _setup("sme1")
        # the increment −h·step_grad is affine in ζ: its covariance is J Jᵀ, J = ∂/∂ζ
        J = -c.h * np.asarray(jax.jacfwd(lambda z: step_grad(x, z))(jnp.zeros(c.n)))
        G = np.asarray(sample_grads(x))
    sigma_b = np.cov(G.T, bias=True) / c.batch  # (1/n)Σ(g_i − ḡ)(g_i − ḡ)ᵀ / b
    np.testing.assert_allclose(J @ J.T, c.s * c.h * sigma_b, rtol=1e-9, atol=1e-14)


def test_sme_runs_and_needs_data():
    tr = L.simulate(L.LangevinConfig(**{**FIELDS, "dtype": "float32"}, dynamics="sme1",
                                     t_max=0.1, records=2, seeds=3))  # fmt: skip
    assert np.all(np.isfinite(tr["F"].values)) and float(tr["time"].values[-1]) == 0.1
    with pytest.raises(pydantic.ValidationError, match="per-sample losses"):
        L.LangevinConfig(model="double-well", dynamics="sme1", s=0.1)
