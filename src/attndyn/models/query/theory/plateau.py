"""The constant-step plateau of projected SGA near the pole (docs/query-theory.md §2).

Near m = 1, with ε = 1 − m², E ε_{k+1} ≈ (1 − 2ηΦ'(1)) ε_k + η² E‖P_⊥ĝ‖², so a constant step η
plateaus at

.. math::

    1 - |m| \\approx \\frac{\\eta\\, \\mathbb{E}\\|P_\\perp \\hat g\\|^2}{4\\,\\Phi'(1)}

at leading order in η (a reconstruction of arXiv 2606.22406; ĝ is the batch-1 gradient of
‖a(q; X)‖² at q = u, P_⊥ the projection orthogonal to u).
"""

from __future__ import annotations

import numpy as np

from attndyn.models.query.config import QueryConfig


def pole_noise(config: QueryConfig, samples: int, key: int = 12345) -> float:
    """E‖P_⊥ĝ‖² at q = u (batch 1), the numerator of :func:`plateau_gap`.

    Args:
        config: the token law (d, β, noise scaling, sign mode, n_I, n_N, θ); its step settings
            are not used.
        samples: Monte Carlo draws of the simulator's analytic per-sample gradient (float64).
        key: the PRNG seed of the draws.

    Returns:
        The mean of ‖ĝ − ⟨ĝ, u⟩u‖² over the draws (u = e₁, the simulator's signal direction).
    """
    import jax
    import jax.numpy as jnp

    from attndyn.models.query import model, token_spec

    spec = token_spec(config.model_copy(update={"dtype": "float64"}), 1)
    with jax.enable_x64(True):
        u = jnp.zeros(config.d, jnp.float64).at[0].set(1.0)
        keys = jax.random.split(jax.random.PRNGKey(key), samples)
        grads = jax.jit(
            lambda ks: jax.lax.map(lambda k: model.sample_objective_and_grad(u, k, u, spec)[1], ks)
        )(keys)
        g = np.asarray(grads)
    return float(np.mean(np.sum(g[:, 1:] ** 2, axis=1)))


def plateau_gap(eta: float, pole_noise: float, phi_slope_pole: float) -> float:
    """Leading-order plateau 1 − |m| ≈ η E‖P_⊥ĝ‖²/(4Φ'(1)) of a constant step η.

    Args:
        eta: the constant step.
        pole_noise: E‖P_⊥ĝ‖² at q = u (:func:`pole_noise`).
        phi_slope_pole: Φ'(1), the slope of the population objective at the pole.
    """
    return eta * pole_noise / (4 * phi_slope_pole)
