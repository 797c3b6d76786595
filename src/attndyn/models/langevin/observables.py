"""The observables of the Langevin family, every one a scalar per chain (F and L̂ over all n
samples): ``F``, ``loss`` (L̂), ``reg`` ((λ/2)‖θ‖²), ``sq_norm`` (‖θ‖²), ``grad_sq`` (‖∇F‖²),
per group ``norm_<g>`` (‖W_g‖_F); LoRA ``balance`` (‖A‖² − ‖B‖²), ``norm_product`` (‖A‖‖B‖),
``delta_norm`` (‖BA‖_F); attention ``balance_qk`` (‖W_Q‖² − ‖W_K‖²); test potentials ``x``
(θ₁) and ``mean_x`` (mean of θ). docs/langevin.md has the model (arXiv 2605.07959).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from attndyn.models.langevin.config import TEST_POTENTIALS, LangevinConfig
from attndyn.models.langevin.model import Potential, sum_sq

SUMMARY = ("F", "loss", "sq_norm", "grad_sq")
"""Observables ``attndyn simulate langevin`` prints at the final time."""
LABELS = {
    "F": "F = L̂ + (λ/2)‖θ‖²",
    "loss": "training loss L̂",
    "reg": "(λ/2)‖θ‖²",
    "sq_norm": "‖θ‖²",
    "grad_sq": "‖∇F‖²",
    "balance": "‖A‖² − ‖B‖²",
    "norm_product": "‖A‖‖B‖",
    "delta_norm": "‖BA‖_F",
    "balance_qk": "‖W_Q‖² − ‖W_K‖²",
    "x": "θ₁",
    "mean_x": "mean of θ",
}
"""Axis labels of the observables (:func:`attndyn.plot`)."""

OVERFLOW = 1e30
"""|value| marking a chain as diverged (:mod:`attndyn.models.base`), far above the default 1e10:
a test potential started at |x0| ≤ 1e3 in up to 1e6 dimensions legitimately has F up to ~1e18
and ‖∇F‖² up to ~1e25 at t = 0 (double well: F ∝ x⁴); float32 overflows at 3.4e38."""


def observe(config: LangevinConfig, pot: Potential, params, frozen) -> dict[str, jax.Array]:
    """The observables of the module docstring for one chain."""
    F, grads = jax.value_and_grad(pot.F)(params, frozen)
    reg = pot.regulariser(params)
    obs = {
        "F": F,
        "loss": F - reg,
        "reg": reg,
        "sq_norm": sum_sq(params),
        "grad_sq": sum_sq(grads),
    }
    for g, w in params.items():
        obs[f"norm_{g}"] = jnp.sqrt(jnp.sum(jnp.square(w)))
    if config.model == "lora":
        a2, b2 = jnp.sum(jnp.square(params["A"])), jnp.sum(jnp.square(params["B"]))
        obs["balance"] = a2 - b2
        obs["norm_product"] = jnp.sqrt(a2 * b2)
        obs["delta_norm"] = jnp.linalg.norm(params["B"] @ params["A"])
    elif config.model == "attention" and "Q" in params and "K" in params:
        obs["balance_qk"] = jnp.sum(jnp.square(params["Q"])) - jnp.sum(jnp.square(params["K"]))
    elif config.model in TEST_POTENTIALS:
        obs["x"] = params["theta"][0]
        obs["mean_x"] = jnp.mean(params["theta"])
    return obs
