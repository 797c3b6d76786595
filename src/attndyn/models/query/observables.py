"""The query family's observables (docs/query.md, "Observables"; our reconstruction of arXiv
2606.22406): ``overlap`` m = ⟨q, u⟩/‖q‖ and ``alignment`` |m|; ``q_norm`` ‖q‖ and ``perp_norm``
‖P_⊥ q‖ = ‖q − ⟨q, u⟩u‖; ``objective``, the mean ‖a‖² over ``eval_samples`` fixed samples (the
same keys at every record; simulation.py computes it).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

SUMMARY = ("alignment", "overlap", "q_norm", "perp_norm", "objective")
"""Observables ``attndyn simulate query`` prints at the final time."""
LABELS = {
    "alignment": "alignment |m|",
    "overlap": "overlap m = ⟨q, u⟩/‖q‖",
    "q_norm": "‖q‖",
    "perp_norm": "‖P_⊥ q‖",
    "objective": "objective E‖a(q; X)‖²",
    "ode_time": "ODE time Σ_{j<k} η_j",
}
"""Axis labels of the observables and of ``ode_time`` (:func:`attndyn.plot`)."""

OVERFLOW = 1e10
"""|value| marking a seed as diverged (:mod:`attndyn.models.base`): overlap and alignment are
cosines in [−1, 1]; ‖q‖ starts at ``init_norm`` and grows at most like Σ η_k (bounded gradient
of the softmax output); the objective ‖a‖² is bounded by the largest token norm squared."""


def observe(q: jax.Array, u: jax.Array) -> dict[str, jax.Array]:
    """Order parameters: overlap m, alignment |m|, ‖q‖, ‖P_⊥q‖ (docs/query.md, "Observables")."""
    norm = jnp.linalg.norm(q)
    along = q @ u
    return {
        "overlap": along / norm,
        "alignment": jnp.abs(along) / norm,
        "q_norm": norm,
        "perp_norm": jnp.linalg.norm(q - along * u),
    }
