"""Theory of the focus–dilution family (arXiv 2605.01199, Section 3): closed forms and flows.

- closed_forms.py: Thm 3.2 (∂L/∂M, ∂L/∂Φ at θ = 0, σ₁), Prop. 3.3 (θ_c¹, κ₁, the unigram
  plateau), Prop. 3.4 (∂L/∂Φ at θ_c¹, the attention rate c), Prop. 2.3's gradients in (M, Φ);
- reduced.py: the rank-one flow of Prop. 3.6 (Eq. 20) and the full flow from a point of 𝒲;
- symmetry.py: Prop. 3.8's degenerate critical point and Thm 3.9's Θ(δ) transverse eigenvalue.

``predict(config)`` integrates Eq. 20 and returns the simulator's observables (observables.py,
evaluated on the rank-one weights with m = m_k = 1, so erank_* = 1) on the simulator's record
grid, ``time`` = lr·step, without a seed axis. Its start is our modelling choice, not the
paper's: the rank-one point that Stage I's linear flow (Eq. 10) grows out of a N(0, ε²) init,
γ = a π/‖π‖, β = a (π − 𝟙/d)/‖π − 𝟙/d‖ (Eq. 11) with a = ε√(m/2), the expected norm of the
growing combination (W₀ᵀπ̂ + W₁û)/2 ∈ ℝ^m, and λ_Q = λ_K = ε√(m_k/2), likewise for the attention
block's (α₁ᵀW_Q + α₁ᵀW_K)/2 (Eq. 14). It ignores everything of the init off the manifold, so it
predicts the stage sequence and plateau values, not a random run's exact stage times.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field, model_validator

from attndyn.core.config import canonical
from attndyn.core.grids import record_grid
from attndyn.core.trajectory import make_trajectory
from attndyn.models.markov import DataLaw, time_axes, tracked_tokens
from attndyn.models.markov.config import MarkovConfig
from attndyn.models.markov.model import Arch
from attndyn.models.markov.observables import observe
from attndyn.models.markov.theory.reduced import integrate_reduced, reduced_state

__all__ = ["Config", "SUMMARY", "MarkovTheoryConfig", "initial_state", "predict"]

SUMMARY = ("loss_gap", "align_pi", "align_phi", "entropy_mean", "thm37", "phi_norm")
"""Observables ``attndyn predict markov`` prints at the final time."""


class MarkovTheoryConfig(MarkovConfig):
    """A markov config plus the reduced flow's solver tolerance. Def. 2.2's architecture only."""

    theory_rtol: float = Field(1e-9, gt=0, lt=1e-3, description="rtol of the Eq. 20 solver")

    @model_validator(mode="after")
    def _plain_model(self) -> MarkovTheoryConfig:
        changed = [
            name
            for name, default in (("residual", False), ("value", False), ("causal", False))
            if getattr(self, name) != default
        ] + (["logit_scale"] if self.logit_scale != "none" else [])
        if changed:
            raise ValueError(
                f"{changed[0]}: the rank-one flow (Eq. 20) is for Def. 2.2's model: residual, "
                "value, causal and logit_scale must keep their defaults"
            )
        return self


Config = MarkovTheoryConfig


def initial_state(config: MarkovConfig, pi: np.ndarray) -> np.ndarray:
    """y(0) = (γ, β, η) of the module docstring."""
    d = len(pi)
    u = pi - 1.0 / d
    a = config.epsilon * np.sqrt(config.m / 2.0)
    lq = config.epsilon * np.sqrt(config.key_width / 2.0)
    return reduced_state(a * pi / np.linalg.norm(pi), a * u / np.linalg.norm(u), lq * lq)


def predict(config: MarkovTheoryConfig):
    """Eq. 20 from :func:`initial_state` on the simulator's record grid (module docstring)."""
    law = DataLaw(config)
    pi, P, d = law.pi, law.P, law.d
    steps = record_grid(config)
    times = time_axes(config, steps)["time"]
    Y = integrate_reduced(initial_state(config, pi), times, pi, P, rtol=config.theory_rtol)
    track = tracked_tokens(config, pi)
    with jax.enable_x64(True):
        lam = jnp.sqrt(jnp.abs(jnp.asarray(Y[2 * d])))  # balanced λ_Q = λ_K = √η
        params = {
            "W0": jnp.asarray(Y[:d].T)[:, :, None],
            "W1": jnp.asarray(Y[d : 2 * d].T)[:, None, :],
            "WQ": lam[:, None, None],
            "WK": lam[:, None, None],
        }
        obs = jax.vmap(
            lambda p: observe(p, jnp.asarray(pi), jnp.asarray(P), law.entropy_star, track, Arch())
        )(params)
        values = {k: np.asarray(v) for k, v in obs.items()}
    return make_trajectory(
        values,
        time=times,
        step=steps,
        family="markov",
        config=dict(canonical(config), theory="rank-one flow (Eq. 20)"),
    )
