"""The constant-step plateau theory of the query family (models/query/theory/plateau.py):
E‖P_⊥ĝ‖² at the pole against autodiff of the objective, and the leading-order plateau formula."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from attndyn.models.query import Config, model, token_spec
from attndyn.models.query.theory.plateau import plateau_gap, pole_noise

LAW = dict(d=6, n_informative=4, n_nuisance=8, theta=1.0, beta=3.0, noise_scaling="inv_d")


def test_pole_noise_matches_autodiff_of_the_objective():
    config = Config(**LAW, dtype="float64")
    samples, key = 64, 7
    spec = token_spec(config, 1)
    with jax.enable_x64(True):
        u = jnp.zeros(config.d, jnp.float64).at[0].set(1.0)
        grad = jax.grad(lambda q, x, valid: model.objective_tokens(q, x, valid, config.beta))
        total = 0.0
        for k in jax.random.split(jax.random.PRNGKey(key), samples):
            x, valid = model.all_tokens(k, u, spec)
            g = np.asarray(grad(u, x, valid))
            total += float(np.sum(g[1:] ** 2))  # P_⊥ removes the component along u = e₁
    assert pole_noise(config, samples, key) == pytest.approx(total / samples, rel=1e-9)


def test_pole_noise_ignores_the_config_dtype():
    base = Config(**LAW)
    assert pole_noise(base, 32) == pole_noise(base.model_copy(update={"dtype": "float64"}), 32)


def test_plateau_gap_is_linear_in_the_step():
    assert plateau_gap(0.2, 0.8, 0.5) == pytest.approx(0.2 * 0.8 / 2.0)
    assert plateau_gap(0.05, 0.8, 0.5) == pytest.approx(plateau_gap(0.2, 0.8, 0.5) / 4)
